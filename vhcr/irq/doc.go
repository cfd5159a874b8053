// Package irq models a VF's MSI-X vectors as eventfds, the mechanism of
// VFIO (VFIO_DEVICE_SET_IRQS with eventfd triggers), vfio-user and QEMU's
// ivshmem-doorbell device, whose server hands each peer one eventfd per
// vector (QEMU docs/specs/ivshmem-spec.rst) and injects the vector's MSI-X
// message whenever the eventfd is signalled.
//
// Vectors is one VF's table: n eventfds made with EFD_CLOEXEC|EFD_NONBLOCK.
// Raise(v) is one 8-byte write of 1 to vector v's eventfd, the whole of
// what signalling an MSI-X interrupt costs the PF: no allocation, no lock
// taken for writing. The counter coalesces: several raises before the
// reader reads are one wake-up with a count, as several MSI-X messages to a
// masked-then-unmasked vector are one interrupt. A counter at its maximum
// (2^64-2, a reader that never reads) makes the write fail with EAGAIN; the
// interrupt is still pending, so the raise is counted (Saturated) and not
// an error. Set holds the tables of all VFs of a PF and implements the
// software HCA's interrupt hook (hca.Interrupts): Raise(vf, vector), with
// a vector at or above the VF's count refused as ErrVector (the HCA counts
// it as the VF's error).
//
// The descriptors are handed over by number (FD) to whoever delivers the
// interrupt: QEMU through the ivshmem server protocol, a VF process through
// SendFDs/RecvFDs (SCM_RIGHTS over a unix socket). The reader's side is
// Wait (poll with a timeout, then read the count) and Drain (a nonblocking
// read). Close closes every descriptor; a Raise racing with Close returns
// ErrClosed and never writes to a descriptor number reused elsewhere.
//
// A restarted PF takes back the eventfds its predecessor handed out (kept
// in systemd's file-descriptor store) with Adopt and NewSetWith: a guest
// that holds them is interrupted by the new process as by the old one.
//
// Errors wrap the sentinels ErrVector, ErrVF, ErrClosed and ErrTimeout.
package irq
