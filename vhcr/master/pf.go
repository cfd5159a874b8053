package master

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// Options configure a PF.
type Options struct {
	BAR bar.Region // the control region: the header
	// VFBARs are the VF BAR regions, one per VF of the layout: the comm
	// page at 0, the EQ doorbells at mlx4's UAR offsets.
	VFBARs []bar.Region
	DMA    bar.Region // the region holding the DMA windows; may be BAR
	// GuestRAM are the VFs whose DMA window is a guest's RAM file instead
	// (dma.Space.UseGuestRAM: IOVA = guest-physical address, q35's split).
	GuestRAM map[int]bar.Region
	Layout   wire.Layout
	HCA      *hca.HCA
	Logger   *slog.Logger // nil: slog.Default()
	Idle     Idle         // the poller's idle policy; zero fields: DefaultIdle's
	// Trace is the command trace the poller writes (NewTrace), or nil:
	// off. The poller records into it always, read or not (trace.go).
	Trace *trace.Ring
	// Interrupts raises the VFs' MSI-X vectors when their armed EQs get
	// EQEs (irq.Set; hca/irq.go), or nil: no interrupts.
	Interrupts hca.Interrupts
	// State is the PF-private state file (StateFileSize bytes; pfstate.go)
	// that makes the model, pending commands and completions survive the
	// PF's death; nil turns that persistence off (for tests and for the
	// cost measurement only: the channel state alone is then restored).
	State bar.Region
	// Faults are fault rules (package faultinj) armed from the start, as
	// the configuration's faults section gives them; AddFault arms more.
	Faults []faultinj.Spec
}

// PF is the master side of the comm channel for all VFs of one region.
type PF struct {
	lay   wire.Layout
	bar   bar.Region
	dma   bar.Region
	space *dma.Space
	hca   *hca.HCA
	table *Table
	stats *Stats
	log   *slog.Logger
	limit rateLimiter
	idle  Idle
	vfs   []vfChannel

	// when the idle poller last did its chores and how often a busy one
	// does them (Idle.FutexTimeout), in tick units
	choresAt, choresEvery uint64

	// the command trace (trace.go): the ring, the poller's latest clock
	// reading, and a completion EQE held until its command is recorded
	trace   *trace.Ring
	dpath   dataPath // the data path's sweep clock (datapath.go)
	now     uint64
	holdEQE bool
	held    heldEQE

	// shadows: the only copies of VF data the PF validates and uses
	shadow [mlx4.VHCRSize]byte // the vHCR where the window is not mapped
	inbox  [mlx4.MailboxSize]byte
	outbox [mlx4.MailboxSize]byte
	// the command in flight's vHCR words (its journal intent keeps them)
	// and its outbox page, checked writable where the command has one
	words   [4]uint64
	outPage dma.Mailbox
	cmd     hca.Cmd
	eqe     [mlx4.EQESize]byte

	next     int
	doorbell *uint32 // nil where the region is not shared memory
	sleeping *uint32
	pfState  bar.Reg

	// requests from other goroutines, run by the poller between scans
	mu       sync.Mutex
	reqs     []func()
	dones    []chan struct{} // closed once the requests' effects are checkpointed
	pending  atomic.Uint32
	running  atomic.Bool
	stopping atomic.Bool
	guests   atomic.Int32  // guests' VFs attached (GuestAttached)
	beat     atomic.Uint64 // Beats: the poller's scan count at its last checkpoint
	scans    uint64
	gen      uint32  // PF_GEN of this PF: the generation its state records are written under
	journal  journal // the state file's (fileJournal), else noJournal
	// stateCause is why the state file was not trusted ("" if it was)
	stateCause string
	// vfsBefore is the VF count of the previous PF's layout where it
	// differs from this one's (0: the same, or none): an operator's change,
	// which restore explains in one line instead of as distrust
	vfsBefore int

	// injected faults (faults.go): the rules; fmask, the points where the
	// PF must ask them (the fast path's one check), farmed, the rules'
	// own; the VFs offline, the timers, the rule acting on the completion
	// EQE of the command in flight, the now rules waiting for Run, the
	// MSI-X delivery the PF was given and whether it is wrapped, and the
	// fault log's limit
	faults     *faultinj.Set
	fmask      faultinj.Point
	farmed     faultinj.Point
	cqeHooked  bool // the data path's fault hook is installed (faults_dp.go)
	foffline   int
	ftimers    []faultTimer
	eqeFault   *faultinj.Rule
	fnow       []*faultinj.Rule
	irqs       hca.Interrupts
	irqWrapped bool
	flimit     rateLimiter
	// unanswered: some VF has a command left unanswered on purpose, whose
	// slave_read scan watches (unanswered.go)
	unanswered bool
}

