#!/usr/bin/env bash
# Downloads Debian's kernel package (linux-image-amd64: the cloud flavour
# lacks ib_ipoib) and unpacks, with no installation,
# into .cache/vmkernel:
#   vmlinuz
#   mods/   the VFIO modules (TestVM: vfio-pci in the guest)
#   mlx4/   Debian's unmodified mlx4_core, ib_core, ib_uverbs, mlx4_ib, ib_umad, ib_ipoib, rdma_ucm and
#           every module their .modinfo depends= names, transitively
#           (TestLinuxMLX4: the guest's mlx4 driver against vhcrd; ib_umad:
#           the verbs guest's infiniband-diags through the MAD tunnel;
#           ib_ipoib: IPoIB between two guests; rdma_ucm with rdma_cm and
#           ib_cm: rping over the RDMA CM), and
#           virtio_pci and virtio_net with theirs (the kernel builds
#           them as modules): the two-guest verbs scenario's network
#           between the guests (TestLinuxMLX4Verbs); mlx4_en: the
#           Ethernet guest's netdev on an Ethernet port (TestLinuxMLX4Eth)
#   package "NAME VERSION" of the kernel package, which the tests log
# Idempotent: a complete cache is reused; one that lacks a file is refilled.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/vmkernel
mlx4_mods=(mlx4_core ib_core ib_uverbs mlx4_ib ib_umad ib_ipoib rdma_ucm virtio_pci virtio_net mlx4_en)
complete() {
  [ -f "$dest/vmlinuz" ] || return 1
  ls "$dest"/mods/*.ko* >/dev/null 2>&1 || return 1
  local m
  for m in "${mlx4_mods[@]}"; do ls "$dest"/mlx4/"$m".ko* >/dev/null 2>&1 || return 1; done
  # the version is recorded since the mlx4 modules joined the cache
  [ -f "$dest/package" ] && [ "$(wc -w <"$dest/package")" -eq 2 ]
}
if complete; then
  echo "vm kernel already in $dest: $(cat "$dest/package")"; exit 0
fi
pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [ -z "$pkg" ]; then echo "cannot resolve linux-image-amd64 (apt-get update first)" >&2; exit 1; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1)
deb=$(ls "$tmp"/"$pkg"_*.deb)
version=$(dpkg-deb -f "$deb" Version)
mkdir -p "$tmp/k"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/k" --wildcards './boot/vmlinuz-*' './lib/modules/*'
rm -rf "$dest/mods" "$dest/mlx4"
mkdir -p "$dest/mods" "$dest/mlx4"
cp "$tmp"/k/boot/vmlinuz-* "$dest/vmlinuz"
find "$tmp/k/lib/modules" \( -path '*/kernel/drivers/vfio/*' -o -path '*/kernel/virt/lib/irqbypass.ko*' \) \
  -name '*.ko*' -exec cp {} "$dest/mods/" \;

# The mlx4 set: the named modules and the closure of their depends= (what
# `modinfo -F depends` prints, read from the .modinfo strings so that no
# kmod is needed on the host).
modpath() { find "$tmp/k/lib/modules" \( -name "$1.ko" -o -name "$1.ko.xz" -o -name "${1//_/-}.ko" -o -name "${1//_/-}.ko.xz" \) -print -quit; }
depends() {
  case $1 in
    *.xz) xz -dc "$1" ;;
    *) cat "$1" ;;
  esac | tr '\0' '\n' | sed -n 's/^depends=//p' | tr ',' ' '
}
todo=("${mlx4_mods[@]}")
declare -A seen=()
while [ ${#todo[@]} -gt 0 ]; do
  m=${todo[0]}; todo=("${todo[@]:1}")
  [ -n "${seen[$m]:-}" ] && continue
  seen[$m]=1
  p=$(modpath "$m")
  if [ -z "$p" ]; then echo "$pkg has no module $m" >&2; exit 1; fi
  cp "$p" "$dest/mlx4/"
  for d in $(depends "$p"); do todo+=("$d"); done
done
echo "$pkg $version" >"$dest/package"
echo "vm kernel $pkg $version unpacked into $dest (mlx4 set: ${!seen[*]})"
