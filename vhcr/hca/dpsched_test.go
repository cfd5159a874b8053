package hca

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// fakeSQ stands in for the engine's send queues: work[qp] WQEs are valid,
// runSQ consumes them in order and logs each call.
type fakeSQ struct {
	work map[*qpObj]int
	ran  map[*qpObj]int
	log  []*qpObj
	max  int // largest budget one call was given
	pend int // sqPending calls
}

func useFakeSQ(t testing.TB) *fakeSQ {
	f := &fakeSQ{work: map[*qpObj]int{}, ran: map[*qpObj]int{}}
	p, r := dpPending, dpRun
	dpPending = func(_ *HCA, qp *qpObj) bool { f.pend++; return f.work[qp] > 0 }
	dpRun = func(_ *HCA, qp *qpObj, budget int) int {
		n := min(budget, f.work[qp])
		f.work[qp] -= n
		f.ran[qp] += n
		f.max = max(f.max, budget)
		if n > 0 {
			f.log = append(f.log, qp)
		}
		return n
	}
	t.Cleanup(func() { dpPending, dpRun = p, r })
	return f
}

// fakeQP is a QP object of VF vf with send doorbells on UAR index usr.
func fakeQP(vf int, qpn, usr uint32) *qpObj {
	qp := &qpObj{tr: &restrack.Object{Type: restrack.QP, ID: uint64(qpn), Owner: vf}}
	binary.BigEndian.PutUint32(qp.Ctx[mlx4.QPMailboxContext+mlx4.QPCUsrPage:], usr)
	return qp
}

// schedRig is an HCA with a UAR the test writes.
type schedRig struct {
	h     *HCA
	uar   map[[2]uint64]uint32
	reads map[[2]uint64]int
}

func newSchedRig(t testing.TB, nvf int) *schedRig {
	r := &schedRig{h: newRig(t, nvf, nil).h, uar: map[[2]uint64]uint32{}, reads: map[[2]uint64]int{}}
	r.h.SetUARReader(func(vf int, off uint64) (uint32, bool) {
		k := [2]uint64{uint64(vf), off}
		r.reads[k]++
		return r.uar[k], true
	})
	return r
}

// ring is mlx4_post_send's doorbell: qpn << 8 at MLX4_SEND_DOORBELL of the
// UAR page of index usr of VF vf.
func (r *schedRig) ring(vf int, usr, qpn uint32) {
	r.uar[[2]uint64{uint64(vf), mlx4.UARPageOffset(usr, mlx4.UARSize) + mlx4.MLX4_SEND_DOORBELL}] = mlx4.SendDoorbell(qpn)
}

// cold runs scans until every hot QP has been found empty hotScans times.
func (r *schedRig) cold(t *testing.T) {
	for range hotScans + 1 {
		r.h.ServiceQueues(64)
	}
	for _, v := range r.h.sched.vfs {
		if len(v.hot) != 0 {
			t.Fatalf("%d QPs still hot", len(v.hot))
		}
	}
}

// TestSchedFairAcrossVFs: VF 0 with eight busy QPs and VF 1 with one get
// the same WQEs per scan (one turn each per pass); VF 0's QPs share its
// turns round-robin; no call is given more than the quantum and no scan
// more than its budget.
func TestSchedFairAcrossVFs(t *testing.T) {
	f := useFakeSQ(t)
	r := newSchedRig(t, 2)
	var qps []*qpObj
	for i := range 8 {
		qp := fakeQP(0, 0x100+uint32(i), 128)
		qps = append(qps, qp)
		f.work[qp] = 1 << 20
		r.h.dpAttach(qp)
	}
	lone := fakeQP(1, 0x200, 128)
	f.work[lone] = 1 << 20
	r.h.dpAttach(lone)
	for range 64 {
		if n := r.h.ServiceQueues(64); n != 64 {
			t.Fatalf("a scan did %d WQEs, want the budget 64", n)
		}
	}
	vf0 := 0
	lo, hi := 1<<30, 0
	for _, qp := range qps {
		vf0 += f.ran[qp]
		lo, hi = min(lo, f.ran[qp]), max(hi, f.ran[qp])
	}
	if vf0 != f.ran[lone] {
		t.Fatalf("VF 0 (8 QPs) ran %d WQEs, VF 1 (1 QP) %d: want equal", vf0, f.ran[lone])
	}
	if hi-lo > dpQuantum {
		t.Fatalf("VF 0's QPs ran between %d and %d WQEs", lo, hi)
	}
	if f.max > dpQuantum {
		t.Fatalf("a call was given %d WQEs, above the quantum", f.max)
	}
}