// vfChannel is the PF's side of one VF's comm channel: its registers, the
// channel state of mlx4_master_do_cmd, the vHCR's address and mapping, the
// completion counters. (The firmware's per-VF state is hca.VFState, the
// tracker's per-VF objects and quotas restrack's vfResources.)
type vfChannel struct {
	// bar is the VF's BAR region; after it shrank under the PF, a private
	// page that no VF writes (fault.go: the VF is no longer served)
	bar     bar.Region
	barLost bool
	// lostBAR is the VF's own BAR region while barLost: an FLR maps it
	// again once its file is whole (flags.go: PF.restoreBAR).
	lostBAR             bar.Region
	sw, sr, caps, flags bar.Reg // comm page registers
	win                 *dma.Window
	lastWord            uint32 // slave_write as last seen
	ack                 uint32 // toggle last acknowledged: 0 or mlx4.CommToggle
	lastCmd             mlx4.CommCmd
	active              bool
	vhcr                uint64
	// persist holds the channel record's words: one slot in the header,
	// two in the state file (written alternately, so that a torn write
	// leaves the other; persist.go). nslot says how many; slot is the one
	// the next write goes to, seq the last written record's sequence.
	persist     [pfstate.SlotsPerVF]recordRegs
	nslot, slot int
	seq         uint32

	// vhcrBox is the vHCR's page, checked once at VHCR_EN (4 KiB aligned,
	// inside the window, readable and writable); vhcrMem is the vHCR in it
	// where the window is mapped, so that VHCR_POST reads and writes it
	// with plain loads and stores, else nil (vhcrBox's copies then).
	vhcrBox dma.Mailbox
	vhcrMem *[mlx4.VHCRSize]byte
	// unbacked: the window was lost to a shrunk DMA region (fault.go);
	// it is not touched until VHCR_EN finds it backed again.
	unbacked bool
	// completions is how 'e' commands complete (complete.go); cmdToken is
	// mlx4's event_eq[CMD].token, the token of the last completion EQE
	// sent the mlx4 way, zeroed with the channel (resetFunction).
	completions Completions
	cmdToken    uint16
	lastMlx4    bool // the last 'e' command went mlx4's way (Channel.Mlx4)
	// rec is the record last written to persist (valid if recOK).
	rec   record
	recOK bool
	// mirror is the header's copy of the record's first word where the
	// record is in the state file (else the zero Reg, not written).
	mirror bar.Reg
	// refused is the last VHCR_POST answered with a non-OK status (Info).
	refused Refusal
	// fault is the VF's injected-fault state (faults.go).
	fault faultVF
	// unanswered: the command taken in is left unanswered on purpose and
	// slave_read holds srMark, the PF's store with
	// pfstate.SlaveReadUnanswered; resynced: the VF rewrote slave_read
	// since (unanswered.go), resync takes its toggle.
	unanswered, resynced bool
	srMark               uint32
}

