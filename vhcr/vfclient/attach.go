package vfclient

import (
	"context"
	"errors"
	"fmt"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/wire"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// Attachment is a VF tool's view of a served set of regions: the control
// file mapped, its header read, the DMA region it names opened, and each VF's
// BAR region opened when that VF is.
type Attachment struct {
	BAR    bar.Region // the control region (header, futex doorbell)
	DMA    bar.Region
	Layout wire.Layout
	// VFBARs holds each VF's BAR region, by VF. Entries left nil are
	// opened by VF: the file VFBARPath(path, idx) next to the control file
	// AttachFile mapped.
	VFBARs []bar.Region
	path   string
	own    []bar.Region
	probe  *bar.Probe // the control file's owner claim (AttachFile only)
}

// AttachFile maps the control file at path, reads its header and opens the
// DMA region the header names. No layout flags are needed: the header has
// them. VF idx's BAR region is the file VFBARPath(path, idx).
func AttachFile(path string) (*Attachment, error) {
	b, err := bar.OpenFile(path, false)
	if err != nil {
		return nil, err
	}
	a, err := Attach(b)
	if err != nil {
		b.Close()
		return nil, err
	}
	a.own = append(a.own, b)
	a.path = path
	if a.probe, err = bar.NewProbe(path); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// Attach reads the header of an open control region and opens its DMA
// region. The caller fills VFBARs with the VFs' BAR regions.
func Attach(b bar.Region) (*Attachment, error) {
	l, err := wire.ReadLayout(b)
	if err != nil {
		return nil, err
	}
	a := &Attachment{BAR: b, Layout: l, VFBARs: make([]bar.Region, l.NumVFs)}
	if l.DMAInBAR {
		a.DMA = b
		return a, nil
	}
	d, err := bar.OpenFile(l.DMAPath, false)
	if err != nil {
		return nil, fmt.Errorf("opening the DMA region the header names: %w", err)
	}
	if d.Size() < l.DMASize {
		d.Close()
		return nil, fmt.Errorf("%s: %w: header says %#x bytes, file has %#x", d.Name(), wire.ErrHeader, l.DMASize, d.Size())
	}
	a.DMA = d
	a.own = append(a.own, d)
	return a, nil
}

// VFBAR returns VF idx's BAR region, mapping its file the first time.
func (a *Attachment) VFBAR(idx int) (bar.Region, error) {
	if idx < 0 || idx >= len(a.VFBARs) {
		return nil, fmt.Errorf("vhcr: VF %d outside 0..%d", idx, len(a.VFBARs)-1)
	}
	if a.VFBARs[idx] != nil {
		return a.VFBARs[idx], nil
	}
	if a.path == "" {
		return nil, fmt.Errorf("vhcr: VF %d: no BAR region given", idx)
	}
	r, err := bar.OpenFileLazy(wire.VFBARPath(a.path, idx), false)
	if err != nil {
		return nil, fmt.Errorf("opening VF %d's BAR region: %w", idx, err)
	}
	a.VFBARs[idx] = r
	a.own = append(a.own, r)
	return r, nil
}

// OpenVFBAR maps the file at path and makes its VFBARSize bytes from off
// VF idx's BAR region (a VF BAR region that is a range of a larger file, as
// `vhcrd serve --vf-bar N=file:PATH@OFFSET` serves it).
func (a *Attachment) OpenVFBAR(idx int, path string, off int64) error {
	if idx < 0 || idx >= len(a.VFBARs) {
		return fmt.Errorf("vhcr: VF %d outside 0..%d", idx, len(a.VFBARs)-1)
	}
	f, err := bar.OpenFile(path, false)
	if err != nil {
		return fmt.Errorf("opening VF %d's BAR region: %w", idx, err)
	}
	r, err := bar.Sub(f, off, a.Layout.VFBARSize)
	if err != nil {
		f.Close()
		return fmt.Errorf("VF %d's BAR region: %w", idx, err)
	}
	a.VFBARs[idx] = r
	a.own = append(a.own, f)
	return nil
}

// VF opens function idx.
func (a *Attachment) VF(idx int) (*VF, error) {
	r, err := a.VFBAR(idx)
	if err != nil {
		return nil, err
	}
	return NewVF(a.BAR, r, a.DMA, a.Layout, idx)
}

// PFState returns the PF state word (PFStateInit, PFStateServing, PFStateStopped).
func (a *Attachment) PFState() uint32 { v, _ := a.BAR.Load32(wire.HdrPFState); return v }

// PFGen returns the PF generation word (incremented at every PF start).
func (a *Attachment) PFGen() uint32 { v, _ := a.BAR.Load32(wire.HdrPFGen); return v }

// ErrNoPF is returned, wrapped, by Serving when the header says that no PF
// serves the region.
var ErrNoPF = errors.New("vhcr: no PF is serving the region")

// ErrPFDead is returned, wrapped, when no process holds the owner claim of
// the control file (bar.Own) while the header still says SERVING, or while
// a command waits: the PF was killed or crashed and will not answer.
var ErrPFDead = errors.New("vhcr: the PF is dead (no process holds the regions' owner claim)")

// PFAlive returns nil while a process holds the owner claim of the control
// file (a PF serving, busy or starting), and an error wrapping ErrPFDead
// when none does. It tests the claim without taking it (bar.Probe). An
// attachment made from open regions (Attach) has no file to probe, and a
// PF that maps the file as device memory (the header's HdrFlagOwnerClaim
// clear: a PF in a guest whose BAR the file backs) holds no claim on it:
// PFAlive is then always nil.
func (a *Attachment) PFAlive() error {
	if a.probe == nil || !a.Layout.OwnerClaim {
		return nil
	}
	err := a.probe.Owned()
	if err == nil || !errors.Is(err, bar.ErrUnowned) {
		return nil // owned, or the kernel cannot tell: not a verdict of death
	}
	return a.deadErr(a.PFState())
}

// deadErr is ErrPFDead with the control file, the header's state and
// generation: a PF that stopped in order leaves STOPPED, one killed SERVING.
func (a *Attachment) deadErr(st uint32) error {
	how := "killed or crashed: PF_STATE still says serving"
	if st != wire.PFStateServing {
		how = "PF_STATE " + PFStateName(st)
	}
	return fmt.Errorf("%w: %s, PF_GEN %d (%s)", ErrPFDead, a.path, a.PFGen(), how)
}

// PFStateName names a PF_STATE value.
func PFStateName(st uint32) string {
	switch st {
	case wire.PFStateInit:
		return "starting (or never started)"
	case wire.PFStateServing:
		return "serving"
	case wire.PFStateStopped:
		return "stopped"
	}
	return fmt.Sprintf("unknown (%#x)", st)
}

// Serving returns nil when PF_STATE says a PF serves the region, and an
// error wrapping ErrNoPF that names the state and PF_GEN otherwise: a VF
// tool fails at once instead of waiting out mlx4's comm channel timeouts.
// A PF that was killed without stopping leaves SERVING in the header;
// PFAlive tells that case (AttachServing asks both).
func (a *Attachment) Serving() error {
	st := a.PFState()
	if st == wire.PFStateServing {
		return nil
	}
	err := fmt.Errorf("%w: PF_STATE %s, PF_GEN %d", ErrNoPF, PFStateName(st), a.PFGen())
	if t := a.PFStopped(); st == wire.PFStateStopped && !t.IsZero() {
		err = fmt.Errorf("%w, since %s (PF_STOPPED)", err, t.UTC().Format(time.RFC3339))
	}
	return err
}

// AttachServing is AttachFile for a tool that needs a serving PF: it
// returns the attachment once PF_STATE says SERVING and a process holds the
// control file's owner claim. A PF that holds the claim but has not yet
// written its header, or not yet SERVING, is starting: AttachServing waits
// for it until ctx ends and attaches again, so that the layout is the one
// the new PF wrote. Without a holder it fails at once: with ErrPFDead where
// the header still says SERVING (a PF killed or crashed), with Serving's
// ErrNoPF where it says stopped or starting, with AttachFile's error where
// there is no region to read.
func AttachServing(ctx context.Context, path string) (*Attachment, error) {
	for {
		a, err := AttachFile(path)
		if err == nil {
			serr, alive := a.Serving(), a.PFAlive()
			switch {
			case alive != nil && serr == nil:
				a.Close()
				return nil, alive
			case alive != nil:
				a.Close()
				return nil, serr
			case serr == nil:
				return a, nil
			case !a.Layout.OwnerClaim:
				// A PF mapping the file as device memory holds no
				// claim to tell a starting PF by: not serving is
				// reported at once.
				a.Close()
				return nil, serr
			}
			a.Close()
			err = serr
		} else if !claimed(path) {
			return nil, err
		}
		// Claimed, not yet serving: a PF is starting.
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w while the PF holding %s was starting (%w)", ctx.Err(), path, err)
		case <-t.C:
		}
	}
}

// CheckPF tells from the control file at path alone (nothing else is
// opened) whether a PF holds it: nil while a process holds its owner claim
// (a PF serving, busy or starting); without one, an error wrapping
// ErrPFDead where PF_STATE still says SERVING (the PF was killed), one
// wrapping ErrNoPF where it says anything else, and the open's error where
// there is no file. It takes no lock. A header whose HdrFlagOwnerClaim is
// clear (its PF maps the file as device memory, in a guest) tells nothing:
// nil.
func CheckPF(path string) error {
	p, err := bar.NewProbe(path)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.Owned(); err == nil || !errors.Is(err, bar.ErrUnowned) {
		return nil
	}
	b, err := bar.OpenFile(path, false)
	if err != nil {
		return err
	}
	defer b.Close()
	if m, _ := b.Load32(wire.HdrMagic); m == wire.Magic {
		if f, _ := b.Load32(wire.HdrFlags); f&wire.HdrFlagOwnerClaim == 0 {
			return nil // a PF in a guest holds no claim on this file
		}
	}
	a := &Attachment{BAR: b, path: path}
	if st := a.PFState(); st == wire.PFStateServing {
		return a.deadErr(st)
	}
	return fmt.Errorf("%s: %w", path, a.Serving())
}

// claimed reports whether a process holds the owner claim of the file at
// path.
func claimed(path string) bool {
	p, err := bar.NewProbe(path)
	if err != nil {
		return false
	}
	defer p.Close()
	return p.Owned() == nil
}

// PFStopped returns the time of the PF's last orderly stop (PF_STOPPED),
// zero if none was recorded.
func (a *Attachment) PFStopped() time.Time {
	v, _ := a.BAR.Load32(wire.HdrPFStopped)
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(int64(v), 0)
}

// Close unmaps what AttachFile opened.
func (a *Attachment) Close() error {
	var errs []error
	for i := len(a.own) - 1; i >= 0; i-- {
		errs = append(errs, a.own[i].Close())
	}
	if a.probe != nil {
		errs = append(errs, a.probe.Close())
		a.probe = nil
	}
	return errors.Join(errs...)
}

// Default region paths of `vhcrd serve`, which vfctl uses too.
const (
	DefaultBARPath = "/dev/shm/vhcrd-bar"
	DefaultDMAPath = "/dev/shm/vhcrd-dma"
)

// RunDir holds the files of a vhcrd serving a device BAR (sysfs:, vfio:),
// which has no file to put them beside: its admin socket and its PF state
// file (DevicePath).
const RunDir = "/run/vhcrd"

// DevicePath is the default file with extension ext (".sock", ".pfstate")
// of a vhcrd serving the device BAR sp, in dir (RunDir):
// dir/SCHEME-DEVICE[-N]ext, named after the device's address and region
// index, so that two PFs on one host never share one.
func DevicePath(dir string, sp bar.Spec, ext string) string {
	name := sp.Scheme + "-" + strings.ReplaceAll(sp.Path, "/", "_")
	if sp.Index >= 0 {
		name += "-" + strconv.Itoa(sp.Index)
	}
	return filepath.Join(dir, name+ext)
}

// ChannelUp reports whether the PF's persisted state says VF idx has
// completed VHCR_EN (so a new VF process can post without re-initialising).
func (a *Attachment) ChannelUp(idx int) bool {
	w, err := a.BAR.Load32(wire.HdrVFRecord(idx) + pfstate.WordLastCmd)
	c, valid := pfstate.LastCmd(w)
	if err != nil || !valid {
		return false
	}
	return mlx4.CommCmd(c) == mlx4.MLX4_COMM_CMD_VHCR_EN || mlx4.CommCmd(c) == mlx4.MLX4_COMM_CMD_VHCR_POST
}
