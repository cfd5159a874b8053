// Package mastertest is the one test rig of the command path: a PF (package
// vhcr/master) over heap-backed regions, or over files as vhcrd serves
// them, with the software HCA behind it. Over the heap the race detector
// sees every access, and VFs in the same process talk to the poller exactly
// as vfctl does over a file.
//
// A rig runs its poller (Start) for tests that post through vfclient.VF, or is
// driven by hand for tests of one scan at a time: Write stores a comm
// command in a VF's slave_write as a VF does, SetVHCR writes its vHCR, and
// Acked says whether the PF answered; the test then calls the PF's scan
// through its own package's hooks.
package mastertest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// Rig is a PF with its regions.
type Rig struct {
	BAR, DMA bar.Region // the control region and the DMA region
	// VFBARs are the VF BAR regions, one per VF (over files:
	// wire.VFBARPath(BARPath, i)).
	VFBARs []bar.Region
	// GuestRAM are the guest RAM regions of Options.GuestRAM, by VF.
	GuestRAM map[int]bar.Region
	// BARPath is the control file of a rig over files (vfctl's --bar is
	// "file:" + BARPath); empty over the heap.
	BARPath string
	Layout  wire.Layout
	HCA     *hca.HCA
	PF      *master.PF
	Config  *config.Config

	opts Options
	// StateFile is the PF state file when Options.State is set.
	StateFile bar.Region
	sw, sr    []bar.Reg // per VF: slave_write and slave_read
	toggles   []uint32  // per VF: the toggle of the last Write
	cancel    context.CancelFunc
	done      chan error
}

// Window is the DMA window size rigs use unless Options say otherwise.
const Window = 64 * 1024

// Options vary a rig. The zero value is New's rig.
type Options struct {
	// Window is each VF's DMA window (0: Window).
	Window int64
	// Files puts the BAR and the DMA region in files of a fresh directory
	// (under /dev/shm where there is one), as vhcrd serves them.
	Files bool
	// UnmappedDMA hides the DMA region's mapping from the PF, as a VFIO
	// region without the mmap flag does: the PF must copy through
	// ReadAt/WriteAt.
	UnmappedDMA bool
	// Idle is the poller's idle policy.
	Idle master.Idle
	// Logger receives the PF's log (nil: discarded).
	Logger *slog.Logger
	// GuestRAM gives VFs a guest's RAM of that many bytes (heap; from 64 MiB
	// a sparse file) as their DMA memory instead of their window (master.Options.GuestRAM); VF
	// opens them with vfclient.NewGuestVF.
	GuestRAM map[int]int64
	// Trace is the PF's command trace (master.Options.Trace); nil: off.
	Trace *trace.Ring
	// Interrupts is the PF's MSI-X delivery (master.Options.Interrupts,
	// e.g. an irq.Set); nil: none.
	Interrupts hca.Interrupts
	// State gives the PFs a state file (master.Options.State) on the
	// heap, kept across Rebuild: objects and pending commands survive.
	State bool
}

// TempDir is a directory for a test's region files, removed when the test
// ends: in /dev/shm (tmpfs, as the shared memory it models) when the
// machine has one, else t.TempDir().
func TempDir(t testing.TB, prefix string) string {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return t.TempDir()
}

// New builds a PF for n VFs over fresh heap regions (DMA in a separate
// region) without starting it.
func New(t testing.TB, n int) *Rig { return NewWith(t, n, Options{}) }

// NewWith builds a PF for n VFs as o says, without starting it.
func NewWith(t testing.TB, n int, o Options) *Rig {
	t.Helper()
	if o.Window == 0 {
		o.Window = Window
	}
	r := &Rig{Config: config.Default(), opts: o, toggles: make([]uint32, n)}
	dmaName := "mem:dma"
	var dir string
	if o.Files {
		dir = TempDir(t, "vhcrtest")
		dmaName = filepath.Join(dir, "dma")
	}
	l, err := wire.NewLayout(n, o.Window, false, 0, 0, dmaName)
	if err != nil {
		t.Fatal(err)
	}
	r.Layout = l
	if o.Files {
		r.fileRegions(t, dir, dmaName)
	} else {
		r.memRegions(t)
	}
	r.guestRAM(t, o.GuestRAM)
	r.regs(t)
	r.Rebuild(t)
	return r
}