// mapBAR points the VF's comm registers at offset 0 of r.
func (st *vfChannel) mapBAR(r bar.Region) error {
	st.bar = r
	var err error
	for _, x := range []struct {
		r   *bar.Reg
		off int64
	}{{&st.sw, mlx4.CommSlaveWrite}, {&st.sr, mlx4.CommSlaveRead}, {&st.caps, mlx4.MLX4_COMM_CHAN_CAPS}, {&st.flags, mlx4.MLX4_COMM_CHAN_FLAGS}} {
		if *x.r, err = bar.NewReg(r, x.off); err != nil {
			return err
		}
	}
	return nil
}

// mapVHCR checks the vHCR's page at st.vhcr and keeps it for VHCR_POST.
func (st *vfChannel) mapVHCR() error {
	st.vhcrBox, st.vhcrMem = dma.Mailbox{}, nil
	box, err := st.win.Mailbox(st.vhcr, dma.ReadWrite)
	if err != nil {
		return err
	}
	st.vhcrBox = box
	if m := box.Mapped(); m != nil {
		st.vhcrMem = (*[mlx4.VHCRSize]byte)(m[:mlx4.VHCRSize])
	}
	return nil
}

// New sets up the PF over the regions: it validates sizes, restores the
// per-VF state a previous PF left in the header where it can be trusted (so
// posted commands survive a PF restart), resets with bit 17 every VF whose
// state cannot be (persist.go), and marks every comm page offline until Run
// starts.
func New(o Options) (*PF, error) {
	if err := checkRegions(o); err != nil {
		return nil, err
	}
	p, err := newPF(o)
	if err != nil {
		return nil, err
	}
	var ps *pstate
	if o.State != nil {
		if ps, err = openState(o.State, o.Layout, o.HCA.Res.Config().EQsPerVF); err != nil {
			return nil, err
		}
	}
	if err := p.mapVFs(o, ps); err != nil {
		return nil, err
	}
	gen, _ := o.BAR.Load32(wire.HdrPFGen)
	pending, err := p.loadPrevious(o, ps, gen)
	if err != nil {
		return nil, err
	}
	// Every record is written under the new generation, then PF_GEN is
	// advanced (a PF killed in between leaves records a restart trusts).
	p.gen = gen + 1
	restored := p.restore(o.BAR, o.Layout, gen)
	if err := p.writeHeader(o, ps); err != nil {
		return nil, err
	}
	if ps != nil {
		p.hca.SetEQPositions(ps.setPos)
		p.attachDataPath(ps)
		ps.prefault()
		p.journal = newFileJournal(p, ps, p.journal.points())
		p.journal.Checkpoint() // the journal starts empty from here
		for i := range p.vfs {
			p.resume(i, pending, ps)
		}
	}
	p.hca.SetTunnelWake(p.wake) // a MAD for a VF's proxy QP queued by the wire's goroutines
	p.pfState.Store(wire.PFStateInit)
	for _, s := range o.Faults {
		if _, err := p.AddFault(s); err != nil {
			return nil, err
		}
	}
	if restored > 0 {
		p.log.Info("restored comm channel state from the previous PF", "vfs", restored, "generation", p.gen)
	}
	return p, nil
}

// checkRegions refuses regions too small for the layout and an HCA model
// built for another VF count.
func checkRegions(o Options) error {
	l := o.Layout
	if o.BAR.Size() < l.ControlSize() {
		return fmt.Errorf("%s: %w: the control region needs %#x bytes, it has %#x", o.BAR.Name(), bar.ErrTooSmall, l.ControlSize(), o.BAR.Size())
	}
	if len(o.VFBARs) != l.NumVFs {
		return fmt.Errorf("master: %d VF BAR regions for %d VFs", len(o.VFBARs), l.NumVFs)
	}
	for i, r := range o.VFBARs {
		if r == nil || r.Size() < l.VFBARSize {
			n := int64(0)
			if r != nil {
				n = r.Size()
			}
			return fmt.Errorf("VF %d: %w: its BAR region needs %#x bytes, it has %#x", i, bar.ErrTooSmall, l.VFBARSize, n)
		}
	}
	if o.DMA.Size() < l.DMASize {
		return fmt.Errorf("%s: %w: %d windows of %#x from %#x need %#x bytes, the region has %#x",
			o.DMA.Name(), bar.ErrTooSmall, l.NumVFs, l.Window, l.DMABase, l.DMASize, o.DMA.Size())
	}
	if o.HCA == nil || o.HCA.NumVFs != l.NumVFs {
		return errors.New("master: the HCA model must be built for the layout's VF count")
	}
	return nil
}

