package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// The VFs' timeouts in the tier: a command is lost if it has not completed
// crashPost after it was posted (the PF is back within a second of a kill;
// mlx4's 70 s would only make a losing run slow).
const (
	crashPost = 8 * time.Second
	crashComm = 8 * time.Second
	crashSync = 2 * time.Second
)

// Object types the ledger holds, as vhcrd_resources names them.
var heldTypes = []string{"eq", "cq", "mpt", "mtt", "qp"}

// mode is how a VF's commands complete.
type mode int

const (
	modePoll mode = iota
	modeSeed
	modeMlx4
)

func (m mode) String() string { return [...]string{"poll", "early", "mlx4"}[m] }

// modeOf is VF i's mode: 0-1 poll, 2-4 the early way's 'e', 5-7 mlx4's 'e'.
func modeOf(i int) mode {
	switch {
	case i < 2:
		return modePoll
	case i < 5:
		return modeSeed
	}
	return modeMlx4
}

// tally is what a ledger counted: commands posted, completions taken (by
// opcode and status), posted with the 'e' bit.
type tally struct {
	posted    map[mlx4.Opcode]int
	completed map[mlx4.Opcode]map[mlx4.Status]int
	events    int
}

func newTally() tally {
	return tally{posted: map[mlx4.Opcode]int{}, completed: map[mlx4.Opcode]map[mlx4.Status]int{}}
}

func (t tally) clone() tally {
	c := newTally()
	c.events = t.events
	for op, n := range t.posted {
		c.posted[op] = n
	}
	for op, m := range t.completed {
		c.completed[op] = map[mlx4.Status]int{}
		for s, n := range m {
			c.completed[op][s] = n
		}
	}
	return c
}

// totals returns the commands posted and completed, and the completions
// with a status other than OK.
func (t tally) totals() (posted, completed, nonOK int) {
	for _, n := range t.posted {
		posted += n
	}
	for _, m := range t.completed {
		for s, n := range m {
			completed += n
			if s != mlx4.OK {
				nonOK += n
			}
		}
	}
	return
}

// ledger is one VF's record, fed by its driver (vfdrv.Ledger). The worker
// writes it; the test reads it while the worker is paused (the mutex keeps
// the race detector's view exact).
type ledger struct {
	mu sync.Mutex
	t  tally
	// last failures, for the report
	nonOK []string
}

func (l *ledger) Posted(op mlx4.Opcode, event bool) {
	l.mu.Lock()
	l.t.posted[op]++
	if event {
		l.t.events++
	}
	l.mu.Unlock()
}

func (l *ledger) Completed(op mlx4.Opcode, r vfdrv.Result) {
	l.mu.Lock()
	m := l.t.completed[op]
	if m == nil {
		m = map[mlx4.Status]int{}
		l.t.completed[op] = m
	}
	m[r.Status]++
	if r.Status != mlx4.OK && len(l.nonOK) < 8 {
		l.nonOK = append(l.nonOK, fmt.Sprintf("%v: %v (out_param %#x)", op, r.Status, r.OutParam))
	}
	l.mu.Unlock()
}

func (l *ledger) snapshot() tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.t.clone()
}

// set is a group of objects a VF creates and destroys together.
type set struct {
	scq, rcq *vfdrv.CQ
	mr       *vfdrv.MR
	qp       *vfdrv.QP
}

// held is what the ledger says a VF holds.
type held struct {
	eqs  []*vfdrv.EQ
	sets []*set
}

// counts is the number of objects of each of heldTypes: an EQ, a CQ, an
// MR and a QP each hold an MTT.
func (h *held) counts() map[string]int {
	n := len(h.sets)
	return map[string]int{"eq": len(h.eqs), "cq": 2 * n, "mpt": n, "qp": n, "mtt": len(h.eqs) + 4*n}
}