// fileRegions creates the regions as files in dir, the control region
// claimed.
func (r *Rig) fileRegions(t testing.TB, dir, dmaName string) {
	l, n := r.Layout, r.Layout.NumVFs
	r.BARPath = filepath.Join(dir, "bar")
	// Claimed as vhcrd serve claims it: the VF side (vfclient.AttachServing,
	// PFAlive) sees a PF that holds its regions.
	own, err := bar.Own(r.BARPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Release() })
	b, _, err := bar.CreateFile(r.BARPath, l.ControlSize())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for i := range n {
		vb, _, err := bar.CreateFileLazy(wire.VFBARPath(r.BARPath, i), l.VFBARSize)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { vb.Close() })
		r.VFBARs = append(r.VFBARs, vb)
	}
	d, _, err := bar.CreateFile(dmaName, l.DMASize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	r.BAR, r.DMA = b, d
}

// memRegions makes the regions on the heap.
func (r *Rig) memRegions(t testing.TB) {
	l, n := r.Layout, r.Layout.NumVFs
	b, err := bar.NewMem("bar", l.ControlSize())
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		vb, err := bar.NewMem("vf"+strconv.Itoa(i), l.VFBARSize)
		if err != nil {
			t.Fatal(err)
		}
		r.VFBARs = append(r.VFBARs, vb)
	}
	d, err := bar.NewMem("dma", l.DMASize)
	if err != nil {
		t.Fatal(err)
	}
	r.BAR, r.DMA = b, d
}

// guestRAM makes the guest RAM regions of the VFs sizes names.
func (r *Rig) guestRAM(t testing.TB, sizes map[int]int64) {
	for vf, size := range sizes {
		var m bar.Region
		var err error
		if size < 64<<20 {
			m, err = bar.NewMem("guest-ram-vf"+strconv.Itoa(vf), size)
		} else {
			// A large guest (q35 splits RAM from 0xb0000000 bytes): a
			// sparse file, mapped lazily, as vhcrd maps a guest's RAM.
			m, err = guestFile(t, vf, size)
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.GuestRAM == nil {
			r.GuestRAM = map[int]bar.Region{}
		}
		r.GuestRAM[vf] = m
	}
}

// guestFile is a sparse RAM file of size bytes for VF vf, under /dev/shm
// where there is one, removed at the end of the test.
func guestFile(t testing.TB, vf int, size int64) (bar.Region, error) {
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "vhcrtest-guest")
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	f, _, err := bar.CreateFileLazy(filepath.Join(dir, "ram"+strconv.Itoa(vf)), size)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { f.Close() })
	return f, nil
}

// unmapped hides a region's mapping.
type unmapped struct{ bar.Region }

func (unmapped) Bytes() ([]byte, error) { return nil, bar.ErrNotMapped }

// Rebuild makes a new PF over the rig's regions (a PF restart).
func (r *Rig) Rebuild(t testing.TB) {
	t.Helper()
	h, err := hca.New(r.Config, r.Layout.NumVFs)
	if err != nil {
		t.Fatal(err)
	}
	d := r.DMA
	if r.opts.UnmappedDMA {
		d = unmapped{d}
	}
	log := r.opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if r.opts.State && r.StateFile == nil {
		if r.StateFile, err = bar.NewMem("pfstate", master.StateFileSize(r.Layout, h.Res.Config().EQsPerVF)); err != nil {
			t.Fatal(err)
		}
	}
	pf, err := master.New(master.Options{BAR: r.BAR, VFBARs: r.VFBARs, GuestRAM: r.GuestRAM, DMA: d, Layout: r.Layout, HCA: h, Idle: r.opts.Idle, Trace: r.opts.Trace, Logger: log, Interrupts: r.opts.Interrupts, State: r.StateFile})
	if err != nil {
		t.Fatal(err)
	}
	r.HCA, r.PF = h, pf
}

// SetLogger sends the log of the PFs Rebuild makes to l.
func (r *Rig) SetLogger(l *slog.Logger) { r.opts.Logger = l }

// Start runs the poller until the test ends (or Stop).
func (r *Rig) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- r.PF.Run(ctx) }()
	t.Cleanup(func() { r.Stop(t) })
	// Wait until the poller serves, so that requests (PF.Do) made by the
	// test from now on run on it and not beside its start.
	for {
		if v, _ := r.BAR.Load32(wire.HdrPFState); v == wire.PFStateServing {
			return
		}
		select {
		case err := <-r.done:
			r.cancel = nil
			t.Fatalf("poller returned before serving: %v", err)
		default:
			runtime.Gosched()
		}
	}
}

