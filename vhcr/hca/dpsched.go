package hca

// The data path's scheduler: which send queues the poller walks, and when.
//
// The PF cannot trap a store to a VF's UAR page, so it looks. Three things
// tell it a send queue may have work:
//
//   - the hint: the send doorbell word at MLX4_SEND_DOORBELL (0x14) of each
//     UAR page a VF's attached QPs use (mlx4_post_send stores qpn << 8
//     there after its WQEs), read every scan through the PF's UAR reader.
//     A word that changed makes every attached QP of that page hot (the
//     word holds only the last QPN stored: two QPs of one page ringing
//     between scans leave one). A word naming a QPN that is not one of
//     the VF's attached QPs on that page is counted (ForeignDoorbells) and
//     runs nothing: the scheduler only ever walks the VF's own QPs, so
//     another VF's QPN in a VF's UAR page cannot make another VF's QP run.
//   - the truth: the WQE's ownership (the engine's sqPending, one load of
//     the next WQE's owner bit, size and stamp). Hot QPs are run every
//     scan (runSQ) until they have been found empty hotScans times in a
//     row; a QP that does work stays hot, so a QP that rings the same word
//     again (which changes nothing) is served without a hint.
//   - the sweep: every attached QP is checked by ownership, sweepPerScan
//     QPs every sweepEvery scans in turn (a pass over n QPs takes
//     n/sweepPerScan·sweepEvery scans) and all of them at each of the
//     poller's idle checkpoints (SweepQueues, before it sleeps), so a
//     doorbell the hint missed is found within one pass of the sweep, or
//     one sleep.
//
// Fairness, as for commands: each pass over the VFs with hot QPs gives
// every VF one turn (round-robin, the first VF rotating per scan), a turn
// runs one of the VF's hot QPs (round-robin within the VF) for at most
// quantum WQEs, and the passes stop when the scan's budget of WQEs is
// spent or a whole pass found nothing. A VF with many QPs gets no more
// turns than a VF with one; one QP with a full ring gets quantum WQEs per
// turn.
//
// Lists. dpAttach (the engine, when a QP's send queue may run) and dpDetach
// are O(1): each QP's slot remembers its index in its VF's list, its
// page's list and the VF's hot list; removal swaps the last one in. The
// slots and their lists are reused: after warm-up nothing is allocated.
//
// The cost. With no QP attached and no CQ watched, ServiceQueues is one
// comparison. With idle attached QPs, a scan reads each UAR page's word
// once and checks sweepPerScan QPs by ownership every sweepEvery scans;
// ARCHITECTURE.md has the measured figures.

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

const (
	dpQuantum    = 16   // WQEs per QP per turn
	hotScans     = 4096 // empty checks before a hot QP is left to the hint and the sweep
	sweepPerScan = 4    // attached QPs checked by ownership per scan
	attachScans  = 16   // empty checks before a newly attached QP goes cold
	sweepEvery   = 8    // scans between two steps of the sweep
)

// The engine's send queue functions (wq.go): sqPending is the cheap check
// (the next send WQE is valid for this pass), runSQ executes up to budget
// WQEs and returns how many it consumed.
var (
	dpPending = (*HCA).sqPending
	dpRun     = (*HCA).runSQ
)

// dpUsrPage is the UAR index of the QP's send doorbell: the usr_page of
// its work queues (RST2INIT's context, checked against the VF's UARs by
// the engine), else of its last context.
func dpUsrPage(qp *qpObj) uint32 {
	if qp.wq != nil {
		return qp.wq.usrPage
	}
	return binary.BigEndian.Uint32(qp.Ctx[mlx4.QPMailboxContext+mlx4.QPCUsrPage:]) & 0xffffff
}

// dpQP is an attached QP's slot.
type dpQP struct {
	qp   *qpObj
	vf   int
	qpn  uint32
	page *dpPage
	iVF  int // index in dpVF.qps
	iPg  int // index in dpPage.qps
	iHot int // index in dpVF.hot, -1 if not hot
	idle int // consecutive empty checks while hot
}

