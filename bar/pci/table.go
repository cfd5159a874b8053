package pci

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// HumanSize formats a byte count as 256, 4K, 1M, 16G.
func HumanSize(n uint64) string {
	for _, u := range []struct {
		s     string
		shift uint
	}{{"G", 30}, {"M", 20}, {"K", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.FormatUint(n>>u.shift, 10) + u.s
		}
	}
	return strconv.FormatUint(n, 10)
}

// WriteTable prints devices as an aligned table: address, ids, class,
// driver, IOMMU group, SR-IOV state and BARs (index:size kind, "*" when the
// BAR can be mmapped).
func WriteTable(w io.Writer, devs []Device) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tID\tCLASS\tDRIVER\tIOMMU\tSR-IOV\tBARS (index:size kind, * = mappable)")
	for _, d := range devs {
		drv := d.Driver
		if drv == "" {
			drv = "-"
		}
		if d.Override != "" && d.Override != d.Driver {
			drv += " (override " + d.Override + ")"
		}
		grp := "-"
		if d.IOMMUGroup >= 0 {
			grp = strconv.Itoa(d.IOMMUGroup)
			if d.VFIODev != "" {
				grp += " " + d.VFIODev
			}
		}
		sr := "-"
		switch {
		case d.SRIOV != nil:
			sr = fmt.Sprintf("PF %d/%d VFs", d.SRIOV.NumVFs, d.SRIOV.TotalVFs)
		case d.PhysFn != "":
			sr = "VF of " + d.PhysFn
		}
		var bars []string
		for _, b := range d.BARs {
			m := ""
			if b.Mappable() {
				m = "*"
			}
			bars = append(bars, fmt.Sprintf("%d:%s %s%s", b.Index, HumanSize(b.Size()), b.Kind(), m))
		}
		bs := strings.Join(bars, ", ")
		if bs == "" {
			bs = "-"
		}
		fmt.Fprintf(tw, "%s\t%04x:%04x\t%06x\t%s\t%s\t%s\t%s\n", d.Addr, d.Vendor, d.DeviceID, d.Class, drv, grp, sr, bs)
	}
	return tw.Flush()
}
