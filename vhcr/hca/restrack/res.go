package restrack

import (
	"fmt"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Allocation and release of numbered objects: the tracker side of ALLOC_RES
// and FREE_RES (§2.4).

// ReserveQPs grants count QPs to vf, reserves an aligned range of QP numbers
// and tracks each as Reserved (ALLOC_RES QP RESERVE). align 0 means 1.
//
// As qp_alloc_res, the quota is granted first (mlx4_grant_resource:
// ErrQuota) and the range checked after: a count of 0 or an alignment
// that is not a power of two fails like an exhausted allocator
// (__mlx4_qp_reserve_range's -ENOMEM: ErrNoSpace).
func (t *Tracker) ReserveQPs(vf, count, align int) (int, error) {
	if err := t.checkVF(vf); err != nil {
		return 0, err
	}
	if align == 0 {
		align = 1
	}
	p := t.pool(QP, 0)
	if err := p.grant(vf, count); err != nil {
		return 0, fmt.Errorf("qp: %w", err)
	}
	base := t.nums[QP].alloc(count, align)
	if base < 0 {
		p.release(vf, count)
		return 0, fmt.Errorf("vf %d: %d QPs aligned %d: %w", vf, count, align, ErrNoSpace)
	}
	for i := range count {
		if _, err := t.track(vf, QP, uint64(base+i), Reserved); err != nil {
			// cannot happen: the numbers were free in the bitmap
			for j := range i {
				t.untrack(t.objs[QP][uint64(base+j)])
			}
			t.nums[QP].free(base, count)
			p.release(vf, count)
			return 0, err
		}
	}
	return base, nil
}

// FreeQPs releases a range reserved by ReserveQPs (FREE_RES QP RESERVE):
// every QP must be vf's, not busy, unreferenced and Reserved; nothing is
// released unless all are. A count of 0 is a no-op (as mlx4); a negative
// count (in_param's high word read as mlx4's int) is ErrInvalid, and a
// special QP ErrNotRemovable: mlx4 checks neither and would release quota
// and numbers it never granted.
func (t *Tracker) FreeQPs(vf int, base uint64, count int) error {
	if err := t.checkVF(vf); err != nil {
		return err
	}
	switch {
	case count < 0:
		return fmt.Errorf("vf %d: free %d QPs: %w", vf, count, ErrInvalid)
	case count == 0:
		return nil // rem_res_range of nothing: mlx4 answers OK
	}
	// rem_res_range: each number in turn must exist (ErrNotFound), be vf's
	// (ErrNotOwner) and be removable. The walk stops at the first number
	// that is not tracked, so a huge count costs at most Total lookups.
	for i := range uint64(count) {
		o, err := t.lookup(vf, QP, base+i)
		if err != nil {
			return err
		}
		if o.Special {
			return fmt.Errorf("vf %d: qp %#x is a special QP: %w", vf, base+i, ErrNotRemovable)
		}
		if err := removeOK(o, 0); err != nil {
			return fmt.Errorf("vf %d: qp %#x: %w", vf, base+i, err)
		}
	}
	for i := range uint64(count) {
		t.untrack(t.objs[QP][base+i])
	}
	t.nums[QP].free(int(base), count)
	t.pool(QP, 0).release(vf, count)
	return nil
}

// removeOK is remove_*_ok: busy or referenced → ErrBusy; not in the
// removable state → ErrNotRemovable; MTT of another order → ErrInvalid.
//
// As in mlx4, references count as busy before the state is looked at for
// QPs and MTTs only; a CQ or SRQ in HW is "not removable" whatever its
// references.
func removeOK(o *Object, order int) error {
	if o.State == Busy || (o.Refs > 0 && (o.Type == QP || o.Type == MTT)) {
		return ErrBusy
	}
	var want State
	switch o.Type {
	case QP, MPT, EQ:
		want = Reserved
	default:
		want = Allocated
	}
	if o.State != want {
		return ErrNotRemovable
	}
	if o.Type == MTT && int(o.Order) != order {
		return ErrInvalid
	}
	if o.Refs > 0 {
		return ErrBusy
	}
	return nil
}

// Alloc allocates one object of ty for vf: CQ and SRQ (RESERVE_AND_MAP,
// tracked Allocated), MPT (RESERVE, tracked Reserved; the returned index is
// the key), Counter and XRCD (RESERVE, tracked Allocated), QP (a range of
// one). It returns the number.
func (t *Tracker) Alloc(vf int, ty Type) (int, error) {
	if ty == QP {
		return t.ReserveQPs(vf, 1, 1)
	}
	if err := t.checkVF(vf); err != nil {
		return 0, err
	}
	st := Allocated
	switch ty {
	case CQ, SRQ, Counter, XRCD:
	case MPT:
		st = Reserved
	default:
		return 0, fmt.Errorf("vf %d: alloc %v: %w", vf, ty, ErrInvalid)
	}
	p := t.pool(ty, 0)
	if err := p.grant(vf, 1); err != nil {
		return 0, fmt.Errorf("%v: %w", ty, err)
	}
	n := t.nums[ty].alloc(1, 1)
	if n < 0 {
		p.release(vf, 1)
		return 0, fmt.Errorf("vf %d: %v: %w", vf, ty, ErrNoSpace)
	}
	id := uint64(n)
	if ty == MPT {
		id &= t.mptMask
	}
	o, err := t.track(vf, ty, id, st)
	if err != nil {
		t.nums[ty].free(n, 1)
		p.release(vf, 1)
		return 0, err
	}
	o.Index = n
	return n, nil
}

// MPTID is the tracker id of MPT index (key) idx.
func (t *Tracker) MPTID(idx uint32) uint64 { return uint64(idx) & t.mptMask }

// Free releases one object allocated by Alloc (FREE_RES). The object must be
// vf's and in its removable state: CQ/SRQ Allocated (not HW), MPT Reserved
// (not mapped), counter/XRCD Allocated.
func (t *Tracker) Free(vf int, ty Type, id uint64) error {
	if ty == QP {
		return t.FreeQPs(vf, id, 1)
	}
	switch ty {
	case CQ, SRQ, Counter, XRCD, MPT:
	default:
		return fmt.Errorf("vf %d: free %v: %w", vf, ty, ErrInvalid)
	}
	o, err := t.lookup(vf, ty, id)
	if err != nil {
		return err
	}
	if err := removeOK(o, 0); err != nil {
		return fmt.Errorf("vf %d: %v %#x: %w", vf, ty, id, err)
	}
	t.untrack(o)
	t.nums[ty].free(o.Index, 1)
	t.pool(ty, 0).release(vf, 1)
	return nil
}

// AllocMTT grants 2^order MTT entries to vf and allocates an aligned range
// (ALLOC_RES MTT RESERVE_AND_MAP). It returns the first entry.
func (t *Tracker) AllocMTT(vf, order int) (int, error) {
	if err := t.checkVF(vf); err != nil {
		return 0, err
	}
	// mtt_alloc_res grants 1 << order first (ErrQuota), then the buddy
	// allocator fails an order it cannot serve (-ENOMEM: ErrNoSpace). An
	// order of 31 or more is outside what mlx4's int shift defines; it can
	// never be served either.
	if order < 0 || order > 30 {
		return 0, fmt.Errorf("vf %d: MTT order %d: %w", vf, order, ErrNoSpace)
	}
	n := 1 << order
	p := t.pool(MTT, 0)
	if err := p.grant(vf, n); err != nil {
		return 0, fmt.Errorf("mtt: %w", err)
	}
	if order > int(t.maxMTTOrder) {
		p.release(vf, n)
		return 0, fmt.Errorf("vf %d: MTT order %d (max %d): %w", vf, order, t.maxMTTOrder, ErrNoSpace)
	}
	base := t.nums[MTT].alloc(n, n)
	if base < 0 {
		p.release(vf, n)
		return 0, fmt.Errorf("vf %d: MTT order %d: %w", vf, order, ErrNoSpace)
	}
	o, err := t.track(vf, MTT, uint64(base), Allocated)
	if err != nil {
		t.nums[MTT].free(base, n)
		p.release(vf, n)
		return 0, err
	}
	o.Order = uint8(order)
	o.Index = base
	return base, nil
}

// FreeMTT releases an MTT range (FREE_RES MTT): owned, not busy, no
// references, and the order must match.
func (t *Tracker) FreeMTT(vf int, base uint64, order int) error {
	o, err := t.lookup(vf, MTT, base)
	if err != nil {
		return err
	}
	if err := removeOK(o, order); err != nil {
		return fmt.Errorf("vf %d: mtt %#x order %d: %w", vf, base, order, err)
	}
	t.untrack(o)
	t.nums[MTT].free(int(base), 1<<o.Order)
	t.pool(MTT, 0).release(vf, 1<<o.Order)
	return nil
}

// MTTRange is check_mtt_range on the MTT allocation starting at base: it
// must be vf's (get_res: ErrNotFound / ErrNotOwner) and [base, base+size)
// must lie inside it (ErrRange). The returned object is not marked busy.
func (t *Tracker) MTTRange(vf int, base uint64, size int) (*Object, error) {
	o, err := t.lookup(vf, MTT, base)
	if err != nil {
		return nil, err
	}
	if size < 0 || uint64(size) > 1<<o.Order {
		return nil, fmt.Errorf("vf %d: %d MTT entries at %#x exceed the allocation of %d: %w", vf, size, base, 1<<o.Order, ErrRange)
	}
	return o, nil
}

// ContainingMTT finds vf's MTT allocation that contains all of [start,
// start+n) (WRITE_MTT's get_containing_mtt); ErrInvalid if none, as
// get_containing_mtt's -EINVAL (BAD_PARAM, where check_mtt_range's -EPERM
// of the other wrappers is BAD_OP). Allocations
// are aligned to their size, so at most one candidate per order is looked
// up; nothing is allocated.
func (t *Tracker) ContainingMTT(vf int, start uint64, n int) (*Object, error) {
	if n < 0 || start >= uint64(t.cfg.Total[MTT]) || uint64(n) > uint64(t.cfg.Total[MTT])-start {
		return nil, fmt.Errorf("vf %d: MTT [%#x, +%d): %w", vf, start, n, ErrInvalid)
	}
	for order := 0; order <= int(t.maxMTTOrder); order++ {
		base := start &^ (1<<order - 1)
		o := t.objs[MTT][base]
		if o == nil || int(o.Order) != order {
			continue
		}
		if o.Owner == vf && start+uint64(n) <= base+1<<order {
			return o, nil
		}
		break // the allocation covering start is not (all) vf's
	}
	return nil, fmt.Errorf("vf %d: MTT [%#x, +%d) not inside one of its allocations: %w", vf, start, n, ErrInvalid)
}

// TrackSpecial tracks a special QP number (a proxy QP0/QP1 the caller has
// checked belongs to vf) as Reserved, without quota or allocator: ALLOC_RES
// QP MAP_ICM of a valid reserved QPN. A number already tracked → ErrExists.
func (t *Tracker) TrackSpecial(vf int, qpn uint64) error {
	if err := t.checkVF(vf); err != nil {
		return err
	}
	o, err := t.track(vf, QP, qpn, Reserved)
	if err != nil {
		return err
	}
	o.Special = true
	return nil
}

// UntrackSpecial removes a special QP tracked by TrackSpecial once it is
// back in Reserved (FREE_RES QP MAP_ICM).
func (t *Tracker) UntrackSpecial(vf int, qpn uint64) error {
	o, err := t.lookup(vf, QP, qpn)
	if err != nil {
		return err
	}
	if !o.Special {
		return nil
	}
	if err := removeOK(o, 0); err != nil {
		return err
	}
	t.untrack(o)
	return nil
}

// MapICM moves a QP or MPT from Reserved to Mapped (ALLOC_RES MAP_ICM).
func (t *Tracker) MapICM(vf int, ty Type, id uint64) error {
	return t.moveICM(vf, ty, id, Reserved, Mapped, "map")
}

// UnmapICM moves a QP or MPT from Mapped back to Reserved (FREE_RES
// MAP_ICM).
func (t *Tracker) UnmapICM(vf int, ty Type, id uint64) error {
	return t.moveICM(vf, ty, id, Mapped, Reserved, "unmap")
}

func (t *Tracker) moveICM(vf int, ty Type, id uint64, from, to State, verb string) error {
	if ty != QP && ty != MPT {
		return ErrInvalid
	}
	o, err := t.lookup(vf, ty, id)
	if err != nil {
		return err
	}
	if o.State == Busy {
		return ErrBusy
	}
	if o.State != from {
		return fmt.Errorf("vf %d: %v %#x: %s from state %d: %w", vf, ty, id, verb, o.State, ErrBadState)
	}
	o.State = to
	return nil
}

// EQID is the tracker id of VF vf's EQ eqn: (vf << 10) | eqn, as mlx4.
func EQID(vf int, eqn int) uint64 { return uint64(vf)<<10 | uint64(eqn&mlx4.EQNMask) }

// CreateEQ tracks VF vf's EQ eqn as Reserved and starts its move to HW
// (SW2HW_EQ): the caller commits with EndMove or undoes with RemoveEQ.
// eqn must be below EQsPerVF (ErrRange); an existing EQ → ErrExists.
func (t *Tracker) CreateEQ(vf, eqn int) (*Object, error) {
	if err := t.checkVF(vf); err != nil {
		return nil, err
	}
	if eqn < 0 || eqn >= t.cfg.EQsPerVF {
		return nil, fmt.Errorf("vf %d: eqn %d of %d: %w", vf, eqn, t.cfg.EQsPerVF, ErrRange)
	}
	o, err := t.track(vf, EQ, EQID(vf, eqn), Reserved)
	if err != nil {
		return nil, err
	}
	o.Index = eqn
	o.from, o.to, o.State = Reserved, HW, Busy
	return o, nil
}

// RemoveEQ untracks an EQ in Reserved state (after HW2SW_EQ's move) or an
// EQ whose creation is being undone (busy on its way to HW).
func (t *Tracker) RemoveEQ(o *Object) error {
	if o.Type != EQ || t.objs[EQ][o.ID] != o {
		return ErrNotFound
	}
	undo := o.State == Busy && o.from == Reserved && o.to == HW
	if !undo {
		if err := removeOK(o, 0); err != nil {
			return err
		}
	}
	t.untrack(o)
	return nil
}

// MACID is the tracker id of (vf, port, value) for MAC and VLAN objects.
func MACID(vf, port int, value uint64) uint64 {
	return uint64(vf)<<56 | uint64(port&0xff)<<48 | value&mlx4.MLX4_MAC_MASK
}

// AddMAC records one more registration of a MAC (ty MAC) or VLAN (ty VLAN)
// by vf on port, with the caller's table index. A new (value, port) is
// granted against the port's quota (ErrQuota and ErrInvalid, so that the
// VF sees BAD_PARAM as in mlx4); a known one gains a reference. It returns
// whether the entry is new.
func (t *Tracker) AddMAC(vf int, ty Type, port int, value uint64, index int) (bool, error) {
	if err := t.checkVF(vf); err != nil {
		return false, err
	}
	if ty != MAC && ty != VLAN {
		return false, ErrInvalid
	}
	p := t.pool(ty, port)
	if p == nil {
		return false, fmt.Errorf("vf %d: %v port %d: %w", vf, ty, port, ErrInvalid)
	}
	id := MACID(vf, port, value)
	if o := t.objs[ty][id]; o != nil {
		o.Refs++
		return false, nil
	}
	if err := p.grant(vf, 1); err != nil {
		return false, fmt.Errorf("%v port %d: %w (%w)", ty, port, err, ErrInvalid)
	}
	o, err := t.track(vf, ty, id, Allocated)
	if err != nil {
		p.release(vf, 1)
		return false, err
	}
	o.Refs, o.Port, o.Value, o.Index = 1, uint8(port), value, index
	return true, nil
}

// DelMAC drops one registration; when the last goes the entry is untracked
// and its quota released. It returns the table index and whether the entry
// is gone.
func (t *Tracker) DelMAC(vf int, ty Type, port int, value uint64) (int, bool, error) {
	if ty != MAC && ty != VLAN {
		return 0, false, ErrInvalid
	}
	o, err := t.lookup(vf, ty, MACID(vf, port, value))
	if err != nil {
		return 0, false, err
	}
	o.Refs--
	if o.Refs > 0 {
		return o.Index, false, nil
	}
	o.Refs = 0
	t.untrack(o)
	t.pool(ty, port).release(vf, 1)
	return o.Index, true, nil
}

// HasMAC reports whether vf registered MAC table index idx on port (smac
// index ownership of RoCE QP contexts and UPDATE_QP).
func (t *Tracker) HasMAC(vf, port, idx int) bool {
	if vf < 0 || vf >= len(t.vfs) {
		return false
	}
	for o := t.vfs[vf].head[MAC]; o != nil; o = o.next {
		if int(o.Port) == port && o.Index == idx {
			return true
		}
	}
	return false
}

// HasMACValue reports whether vf registered MAC mac on port (flow-steering
// rules may only steer the VF's own unicast MACs).
func (t *Tracker) HasMACValue(vf, port int, mac uint64) bool {
	o := t.objs[MAC][MACID(vf, port, mac)]
	return o != nil && o.Owner == vf
}

// AddFSRule tracks flow-steering rule regID of vf, holding a reference on
// its QP (which then cannot be freed). An existing regID → ErrExists; a QP
// of another VF → ErrNotOwner.
func (t *Tracker) AddFSRule(vf int, regID uint64, qp *Object) (*Object, error) {
	if err := t.checkVF(vf); err != nil {
		return nil, err
	}
	if qp == nil || qp.Type != QP || qp.Owner != vf {
		return nil, fmt.Errorf("vf %d: rule %#x on another function's QP: %w", vf, regID, ErrNotOwner)
	}
	o, err := t.track(vf, FSRule, regID, Allocated)
	if err != nil {
		return nil, err
	}
	o.deps[0], o.ndeps = qp, 1
	qp.Refs++
	return o, nil
}

// RemoveFSRule untracks vf's rule regID and drops its QP reference.
func (t *Tracker) RemoveFSRule(vf int, regID uint64) error {
	o, err := t.lookup(vf, FSRule, regID)
	if err != nil {
		return err
	}
	if err := removeOK(o, 0); err != nil {
		return err
	}
	t.untrack(o)
	return nil
}

// Released is what DeleteAll released, per type.
type Released [NumTypes]int

// DeleteAll releases everything VF vf owns in mlx4's cleanup order (§2.8):
// VLANs, MACs, FS rules, QPs, SRQs, CQs, MPTs, EQs, MTTs, counters, XRCDs.
// For each object, before it is untracked, release (if not nil) is called
// with the object as it was (its State says whether the HCA must do the
// implicit 2RST / HW2SW); the object's references are then dropped, its
// number and quota returned. It returns how many objects of each type went.
func (t *Tracker) DeleteAll(vf int, release func(*Object)) Released {
	var r Released
	if vf < 0 || vf >= len(t.vfs) {
		return r
	}
	s := &t.vfs[vf]
	for _, ty := range Types {
		for o := s.head[ty]; o != nil; o = s.head[ty] {
			if o.State == Busy {
				o.State = o.from
			}
			if release != nil {
				release(o)
			}
			t.untrack(o)
			switch ty {
			case MAC, VLAN:
				t.pool(ty, int(o.Port)).release(vf, 1)
			case MTT:
				t.nums[MTT].free(o.Index, 1<<o.Order)
				t.pool(MTT, 0).release(vf, 1<<o.Order)
			case QP:
				if o.Special {
					break
				}
				t.nums[QP].free(int(o.ID), 1)
				t.pool(QP, 0).release(vf, 1)
			case CQ, SRQ, MPT, Counter, XRCD:
				t.nums[ty].free(o.Index, 1)
				t.pool(ty, 0).release(vf, 1)
			}
			r[ty]++
		}
	}
	return r
}
