#!/usr/bin/env bash
# vfio-bind.sh [-u] BDF...: bind PCI devices to vfio-pci (or, with -u, release
# them from their driver and clear driver_override), the same steps as
# `vhcrd bind` / `vhcrd unbind` for people who script with shell:
#
#   modprobe vfio-pci and vfio_iommu_type1 when they are not loaded
#   echo vfio-pci > /sys/bus/pci/devices/BDF/driver_override
#   echo BDF > /sys/bus/pci/devices/BDF/driver/unbind     (if bound)
#   echo BDF > /sys/bus/pci/drivers_probe
#
# SYSFS overrides /sys (for tests). Every device of an IOMMU group must be
# bound to vfio-pci (or to no driver) before the group can be used.
set -euo pipefail
sysfs=${SYSFS:-/sys}
unbind=0
if [ "${1:-}" = "-u" ]; then unbind=1; shift; fi
if [ $# -eq 0 ]; then
	echo "usage: $0 [-u] BDF..." >&2
	exit 2
fi

die() { echo "vfio-bind: $*" >&2; exit 1; }

for bdf in "$@"; do
	case $bdf in
	????:??:??.?) ;;
	??:??.?) bdf=0000:$bdf ;;
	*) die "$bdf: want a PCI address like 0000:00:01.0" ;;
	esac
	dev=$sysfs/bus/pci/devices/$bdf
	[ -e "$dev" ] || die "$bdf: no such device (see 'vhcrd devices' or lspci -D)"
	drv=
	[ -L "$dev/driver" ] && drv=$(basename "$(readlink "$dev/driver")")

	if [ $unbind = 1 ]; then
		[ -n "$drv" ] && echo "$bdf" > "$dev/driver/unbind"
		echo > "$dev/driver_override"
		echo "$bdf" > "$sysfs/bus/pci/drivers_probe"
		echo "$bdf: released from ${drv:-no driver}"
		continue
	fi

	if [ "$drv" = vfio-pci ]; then
		echo "$bdf: already bound to vfio-pci"
		continue
	fi
	[ -L "$dev/iommu_group" ] || die "$bdf: no IOMMU group (boot with intel_iommu=on or amd_iommu=on)"
	for m in vfio_iommu_type1 vfio_pci; do
		[ -d "$sysfs/module/$m" ] || modprobe "$m" || die "module $m is missing: install the kernel's modules package"
	done
	echo vfio-pci > "$dev/driver_override"
	[ -n "$drv" ] && echo "$bdf" > "$dev/driver/unbind"
	echo "$bdf" > "$sysfs/bus/pci/drivers_probe"
	now=
	[ -L "$dev/driver" ] && now=$(basename "$(readlink "$dev/driver")")
	[ "$now" = vfio-pci ] || die "$bdf: drivers_probe left it with ${now:-no driver}, not vfio-pci (see dmesg)"
	group=$(basename "$(readlink "$dev/iommu_group")")
	echo "$bdf: bound to vfio-pci (was ${drv:-unbound}), IOMMU group $group, /dev/vfio/$group"
	for other in "$sysfs/kernel/iommu_groups/$group/devices/"*; do
		o=$(basename "$other")
		[ "$o" = "$bdf" ] && continue
		od=
		[ -L "$other/driver" ] && od=$(basename "$(readlink "$other/driver")")
		if [ -n "$od" ] && [ "$od" != vfio-pci ]; then
			echo "vfio-bind: warning: $o in IOMMU group $group is bound to $od; the group is not viable until it is bound to vfio-pci too" >&2
		fi
	done
done