// TestSchedBudget: a scan stops at its budget, and a scan whose QPs have
// less work than the budget does what there is and stops after one empty
// pass.
func TestSchedBudget(t *testing.T) {
	f := useFakeSQ(t)
	r := newSchedRig(t, 1)
	a, b := fakeQP(0, 0x100, 128), fakeQP(0, 0x101, 128)
	r.h.dpAttach(a)
	r.h.dpAttach(b)
	f.work[a], f.work[b] = 5, 3
	if n := r.h.ServiceQueues(64); n != 8 {
		t.Fatalf("did %d, want 8", n)
	}
	f.work[a] = 100
	if n := r.h.ServiceQueues(10); n != 10 {
		t.Fatalf("did %d, want the budget 10", n)
	}
	if n := r.h.ServiceQueues(0); n != 0 {
		t.Fatalf("budget 0 did %d", n)
	}
}

// TestSchedDoorbellHint: cold QPs are not checked by ownership every scan;
// a send doorbell on their UAR page heats every attached QP of the page
// (the word holds only the last QPN: two QPs ringing between scans), so
// both run in the next scan.
func TestSchedDoorbellHint(t *testing.T) {
	f := useFakeSQ(t)
	r := newSchedRig(t, 1)
	var qps []*qpObj
	for i := range 64 {
		qp := fakeQP(0, 0x100+uint32(i), 128+uint32(i/32)) // two pages
		qps = append(qps, qp)
		r.h.dpAttach(qp)
	}
	r.cold(t)
	a, b, c := qps[3], qps[7], qps[40]
	f.work[a], f.work[b], f.work[c] = 1, 1, 1
	r.ring(0, 128, 0x103) // a rang, then b rang over it
	r.ring(0, 128, 0x107)
	f.log = nil
	r.h.ServiceQueues(64)
	if f.ran[a] != 1 || f.ran[b] != 1 {
		t.Fatalf("after the doorbell: a ran %d, b ran %d, want 1 1", f.ran[a], f.ran[b])
	}
	if st := r.h.DPStats(0); st.Doorbells.Load() != 1 || st.ForeignDoorbells.Load() != 0 {
		t.Fatalf("doorbells %d foreign %d", st.Doorbells.Load(), st.ForeignDoorbells.Load())
	}
	// c, on the other page, rang nothing: the sweep finds it within one
	// pass over the attached QPs
	scans := 1
	for ; f.ran[c] == 0 && scans <= (len(qps)/sweepPerScan+1)*sweepEvery; scans++ {
		r.h.ServiceQueues(64)
	}
	if f.ran[c] != 1 {
		t.Fatalf("the sweep did not find a missed doorbell in %d scans", scans)
	}
	// a QP that keeps doing work stays hot: the same doorbell word again
	// (no change) is served without a hint
	f.work[a] = 1
	r.ring(0, 128, 0x103)
	r.h.ServiceQueues(64)
	f.work[a] = 1
	r.h.ServiceQueues(64) // the word did not change
	if f.ran[a] != 3 {
		t.Fatalf("a ran %d, want 3", f.ran[a])
	}
}

// TestSchedSweepQueues: the idle checkpoint's sweep checks every attached
// QP by ownership and reports those with work, so the poller does not
// sleep on a doorbell it missed.
func TestSchedSweepQueues(t *testing.T) {
	f := useFakeSQ(t)
	r := newSchedRig(t, 3)
	var qps []*qpObj
	for i := range 300 {
		qp := fakeQP(i%3, 0x100+uint32(i), 128)
		qps = append(qps, qp)
		r.h.dpAttach(qp)
	}
	r.cold(t)
	if n := r.h.SweepQueues(); n != 0 {
		t.Fatalf("idle sweep found %d", n)
	}
	f.work[qps[299]] = 2
	f.pend = 0
	if n := r.h.SweepQueues(); n != 1 || f.pend != 300 {
		t.Fatalf("sweep found %d after %d checks, want 1 after 300", n, f.pend)
	}
	if n := r.h.ServiceQueues(64); n != 2 {
		t.Fatalf("the next scan did %d, want 2", n)
	}
}