// checkResult is a VF's answer at a checkpoint.
type checkResult struct {
	vf       int
	kept     int      // objects found under their numbers as made
	missing  []string // objects not found or not as made
	lostObjs int      // how many objects those are (with their MTTs)
	counts   map[string]int
	stray    uint64 // completion EQEs nothing waited for
	broken   error  // the step that failed since the last checkpoint
	inflight int
}

// worker is one VF of the load.
type worker struct {
	idx  int
	mode mode
	v    *vfclient.VF
	d    *vfdrv.Driver
	a    *vfclient.Attachment
	l    *ledger
	h    held
	rng  *rand.Rand

	pause  chan struct{}      // closed by the test: stop after the current step (the worker's copy)
	pauseT chan struct{}      // the test's copy of pause
	paused chan struct{}      // the worker's answer: it stopped
	cmds   chan func()        // run on the worker's goroutine while paused
	resume chan chan struct{} // a new pause channel; the worker goes on
	broken error              // first failure since the last checkpoint
	steps  int
}

func newWorker(a *vfclient.Attachment, idx int, seed uint64) (*worker, error) {
	v, err := a.VF(idx)
	if err != nil {
		return nil, err
	}
	v.Timeouts = vfclient.Timeouts{Sync: crashSync, Offline: crashComm, Comm: crashComm, Post: crashPost}
	w := &worker{idx: idx, mode: modeOf(idx), v: v, a: a, l: &ledger{t: newTally()},
		rng:    rand.New(rand.NewPCG(seed, uint64(idx))),
		paused: make(chan struct{}), cmds: make(chan func()), resume: make(chan chan struct{})}
	w.pause = make(chan struct{})
	w.pauseT = w.pause
	vb, err := a.VFBAR(idx)
	if err != nil {
		return nil, err
	}
	opt := vfdrv.Options{BAR: vb, MaxInFlight: 4, Ledger: w.l}
	if w.mode == modeMlx4 {
		opt.Completions = vfdrv.CompletionsMlx4
	}
	if w.d, err = vfdrv.New(v, opt); err != nil {
		return nil, err
	}
	return w, nil
}

// setup brings the channel up from RESET and makes the two EQs.
func (w *worker) setup(ctx context.Context) error {
	w.h = held{}
	if err := w.d.Reset(ctx); err != nil {
		return fmt.Errorf("bring-up: %w", err)
	}
	q, err := w.d.CreateEQ(ctx, 0, 10)
	if err != nil {
		return err
	}
	w.h.eqs = append(w.h.eqs, q)
	if err := w.d.MapEQ(ctx, q, 1<<mlx4.EventCmd|vfdrv.AsyncEventMask); err != nil {
		return err
	}
	q1, err := w.d.CreateEQ(ctx, 1, 6)
	if err != nil {
		return err
	}
	w.h.eqs = append(w.h.eqs, q1)
	if w.mode != modePoll {
		return w.d.UseEventsOn(q)
	}
	return nil
}

// run is the worker's goroutine: steps until paused, then serves the
// test's commands until resumed; it returns when ctx ends. A VF whose step
// failed posts nothing more until a checkpoint has looked at it.
func (w *worker) run(ctx context.Context) {
	if err := w.setup(ctx); err != nil {
		w.broken = fmt.Errorf("VF %d (%v) setup: %w", w.idx, w.mode, err)
	}
	for {
		if w.broken == nil {
			select {
			case <-w.pause:
			case <-ctx.Done():
				return
			default:
				if err := w.step(ctx); err != nil && ctx.Err() == nil {
					w.broken = fmt.Errorf("VF %d (%v) step %d: %w", w.idx, w.mode, w.steps, err)
				}
				w.steps++
				continue
			}
		} else {
			select {
			case <-w.pause:
			case <-ctx.Done():
				return
			}
		}
		if !w.serve(ctx) {
			return
		}
	}
}

