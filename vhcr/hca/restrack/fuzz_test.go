package restrack

import (
	"errors"
	"testing"
)

// FuzzTracker drives the tracker's state machines with arbitrary operation
// sequences from three VFs (3 bytes per operation: op, vf, argument) and
// checks the invariants after each: per-VF counts equal the objects Walk
// finds, owners are consistent, references are never negative, quota usage
// never exceeds the quota; and DeleteAll leaves a VF with nothing while the
// others keep what they had.
func FuzzTracker(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 0, 0, 2, 0, 0, 3, 1, 0})
	f.Add([]byte{4, 0, 2, 5, 0, 0, 6, 1, 0, 7, 0, 3, 8, 0, 0, 9, 2, 9})
	f.Add([]byte{10, 0, 0, 11, 0, 0, 12, 1, 0, 13, 0, 0, 14, 2, 5, 15, 0, 0})
	f.Fuzz(fuzzTrackerOps)
}

func fuzzTrackerOps(t *testing.T, ops []byte) {
	tr := newTracker(t, 3)
	var held [3][]*Object // objects an operation left busy or referenced
	ids := func(vf int, ty Type) []uint64 {
		var out []uint64
		tr.Walk(vf, func(o *Object) {
			if o.Type == ty {
				out = append(out, o.ID)
			}
		})
		return out
	}
	pickID := func(vf int, ty Type, arg byte) uint64 {
		all := append(ids(vf, ty), ids((vf+1)%3, ty)...)
		if len(all) == 0 || arg == 0xff {
			return uint64(arg) * 7
		}
		return all[int(arg)%len(all)]
	}
	for i := 0; i+2 < len(ops) && i < 3*200; i += 3 {
		op, vf, arg := ops[i]%16, int(ops[i+1]%3), ops[i+2]
		tys := [...]Type{QP, CQ, SRQ, MPT, Counter, XRCD}
		ty := tys[int(arg)%len(tys)]
		switch op {
		case 0:
			_, _ = tr.Alloc(vf, ty)
		case 1:
			_ = tr.Free(vf, ty, pickID(vf, ty, arg))
		case 2:
			_, _ = tr.ReserveQPs(vf, int(arg%9), 1<<(arg%4))
		case 3:
			_ = tr.FreeQPs(vf, pickID(vf, QP, arg), int(arg%3))
		case 4:
			_, _ = tr.AllocMTT(vf, int(arg%5))
		case 5:
			_ = tr.FreeMTT(vf, pickID(vf, MTT, arg), int(arg%5))
		case 6:
			_ = tr.MapICM(vf, []Type{QP, MPT}[arg%2], pickID(vf, []Type{QP, MPT}[arg%2], arg))
		case 7:
			_ = tr.UnmapICM(vf, []Type{QP, MPT}[arg%2], pickID(vf, []Type{QP, MPT}[arg%2], arg))
		case 8: // a complete move to an arbitrary state
			mty := []Type{QP, MPT, CQ, SRQ, EQ}[arg%5]
			if o, err := tr.StartMove(vf, mty, pickID(vf, mty, arg), State(arg%5)); err == nil {
				if arg&0x80 != 0 {
					tr.AbortMove(o)
				} else {
					tr.EndMove(o)
				}
			}
		case 9: // reference an MTT from a CQ in HW
			cq, err1 := tr.Peek(vf, CQ, pickID(vf, CQ, arg))
			mtt, err2 := tr.MTTRange(vf, pickID(vf, MTT, arg), 1)
			if err1 == nil && err2 == nil && InHW(CQ, cq.State) && cq.ndeps == 0 {
				_ = tr.AddDep(cq, mtt)
			}
		case 10:
			if o, err := tr.CreateEQ(vf, int(arg%10)); err == nil {
				if arg&1 == 0 {
					tr.EndMove(o)
				} else {
					_ = tr.RemoveEQ(o)
				}
			}
		case 11:
			if o, err := tr.Get(vf, ty, pickID(vf, ty, arg)); err == nil {
				if arg&1 == 0 {
					tr.Put(o)
				} else {
					held[vf] = append(held[vf], o)
				}
			}
		case 12:
			_, _ = tr.AddMAC(vf, []Type{MAC, VLAN}[arg%2], 1+int(arg>>7), uint64(arg%5), int(arg))
		case 13:
			_, _, _ = tr.DelMAC(vf, []Type{MAC, VLAN}[arg%2], 1+int(arg>>7), uint64(arg%5))
		case 14:
			before := [3][NumTypes]int{tr.Counts(0), tr.Counts(1), tr.Counts(2)}
			tr.DeleteAll(vf, nil)
			held[vf] = nil
			if tr.Counts(vf) != ([NumTypes]int{}) {
				t.Fatalf("DeleteAll(%d) left %v", vf, tr.Counts(vf))
			}
			for o := range 3 {
				if o != vf && tr.Counts(o) != before[o] {
					t.Fatalf("DeleteAll(%d) changed VF %d", vf, o)
				}
			}
		case 15:
			for _, o := range held[vf] {
				tr.Put(o)
			}
			held[vf] = nil
		}
		for v := range 3 {
			var n [NumTypes]int
			var objs []*Object
			tr.Walk(v, func(o *Object) { n[o.Type]++; objs = append(objs, o) })
			for _, o := range objs {
				if o.Owner != v {
					t.Fatalf("VF %d lists VF %d's %v", v, o.Owner, o.Type)
				}
				if o.Refs < 0 {
					t.Fatalf("negative refs on %v %#x", o.Type, o.ID)
				}
				if owner, err := tr.Owner(o.Type, o.ID); err != nil || owner != v {
					t.Fatalf("%v %#x: owner %d %v", o.Type, o.ID, owner, err)
				}
			}
			if n != tr.Counts(v) {
				t.Fatalf("VF %d: walk %v, counts %v", v, n, tr.Counts(v))
			}
			for _, ty := range []Type{QP, CQ, SRQ, MPT, MTT, Counter, XRCD} {
				if a, q := tr.Allocated(v, ty, 0), tr.QuotaOf(v, ty, 0).Quota; a > q || a < 0 {
					t.Fatalf("VF %d %v: allocated %d quota %d", v, ty, a, q)
				}
			}
		}
	}
	for v := range 3 {
		tr.DeleteAll(v, nil)
		for _, ty := range []Type{QP, CQ, SRQ, MPT, MTT, Counter, XRCD} {
			if a := tr.Allocated(v, ty, 0); a != 0 {
				t.Fatalf("VF %d %v: %d still allocated after DeleteAll", v, ty, a)
			}
		}
	}
	// Every number went back: a full reallocation of a pool succeeds.
	if _, err := tr.AllocMTT(0, 4); err != nil && !errors.Is(err, ErrQuota) {
		t.Fatal(err)
	}
}