// TestSchedForeignDoorbell: another VF's QPN in a VF's UAR word heats only
// that VF's own QPs of the page (counted as foreign) and never the QP it
// names; the scheduler reads only the pages of the VF's own attached QPs.
func TestSchedForeignDoorbell(t *testing.T) {
	f := useFakeSQ(t)
	r := newSchedRig(t, 2)
	mine, theirs := fakeQP(0, 0x100, 128), fakeQP(1, 0x200, 130)
	r.h.dpAttach(mine)
	r.h.dpAttach(theirs)
	r.cold(t)
	f.work[theirs] = 1
	r.ring(0, 128, 0x200) // VF 0 rings VF 1's QPN on its own page
	r.ring(0, 130, 0x200) // and on a page of its own no QP of it uses
	r.h.doorbellHints()
	if r.h.sched.byQPN[0x200].iHot >= 0 {
		t.Fatal("VF 0's doorbell heated VF 1's QP")
	}
	if r.h.sched.byQPN[0x100].iHot < 0 {
		t.Fatal("VF 0's own QP on the page was not heated")
	}
	if st := r.h.DPStats(0); st.ForeignDoorbells.Load() != 1 {
		t.Fatalf("foreign doorbells %d, want 1", st.ForeignDoorbells.Load())
	}
	for k := range r.reads {
		vf, off := int(k[0]), k[1]
		want := mlx4.UARPageOffset(128, mlx4.UARSize)
		if vf == 1 {
			want = mlx4.UARPageOffset(130, mlx4.UARSize)
		}
		if off != want+mlx4.MLX4_SEND_DOORBELL {
			t.Fatalf("read VF %d's BAR at %#x, not its QPs' page", vf, off)
		}
	}
}

// TestSchedAttachDetach: attach and detach in random order keep every list
// consistent (each slot's indexes point at itself, pages hold their QPs,
// the live VFs are those with QPs); detaching a QP twice or one never
// attached does nothing; a VF's reset detaches all of its QPs.
func TestSchedAttachDetach(t *testing.T) {
	useFakeSQ(t)
	r := newSchedRig(t, 4)
	rnd := rand.New(rand.NewPCG(1, 2))
	var in []*qpObj
	all := map[uint32]*qpObj{}
	for step := range 4000 {
		if len(in) == 0 || rnd.IntN(3) != 0 {
			qpn := uint32(0x100 + step)
			qp := fakeQP(rnd.IntN(4), qpn, 128+uint32(rnd.IntN(3)))
			all[qpn] = qp
			r.h.dpAttach(qp)
			r.h.dpAttach(qp) // again: nothing
			in = append(in, qp)
		} else {
			i := rnd.IntN(len(in))
			r.h.dpDetach(in[i])
			r.h.dpDetach(in[i])
			in[i] = in[len(in)-1]
			in = in[:len(in)-1]
		}
		if step%97 == 0 {
			r.h.ServiceQueues(64)
			checkSched(t, &r.h.sched, len(in))
		}
	}
	r.h.dpDetach(fakeQP(0, 0x7fffff, 128))
	checkSched(t, &r.h.sched, len(in))
	r.h.dpDetachVF(2)
	n := 0
	for _, qp := range in {
		if qp.tr.Owner != 2 {
			n++
		}
	}
	checkSched(t, &r.h.sched, n)
	if len(r.h.sched.vfs[2].qps) != 0 {
		t.Fatal("the reset VF kept QPs")
	}
}