// dpPage is a UAR page in use by attached QPs of one VF.
type dpPage struct {
	off  uint64 // offset of the page in the VF's BAR region
	last uint32 // send doorbell word last seen
	seen bool   // last is a word read (not the zero before the first read)
	qps  []*dpQP
	cold int // QPs of qps not hot: with none, the word is not read
	i    int // index in dpVF.pages
}

// dpVF is one VF's lists.
type dpVF struct {
	qps   []*dpQP
	hot   []*dpQP
	pages []*dpPage
	next  int // round-robin position in hot
	sweep int // sweep position in qps
	live  int // index in dpSched.live, -1 if none attached
}

// dpSched is the scheduler's state (transient: the engine attaches the QPs
// again when a checkpoint is loaded).
type dpSched struct {
	vfs      []dpVF
	live     []int // VFs with attached QPs
	nextVF   int
	byQPN    map[uint32]*dpQP
	free     []*dpQP
	freePg   []*dpPage
	attached int
	scans    uint64 // ServiceQueues calls with QPs attached
	sweepVF  int
	cqWatch  []*cqObj // CQs disarmed with CQEs pending (cqring.go)
	uar      func(vf int, off uint64) (uint32, bool)
	cqPos    func(vf int, cqn, prod uint32, live bool) // CQ producer positions (cqring.go), or nil
	stats    []DataPathStats
}

func (s *dpSched) init(numVFs int) {
	s.vfs = make([]dpVF, numVFs)
	for i := range s.vfs {
		s.vfs[i].live = -1
	}
	s.stats = make([]DataPathStats, numVFs)
	s.byQPN = map[uint32]*dpQP{}
}

// reset forgets every list (a checkpoint is being loaded: its objects are
// new); the counters stay.
func (s *dpSched) reset() {
	for _, cq := range s.cqWatch {
		cq.ring.watched = false
	}
	stats, uar, pos := s.stats, s.uar, s.cqPos
	*s = dpSched{}
	s.init(len(stats))
	s.stats, s.uar, s.cqPos = stats, uar, pos
}

// SetUARReader installs read, which returns the 32-bit big-endian word at
// byte offset off of VF vf's BAR region (its UAR pages) and whether it
// could be read. The scheduler reads only the pages of the VF's own
// attached QPs and CQs, at MLX4_SEND_DOORBELL and MLX4_CQ_DOORBELL.
func (h *HCA) SetUARReader(read func(vf int, off uint64) (uint32, bool)) { h.sched.uar = read }

// dpAttach puts a QP on the scheduler's lists (the engine: its send queue
// may run). Attaching an attached QP again does nothing.
func (h *HCA) dpAttach(qp *qpObj) {
	s := &h.sched
	qpn := uint32(qp.tr.ID)
	vf := qp.tr.Owner
	if vf < 0 || vf >= len(s.vfs) {
		return
	}
	if _, ok := s.byQPN[qpn]; ok {
		return
	}
	var q *dpQP
	if n := len(s.free); n > 0 {
		q, s.free = s.free[n-1], s.free[:n-1]
	} else {
		q = new(dpQP)
	}
	*q = dpQP{qp: qp, vf: vf, qpn: qpn, iHot: -1}
	v := &s.vfs[vf]
	off := mlx4.UARPageOffset(dpUsrPage(qp), mlx4.UARSize)
	var pg *dpPage
	for _, p := range v.pages {
		if p.off == off {
			pg = p
			break
		}
	}
	if pg == nil {
		if n := len(s.freePg); n > 0 {
			pg, s.freePg = s.freePg[n-1], s.freePg[:n-1]
		} else {
			pg = new(dpPage)
		}
		qs := pg.qps[:0]
		*pg = dpPage{off: off, qps: qs, i: len(v.pages)}
		// The word the page holds now is no ring of a QP attached to it:
		// a QP that used the page before (an earlier process or guest
		// of the VF) left it there, where hardware keeps no doorbell. It
		// is the page's baseline, so that the first scan does not count
		// it as a doorbell, a foreign one if its QPN is not this QP's.
		if s.uar != nil {
			pg.last, pg.seen = s.uar(vf, off+mlx4.MLX4_SEND_DOORBELL)
		}
		v.pages = append(v.pages, pg)
	}
	q.page, q.iPg = pg, len(pg.qps)
	pg.qps = append(pg.qps, q)
	pg.cold++ // q is not hot yet
	q.iVF = len(v.qps)
	v.qps = append(v.qps, q)
	if v.live < 0 {
		v.live = len(s.live)
		s.live = append(s.live, vf)
	}
	s.byQPN[qpn] = q
	s.attached++
	s.heat(q) // WQEs may be posted already: checked for a few scans
	q.idle = hotScans - attachScans
}