// Stop stops the poller and waits for it.
func (r *Rig) Stop(t testing.TB) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("poller: %v", err)
	}
	r.cancel = nil
}

// VF opens VF i with timeouts short enough that a test that goes wrong ends.
func (r *Rig) VF(t testing.TB, i int) *vfclient.VF {
	t.Helper()
	var v *vfclient.VF
	var err error
	if ram, ok := r.GuestRAM[i]; ok {
		v, err = vfclient.NewGuestVF(r.BAR, r.VFBARs[i], ram, r.Layout, i)
	} else {
		v, err = vfclient.NewVF(r.BAR, r.VFBARs[i], r.DMA, r.Layout, i)
	}
	if err != nil {
		t.Fatal(err)
	}
	v.Timeouts = vfclient.Timeouts{Sync: time.Second, Offline: 10 * time.Second, Comm: 10 * time.Second, Post: 10 * time.Second}
	return v
}

// InitVF opens and brings up VF i.
func (r *Rig) InitVF(t testing.TB, i int) *vfclient.VF {
	t.Helper()
	v := r.VF(t, i)
	if err := v.Init(context.Background()); err != nil {
		t.Fatalf("VF %d init: %v", i, err)
	}
	return v
}

// regs opens every VF's slave_write and slave_read.
func (r *Rig) regs(t testing.TB) {
	t.Helper()
	n := r.Layout.NumVFs
	r.sw, r.sr = make([]bar.Reg, n), make([]bar.Reg, n)
	for i := range n {
		var err error
		if r.sw[i], err = bar.NewReg(r.VFBARs[i], mlx4.CommSlaveWrite); err != nil {
			t.Fatal(err)
		}
		if r.sr[i], err = bar.NewReg(r.VFBARs[i], mlx4.CommSlaveRead); err != nil {
			t.Fatal(err)
		}
	}
}

// SlaveWrite is VF i's slave_write register.
func (r *Rig) SlaveWrite(i int) bar.Reg { return r.sw[i] }

// SlaveRead is VF i's slave_read register.
func (r *Rig) SlaveRead(i int) bar.Reg { return r.sr[i] }

// Write posts comm command cmd for VF i with the next toggle, as a VF
// does, and does not wait.
func (r *Rig) Write(i int, cmd mlx4.CommCmd, param uint16) {
	r.toggles[i] ^= 1
	r.sw[i].Store(mlx4.CommWord(r.toggles[i], cmd, param))
}

// SetToggle makes t the toggle of VF i's last Write (after a test rewrote
// the registers, as sync_toggles does).
func (r *Rig) SetToggle(i int, t uint32) { r.toggles[i] = t & 1 }

// Acked reports whether the PF acknowledged VF i's last Write.
func (r *Rig) Acked(i int) bool { return r.sr[i].Load()>>mlx4.CommToggleShift == r.toggles[i] }

// VHCRAddr is the DMA-region offset of VF i's vHCR (page 0 of its window,
// where vfclient.VF and the rig's tests put it).
func (r *Rig) VHCRAddr(i int) int64 { return r.Layout.DMABase + int64(i)*r.Layout.Window }

// SetVHCR writes h into VF i's vHCR.
func (r *Rig) SetVHCR(t testing.TB, i int, h mlx4.VHCR) {
	t.Helper()
	var img [mlx4.VHCRSize]byte
	h.Encode(&img)
	r.SetVHCRImage(t, i, img)
}

// SetVHCRImage writes a raw image into VF i's vHCR.
func (r *Rig) SetVHCRImage(t testing.TB, i int, img [mlx4.VHCRSize]byte) {
	t.Helper()
	if _, err := r.DMA.WriteAt(img[:], r.VHCRAddr(i)); err != nil {
		t.Fatal(err)
	}
}

// VHCR reads VF i's vHCR image.
func (r *Rig) VHCR(t testing.TB, i int) [mlx4.VHCRSize]byte {
	t.Helper()
	var img [mlx4.VHCRSize]byte
	if _, err := r.DMA.ReadAt(img[:], r.VHCRAddr(i)); err != nil {
		t.Fatal(err)
	}
	return img
}
