package hca

import (
	"fmt"
	"maps"
	"slices"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// An Image is the software HCA's state as plain values, for the PF's state
// file: the tracker's image and the firmware's State (QP, CQ, SRQ, MPT, MTT
// and EQ contexts and states, EQ producer and consumer positions and arm
// state, the ports' MAC and VLAN tables, each function's event mapping,
// port settings, vport and filters, counters' ports, multicast attachments
// and the flow-steering rule numbering). The live HCA holds the same
// values, so Image and Load are copies. Event counters and the
// configuration are not part of it: the first are metrics, the second is
// the restarted PF's own.
type Image struct {
	Res *restrack.Image
	State
}

// Image returns the HCA's state, sharing nothing with the live HCA. Only
// the poller calls it (as Exec).
func (h *HCA) Image() *Image {
	fw := h.fw
	s := State{MTT: make(map[uint64][]uint64, len(fw.mtt)), QPs: make(map[uint32]QPState, len(fw.qps)),
		CQs: make(map[uint32]CQState, len(fw.cqs)), SRQs: make(map[uint32]SRQState, len(fw.srqs)),
		MPTs: make(map[uint64]MPTState, len(fw.mpts)), EQs: make(map[uint64]EQState, len(fw.eqs)),
		Ports: slices.Clone(fw.ports), VFs: make([]VFState, len(fw.vfs)),
		CounterPort: maps.Clone(fw.counterPort), MCG: make(map[uint32][][16]byte, len(fw.mcg)), NextRegID: fw.nextRegID}
	for k, v := range fw.mtt {
		s.MTT[k] = slices.Clone(v)
	}
	for n, q := range fw.qps {
		s.QPs[n] = q.QPState
	}
	for n, c := range fw.cqs {
		s.CQs[n] = c.CQState
	}
	for n, r := range fw.srqs {
		s.SRQs[n] = r.SRQState
	}
	for id, m := range fw.mpts {
		s.MPTs[id] = m.MPTState
	}
	for id, e := range fw.eqs {
		es := e.EQState
		es.Pages = slices.Clone(es.Pages)
		s.EQs[id] = es
	}
	for i := range fw.vfs {
		s.VFs[i] = fw.vfs[i].VFState
	}
	for k, v := range fw.mcg {
		s.MCG[k] = slices.Clone(v)
	}
	return &Image{Res: h.Res.Image(), State: s}
}

// ErrImage is an image this HCA cannot load.
var ErrImage = fmt.Errorf("hca: image does not fit this HCA")

// Load replaces the HCA's state with im (an HCA built from the same
// configuration); window gives each VF's DMA window, which the EQs write
// through. Every firmware object must have its tracker object; an image
// that does not fit is refused with ErrImage and the HCA is unchanged.
//
// The stages: the image's shape and its tracker; a firmware with the
// HCA's wiring and nothing else (emptyFirmware); the firmware objects, each
// joined to its tracker object (imageLoad); the port and per-VF tables; the
// event counters carried over; the swap.
func (h *HCA) Load(im *Image, window func(vf int) *dma.Window) error {
	if im.Res == nil || len(im.Ports) != len(h.fw.ports) || len(im.VFs) != len(h.fw.vfs) {
		return fmt.Errorf("%w: %d ports, %d VFs", ErrImage, len(im.Ports), len(im.VFs))
	}
	tr, err := restrack.New(h.Res.Config())
	if err != nil {
		return err
	}
	if err := tr.Load(im.Res); err != nil {
		return fmt.Errorf("%w: %w", ErrImage, err)
	}
	h.sched.reset() // the scheduler's lists name the objects being replaced
	h.tptChanged()  // keycache.go: every MPT and MTT is replaced
	fw := h.emptyFirmware(im.NextRegID)
	l := imageLoad{tr: tr, fw: fw, window: window}
	for _, load := range [...]func(*Image) error{l.mtts, l.qps, l.cqs, l.srqs, l.mpts, l.eqs} {
		if err := load(im); err != nil {
			return err
		}
	}
	fw.loadTables(im)
	fw.carryStats(h.fw)
	h.Res, h.fw = tr, fw
	for _, qp := range l.wqs {
		if window != nil {
			h.wqLoad(qp, window(qp.tr.Owner))
		}
	}
	h.ethReindex() // eth.go: the switch's MAC index of the loaded attachments
	return nil
}

// emptyFirmware is a firmware with h's transient fields (the PF's wiring,
// replay mode, the configuration's knobs: carried as they are, so a new
// one is not forgotten here), empty object tables and no EQ on the watch
// list (it held the replaced firmware's EQs).
func (h *HCA) emptyFirmware(nextRegID uint64) *firmware {
	fw := *h.fw
	fw.mtt, fw.qps, fw.cqs, fw.srqs = map[uint64][]uint64{}, map[uint32]*qpObj{}, map[uint32]*cqObj{}, map[uint32]*srqObj{}
	fw.mpts, fw.eqs, fw.counterPort, fw.mcg = map[uint64]*mptObj{}, map[uint64]*eqObj{}, map[uint64]int{}, map[uint32][][16]byte{}
	fw.ports, fw.vfs, fw.nextRegID, fw.watch = make([]PortState, len(h.fw.ports)), make([]vfFW, len(h.fw.vfs)), nextRegID, nil
	return &fw
}

// imageLoad fills a firmware's object tables from an image, each object
// joined to its tracker object.
type imageLoad struct {
	tr     *restrack.Tracker
	fw     *firmware
	window func(vf int) *dma.Window
	wqs    []*qpObj // QPs whose work queues Load rebuilds (wqLoad)
}

// obj is the tracker object of a firmware object; an image with a firmware
// object the tracker does not have does not fit.
func (l *imageLoad) obj(ty restrack.Type, id uint64) (*restrack.Object, error) {
	vf, err := l.tr.Owner(ty, id)
	if err != nil {
		return nil, fmt.Errorf("%w: %v %#x has no tracker object", ErrImage, ty, id)
	}
	return l.tr.Peek(vf, ty, id)
}

func (l *imageLoad) mtts(im *Image) error {
	for k, v := range im.MTT {
		if len(v) > 1<<20 {
			return fmt.Errorf("%w: MTT %#x of %d entries", ErrImage, k, len(v))
		}
		l.fw.mtt[k] = slices.Clone(v)
	}
	return nil
}

func (l *imageLoad) qps(im *Image) error {
	for n, s := range im.QPs {
		o, err := l.obj(restrack.QP, uint64(n))
		if err != nil {
			return err
		}
		qp := &qpObj{QPState: s, tr: o}
		l.fw.qps[n] = qp
		l.wqs = append(l.wqs, qp)
	}
	return nil
}

func (l *imageLoad) cqs(im *Image) error {
	for n, s := range im.CQs {
		o, err := l.obj(restrack.CQ, uint64(n))
		if err != nil {
			return err
		}
		l.fw.cqs[n] = &cqObj{CQState: s, tr: o, ring: l.cqRing(n, o, s)}
	}
	return nil
}

func (l *imageLoad) srqs(im *Image) error {
	for n, s := range im.SRQs {
		o, err := l.obj(restrack.SRQ, uint64(n))
		if err != nil {
			return err
		}
		l.fw.srqs[n] = &srqObj{SRQState: s, tr: o}
	}
	return nil
}

func (l *imageLoad) mpts(im *Image) error {
	for id, s := range im.MPTs {
		o, err := l.obj(restrack.MPT, id)
		if err != nil {
			return err
		}
		l.fw.mpts[id] = &mptObj{MPTState: s, tr: o}
	}
	return nil
}

// eqs loads the EQs, each with its VF's DMA window; an EQ whose geometry
// SW2HW_EQ would have refused, or filed under another number, does not fit.
func (l *imageLoad) eqs(im *Image) error {
	for id, e := range im.EQs {
		if e.VF < 0 || e.VF >= len(l.fw.vfs) || e.EQN < 0 || id != restrack.EQID(e.VF, e.EQN) || e.Nent == 0 || e.Nent&(e.Nent-1) != 0 || e.Nent > 1<<maxEQLogSize ||
			e.PageShift < 12 || e.PageShift > 30 || uint64(len(e.Pages))<<e.PageShift < uint64(e.Nent)*mlx4.EQESize {
			return fmt.Errorf("%w: EQ %d of VF %d (%#x): %d entries, page shift %d, %d pages", ErrImage, e.EQN, e.VF, id, e.Nent, e.PageShift, len(e.Pages))
		}
		o, err := l.obj(restrack.EQ, id)
		if err != nil {
			return err
		}
		e.Pages = slices.Clone(e.Pages)
		// The vector and always-armed come from the context, as at SW2HW_EQ.
		c, _ := mlx4.DecodeEQContext(e.Ctx[:])
		l.fw.eqs[id] = &eqObj{EQState: e, tr: o, win: l.window(e.VF), intr: c.Intr, always: c.State == mlx4.EQ_STATE_ALWAYS_ARMED}
	}
	return nil
}

// loadTables copies the image's port tables (MAC, VLAN), per-VF state,
// counter ports and multicast groups.
func (fw *firmware) loadTables(im *Image) {
	copy(fw.ports, im.Ports)
	for i := range fw.vfs {
		fw.vfs[i].VFState = im.VFs[i]
	}
	maps.Copy(fw.counterPort, im.CounterPort)
	for k, v := range im.MCG {
		fw.mcg[k] = slices.Clone(v)
	}
}

// carryStats keeps the event counters of the firmware being replaced
// (metrics read them through Stats).
func (fw *firmware) carryStats(old *firmware) {
	for i := range fw.vfs {
		fw.vfs[i].stats.EQEs.Store(old.vfs[i].stats.EQEs.Load())
		fw.vfs[i].stats.Overruns.Store(old.vfs[i].stats.Overruns.Load())
		fw.vfs[i].stats.NoEQ.Store(old.vfs[i].stats.NoEQ.Load())
		fw.vfs[i].stats.Completes.Store(old.vfs[i].stats.Completes.Load())
	}
}

// SetEQPositions installs pos, which the HCA calls with an EQ's producer
// index whenever it changes (created, an EQE written: live) and when the
// EQ goes away (not live), so that the PF's state file always holds every
// EQ's position, including the EQEs of events between commands.
func (h *HCA) SetEQPositions(pos func(vf, eqn int, prod uint32, live bool)) { h.fw.pos = pos }

// SetEQProd sets the producer index of VF vf's EQ eqn, if it exists (a
// restarted PF, from its state file).
func (h *HCA) SetEQProd(vf, eqn int, prod uint32) {
	if eq := h.fw.eqs[restrack.EQID(vf, eqn)]; eq != nil && eq.VF == vf {
		eq.Prod = prod & mlx4.EQIndexMask
	}
}

// EQProd returns the producer index of VF vf's EQ eqn and whether it exists.
func (h *HCA) EQProd(vf, eqn int) (uint32, bool) {
	if eq := h.fw.eqs[restrack.EQID(vf, eqn)]; eq != nil && eq.VF == vf {
		return eq.Prod, true
	}
	return 0, false
}

// EventEQ returns the EQ number VF vf mapped for eventType, or -1.
func (h *HCA) EventEQ(vf int, eventType uint8) int {
	if vf < 0 || vf >= len(h.fw.vfs) || int(eventType) >= numEventTypes {
		return -1
	}
	return int(h.fw.vfs[vf].EventEQ[eventType])
}

// SetQuiet turns replay mode on or off: while on, executors change the
// model's state as usual, but nothing is written to VF memory (no EQE, no
// ring handed over) and no position is reported. A restarted PF replays
// its journal this way.
func (h *HCA) SetQuiet(on bool) { h.fw.quiet = on }

func (h *HCA) eqPos(vf, eqn int, prod uint32, live bool) {
	if h.fw.pos != nil && !h.fw.quiet {
		h.fw.pos(vf, eqn, prod, live)
	}
}

// ringProd is the producer index the ring shows from eq.Prod on: EQE
// number n is written when its owner bit is n's pass (n & nent), the bit
// writeEQE gives it and handOver gave the other value; the VF reads EQEs
// and never writes them back (mlx4_eq_int). At most nent EQEs are taken
// (a VF that forges owner bits only moves its own ring's producer), and a
// slot the window does not allow ends the walk.
func (eq *eqObj) ringProd() uint32 {
	prod := eq.Prod
	if eq.win == nil {
		return prod
	}
	var b [1]byte
	for range eq.Nent {
		off := uint64(prod&(eq.Nent-1)) * mlx4.EQESize
		addr := eq.Pages[off>>eq.PageShift] + off&(1<<eq.PageShift-1)
		if eq.win.CopyIn(b[:], addr+mlx4.EQEOwner) != nil {
			break
		}
		if (b[0]&mlx4.EQEOwnerHW != 0) != (prod&eq.Nent != 0) {
			break // not yet written in this pass
		}
		prod = (prod + 1) & mlx4.EQIndexMask
	}
	return prod
}

func (h *HCA) handOverUnlessQuiet(eq *eqObj) error {
	if h.fw.quiet {
		return nil
	}
	return eq.handOver()
}

// AdminChanges counts the operator's requests that may have changed the
// firmware state outside commands (SetVF: the admin MAC, the vport); the
// PF checkpoints when it moves. The operator's settings themselves (link
// state, VST, spoof check, port state) are the configuration's, which a
// restarted PF takes from its own.
func (h *HCA) AdminChanges() uint64 { return h.fw.adminChanges }

// RefreshEQs reads every EQ's doorbell (consumer index, arm) afresh: a
// restarted PF's EQs continue from what the VFs wrote while it was down,
// not from its checkpoint. An EQ replayed from the journal took the
// doorbell word of the restart as the one "at creation" and would ignore
// it as stale; a word whose consumer index lies within the ring behind the
// producer (at most nent EQEs unread) is the VF's and is taken.
//
// First each EQ's producer index is taken from the ring itself
// (ringProd): the state file records it just after each EQE is written,
// and a PF killed between the two left EQEs the record does not count —
// which the VF may have read, its consumer index then ahead of the
// recorded producer, and every EQE after looked like an overrun.
func (h *HCA) RefreshEQs() {
	for _, eq := range h.fw.eqs {
		eq.Prod = eq.ringProd()
	}
	if h.fw.doorbell == nil {
		return
	}
	for _, eq := range h.fw.eqs {
		v, ok := h.fw.doorbell(eq.VF, eq.EQN)
		if !ok {
			continue
		}
		if ci := v & mlx4.EQIndexMask; (eq.Prod-ci)&mlx4.EQIndexMask <= eq.Nent {
			eq.Cons, eq.Armed, eq.DBStale = ci, v&mlx4.EQ_DOORBELL_ARM != 0, false
		}
	}
}
