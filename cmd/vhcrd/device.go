package main

import (
	"fmt"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/bar/pci"
	"github.com/vhcrd/vhcrd/bar/sysfs"
	"github.com/vhcrd/vhcrd/bar/vfio"
)

// sysfsRoot is the sysfs mount point; tests point it at a fake tree.
var sysfsRoot = pci.DefaultRoot

// vfioOptions are extra options for vfio opens; tests add a fake kernel.
var vfioOptions []vfio.Option

// openDevice opens sysfs and vfio regions. A vfio spec without #regionN
// means region 2 (BAR2). The region is the whole BAR from @OFFSET on;
// closing it releases the mapping and, for vfio, the device, group and
// container.
func openDevice(sp bar.Spec) (bar.Region, error) {
	var (
		r   bar.Region
		err error
	)
	switch sp.Scheme {
	case "sysfs":
		r, err = sysfs.Open(sysfsRoot, sp.Path, sp.Index)
	case "vfio":
		idx := sp.Index
		if idx < 0 {
			idx = 2
		}
		var vr *vfio.Region
		var d *vfio.Device
		vr, d, err = vfio.OpenRegion(sp.Path, idx, vfioOptions...)
		if err == nil {
			r = &vfioRegion{Region: vr, dev: d}
		}
	default:
		return nil, fmt.Errorf("%s: %w", sp, bar.ErrNotSupported)
	}
	if err != nil {
		return nil, err
	}
	if sp.Offset == 0 {
		return r, nil
	}
	if sp.Offset >= r.Size() {
		r.Close()
		return nil, fmt.Errorf("%s: offset %#x is beyond the region's %#x bytes: %w", sp, sp.Offset, r.Size(), bar.ErrTooSmall)
	}
	return subRegion(r, sp.Offset)
}

// vfioRegion is a vfio region that owns its device.
type vfioRegion struct {
	*vfio.Region
	dev *vfio.Device
}

func (v *vfioRegion) Close() error { return v.dev.Close() }
