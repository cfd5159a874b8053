package restrack

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

func smallConfig(nvf int) Config {
	var c Config
	c.NumVFs, c.NumPorts = nvf, 2
	c.Total[QP], c.Reserved[QP] = 256, 64
	c.Total[CQ], c.Reserved[CQ] = 128, 16
	c.Total[SRQ], c.Reserved[SRQ] = 64, 8
	c.Total[MPT], c.Reserved[MPT] = 128, 16
	c.Total[MTT], c.Reserved[MTT] = 1024, 64
	c.Total[Counter], c.Reserved[Counter] = 32, 0
	c.Total[XRCD], c.Reserved[XRCD] = 64, 1
	c.MACsPerPort, c.VLANsPerPort, c.EQsPerVF = 16, 16, 8
	return c
}

func newTracker(t testing.TB, nvf int) *Tracker {
	t.Helper()
	tr, err := New(smallConfig(nvf))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func wantStatus(t *testing.T, err error, want mlx4.Status) {
	t.Helper()
	if got, _ := Status(err); got != want {
		t.Fatalf("error %v: status %v, want %v", err, got, want)
	}
}

func TestQuotaFormula(t *testing.T) {
	tr := newTracker(t, 3)
	// CQ: 112 instances, 4 functions: guaranteed 112/8 = 14, quota 56+14 = 70.
	if q := tr.QuotaOf(0, CQ, 0); q != (Quota{Quota: 70, Guaranteed: 14}) {
		t.Fatalf("CQ quota %+v", q)
	}
	if q := tr.QuotaOf(2, MAC, 1); q != (Quota{Quota: 16, Guaranteed: 2}) {
		t.Fatalf("MAC quota %+v", q)
	}
	if q := tr.QuotaOf(2, VLAN, 2); q != (Quota{Quota: 8, Guaranteed: 0}) {
		t.Fatalf("VLAN quota %+v", q)
	}
	if q := tr.QuotaOf(1, Counter, 0); q.Guaranteed != 2 || q.Quota != 32 {
		t.Fatalf("counter quota %+v", q)
	}
}

func TestOverrides(t *testing.T) {
	c := smallConfig(2)
	c.Overrides = []Override{{VF: -1, Type: CQ, Quota: 3, Guaranteed: 0}, {VF: 1, Type: CQ, Quota: 5, Guaranteed: 1}}
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if q := tr.QuotaOf(0, CQ, 0); q.Quota != 3 {
		t.Fatalf("vf0 %+v", q)
	}
	if q := tr.QuotaOf(1, CQ, 0); q != (Quota{5, 1}) {
		t.Fatalf("vf1 %+v", q)
	}
	for range 3 {
		if _, err := tr.Alloc(0, CQ); err != nil {
			t.Fatal(err)
		}
	}
	_, err = tr.Alloc(0, CQ)
	if !errors.Is(err, ErrQuota) {
		t.Fatalf("4th CQ: %v", err)
	}
	c.Overrides = []Override{{VF: -1, Type: CQ, Quota: 200, Guaranteed: 100}}
	if _, err := New(c); !errors.Is(err, ErrInvalid) {
		t.Fatalf("over-guaranteed config accepted: %v", err)
	}
}

// Quota exhaustion for every type, with the status the VF sees.
func TestQuotaExhaustionEveryType(t *testing.T) {
	for _, tc := range []struct {
		ty   Type
		want mlx4.Status
	}{
		{QP, mlx4.INTERNAL_ERR}, {CQ, mlx4.INTERNAL_ERR}, {SRQ, mlx4.INTERNAL_ERR}, {MPT, mlx4.INTERNAL_ERR},
		{MTT, mlx4.INTERNAL_ERR}, {Counter, mlx4.INTERNAL_ERR}, {XRCD, mlx4.INTERNAL_ERR},
		{MAC, mlx4.BAD_PARAM}, {VLAN, mlx4.BAD_PARAM},
	} {
		t.Run(tc.ty.String(), func(t *testing.T) {
			tr := newTracker(t, 3)
			var err error
			for i := 0; i < 10000 && err == nil; i++ {
				switch tc.ty {
				case MTT:
					_, err = tr.AllocMTT(0, 0)
				case MAC, VLAN:
					_, err = tr.AddMAC(0, tc.ty, 1, uint64(i), i)
				default:
					_, err = tr.Alloc(0, tc.ty)
				}
			}
			if !errors.Is(err, ErrQuota) {
				t.Fatalf("no quota error: %v", err)
			}
			wantStatus(t, err, tc.want)
			if _, r := Status(err); r != refusal.Quota {
				t.Fatalf("reason %v", r)
			}
			// VF 1 still gets its guaranteed amount.
			switch tc.ty {
			case MTT:
				_, err = tr.AllocMTT(1, 0)
			case MAC, VLAN:
				if tc.ty == VLAN {
					err = nil // VLAN guarantees nothing to VFs
					break
				}
				_, err = tr.AddMAC(1, tc.ty, 1, 7, 0)
			default:
				_, err = tr.Alloc(1, tc.ty)
			}
			if err != nil {
				t.Fatalf("vf 1 denied its guaranteed share: %v", err)
			}
		})
	}
}

func TestGuaranteedProtected(t *testing.T) {
	tr := newTracker(t, 3)
	// Three VFs take as much as they can; the fourth function (the PF's
	// share) and each VF's guaranteed part stay reserved.
	total := 0
	for vf := range 3 {
		for {
			if _, err := tr.Alloc(vf, CQ); err != nil {
				break
			}
			total++
		}
	}
	if total > 112-14 {
		t.Fatalf("VFs took %d CQs, the PF's guaranteed 14 of 112 not protected", total)
	}
}

func TestStateMachines(t *testing.T) {
	tr := newTracker(t, 2)
	qp, _ := tr.Alloc(0, QP)
	id := uint64(qp)
	// RESERVED → HW is illegal; → MAPPED only through MapICM.
	if _, err := tr.StartMove(0, QP, id, QPHW); !errors.Is(err, ErrBadState) {
		t.Fatalf("reserved→hw: %v", err)
	}
	if err := tr.MapICM(0, QP, id); err != nil {
		t.Fatal(err)
	}
	if err := tr.MapICM(0, QP, id); !errors.Is(err, ErrBadState) {
		t.Fatalf("double map: %v", err)
	}
	o, err := tr.StartMove(0, QP, id, QPHW)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.StartMove(0, QP, id, Mapped); !errors.Is(err, ErrBusy) {
		t.Fatalf("move while busy: %v", err)
	}
	if _, err := tr.Get(0, QP, id); !errors.Is(err, ErrBusy) {
		t.Fatalf("get while busy: %v", err)
	}
	tr.AbortMove(o)
	if o.State != Mapped {
		t.Fatalf("abort left %d", o.State)
	}
	o, _ = tr.StartMove(0, QP, id, QPHW)
	tr.EndMove(o)
	if o.State != QPHW {
		t.Fatalf("end left %d", o.State)
	}
	if _, err := tr.StartMove(1, QP, id, Mapped); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("other vf: %v", err)
	}
	if _, err := tr.StartMove(0, QP, 9999, Mapped); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	// FREE_RES of a QP in HW.
	err = tr.FreeQPs(0, id, 1)
	wantStatus(t, err, mlx4.BAD_OP)

	// CQ: ALLOCATED→HW, referenced CQ cannot leave HW.
	cqn, _ := tr.Alloc(0, CQ)
	cq, _ := tr.StartMove(0, CQ, uint64(cqn), HW)
	tr.EndMove(cq)
	if err := tr.Free(0, CQ, uint64(cqn)); !errors.Is(err, ErrNotRemovable) {
		t.Fatalf("free CQ in HW: %v", err)
	}
	wantStatus(t, tr.Free(0, CQ, uint64(cqn)), mlx4.BAD_OP)
	if err := tr.AddDep(o, cq); err != nil {
		t.Fatal(err)
	}
	_, err = tr.StartMove(0, CQ, uint64(cqn), Allocated)
	wantStatus(t, err, mlx4.RESOURCE_BUSY)
	tr.DropDeps(o)
	if cq.Refs != 0 {
		t.Fatalf("refs %d", cq.Refs)
	}
	c2, err := tr.StartMove(0, CQ, uint64(cqn), Allocated)
	if err != nil {
		t.Fatal(err)
	}
	tr.EndMove(c2)
	if err := tr.Free(0, CQ, uint64(cqn)); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Peek(0, CQ, uint64(cqn)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("freed CQ still there: %v", err)
	}
}