// dpDetach takes a QP off the lists (it left the states that walk its
// send queue, or is gone). Unknown QPs are ignored.
func (h *HCA) dpDetach(qp *qpObj) {
	s := &h.sched
	q, ok := s.byQPN[uint32(qp.tr.ID)]
	if !ok || q.qp != qp {
		return
	}
	s.drop(q)
}

// dpDetachVF detaches every QP of VF vf (its reset).
func (h *HCA) dpDetachVF(vf int) {
	s := &h.sched
	if vf < 0 || vf >= len(s.vfs) {
		return
	}
	for v := &s.vfs[vf]; len(v.qps) > 0; {
		s.drop(v.qps[len(v.qps)-1])
	}
}

func (s *dpSched) drop(q *dpQP) {
	v := &s.vfs[q.vf]
	s.cool(q)
	last := v.qps[len(v.qps)-1]
	v.qps[q.iVF], last.iVF = last, q.iVF
	v.qps[len(v.qps)-1] = nil
	v.qps = v.qps[:len(v.qps)-1]
	pg := q.page
	pg.cold-- // q is cold (cool above)
	lastPg := pg.qps[len(pg.qps)-1]
	pg.qps[q.iPg], lastPg.iPg = lastPg, q.iPg
	pg.qps[len(pg.qps)-1] = nil
	pg.qps = pg.qps[:len(pg.qps)-1]
	if len(pg.qps) == 0 {
		lp := v.pages[len(v.pages)-1]
		v.pages[pg.i], lp.i = lp, pg.i
		v.pages[len(v.pages)-1] = nil
		v.pages = v.pages[:len(v.pages)-1]
		s.freePg = append(s.freePg, pg)
	}
	if len(v.qps) == 0 && v.live >= 0 {
		lv := s.live[len(s.live)-1]
		s.live[v.live] = lv
		s.vfs[lv].live = v.live
		s.live = s.live[:len(s.live)-1]
		v.live = -1
	}
	delete(s.byQPN, q.qpn)
	*q = dpQP{}
	s.free = append(s.free, q)
	s.attached--
}

// heat puts q on its VF's hot list.
func (s *dpSched) heat(q *dpQP) {
	q.idle = 0
	if q.iHot >= 0 {
		return
	}
	v := &s.vfs[q.vf]
	q.iHot = len(v.hot)
	v.hot = append(v.hot, q)
	q.page.cold--
}

// cool takes q off its VF's hot list.
func (s *dpSched) cool(q *dpQP) {
	if q.iHot < 0 {
		return
	}
	v := &s.vfs[q.vf]
	last := v.hot[len(v.hot)-1]
	v.hot[q.iHot], last.iHot = last, q.iHot
	v.hot[len(v.hot)-1] = nil
	v.hot = v.hot[:len(v.hot)-1]
	q.iHot = -1
	q.page.cold++
}

// Attached returns the number of QPs on the scheduler's lists.
func (h *HCA) Attached() int { return h.sched.attached }

