package master

import (
	"errors"
	"fmt"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"

	"github.com/vhcrd/vhcrd/bar"
)

// Regions that shrink under the PF (another process truncated a file):
// the poller runs under bar.Guard, and a fault comes here. A fault in the
// DMA region is a fault of the VFs whose windows the file no longer backs:
// they are reset with bit 17, and their windows are not touched again until
// a VHCR_EN finds them backed. A fault in a VF's BAR region ends the service
// of that VF: its resources are released and its registers are replaced by
// a private page nobody writes, so the poller never touches the region
// again and no other VF notices, until an FLR of the VF finds the file
// whole again and maps it back (flags.go). A fault in the control region ends the
// service.

// ErrRegionLost is wrapped by the error Run returns when the BAR region
// shrank under the PF.
var ErrRegionLost = errors.New("master: region shrank under the PF")

// ErrBARLost is wrapped by the error of an FLR of a VF whose BAR region
// shrank under the PF and whose file is still too short.
var ErrBARLost = errors.New("master: the VF's BAR region shrank under the PF")

// fault handles a fault the poll loop stopped at. It returns nil when the
// PF may go on serving, else the error Run returns.
func (p *PF) fault(err error) error {
	var fe *bar.FaultError
	if !errors.As(err, &fe) {
		return err
	}
	if _, ok := bar.Contains(p.bar, fe.Addr); ok {
		return p.regionError(p.bar, p.lay.ControlSize())
	}
	for i := range p.vfs {
		st := &p.vfs[i]
		if st.barLost {
			continue
		}
		if _, ok := bar.Contains(st.bar, fe.Addr); ok {
			return p.barLost(i)
		}
	}
	for i := range p.vfs {
		st := &p.vfs[i]
		if r := st.win.Region(); r != p.dma {
			if _, ok := bar.Contains(r, fe.Addr); ok {
				if st.unbacked {
					return fmt.Errorf("%s: %w: fault in VF %d's guest RAM, already given up", r.Name(), ErrRegionLost, i)
				}
				p.regionLost(i)
				if p.limit.allow() {
					p.log.Warn("guest RAM file shrank under the PF: resetting its VF", "region", r.Name(), "vf", i)
				}
				return nil
			}
		}
	}
	off, ok := bar.Contains(p.dma, fe.Addr)
	if !ok {
		return fmt.Errorf("master: %w at %#x, in neither the BAR nor the DMA region", err, fe.Addr)
	}
	backed, known := bar.Backed(p.dma)
	if !known || backed > off {
		backed = off &^ (bar.PageSize - 1) // the fault proves at least this page lost
	}
	var lost []int
	herr := bar.Guard(func() {
		for i := range p.vfs {
			if p.vfs[i].win.Region() == p.dma && p.windowEnd(i) > backed && !p.vfs[i].unbacked {
				p.regionLost(i)
				lost = append(lost, i)
			}
		}
	})
	if herr != nil {
		return fmt.Errorf("master: resetting the VFs of the lost DMA range: %w", herr)
	}
	if len(lost) == 0 {
		// The fault was in no VF's window, or in one already given up: the
		// PF touched what it must not; serving on would fault again.
		return fmt.Errorf("%s: %w: fault at offset %#x outside every live VF window", p.dma.Name(), ErrRegionLost, off)
	}
	if p.limit.allow() {
		p.log.Warn("DMA region shrank under the PF: resetting the VFs whose windows it no longer backs",
			"region", p.dma.Name(), "backed", backed, "size", p.dma.Size(), "vfs", lost)
	}
	return nil
}

// barLost stops serving VF i, whose BAR region shrank under the PF.
func (p *PF) barLost(i int) error {
	st := &p.vfs[i]
	lost := st.bar
	dead, err := bar.NewMem(fmt.Sprintf("vf%d-lost", i), mlx4.MLX4_COMM_PAGESIZE)
	if err != nil {
		return err
	}
	if err := st.mapBAR(dead); err != nil {
		return err
	}
	st.barLost, st.lostBAR = true, lost
	st.lastWord, st.ack, st.unanswered = 0, 0, false // the private page's slave_write: never changes
	st.flags.Store(mlx4.CommFlagsOffline)
	herr := bar.Guard(func() {
		p.resetFunction(i, ResetRegionLost)
		p.persistVF(i)
	})
	if herr != nil {
		return fmt.Errorf("master: releasing VF %d after its BAR region shrank: %w", i, herr)
	}
	p.log.Warn("VF BAR region shrank under the PF: VF no longer served", "vf", i, "region", lost.Name(), "err", p.regionError(lost, p.lay.VFBARSize))
	return nil
}

// regionError is the error that ends the service when region r, which the
// layout needs need bytes of, shrank.
func (p *PF) regionError(r bar.Region, need int64) error {
	if n, ok := bar.Backed(r); ok {
		return fmt.Errorf("%s: %w: the file now has %d bytes, the PF maps %d and needs %d", r.Name(), ErrRegionLost, n, r.Size(), need)
	}
	return fmt.Errorf("%s: %w: an access to it faulted", r.Name(), ErrRegionLost)
}

// windowEnd is the DMA-region offset just past VF i's window.
func (p *PF) windowEnd(i int) int64 { return p.lay.DMABase + int64(i+1)*p.lay.Window }

// regionLost resets VF i, whose window the DMA region no longer backs: its
// resources are released, the reset is counted, and slave_read says bit 17
// with the toggle of its slave_write (a pending post is answered). Its
// window is not touched until VHCR_EN finds it backed again.
func (p *PF) regionLost(i int) {
	st := &p.vfs[i]
	p.resetFunction(i, ResetRegionLost)
	st.unbacked = true
	p.persistVF(i)
	w := st.sw.Load()
	st.lastWord, st.ack, st.unanswered = w, w&mlx4.CommToggle, false
	st.sr.Store(st.ack | mlx4.COMM_CHAN_EVENT_INTERNAL_ERR)
}

// backedAgain reports whether VF i's window, given up after a fault, is
// backed by the DMA region's file again (at VHCR_EN).
func (p *PF) backedAgain(i int) bool {
	r, end := p.dma, p.windowEnd(i)
	if w := p.vfs[i].win; w.Region() != p.dma {
		off, size := w.Backing()
		r, end = w.Region(), off+size
	}
	n, ok := bar.Backed(r)
	if ok && n >= end {
		p.vfs[i].unbacked = false
		return true
	}
	return false
}