func TestMTTRanges(t *testing.T) {
	tr := newTracker(t, 2)
	a, err := tr.AllocMTT(0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if a%8 != 0 || a < 64 {
		t.Fatalf("order-3 base %d", a)
	}
	b, _ := tr.AllocMTT(1, 2)
	if _, err := tr.MTTRange(0, uint64(a), 8); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.MTTRange(0, uint64(a), 9); !errors.Is(err, ErrRange) {
		t.Fatalf("oversize: %v", err)
	}
	if _, err := tr.MTTRange(0, uint64(b), 1); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("other vf's MTT: %v", err)
	}
	if _, err := tr.MTTRange(0, uint64(a+1), 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("not a base: %v", err)
	}
	if _, err := tr.ContainingMTT(0, uint64(a+2), 6); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{a + 2, 7}, {b, 1}, {a - 1, 2}, {1 << 40, 1}, {a, -1}} {
		if _, err := tr.ContainingMTT(0, uint64(r[0]), r[1]); !errors.Is(err, ErrInvalid) {
			t.Fatalf("range %v accepted: %v", r, err)
		}
	}
	if err := tr.FreeMTT(0, uint64(a), 2); !errors.Is(err, ErrInvalid) {
		t.Fatalf("wrong order: %v", err)
	}
	if err := tr.FreeMTT(1, uint64(a), 3); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("other vf frees: %v", err)
	}
	if _, err := tr.AllocMTT(0, 40); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("order 40: %v", err)
	}
	if _, err := tr.AllocMTT(0, 25); !errors.Is(err, ErrQuota) {
		t.Fatalf("order 25: %v (the quota is checked before the order)", err)
	}
	if got := tr.Allocated(0, MTT, 0); got != 8 {
		t.Fatalf("allocated %d", got)
	}
	if err := tr.FreeMTT(0, uint64(a), 3); err != nil {
		t.Fatal(err)
	}
	if got := tr.Allocated(0, MTT, 0); got != 0 {
		t.Fatalf("allocated after free %d", got)
	}
}

