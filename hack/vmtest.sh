#!/usr/bin/env bash
# The VM tier (make vmtest): boots Debian's cloud kernel in QEMU with an
# ivshmem-plain device, binds it to vfio-pci in the guest and runs
# `vhcrd serve --bar vfio:BDF#region2` on it, while the host side attaches to
# the same /dev/shm file. Needs qemu-system-x86 and the kernel that
# hack/fetch-vmkernel.sh unpacks into .cache/vmkernel; with CI=true a missing
# one fails instead of skipping. See hack/vmtest/vmtest_test.go.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s%N)
VHCRD_VMTEST=1 go test -count=1 -v -timeout 3m -run '^TestVM$' ./hack/vmtest/ "$@"
echo "vmtest: wall time $(( ($(date +%s%N) - start) / 1000000 )) ms (build + boot + test)"