// newPF builds the PF over the DMA space and wires it and the HCA model to
// each other: the model takes the VFs' events and resets, reads the EQ
// doorbells through the PF, raises the interrupts and, with a trace on,
// reports every EQE it posts.
func newPF(o Options) (*PF, error) {
	l := o.Layout
	space, err := dma.NewSpace(o.DMA, l.DMABase, l.Window, l.NumVFs)
	if err != nil {
		return nil, err
	}
	for vf, ram := range o.GuestRAM {
		if err := space.UseGuestRAM(vf, ram); err != nil {
			return nil, fmt.Errorf("VF %d: %w", vf, err)
		}
	}
	p := &PF{lay: l, bar: o.BAR, dma: o.DMA, space: space, hca: o.HCA, log: o.Logger, idle: o.Idle.withDefaults(), trace: o.Trace}
	p.table = NewTable()
	p.journal = &noJournal{k: &points{}}
	if p.log == nil {
		p.log = slog.Default()
	}
	if o.Interrupts != nil {
		o.HCA.SetInterrupts(o.Interrupts)
	}
	p.irqs = o.Interrupts
	p.faults = faultinj.NewSet(l.NumVFs)
	p.flimit = rateLimiter{perSec: 10}
	o.HCA.SetDoorbellReader(p.eqDoorbell)
	o.HCA.SetUARReader(p.uarWord) // the data path's doorbells (datapath.go)
	if o.Trace != nil {
		o.HCA.SetEQEObserver(p.eqePosted)
	}
	p.stats = newStats(l.NumVFs, p.table.NumOps())
	p.limit = rateLimiter{perSec: 10}
	if p.pfState, err = bar.NewReg(o.BAR, wire.HdrPFState); err != nil {
		return nil, err
	}
	return p, nil
}

// mapVFs maps every VF's comm registers, channel record and DMA window, and
// marks its comm page offline.
func (p *PF) mapVFs(o Options, ps *pstate) error {
	p.vfs = make([]vfChannel, o.Layout.NumVFs)
	for i := range p.vfs {
		if err := p.mapVF(o, ps, i); err != nil {
			return err
		}
	}
	return nil
}

func (p *PF) mapVF(o Options, ps *pstate, i int) error {
	st := &p.vfs[i]
	if err := st.mapBAR(o.VFBARs[i]); err != nil {
		return err
	}
	// The channel record: in the state file if there is one (the header's
	// first word then mirrors its last command for
	// vfclient.Attachment.ChannelUp, and is never read by a PF), else in the
	// header.
	var err error
	recR, recOff := o.BAR, wire.HdrVFRecord(i)
	st.nslot = 1
	if ps != nil {
		recR, recOff, st.nslot = o.State, ps.g.ChanSlot(i, 0), pfstate.SlotsPerVF
		if st.mirror, err = bar.NewReg(o.BAR, wire.HdrVFRecord(i)+pfstate.WordLastCmd); err != nil {
			return err
		}
	}
	for s := 0; s < st.nslot; s++ {
		if st.persist[s], err = mapRecord(recR, recOff+int64(s)*pfstate.RecordSize); err != nil {
			return err
		}
	}
	st.win, _ = p.space.Window(i)
	st.flags.Store(mlx4.CommFlagsOffline)
	st.caps.Store(mlx4.CommCapsVFReset)
	st.lastCmd = mlx4.MLX4_COMM_CMD_RESET
	if i < len(o.HCA.Funcs) {
		if st.completions, err = ParseCompletions(o.HCA.Funcs[i].Completions); err != nil {
			return fmt.Errorf("VF %d: %w", i, err)
		}
		st.lastMlx4 = st.completions == CompletionsMlx4
	}
	return nil
}