func TestQPRangeAlign(t *testing.T) {
	tr := newTracker(t, 2)
	base, err := tr.ReserveQPs(0, 8, 8)
	if err != nil || base%8 != 0 {
		t.Fatalf("base %d err %v", base, err)
	}
	if _, err := tr.ReserveQPs(0, 2, 3); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("align 3: %v", err)
	}
	if _, err := tr.ReserveQPs(0, 0xffffff, 1); !errors.Is(err, ErrQuota) {
		t.Fatalf("0xffffff QPs: %v (the quota is checked before the range)", err)
	}
	if got := tr.Allocated(0, QP, 0); got != 8 {
		t.Fatalf("allocated %d after refused reservations", got)
	}
	o, _ := tr.Get(0, QP, uint64(base+3))
	if err := tr.FreeQPs(0, uint64(base), 8); !errors.Is(err, ErrBusy) {
		t.Fatalf("free range with a busy QP: %v", err)
	}
	tr.Put(o)
	if err := tr.FreeQPs(1, uint64(base), 8); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("other vf: %v", err)
	}
	if c := tr.Counts(0)[QP]; c != 8 {
		t.Fatalf("count %d", c)
	}
	if err := tr.FreeQPs(0, uint64(base), 8); err != nil {
		t.Fatal(err)
	}
	if c := tr.Counts(0)[QP]; c != 0 {
		t.Fatalf("count %d", c)
	}
}

