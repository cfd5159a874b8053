#!/usr/bin/env bash
# fetch-kernel.sh [DIR]: download Debian's cloud kernel package (resolved from
# the linux-image-cloud-amd64 meta package, never a hard-coded version) and
# unpack, without installing it, the kernel image and the VFIO modules the VM
# tier loads into DIR (default /var/tmp/vhcrd-vmtest):
#
#   DIR/vmlinuz          the kernel
#   DIR/modules/*.ko     irqbypass, vfio, vfio_iommu_type1, vfio_virqfd,
#                        vfio-pci-core, vfio-pci (whatever the package has)
#   DIR/kernel.version   the package name, so a newer kernel triggers a refetch
#
# Needs apt-get (run 'apt-get update' first) and dpkg-deb. Idempotent.
set -euo pipefail
dir=${1:-${VHCRD_VMTEST_DIR:-/var/tmp/vhcrd-vmtest}}
mkdir -p "$dir"
cd "$dir"

pkg=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [ -z "$pkg" ]; then
	echo "fetch-kernel: cannot resolve linux-image-cloud-amd64 (run apt-get update)" >&2
	exit 1
fi
if [ -f kernel.version ] && [ "$(cat kernel.version)" = "$pkg" ] && [ -f vmlinuz ] && [ -d modules ]; then
	echo "fetch-kernel: $pkg already in $dir"
	exit 0
fi

rm -rf deb k modules vmlinuz kernel.version
mkdir deb k modules
(cd deb && apt-get download "$pkg" 2>&1 | grep -v 'unsandboxed' || true)
deb=$(ls deb/"$pkg"_*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C k --wildcards \
	'./boot/vmlinuz-*' '*/kernel/drivers/vfio/*' '*/kernel/virt/lib/irqbypass.*'
cp k/boot/vmlinuz-* vmlinuz
find k -name '*.ko*' -exec cp {} modules/ \;
# Compressed modules (newer kernels ship .ko.xz): unpack so any loader works.
for f in modules/*.ko.xz; do [ -e "$f" ] && xz -d "$f"; done
for f in modules/*.ko.zst; do [ -e "$f" ] && zstd -q -d --rm "$f"; done
rm -rf deb k
echo "$pkg" > kernel.version
echo "fetch-kernel: $pkg -> $dir: $(ls modules | tr '\n' ' ')"
