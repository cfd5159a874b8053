#!/usr/bin/env bash
# Downloads Debian's cloud kernel package and unpacks vmlinuz and the VFIO
# modules into .cache/vmkernel (no installation). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/vmkernel
if [ -f "$dest/vmlinuz" ] && ls "$dest"/mods/*.ko* >/dev/null 2>&1; then
  echo "vm kernel already in $dest"; exit 0
fi
pkg=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [ -z "$pkg" ]; then echo "cannot resolve linux-image-cloud-amd64 (apt-get update first)" >&2; exit 1; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1)
mkdir -p "$tmp/k" "$dest/mods"
dpkg-deb --fsys-tarfile "$tmp"/"$pkg"_*.deb | tar -x -C "$tmp/k" --wildcards \
  './boot/vmlinuz-*' '*/kernel/drivers/vfio/*' '*/kernel/virt/lib/irqbypass.ko*'
cp "$tmp"/k/boot/vmlinuz-* "$dest/vmlinuz"
find "$tmp/k/lib/modules" -name '*.ko*' -exec cp {} "$dest/mods/" \;
echo "$pkg" > "$dest/package"
echo "vm kernel $pkg unpacked into $dest"