func TestMACRefcount(t *testing.T) {
	tr := newTracker(t, 2)
	if isNew, err := tr.AddMAC(0, MAC, 1, 0xaabb, 5); err != nil || !isNew {
		t.Fatal(isNew, err)
	}
	if isNew, _ := tr.AddMAC(0, MAC, 1, 0xaabb, 5); isNew {
		t.Fatal("second registration counted as new")
	}
	if !tr.HasMAC(0, 1, 5) || tr.HasMAC(1, 1, 5) || tr.HasMAC(0, 2, 5) {
		t.Fatal("HasMAC")
	}
	if _, _, err := tr.DelMAC(1, MAC, 1, 0xaabb); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other vf deletes: %v", err)
	}
	if _, gone, _ := tr.DelMAC(0, MAC, 1, 0xaabb); gone {
		t.Fatal("gone after one of two")
	}
	if idx, gone, _ := tr.DelMAC(0, MAC, 1, 0xaabb); !gone || idx != 5 {
		t.Fatal("not gone")
	}
	if _, err := tr.AddMAC(0, MAC, 3, 1, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("port 3: %v", err)
	}
}

func TestEQLifecycle(t *testing.T) {
	tr := newTracker(t, 2)
	if _, err := tr.CreateEQ(0, 8); !errors.Is(err, ErrRange) {
		t.Fatalf("eqn 8: %v", err)
	}
	o, err := tr.CreateEQ(0, 3)
	if err != nil {
		t.Fatal(err)
	}
	tr.EndMove(o)
	if _, err := tr.CreateEQ(0, 3); !errors.Is(err, ErrExists) {
		t.Fatalf("twice: %v", err)
	}
	if _, err := tr.CreateEQ(1, 3); err != nil {
		t.Fatalf("per-function EQ numbers: %v", err)
	}
	if err := tr.RemoveEQ(o); !errors.Is(err, ErrNotRemovable) {
		t.Fatalf("remove in HW: %v", err)
	}
	m, err := tr.StartMove(0, EQ, EQID(0, 3), Reserved)
	if err != nil {
		t.Fatal(err)
	}
	tr.EndMove(m)
	if err := tr.RemoveEQ(m); err != nil {
		t.Fatal(err)
	}
	if n, err := tr.Owner(EQ, EQID(1, 3)); err != nil || n != 1 {
		t.Fatalf("owner %d %v", n, err)
	}
}

func TestDeleteAllOrderAndIsolation(t *testing.T) {
	tr := newTracker(t, 3)
	build := func(vf int) {
		mtt, _ := tr.AllocMTT(vf, 2)
		mo, _ := tr.MTTRange(vf, uint64(mtt), 4)
		cqn, _ := tr.Alloc(vf, CQ)
		cq, _ := tr.StartMove(vf, CQ, uint64(cqn), HW)
		tr.EndMove(cq)
		_ = tr.AddDep(cq, mo)
		qpn, _ := tr.Alloc(vf, QP)
		_ = tr.MapICM(vf, QP, uint64(qpn))
		qp, _ := tr.StartMove(vf, QP, uint64(qpn), QPHW)
		tr.EndMove(qp)
		_ = tr.AddDep(qp, cq)
		_ = tr.AddDep(qp, cq)
		_ = tr.AddDep(qp, mo)
		_, _ = tr.Alloc(vf, SRQ)
		_, _ = tr.Alloc(vf, MPT)
		_, _ = tr.Alloc(vf, Counter)
		_, _ = tr.Alloc(vf, XRCD)
		eq, _ := tr.CreateEQ(vf, 1)
		tr.EndMove(eq)
		_, _ = tr.AddMAC(vf, MAC, 1, 0x10+uint64(vf), 0)
		_, _ = tr.AddMAC(vf, VLAN, 2, 5, 0)
	}
	for vf := range 3 {
		build(vf)
	}
	before := [3][NumTypes]int{tr.Counts(0), tr.Counts(1), tr.Counts(2)}
	var order []Type
	var states []string
	rel := tr.DeleteAll(1, func(o *Object) {
		if o.Owner != 1 {
			t.Errorf("released vf %d's %v", o.Owner, o.Type)
		}
		if len(order) == 0 || order[len(order)-1] != o.Type {
			order = append(order, o.Type)
		}
		states = append(states, fmt.Sprintf("%v:%d", o.Type, o.State))
	})
	want := []Type{VLAN, MAC, QP, SRQ, CQ, MPT, EQ, MTT, Counter, XRCD}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if Released(before[1]) != rel {
		t.Fatalf("released %v, had %v", rel, before[1])
	}
	if c := tr.Counts(1); c != ([NumTypes]int{}) {
		t.Fatalf("vf 1 counts after DeleteAll %v", c)
	}
	for _, ty := range []Type{QP, CQ, SRQ, MPT, MTT, Counter, XRCD} {
		if a := tr.Allocated(1, ty, 0); a != 0 {
			t.Fatalf("vf 1 %v quota usage %d", ty, a)
		}
	}
	if tr.Counts(0) != before[0] || tr.Counts(2) != before[2] {
		t.Fatal("other VFs changed")
	}
	// The MTT of VF 0 still has its two references.
	o, _ := tr.Peek(0, MTT, uint64(firstMTT(tr, 0)))
	if o.Refs != 2 {
		t.Fatalf("vf 0 MTT refs %d", o.Refs)
	}
	// VF 1 can start again.
	build(1)
	if tr.Counts(1) != before[1] {
		t.Fatalf("rebuild %v", tr.Counts(1))
	}
}