// ServiceQueues is the poller's data-path step, once per scan: the UAR
// hints read, the sweep advanced, the hot QPs run for at most budget WQEs
// in all (fairly: see the package comment), the watched CQs' arms looked
// at. It returns the work done (WQEs executed, completion events fired):
// non-zero is a busy scan. With nothing attached or watched it returns at
// once.
func (h *HCA) ServiceQueues(budget int) int {
	if h.sched.attached == 0 && len(h.sched.cqWatch) == 0 {
		return 0 // inlined into the poller's scan: the idle command path pays two loads
	}
	return h.serviceQueues(budget)
}

func (h *HCA) serviceQueues(budget int) int {
	s := &h.sched
	work := 0
	if s.attached > 0 {
		h.doorbellHints()
		if s.scans++; s.scans%sweepEvery == 0 {
			h.sweep(sweepPerScan)
		}
		work = h.runHot(budget)
	}
	// The CQ hints last: a CQ's UAR word (MLX4_CQ_DOORBELL, 0x20) shares
	// its cache line with the send doorbell (0x14) the VF stores at every
	// post, so that read is a transfer from the VF's CPU after each post;
	// before the hot QPs it delayed the WQE behind that very doorbell.
	if len(s.cqWatch) > 0 {
		work += h.cqHints()
	}
	return work
}

// doorbellHints reads the send doorbell word of every UAR page in use
// with a QP that is not hot: a changed word heats the page's QPs. A page
// whose QPs are all hot is not read: the hint could tell nothing the hot
// QPs' ownership checks do not, and the word is the line the VF stores at
// every post (its load is a cache-line transfer from the VF's CPU, about
// a tenth of the poller's time in a SEND stream). When one of them cools,
// the next scan reads the word again; if it changed meanwhile, that is one
// doorbell (counted once) and heats the page's QPs again, so a ring is
// never lost, at the price of one more hot period for a QP that cooled.
func (h *HCA) doorbellHints() {
	s := &h.sched
	if s.uar == nil {
		return
	}
	for _, vf := range s.live {
		v := &s.vfs[vf]
		for _, pg := range v.pages {
			if pg.cold == 0 {
				continue
			}
			w, ok := s.uar(vf, pg.off+mlx4.MLX4_SEND_DOORBELL)
			if !ok || (w == pg.last && pg.seen) {
				continue
			}
			pg.last, pg.seen = w, true
			if w == 0 { // no store names QPN 0's page this way: nothing rang
				continue
			}
			s.stats[vf].Doorbells.Add(1)
			named := false
			for _, q := range pg.qps {
				s.heat(q)
				named = named || q.qpn == mlx4.SendDoorbellQPN(w)&qpnMask
			}
			if !named {
				s.stats[vf].ForeignDoorbells.Add(1)
			}
		}
	}
}

// sweep checks n attached QPs by ownership, in turn across the VFs, and
// heats those with work.
func (h *HCA) sweep(n int) int {
	s := &h.sched
	found := 0
	for i := 0; i < n && i < s.attached; i++ {
		if s.sweepVF >= len(s.live) {
			s.sweepVF = 0
		}
		v := &s.vfs[s.live[s.sweepVF]]
		if v.sweep >= len(v.qps) { // this VF done: the next one
			v.sweep = 0
			s.sweepVF++
			i--
			continue
		}
		q := v.qps[v.sweep]
		v.sweep++
		if q.iHot < 0 && dpPending(h, q.qp) {
			s.heat(q)
			found++
		}
	}
	return found
}

// SweepQueues checks every attached QP by ownership (the poller's idle
// checkpoints, before it sleeps; CheckArms does the watched CQs). It
// returns how many QPs have work: the poller does not sleep when it is
// non-zero.
func (h *HCA) SweepQueues() int {
	s := &h.sched
	n := 0
	for _, vf := range s.live {
		for _, q := range s.vfs[vf].qps {
			// A hot QP is work, but one whose WQE waits for a retry
			// (retry.go): it has work only once its deadline came.
			if q.iHot >= 0 && !retryPending(q.qp) || dpPending(h, q.qp) {
				s.heat(q)
				n++
			}
		}
	}
	return n
}