// loadPrevious notes the VF count the header last had and loads the state
// file written under generation gen; a state file not trusted leaves the HCA
// model fresh and nothing pending. It returns the commands pending at the
// previous PF's death.
func (p *PF) loadPrevious(o Options, ps *pstate, gen uint32) (*jrec, error) {
	if old, err := wire.ReadLayout(o.BAR); err == nil && old.NumVFs != o.Layout.NumVFs {
		p.vfsBefore = old.NumVFs
	}
	if ps == nil {
		return nil, nil
	}
	var pending *jrec
	if pending, p.stateCause = p.loadState(ps, o.Layout, gen); p.stateCause == "" {
		return pending, nil
	}
	if p.vfsBefore == 0 {
		p.log.Warn("PF state file not trusted: the VFs' objects are lost; resetting every VF that used its channel with bit 17", "file", o.State.Name(), "cause", p.stateCause)
	}
	if err := p.freshHCA(); err != nil {
		return nil, err
	}
	return nil, nil
}

// writeHeader formats the state file if it must be, writes every VF's
// record, the layout and the state version, maps the doorbell words and
// advances PF_GEN to p.gen.
func (p *PF) writeHeader(o Options, ps *pstate) error {
	l := o.Layout
	if ps != nil {
		if cause, fresh := ps.checkHeader(l); fresh || cause != "" {
			ps.format(l)
		}
	}
	if err := o.BAR.Store32(wire.HdrStateVer, wire.StateVersion); err != nil {
		return err
	}
	for i := range p.vfs {
		p.vfs[i].recOK = false
		p.persistVF(i)
	}
	if err := l.Write(o.BAR); err != nil {
		return err
	}
	if l.Through(o.BAR).Doorbell {
		p.doorbell, _ = bar.Word(o.BAR, wire.HdrDoorbell)
		p.sleeping, _ = bar.Word(o.BAR, wire.HdrPFSleeping)
	}
	if ps != nil {
		ps.setGen(p.gen) // before PF_GEN: a restart accepts PF_GEN or PF_GEN+1
	}
	return o.BAR.Store32(wire.HdrPFGen, p.gen)
}

// Stats returns a copy of the poller-owned counters, made by the poller
// between scans.
func (p *PF) Stats() *Stats {
	var s Stats
	if err := p.Do(func() { p.stats.copyTo(&s) }); err != nil {
		return newStats(len(p.vfs), p.stats.numOps) // the poller is stuck: report nothing rather than race
	}
	return &s
}

// PFState returns PF_STATE as this PF last wrote it in the header:
// wire.PFStateInit from New until Run starts the poller, PFStateServing
// while it serves, PFStateStopped once Run returned. Safe on any goroutine.
func (p *PF) PFState() uint32 {
	st := uint32(wire.PFStateStopped)
	// Guarded: a control region that shrank is the poller's to report (it
	// stops serving), not a SIGBUS in the caller.
	_ = bar.Guard(func() { st = p.pfState.Load() })
	return st
}

// Table returns the command table.
func (p *PF) Table() *Table { return p.table }

// Layout returns the wire layout served.
func (p *PF) Layout() wire.Layout { return p.lay }

// rateLimiter allows perSec log lines a second.
type rateLimiter struct {
	perSec int
	sec    int64
	n      int
}

func (r *rateLimiter) allow() bool {
	now := time.Now().Unix()
	if now != r.sec {
		r.sec, r.n = now, 0
	}
	r.n++
	return r.n <= r.perSec
}