func firstMTT(tr *Tracker, vf int) int {
	return int(tr.vfs[vf].head[MTT].ID)
}

func TestStatusMapping(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want mlx4.Status
		r    refusal.Reason
	}{
		{nil, mlx4.OK, refusal.None},
		{fmt.Errorf("x: %w", ErrNotFound), mlx4.INTERNAL_ERR, refusal.NotFound},
		{fmt.Errorf("x: %w", ErrNotOwner), mlx4.BAD_OP, refusal.NotOwner},
		{fmt.Errorf("x: %w", ErrBadState), mlx4.BAD_PARAM, refusal.BadState},
		{fmt.Errorf("x: %w", ErrBusy), mlx4.RESOURCE_BUSY, refusal.Busy},
		{fmt.Errorf("x: %w", ErrQuota), mlx4.INTERNAL_ERR, refusal.Quota},
		{fmt.Errorf("x: %w (%w)", ErrQuota, ErrInvalid), mlx4.BAD_PARAM, refusal.Quota},
		{fmt.Errorf("x: %w", ErrNotRemovable), mlx4.BAD_OP, refusal.BadState},
		{fmt.Errorf("x: %w", ErrNoSpace), mlx4.EXCEED_LIM, refusal.Quota},
		{errors.New("other"), mlx4.INTERNAL_ERR, refusal.None},
	} {
		s, r := Status(tc.err)
		if s != tc.want || r != tc.r {
			t.Errorf("%v: %v/%v, want %v/%v", tc.err, s, r, tc.want, tc.r)
		}
	}
}

func TestLookupsDoNotAllocate(t *testing.T) {
	tr := newTracker(t, 2)
	cqn, _ := tr.Alloc(0, CQ)
	mtt, _ := tr.AllocMTT(0, 4)
	var snap [2][NumTypes]int
	n := testing.AllocsPerRun(100, func() {
		o, err := tr.Get(0, CQ, uint64(cqn))
		if err != nil {
			panic(err)
		}
		tr.Put(o)
		_, _ = tr.Peek(0, CQ, uint64(cqn))
		_, _ = tr.MTTRange(0, uint64(mtt), 16)
		_, _ = tr.ContainingMTT(0, uint64(mtt+3), 5)
		_ = tr.Counts(0)
		tr.Snapshot(snap[:])
	})
	if n != 0 {
		t.Fatalf("%v allocations per lookup round", n)
	}
}

func TestBitmapExhaustion(t *testing.T) {
	b := newBitmap(4, 70)
	got := 0
	for b.alloc(1, 1) >= 0 {
		got++
	}
	if got != 66 {
		t.Fatalf("allocated %d of 66", got)
	}
	b.free(10, 1)
	if n := b.alloc(1, 1); n != 10 {
		t.Fatalf("reuse got %d", n)
	}
	b = newBitmap(0, 64)
	if n := b.alloc(16, 16); n != 0 {
		t.Fatal(n)
	}
	if n := b.alloc(32, 32); n != 32 {
		t.Fatal(n)
	}
	if n := b.alloc(32, 32); n != -1 {
		t.Fatal(n)
	}
}
