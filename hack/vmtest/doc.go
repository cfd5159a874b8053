// Package vmtest is vhcrd's VM tier: it boots Debian's kernel (linux-image-amd64) in QEMU
// (TCG; KVM only where real VMX/SVM is present) with an ivshmem-plain device
// whose BAR2 is a file in /dev/shm, and runs the real vfio-pci path in the
// guest: load the VFIO modules with u-root's kmodule, bind the device to
// vfio-pci, map BAR2 through VFIO, and run `vhcrd serve --bar vfio:BDF#region2`
// on it (the 32 MiB BAR holds the control header and DMA windows, and VF 0
// and 1's BAR regions at 8 and 16 MiB: --vf-bar), while the test on the host
// attaches to the same file (vfctl --vf-bar N=file:PATH@OFFSET).
//
// This package builds the guest's initramfs (newc cpio, written with u-root's
// pkg/cpio): a static /init (./guest), a static /bin/vhcrd, the VFIO modules
// with a modules.dep generated from their .modinfo sections, and the guest's
// configuration in /etc/vmtest.json. The test itself is vmtest_test.go; it
// runs when VHCRD_VMTEST=1 (make vmtest, through hack/vmtest.sh), with the
// kernel that hack/fetch-vmkernel.sh unpacks into .cache/vmkernel.
//
// Each guest run's vhcrd writes its command trace to the VM's second serial
// port, which QEMU copies to a file in the test's temp dir; a failing run
// prints the first refused or failed command with its neighbours (trace.go).
//
// TestLinuxMLX4 (mlx4_test.go) is the Linux-driver tier: Debian's unmodified
// mlx4_core, ib_core, ib_uverbs and mlx4_ib (hack/fetch-vmkernel.sh unpacks
// them into .cache/vmkernel/mlx4) in a guest whose /init is ./mlx4guest,
// bound to an ivshmem-doorbell device that `vhcrd serve` on the host serves
// as a VF: BAR2 is the VF's BAR region, the MSI-X vectors are vhcrd's
// eventfds, the guest's RAM is the VF's DMA region. The guest and the host
// step together over the console ("vmtest: wait STEP", then "go"), so that
// the host checks vhcrd's metrics between binds and unbinds; a driver line
// with "bogus", "timed out" or "failed" ends the run at once.
//
// TestLinuxMLX4Verbs (verbs_test.go) runs Debian's unmodified rdma-core
// userspace in that guest (ScenarioVerbs): hack/fetch-vmuserspace.sh unpacks
// the packages, glibc and the loader included, into .cache/vmuser, and
// Userspace puts the tools into the initramfs with the shared libraries
// their DT_NEEDED entries name, transitively. On a subnet OpenSM brought up
// through libumad2sim (fabric_test.go), the guest prints `ibv_devinfo -v`
// and runs ibv_rc_pingpong and ibv_ud_pingpong (with and without -e) on
// one VF, then between two guests, each with its own VF of one vhcrd and a
// virtio-net socket netdev between them for the tools' TCP exchange, and
// (ScenarioVerbsKill, verbskill_test.go) a guest whose pingpong processes
// and then its QEMU are killed mid-transfer beside a guest whose own
// transfer must go on untouched.
// TestLinuxMLX4Faults (faults_test.go, the cases in faultcases_test.go) is
// the fault matrix: the same guest in ScenarioFaults runs one round per
// case (bind, a steady state of port queries, unbind, a clean round) while
// the host adds the case's faults through `vhcrd fault add` at the
// round's bind, steady or unbind step, and classifies the driver's
// reaction from the console and the guest's sysfs reports against the
// reaction the driver's source predicts; the data-path kinds hit a short
// ibv_rc_pingpong the guest runs after the steady state, both ends on its
// VF (faults_dp.go, faults_dp_test.go). Its CI subset runs in make vmtest;
// make faults runs every case and writes the table into docs/faults.md.
package vmtest