func checkSched(t *testing.T, s *dpSched, want int) {
	t.Helper()
	if s.attached != want || len(s.byQPN) != want {
		t.Fatalf("attached %d, byQPN %d, want %d", s.attached, len(s.byQPN), want)
	}
	total := 0
	for vf := range s.vfs {
		v := &s.vfs[vf]
		total += len(v.qps)
		for i, q := range v.qps {
			if q.iVF != i || q.vf != vf || s.byQPN[q.qpn] != q || q.page.qps[q.iPg] != q {
				t.Fatalf("VF %d QP %d: slot indexes broken", vf, i)
			}
			if q.iHot >= 0 && v.hot[q.iHot] != q {
				t.Fatalf("VF %d QP %d: hot index broken", vf, i)
			}
		}
		for i, pg := range v.pages {
			if pg.i != i || len(pg.qps) == 0 {
				t.Fatalf("VF %d page %d: index %d, %d QPs", vf, i, pg.i, len(pg.qps))
			}
		}
		if (len(v.qps) > 0) != (v.live >= 0) || v.live >= 0 && s.live[v.live] != vf {
			t.Fatalf("VF %d: live index %d with %d QPs", vf, v.live, len(v.qps))
		}
	}
	if total != want {
		t.Fatalf("%d QPs on the VF lists, want %d", total, want)
	}
}

// TestSchedNoAllocs: after warm-up, attach/detach cycles, scans over idle
// and busy QPs, sweeps and postCQE allocate nothing; with nothing attached
// ServiceQueues returns at once.
func TestSchedNoAllocs(t *testing.T) {
	f := useFakeSQ(t)
	r := newSchedRig(t, 2)
	if n := r.h.ServiceQueues(64); n != 0 || len(r.reads) != 0 {
		t.Fatal("ServiceQueues with nothing attached did something")
	}
	var qps []*qpObj
	for i := range 100 {
		qp := fakeQP(i%2, 0x100+uint32(i), 128+uint32(i%5))
		qps = append(qps, qp)
		r.h.dpAttach(qp)
	}
	for _, qp := range qps[:50] {
		r.h.dpDetach(qp)
	}
	for _, qp := range qps[:50] {
		r.h.dpAttach(qp)
	}
	f.work[qps[1]] = 1 << 30
	if a := testing.AllocsPerRun(200, func() {
		r.h.dpDetach(qps[7])
		r.h.dpAttach(qps[7])
		r.h.ServiceQueues(64)
		r.h.SweepQueues()
	}); a != 0 {
		t.Fatalf("%v allocations per scan", a)
	}
	cr := newCQRig(t)
	v := cr.vfCQ(0)
	c := v.newCQ(3, 128)
	c.arm(false)
	e, ci := cqeOfSend(1, 0), make([]byte, 4)
	if a := testing.AllocsPerRun(100, func() {
		if err := cr.h.postCQE(c.n, e); err != nil {
			t.Fatal(err)
		}
		c.ci++ // the consumer keeps up
		binary.BigEndian.PutUint32(ci, c.ci)
		if err := v.w.CopyOut(c.rec+mlx4.CQDBRecSetCI, ci); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Fatalf("%v allocations per CQE", a)
	}
}

// TestSchedStaleDoorbellWord: a UAR page's send doorbell word left by a QP
// that used the page before (an earlier process or guest of the VF) is
// not a doorbell of the QP attached to the page next, nor a foreign one;
// that QP's own first ring is.
func TestSchedStaleDoorbellWord(t *testing.T) {
	f := useFakeSQ(t)
	r := newSchedRig(t, 1)
	r.ring(0, 128, 0x100) // the page's last QP, destroyed with its process
	qp := fakeQP(0, 0x101, 128)
	r.h.dpAttach(qp)
	r.cold(t)
	if st := r.h.DPStats(0); st.Doorbells.Load() != 0 || st.ForeignDoorbells.Load() != 0 {
		t.Fatalf("the stale word counted: doorbells %d foreign %d, want 0 0", st.Doorbells.Load(), st.ForeignDoorbells.Load())
	}
	f.work[qp] = 1
	r.ring(0, 128, 0x101)
	r.h.ServiceQueues(64)
	if st := r.h.DPStats(0); st.Doorbells.Load() != 1 || st.ForeignDoorbells.Load() != 0 || f.ran[qp] != 1 {
		t.Fatalf("the QP's ring: doorbells %d foreign %d, ran %d; want 1 0 1", st.Doorbells.Load(), st.ForeignDoorbells.Load(), f.ran[qp])
	}
}
