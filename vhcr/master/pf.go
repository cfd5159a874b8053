package master

import (
	"errors"
	"fmt"
	"github.com/vhcrd/vhcrd/vhcr"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/restrack"
)

// EventSink delivers EQEs to VFs: the software HCA, which models EQs.
// Without one, commands with the 'e' bit are refused.
type EventSink interface {
	// HasEQ reports whether VF vf has an EQ in HW state mapped for
	// eventType (0x0a: command completions).
	HasEQ(vf int, eventType uint8) bool
	// PostEQE writes eqe to the EQ VF vf mapped for eventType. It never
	// blocks; a full EQ is counted as an overrun and reported as an error.
	PostEQE(vf int, eventType uint8, eqe *[32]byte) error
}

// FunctionResetter releases every resource a VF holds (RESET, FLR, protocol
// violations), in mlx4's cleanup order.
type FunctionResetter interface {
	ResetFunction(vf int) restrack.Released
}

// Options configure a PF.
type Options struct {
	BAR    bar.Region // the comm pages (and the header)
	DMA    bar.Region // the region holding the DMA windows; may be BAR
	Layout vhcr.Layout
	HCA    *hca.HCA
	Events EventSink    // nil: the HCA if it implements EventSink
	Logger *slog.Logger // nil: slog.Default()
}

// PF is the master side of the comm channel for all VFs of one region.
type PF struct {
	lay    vhcr.Layout
	bar    bar.Region
	space  *dma.Space
	hca    *hca.HCA
	table  *Table
	events EventSink
	reset  FunctionResetter
	stats  *Stats
	log    *slog.Logger
	limit  rateLimiter
	vfs    []vfState

	// shadows: the only copies of VF data the PF validates and uses
	shadow [mlx4.VHCRSize]byte // the vHCR where the window is not mapped
	inbox  [mlx4.MailboxSize]byte
	outbox [mlx4.MailboxSize]byte
	cmd    mlx4.Cmd
	eqe    [mlx4.EQESize]byte

	next     int
	doorbell *uint32 // nil where the region is not shared memory
	sleeping *uint32
	pfState  bar.Reg

	// requests from other goroutines, run by the poller between scans
	mu       sync.Mutex
	reqs     []func()
	pending  atomic.Uint32
	running  atomic.Bool
	stopping atomic.Bool
	scans    uint64
}

type vfState struct {
	sw, sr, caps, flags bar.Reg // comm page registers
	persist             [4]bar.Reg
	win                 *dma.Window
	lastWord            uint32 // slave_write as last seen
	ack                 uint32 // toggle last acknowledged: 0 or ToggleBit
	lastCmd             vhcr.CommCmd
	active              bool
	vhcr                uint64
	// vhcrBox is the vHCR's page, checked once at VHCR_EN (4 KiB aligned,
	// inside the window, readable and writable); vhcrMem is the vHCR in it
	// where the window is mapped, so that VHCR_POST reads and writes it
	// with plain loads and stores, else nil (vhcrBox's copies then).
	vhcrBox dma.Mailbox
	vhcrMem *[mlx4.VHCRSize]byte
}