// QueuesPending reports whether an attached send queue has a WQE to run by
// ownership, without running it: every attached QP when at most limit are
// attached, else the hot ones only. The QPs found are heated. It is the
// poller's re-check after it said it sleeps (HdrPFSleeping) and before it
// blocks: a VF that rang its send doorbell before it saw the flag did not
// wake the futex, and its doorbell must be seen now rather than at the
// next timeout.
func (h *HCA) QueuesPending(limit int) bool {
	s := &h.sched
	if s.attached == 0 {
		return false
	}
	found := false
	if s.attached > limit {
		for _, vf := range s.live {
			for _, q := range s.vfs[vf].hot {
				if dpPending(h, q.qp) {
					return true
				}
			}
		}
		return false
	}
	for _, vf := range s.live {
		for _, q := range s.vfs[vf].qps {
			if dpPending(h, q.qp) {
				s.heat(q)
				found = true
			}
		}
	}
	return found
}

// runHot gives the VFs with hot QPs their turns until budget WQEs are spent
// or a whole pass did nothing.
func (h *HCA) runHot(budget int) int {
	s := &h.sched
	left := budget
	nlive := len(s.live)
	if nlive == 0 || left <= 0 {
		return 0
	}
	if s.nextVF >= nlive {
		s.nextVF = 0
	}
	start := s.nextVF
	s.nextVF++
	for left > 0 {
		did := false
		for k := range nlive {
			if k >= len(s.live) { // a VF detached during the pass
				break
			}
			v := &s.vfs[s.live[(start+k)%len(s.live)]]
			// The VF's turn: its next hot QP with work, each empty one
			// tried once.
			for tries := len(v.hot); tries > 0 && len(v.hot) > 0; tries-- {
				if v.next >= len(v.hot) {
					v.next = 0
				}
				q := v.hot[v.next]
				v.next++
				n := dpRun(h, q.qp, min(dpQuantum, left))
				if n > 0 {
					did = true
					left -= n
					q.idle = 0
					break
				}
				if retryPending(q.qp) {
					continue // stays hot: each scan looks at its deadline (retry.go)
				}
				if q.idle++; q.idle >= hotScans {
					s.cool(q)
				}
			}
			if left <= 0 {
				break
			}
		}
		if !did {
			break
		}
	}
	return budget - left
}

// watchCQ puts a CQ that is disarmed with CQEs pending on the watch list.
func (s *dpSched) watchCQ(cq *cqObj) {
	cq.ring.watched = true
	s.cqWatch = append(s.cqWatch, cq)
}

// unwatchCQ takes it off.
func (s *dpSched) unwatchCQ(cq *cqObj) {
	cq.ring.watched = false
	for i, c := range s.cqWatch {
		if c == cq {
			last := len(s.cqWatch) - 1
			s.cqWatch[i] = s.cqWatch[last]
			s.cqWatch[last] = nil
			s.cqWatch = s.cqWatch[:last]
			return
		}
	}
}

// cqHints reads the CQ doorbell word (its high word: sn, cmd, CQN) of the
// UAR page of every watched CQ; where it changed the CQ's record is read
// (an arm owed fires). It returns the events fired.
func (h *HCA) cqHints() int {
	s := &h.sched
	if s.uar == nil {
		return 0
	}
	n := 0
	for i := 0; i < len(s.cqWatch); {
		cq := s.cqWatch[i]
		r := cq.ring
		w, ok := s.uar(r.vf, r.uar+mlx4.MLX4_CQ_DOORBELL)
		if !ok || w == r.uarLast {
			i++
			continue
		}
		r.uarLast = w
		if h.checkCQArm(cq) {
			n++
		}
		if r.watched {
			i++
		}
	}
	return n
}

// checkCQArms reads the record of every watched CQ (CheckArms' part for
// CQs). It returns the events fired.
func (h *HCA) checkCQArms() int {
	s := &h.sched
	n := 0
	for i := 0; i < len(s.cqWatch); {
		cq := s.cqWatch[i]
		if h.checkCQArm(cq) {
			n++
		}
		if cq.ring.watched {
			i++
		}
	}
	return n
}
