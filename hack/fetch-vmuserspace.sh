#!/usr/bin/env bash
# Downloads Debian's rdma-core userspace for the VM tier's verbs guest and
# unpacks it, with no installation (dpkg-deb -x), into .cache/vmuser:
#   root/     the packages' files as they install (usr/bin/ibv_devinfo,
#             usr/lib/x86_64-linux-gnu/libibverbs/libmlx4-rdmav34.so,
#             etc/libibverbs.d/mlx4.driver, lib/x86_64-linux-gnu/libc.so.6 ...)
#   packages  "NAME VERSION" of each package, one a line, which the tests log
# The initramfs takes the tools from root/ and their shared libraries by
# ELF DT_NEEDED, transitively (vmtest.Userspace); glibc and the loader are
# Debian's too, so that the guest runs the same bytes whatever the host has
# installed. Idempotent: a complete cache is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/vmuser
pkgs=(
  libibverbs1 ibverbs-providers ibverbs-utils  # libibverbs, the mlx4 provider, ibv_devinfo and the pingpongs
  libnl-3-200 libnl-route-3-200                # libibverbs' netlink (its device discovery)
  librdmacm1 rdmacm-utils                      # rping, udaddy and the RDMA CM (later scenarios)
  libibumad3 perftest libpci3 libudev1 zlib1g  # ib_write_bw, ib_send_lat and the libraries they link
  infiniband-diags libibmad5 libibnetdisc5     # saquery, smpquery, ibnetdiscover through the PF's MAD tunnel
  iputils-ping libcap2 libidn2-0 libunistring2 # ping between the guests' ib0 (IPoIB)
  ethtool libmnl0                              # ethtool -S of the Ethernet guests' mlx4_en netdevs
  libc6 libgcc-s1                              # glibc and the loader
)
complete() {
  [ -f "$dest/packages" ] && [ "$(wc -l <"$dest/packages")" -eq "${#pkgs[@]}" ] || return 1
  local p
  for p in "${pkgs[@]}"; do grep -q "^$p " "$dest/packages" || return 1; done
  [ -x "$dest/root/usr/bin/ibv_devinfo" ] && [ -f "$dest/root/etc/libibverbs.d/mlx4.driver" ]
}
if complete; then
  echo "vm userspace already in $dest: $(tr '\n' ' ' <"$dest/packages")"; exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q "${pkgs[@]}" >/dev/null)
rm -rf "$dest/root" "$dest/packages"
mkdir -p "$dest/root"
: >"$tmp/packages"
for p in "${pkgs[@]}"; do
  deb=$(ls "$tmp"/"$p"_*.deb)
  dpkg-deb -x "$deb" "$dest/root"
  echo "$p $(dpkg-deb -f "$deb" Version)" >>"$tmp/packages"
done
mv "$tmp/packages" "$dest/packages"
echo "vm userspace unpacked into $dest: $(tr '\n' ' ' <"$dest/packages")"
