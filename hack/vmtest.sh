#!/usr/bin/env bash
# The VM tier (make vmtest): boots Debian's cloud kernel in QEMU with an
# ivshmem-plain device, binds it to vfio-pci in the guest and runs
# `vhcrd serve --bar vfio:BDF#region2` on it, while the host side attaches to
# the same /dev/shm file. Needs qemu-system-x86 and the kernel that
# hack/fetch-vmkernel.sh unpacks into .cache/vmkernel; with CI=true a missing
# one fails instead of skipping. See hack/vmtest/vmtest_test.go.
# TestLinuxMLX4 (hack/vmtest/mlx4_test.go) is the Linux-driver tier: Debian's
# unmodified mlx4_core and mlx4_ib in a guest against `vhcrd serve` on the
# host, with the modules hack/fetch-vmkernel.sh unpacks into
# .cache/vmkernel/mlx4. TestLinuxMLX4Verbs (hack/vmtest/verbs_test.go) runs
# Debian's rdma-core userspace (hack/fetch-vmuserspace.sh, .cache/vmuser) in
# such a guest: ibv_devinfo -v, the pingpongs on one VF and between two
# guests, and a guest killed mid-transfer beside one whose transfer goes on.
# TestLinuxMLX4Faults (hack/vmtest/faults_test.go) runs the fault matrix's
# CI subset against that driver; `make faults` runs the whole matrix.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s%N)
# The timeout covers the builds the tests do first (static, -trimpath: on an
# empty build cache they compile the standard library and every dependency
# again) as well as the guests; each guest step has its own bound inside.
VHCRD_VMTEST=1 go test -count=1 -v -timeout 20m -run '^(TestVM|TestLinuxMLX4|TestLinuxMLX4Verbs|TestLinuxMLX4Faults|TestLinuxMLX4Eth)$' ./hack/vmtest/ "$@"
echo "vmtest: wall time $(( ($(date +%s%N) - start) / 1000000 )) ms (build + boot + test)"