// serve answers a pause: it runs the test's commands until resumed.
func (w *worker) serve(ctx context.Context) bool {
	select {
	case w.paused <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	for {
		select {
		case f := <-w.cmds:
			f()
		case p := <-w.resume:
			w.pause = p
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// step is one unit of the load: create a set, destroy one, or (rarely)
// reset the function and start again.
func (w *worker) step(ctx context.Context) error {
	switch r := w.rng.IntN(100); {
	case r < 2:
		return w.setup(ctx)
	case len(w.h.sets) == 0 || (len(w.h.sets) < 4 && r < 60):
		return w.create(ctx)
	default:
		i := w.rng.IntN(len(w.h.sets))
		s := w.h.sets[i]
		w.h.sets = append(w.h.sets[:i], w.h.sets[i+1:]...)
		return w.destroy(ctx, s)
	}
}

func (w *worker) create(ctx context.Context) error {
	var s set
	var err error
	if s.scq, err = w.d.CreateCQ(ctx, 7, 1); err != nil {
		return err
	}
	if s.rcq, err = w.d.CreateCQ(ctx, 7, 1); err != nil {
		return err
	}
	if s.mr, err = w.d.CreateMR(ctx, 2, mlx4.PERM_LOCAL_READ|mlx4.PERM_LOCAL_WRITE|mlx4.PERM_REMOTE_WRITE, 1); err != nil {
		return err
	}
	if s.qp, err = w.d.CreateQP(ctx, vfdrv.QPConfig{ST: mlx4.QP_ST_RC, SendCQ: s.scq.CQN, RecvCQ: s.rcq.CQN, PD: 1, RemoteQPN: 0x48, DestLID: 6}); err != nil {
		return err
	}
	if err := w.d.ModifyPath(ctx, s.qp, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS); err != nil {
		return err
	}
	if err := w.h.unique(&s); err != nil {
		return err
	}
	w.h.sets = append(w.h.sets, &s)
	return nil
}

// numbers are the resource numbers a set holds, by type.
func (s *set) numbers() [][2]uint64 {
	const cq, mpt, qp, mtt = 0, 1, 2, 3
	return [][2]uint64{
		{cq, uint64(s.scq.CQN)}, {cq, uint64(s.rcq.CQN)}, {mpt, uint64(s.mr.Index)}, {qp, uint64(s.qp.QPN)},
		{mtt, s.scq.MTT.Base}, {mtt, s.rcq.MTT.Base}, {mtt, s.mr.MTT.Base}, {mtt, s.qp.MTT.Base},
	}
}

// unique checks that the PF handed out none of n's numbers while the VF
// holds an object under it (a restarted PF that lost its allocators would).
func (h *held) unique(n *set) error {
	seen := map[[2]uint64]bool{}
	for _, q := range h.eqs {
		seen[[2]uint64{3, q.MTT.Base}] = true
	}
	for _, s := range h.sets {
		for _, k := range s.numbers() {
			seen[k] = true
		}
	}
	for _, k := range n.numbers() {
		if seen[k] {
			return fmt.Errorf("%w: the PF handed out %s %#x, which the VF already holds", errTwice, [...]string{"CQ", "MPT", "QP", "MTT"}[k[0]], k[1])
		}
		seen[k] = true
	}
	return nil
}

// errTwice: a resource number handed out while its object is held.
var errTwice = errors.New("resource number handed out twice")

func (w *worker) destroy(ctx context.Context, s *set) error {
	if err := w.d.DestroyQP(ctx, s.qp); err != nil {
		return err
	}
	if err := w.d.DestroyMR(ctx, s.mr); err != nil {
		return err
	}
	if err := w.d.DestroyCQ(ctx, s.rcq); err != nil {
		return err
	}
	return w.d.DestroyCQ(ctx, s.scq)
}

// verify queries every object the ledger holds under its number and
// compares it with what the VF made. Run on the worker's goroutine.
func (w *worker) verify(ctx context.Context) checkResult {
	res := checkResult{vf: w.idx, counts: w.h.counts(), stray: w.d.Stats.Stray, broken: w.broken, inflight: w.d.InFlight()}
	if w.broken != nil && !errors.Is(w.broken, vfdrv.ErrCommand) {
		// The channel failed (a timeout, a lost completion, bit 17): it may
		// be mid-command, so nothing is queried and every object the
		// ledger holds counts as missing.
		for _, q := range w.h.eqs {
			res.missing = append(res.missing, fmt.Sprintf("EQ %d (not queried)", q.EQN))
			res.lostObjs += 2
		}
		for _, s := range w.h.sets {
			res.missing = append(res.missing, fmt.Sprintf("set of QP %#x (not queried)", s.qp.QPN))
			res.lostObjs += 8
		}
		return res
	}
	// Each object goes with its MTT: two objects found or missing.
	miss := func(format string, a ...any) {
		res.missing = append(res.missing, fmt.Sprintf(format, a...))
		res.lostObjs += 2
	}
	for _, q := range w.h.eqs {
		c, err := w.d.QueryEQ(ctx, q)
		switch {
		case err != nil:
			miss("EQ %d: %v", q.EQN, err)
		case c.LogSize != q.LogSize || c.MTTBase != q.MTT.Base:
			miss("EQ %d: log size %d MTT %#x, made with %d, %#x", q.EQN, c.LogSize, c.MTTBase, q.LogSize, q.MTT.Base)
		default:
			res.kept += 2 // the EQ and its MTT
		}
	}
	for _, s := range w.h.sets {
		for _, cq := range []*vfdrv.CQ{s.scq, s.rcq} {
			c, err := w.d.QueryCQ(ctx, cq)
			switch {
			case err != nil:
				miss("CQ %#x: %v", cq.CQN, err)
			case c.LogSize != cq.LogSize || c.MTTBase != cq.MTT.Base || int(c.CompEQN) != cq.EQN:
				miss("CQ %#x: %+v, made with log size %d MTT %#x EQ %d", cq.CQN, c, cq.LogSize, cq.MTT.Base, cq.EQN)
			default:
				res.kept += 2
			}
		}
		m, err := w.d.QueryMR(ctx, s.mr)
		switch {
		case err != nil:
			miss("MPT %#x: %v", s.mr.Index, err)
		case m.Key != s.mr.Key || m.MTTBase != s.mr.MTT.Base || m.Start != s.mr.IOVA:
			miss("MPT %#x: %+v, made with key %#x MTT %#x start %#x", s.mr.Index, m, s.mr.Key, s.mr.MTT.Base, s.mr.IOVA)
		default:
			res.kept += 2
		}
		c, err := w.d.QueryQP(ctx, s.qp)
		switch {
		case err != nil:
			miss("QP %#x: %v", s.qp.QPN, err)
		case c.State != mlx4.QP_STATE_RTS || c.LocalQPN != s.qp.QPN || c.CQNSend != s.scq.CQN || c.CQNRecv != s.rcq.CQN || c.MTTBase != s.qp.MTT.Base:
			miss("QP %#x: state %v QPN %#x CQs %#x %#x MTT %#x, made RTS on %#x %#x MTT %#x", s.qp.QPN, c.State, c.LocalQPN,
				c.CQNSend, c.CQNRecv, c.MTTBase, s.scq.CQN, s.rcq.CQN, s.qp.MTT.Base)
		default:
			res.kept += 2
		}
	}
	if len(res.missing) > 0 && w.broken == nil {
		w.broken = errors.New("objects missing after the restart")
	}
	return res
}

// recover brings a VF whose state is unknown back to a known one: RESET
// (the PF releases whatever it holds) and the EQs again.
func (w *worker) recover(ctx context.Context) error {
	if w.broken == nil {
		return nil
	}
	w.broken = nil
	return w.setup(ctx)
}

// do runs f on the paused worker's goroutine and waits for it.
func (w *worker) do(f func()) {
	done := make(chan struct{})
	w.cmds <- func() { f(); close(done) }
	<-done
}