// mapVHCR checks the vHCR's page at st.vhcr and keeps it for VHCR_POST.
func (st *vfState) mapVHCR() error {
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

// New sets up the PF over the regions: it validates sizes, restores per-VF
// state a previous PF left in the header when the layout matches (so posted
// commands survive a PF restart), otherwise clears the comm registers, and
// marks every comm page offline until Run starts.
func New(o Options) (*PF, error) {
	l := o.Layout
	if o.BAR.Size() < l.BARSize() {
		return nil, fmt.Errorf("%s: %w: %d VFs need %#x bytes, the region has %#x", o.BAR.Name(), bar.ErrTooSmall, l.NumVFs, l.BARSize(), o.BAR.Size())
	}
	if o.DMA.Size() < l.DMASize {
		return nil, fmt.Errorf("%s: %w: %d windows of %#x from %#x need %#x bytes, the region has %#x",
			o.DMA.Name(), bar.ErrTooSmall, l.NumVFs, l.Window, l.DMABase, l.DMASize, o.DMA.Size())
	}
	if o.HCA == nil || o.HCA.NumVFs != l.NumVFs {
		return nil, errors.New("vhcr: the HCA model must be built for the layout's VF count")
	}
	space, err := dma.NewSpace(o.DMA, l.DMABase, l.Window, l.NumVFs)
	if err != nil {
		return nil, err
	}
	p := &PF{lay: l, bar: o.BAR, space: space, hca: o.HCA, events: o.Events, log: o.Logger}
	p.table = NewTable()
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.events == nil {
		if s, ok := any(o.HCA).(EventSink); ok {
			p.events = s
		}
	}
	if r, ok := any(o.HCA).(FunctionResetter); ok {
		p.reset = r
	}
	if d, ok := any(o.HCA).(interface {
		SetDoorbellReader(func(vf, eqn int) (uint32, bool))
	}); ok {
		d.SetDoorbellReader(p.eqDoorbell)
	}
	p.stats = newStats(l.NumVFs, p.table.NumOps())
	p.limit = rateLimiter{perSec: 10}
	if p.pfState, err = bar.NewReg(o.BAR, vhcr.HdrPFState); err != nil {
		return nil, err
	}
	old, oldErr := vhcr.ReadLayout(o.BAR)
	restore := oldErr == nil && old == l
	p.vfs = make([]vfState, l.NumVFs)
	for i := range p.vfs {
		st := &p.vfs[i]
		page := l.CommPage(i)
		for _, x := range []struct {
			r   *bar.Reg
			off int64
		}{{&st.sw, page + vhcr.RegSlaveWrite}, {&st.sr, page + vhcr.RegSlaveRead}, {&st.caps, page + vhcr.RegCaps}, {&st.flags, page + vhcr.RegFlags}} {
			if *x.r, err = bar.NewReg(o.BAR, x.off); err != nil {
				return nil, err
			}
		}
		for k := range st.persist {
			if st.persist[k], err = bar.NewReg(o.BAR, vhcr.HdrVFState+int64(i)*vhcr.HdrVFStateSize+int64(4*k)); err != nil {
				return nil, err
			}
		}
		st.win, _ = space.Window(i)
		st.flags.Store(vhcr.FlagsOffline)
		st.caps.Store(vhcr.CapsVFReset)
		if restore && p.restoreVF(i) {
			continue
		}
		st.sw.Store(0)
		st.sr.Store(0)
		st.lastWord, st.ack, st.lastCmd, st.active, st.vhcr = 0, 0, vhcr.CommReset, false, 0
		st.vhcrBox, st.vhcrMem = dma.Mailbox{}, nil
		p.persistVF(i)
	}
	if err := l.Write(o.BAR); err != nil {
		return nil, err
	}
	if l.Doorbell && o.BAR.Shared() {
		p.doorbell, _ = bar.Word(o.BAR, vhcr.HdrDoorbell)
		p.sleeping, _ = bar.Word(o.BAR, vhcr.HdrPFSleeping)
	}
	gen, _ := o.BAR.Load32(vhcr.HdrPFGen)
	_ = o.BAR.Store32(vhcr.HdrPFGen, gen+1)
	p.pfState.Store(vhcr.PFStateInit)
	if restore {
		p.log.Info("restored comm channel state from the previous PF", "vfs", l.NumVFs, "generation", gen+1)
	}
	return p, nil
}

// restoreVF adopts the state a previous PF persisted for VF i, if it is
// consistent; the acknowledged toggle is the one in slave_read.
func (p *PF) restoreVF(i int) bool {
	st := &p.vfs[i]
	w0 := st.persist[0].Load()
	if w0&(1<<31) == 0 {
		return false
	}
	cmd := vhcr.CommCmd(w0 & 0xff)
	addr := uint64(st.persist[2].Load())<<32 | uint64(st.persist[3].Load())
	switch cmd {
	case vhcr.CommReset, vhcr.CommVHCR0, vhcr.CommVHCR1, vhcr.CommVHCR2:
	case vhcr.CommVHCREn, vhcr.CommVHCRPost:
		st.vhcr = addr
		if st.mapVHCR() != nil {
			return false
		}
	default:
		return false
	}
	active := w0&(1<<8) != 0
	if active && p.hca.ActivateVF(i) != nil {
		return false
	}
	st.lastCmd, st.active, st.vhcr = cmd, active, addr
	st.ack = st.sr.Load() & vhcr.ToggleBit
	w := st.sw.Load()
	if w&vhcr.ToggleBit == st.ack {
		st.lastWord = w // idle
	} else {
		st.lastWord = ^w // a command was posted and not acknowledged: serve it
	}
	return true
}

func (p *PF) persistVF(i int) {
	st := &p.vfs[i]
	w0 := uint32(1)<<31 | uint32(st.lastCmd)
	if st.active {
		w0 |= 1 << 8
	}
	st.persist[0].Store(w0)
	st.persist[1].Store(st.ack)
	st.persist[2].Store(uint32(st.vhcr >> 32))
	st.persist[3].Store(uint32(st.vhcr))
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

// Table returns the command table.
func (p *PF) Table() *Table { return p.table }

// Layout returns the wire layout served.
func (p *PF) Layout() vhcr.Layout { return p.lay }

// scan serves every VF with a new slave_write once, round-robin from a start
// that advances every scan. It reports whether any VF had work.
func (p *PF) scan() bool {
	n := len(p.vfs)
	i := p.next
	busy := false
	for k := 0; k < n; k++ {
		st := &p.vfs[i]
		if w := st.sw.Load(); w != st.lastWord {
			p.serve(i, w)
			busy = true
		}
		if i++; i == n {
			i = 0
		}
	}
	if p.next++; p.next == n {
		p.next = 0
	}
	return busy
}

// peek reports whether any VF has written slave_write since last served.
func (p *PF) peek() bool {
	for i := range p.vfs {
		if p.vfs[i].sw.Load() != p.vfs[i].lastWord {
			return true
		}
	}
	return false
}

// serve handles a changed slave_write word w of VF i (mlx4_master_do_cmd).
func (p *PF) serve(i int, w uint32) {
	st := &p.vfs[i]
	if w&^vhcr.ToggleBit == vhcr.VHCRPostWord && w&vhcr.ToggleBit != st.ack && st.lastCmd == vhcr.CommVHCRPost && p.postFast(i, st, w) {
		return
	}
	// slave_read is the reference, as in mlx4's scan: if it no longer holds
	// our last acknowledgement, the VF rewrote its registers (sync_toggles
	// zeroes both after a misbehaved predecessor); resynchronise from it.
	sr := st.sr.Load()
	resynced := sr&vhcr.ToggleBit != st.ack
	if resynced {
		st.ack = sr & vhcr.ToggleBit
		p.stats.Resyncs[i]++
	}
	if w&vhcr.ToggleBit == st.ack {
		st.lastWord = w
		if resynced {
			return // nothing pending after all
		}
		if w == 0 && sr == 0 {
			// Both registers zeroed while our toggle was already 0.
			p.stats.Resyncs[i]++
			return
		}
		// slave_write rewritten without a toggle flip: a VF that flipped
		// twice, or wrote over a pending command.
		p.violation(i, st.ack, ResetToggle, "slave_write rewritten without a toggle flip", w)
		return
	}
	st.lastWord = w
	toggle := w & vhcr.ToggleBit
	cmd, param := vhcr.SplitCommWord(w)
	if w&^vhcr.SlaveWriteValid != 0 {
		p.violation(i, toggle, ResetUnknownCmd, "reserved bits set in slave_write", w)
		return
	}
	if st.lastCmd == vhcr.CommFLR && cmd != vhcr.CommReset {
		// FLR in progress: drop without acknowledgement (mlx4 §1.7 step 4).
		p.stats.Dropped[i]++
		return
	}
	reply := toggle
	switch cmd {
	case vhcr.CommReset:
		if st.lastCmd == vhcr.CommFLR {
			// RESET during FLR: acknowledged without the version and without
			// cleanup (the FLR released everything).
			st.lastCmd, st.active, st.vhcr = vhcr.CommReset, false, 0
		} else {
			p.resetFunction(i, ResetByVF)
			reply |= vhcr.CommVersion
		}
	case vhcr.CommVHCR0:
		if st.lastCmd != vhcr.CommReset {
			p.violation(i, toggle, ResetSequence, "VHCR0 not after RESET", w)
			return
		}
		st.vhcr = uint64(param) << 48
	case vhcr.CommVHCR1:
		if st.lastCmd != vhcr.CommVHCR0 {
			p.violation(i, toggle, ResetSequence, "VHCR1 not after VHCR0", w)
			return
		}
		st.vhcr |= uint64(param) << 32
	case vhcr.CommVHCR2:
		if st.lastCmd != vhcr.CommVHCR1 {
			p.violation(i, toggle, ResetSequence, "VHCR2 not after VHCR1", w)
			return
		}
		st.vhcr |= uint64(param) << 16
	case vhcr.CommVHCREn:
		if st.lastCmd != vhcr.CommVHCR2 {
			p.violation(i, toggle, ResetSequence, "VHCR_EN not after VHCR2", w)
			return
		}
		st.vhcr |= uint64(param)
		// Stricter than mlx4, which finds a bad address at the first
		// VHCR_POST: the vHCR must be 4 KiB aligned (ACCESS_MEM's rule) and
		// inside the window now.
		if err := st.mapVHCR(); err != nil {
			p.violation(i, toggle, ResetVHCRAddress, "vHCR address: "+err.Error(), w)
			return
		}
		// mlx4_master_activate_admin_state: VST VLAN and spoof-checked MAC
		// registered; no room resets the VF, as mlx4 does.
		if err := p.hca.ActivateVF(i); err != nil {
			p.violation(i, toggle, ResetAdminState, err.Error(), w)
			return
		}
		st.active = true
	case vhcr.CommVHCRPost:
		if st.lastCmd != vhcr.CommVHCREn && st.lastCmd != vhcr.CommVHCRPost {
			p.violation(i, toggle, ResetSequence, "VHCR_POST before VHCR_EN", w)
			return
		}
		if err := p.post(i, toggle); err != nil {
			p.violation(i, toggle, ResetDMA, err.Error(), w)
		}
		return
	default:
		p.violation(i, toggle, ResetUnknownCmd, "unknown comm command", w)
		return
	}
	p.acknowledge(i, cmd, reply)
}

// acknowledge records cmd as the VF's last command and writes the reply.
func (p *PF) acknowledge(i int, cmd vhcr.CommCmd, reply uint32) {
	st := &p.vfs[i]
	changed := st.lastCmd != cmd
	st.lastCmd = cmd
	st.ack = reply & vhcr.ToggleBit
	st.sr.Store(reply)
	if changed {
		p.persistVF(i)
	}
}

// violation resets VF i's channel (releasing its resources) and acknowledges
// with bit 17 so that the VF resets itself at once instead of timing out.
func (p *PF) violation(i int, toggle uint32, why ResetReason, msg string, word uint32) {
	p.resetFunction(i, why)
	st := &p.vfs[i]
	st.lastCmd = vhcr.CommReset
	st.ack = toggle
	st.sr.Store(toggle | vhcr.InternalErrBit)
	p.persistVF(i)
	if p.limit.allow() {
		p.log.Warn("resetting VF after a comm channel violation", "vf", i, "reason", why.String(), "detail", msg, "slave_write", fmt.Sprintf("%#08x", word))
	}
}

// resetFunction releases VF i's resources and returns it to RESET.
func (p *PF) resetFunction(i int, why ResetReason) {
	st := &p.vfs[i]
	if p.reset != nil {
		p.reset.ResetFunction(i)
	}
	st.active, st.vhcr, st.vhcrBox, st.vhcrMem = false, 0, dma.Mailbox{}, nil
	st.lastCmd = vhcr.CommReset
	p.stats.countReset(i, why)
}

// EventTypeCmd is the event type of command completions.
const EventTypeCmd = mlx4.EventCmd

// completionEQE reports a command's completion to VF i: the VF's token, the
// status and the immediate output (the seed's rule; mlx4 leaves both zero).
func (p *PF) completionEQE(i int, token uint16, status mlx4.Status, imm bool, out uint64) {
	if !imm {
		out = 0
	}
	mlx4.CompletionEQE(&p.eqe, token, status, out)
	if err := p.events.PostEQE(i, EventTypeCmd, &p.eqe); err != nil {
		if p.limit.allow() {
			p.log.Warn("completion EQE not delivered", "vf", i, "err", err)
		}
		return
	}
	p.stats.EQEs++
}

// checkFlags answers VF reset requests: a VF in its error state toggles
// FLAGS bit 16; the PF resets the function and copies bit 16 into bit 8
// (the handshake mlx4_reset_slave waits for, up to 10 s).
func (p *PF) checkFlags() {
	for i := range p.vfs {
		st := &p.vfs[i]
		f := st.flags.Load()
		req := f&vhcr.FlagsResetReq != 0
		if req == (f&vhcr.FlagsResetAck != 0) {
			continue
		}
		p.resetFunction(i, ResetRequest)
		p.persistVF(i)
		f &^= vhcr.FlagsResetAck
		if req {
			f |= vhcr.FlagsResetAck
		}
		st.flags.Store(f)
	}
}

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

// eqDoorbell reads VF vf's EQ doorbell word for eqn (the HCA asks when an
// EQ looks full).
func (p *PF) eqDoorbell(vf, eqn int) (uint32, bool) {
	if vf < 0 || vf >= len(p.vfs) || eqn < 0 || eqn >= vhcr.MaxEQDoorbells {
		return 0, false
	}
	v, err := p.bar.Load32(p.lay.CommPage(vf) + vhcr.RegEQDoorbell + 4*int64(eqn))
	return v, err == nil
}
