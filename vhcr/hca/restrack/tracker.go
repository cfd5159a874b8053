package restrack

import (
	"fmt"
	"math/bits"
)

// Config sizes a Tracker.
type Config struct {
	NumVFs   int
	NumPorts int // physical ports (1 or 2); MAC and VLAN pools are per port

	// Total and Reserved give the number space of each allocated type:
	// numbers [Reserved, Total) are handed out (QP, CQ, SRQ, MPT, MTT in
	// entries, Counter, XRCD). Numbers below Reserved belong to the firmware
	// and the PF. For MPT, Total must be a power of two (ids are
	// index & (Total-1)). For Counter, the last index is the sink counter.
	Total    [NumTypes]int
	Reserved [NumTypes]int
	// Instances, where non-zero, is the num_instances the quotas of a type
	// are computed from (default Total-Reserved; mlx4 subtracts the
	// special QPs for QP). If it exceeds the numbers [Reserved, Total)
	// actually hold, the last allocations of a full device fail with
	// ErrNoSpace instead of ErrQuota.
	Instances [NumTypes]int

	MACsPerPort  int // 128 in mlx4
	VLANsPerPort int // 128 in mlx4
	EQsPerVF     int // a VF's EQ numbers are 0..EQsPerVF-1 (per function)

	// Overrides replace computed quotas (applied in order).
	Overrides []Override
}

// Object is one tracked resource (struct res_common and its per-type
// extensions). Fields are read-only for callers; the tracker changes them.
type Object struct {
	Type  Type
	ID    uint64 // tracker id: the number; EQ: vf<<10|eqn; MAC/VLAN: see MACID
	Owner int    // VF
	State State
	Refs  int   // users holding a reference (QPs on a CQ, objects on an MTT)
	Order uint8 // MTT: the allocation is 2^Order entries from ID
	Port  uint8 // MAC, VLAN: physical port
	Index int   // MPT: the full index (key); MAC/VLAN: table index (caller's)
	Value uint64

	// Special: a reserved special QP (proxy QP0/QP1) tracked on MAP_ICM;
	// its number and quota are not the tracker's to release.
	Special bool

	from, to State
	deps     [4]*Object
	ndeps    uint8
	prev     *Object
	next     *Object
}

// From is the state an object in Busy will return to on Put or AbortMove.
func (o *Object) From() State { return o.from }

// To is the target state of a move in progress.
func (o *Object) To() State { return o.to }

// Deps returns the objects o holds references on (up to 4; no allocation:
// the result aliases o's array).
func (o *Object) Deps() []*Object { return o.deps[:o.ndeps] }

// vfResources is what the tracker keeps per VF: its objects by type and its
// quota use.
type vfResources struct {
	head   [NumTypes]*Object // per-type list of owned objects
	counts [NumTypes]int
}

// Tracker is the resource tracker of one PF.
type Tracker struct {
	cfg         Config
	objs        [NumTypes]map[uint64]*Object
	vfs         []vfResources
	pools       [NumTypes][]pool // one pool per type; MAC/VLAN one per port
	nums        [NumTypes]bitmap
	mptMask     uint64
	maxMTTOrder uint8
}

// allocated types with a number allocator
var numbered = [...]Type{QP, CQ, SRQ, MPT, MTT, Counter, XRCD}

// New builds a tracker and computes the quotas (§2.3), then applies the
// overrides. It fails if the configuration is inconsistent (guaranteed
// amounts exceeding the pool).
//
// The stages: the configuration's shape; the numbered types' allocators and
// quotas; the MPT and MTT geometry; the per-port MAC and VLAN quotas; the
// overrides; the guarantees against the pools.
func New(cfg Config) (*Tracker, error) {
	if err := checkShape(cfg); err != nil {
		return nil, err
	}
	t := &Tracker{cfg: cfg, vfs: make([]vfResources, cfg.NumVFs)}
	for i := range t.objs {
		t.objs[i] = make(map[uint64]*Object)
	}
	if err := t.numberedPools(); err != nil {
		return nil, err
	}
	if tot := cfg.Total[MPT]; tot&(tot-1) != 0 {
		return nil, fmt.Errorf("restrack: MPT total %d not a power of two: %w", tot, ErrInvalid)
	}
	t.mptMask = uint64(cfg.Total[MPT] - 1)
	t.maxMTTOrder = uint8(bits.Len(uint(cfg.Total[MTT])) - 1)
	t.portPools()
	for _, o := range cfg.Overrides {
		if err := t.override(o); err != nil {
			return nil, err
		}
	}
	if err := t.checkGuarantees(); err != nil {
		return nil, err
	}
	return t, nil
}

// checkShape checks the counts of VFs, ports, EQs and table entries.
func checkShape(cfg Config) error {
	if cfg.NumVFs <= 0 || cfg.NumVFs > 1<<12 || cfg.NumPorts < 1 || cfg.NumPorts > 2 {
		return fmt.Errorf("restrack: %d VFs, %d ports: %w", cfg.NumVFs, cfg.NumPorts, ErrInvalid)
	}
	if cfg.EQsPerVF <= 0 || cfg.EQsPerVF > 1024 {
		return fmt.Errorf("restrack: %d EQs per VF: %w", cfg.EQsPerVF, ErrInvalid)
	}
	if cfg.MACsPerPort <= 0 || cfg.VLANsPerPort <= 0 {
		return fmt.Errorf("restrack: MAC/VLAN tables: %w", ErrInvalid)
	}
	return nil
}

// numberedPools builds the number allocator and the one pool of each
// numbered type.
func (t *Tracker) numberedPools() error {
	cfg, nvf := &t.cfg, t.cfg.NumVFs
	for _, ty := range numbered {
		tot, rsv := cfg.Total[ty], cfg.Reserved[ty]
		if tot <= 0 || rsv < 0 || rsv >= tot || tot > 1<<26 {
			return fmt.Errorf("restrack: %v: total %d reserved %d: %w", ty, tot, rsv, ErrInvalid)
		}
		hi := tot
		if ty == Counter {
			hi = tot - 1 // the sink counter
		}
		t.nums[ty] = newBitmap(rsv, hi)
		p := newPool(nvf)
		if ty == Counter {
			counterQuotas(&p, tot, nvf, cfg.NumPorts)
		} else {
			n := tot - rsv
			if in := cfg.Instances[ty]; in > 0 {
				n = in
			}
			p.initQuotas(n, nvf)
		}
		t.pools[ty] = []pool{p}
	}
	return nil
}

// portPools builds the per-port MAC and VLAN pools: every VF may use the
// whole MAC table with min(2, n/(VFs+1)) guaranteed (the PF too), half the
// VLAN table with none guaranteed (the PF is guaranteed half).
func (t *Tracker) portPools() {
	nvf := t.cfg.NumVFs
	for _, ty := range []Type{MAC, VLAN} {
		t.pools[ty] = make([]pool, t.cfg.NumPorts)
		for port := range t.pools[ty] {
			p := newPool(nvf)
			if ty == MAC {
				n := t.cfg.MACsPerPort
				g := min(2, n/(nvf+1))
				p.free, p.reserved = n, g // PF guaranteed share
				for vf := range p.quota {
					p.quota[vf], p.guaranteed[vf] = n, g
					p.reserved += g
				}
			} else {
				n := t.cfg.VLANsPerPort
				p.free, p.reserved = n, n/2 // PF guaranteed half the table
				for vf := range p.quota {
					p.quota[vf], p.guaranteed[vf] = n/2, 0
				}
			}
			t.pools[ty][port] = p
		}
	}
}

// override applies one override to its type's pools (every port's), for
// one VF or (VF < 0) all.
func (t *Tracker) override(o Override) error {
	nvf := t.cfg.NumVFs
	if int(o.Type) >= NumTypes || t.pools[o.Type] == nil || o.VF >= nvf {
		return fmt.Errorf("restrack: override %+v: %w", o, ErrInvalid)
	}
	for i := range t.pools[o.Type] {
		p := &t.pools[o.Type][i]
		for vf := range nvf {
			if o.VF >= 0 && vf != o.VF {
				continue
			}
			q, g := p.quota[vf], p.guaranteed[vf]
			if o.Quota >= 0 {
				q = o.Quota
			}
			if o.Guaranteed >= 0 {
				g = o.Guaranteed
			}
			if g > q {
				return fmt.Errorf("restrack: override %+v: guaranteed above quota: %w", o, ErrInvalid)
			}
			p.set(vf, q, g)
		}
	}
	return nil
}

// checkGuarantees refuses guaranteed amounts that exceed their pool.
func (t *Tracker) checkGuarantees() error {
	for ty := range t.pools {
		for i := range t.pools[ty] {
			if p := &t.pools[ty][i]; p.reserved > p.free {
				return fmt.Errorf("restrack: %v: guaranteed amounts %d exceed the pool %d: %w",
					Type(ty), p.reserved, p.free, ErrInvalid)
			}
		}
	}
	return nil
}

// counterQuotas: quota = max_counters; guaranteed 2 per port for the PF and
// 1 per port for as many VFs as the pool covers; the last counter is the
// sink and never handed out.
func counterQuotas(p *pool, total, nvf, ports int) {
	pf := 2 * ports
	p.free = total - 1
	p.reserved = min(pf, p.free)
	for vf := range p.quota {
		p.quota[vf] = total // max_counters, as mlx4; the sink is never free
		if p.reserved+ports <= p.free {
			p.guaranteed[vf] = ports
			p.reserved += ports
		}
	}
}

// NumVFs is the number of functions.
func (t *Tracker) NumVFs() int { return t.cfg.NumVFs }

// Config returns the configuration the tracker was built with.
func (t *Tracker) Config() Config { return t.cfg }

func (t *Tracker) pool(ty Type, port int) *pool {
	ps := t.pools[ty]
	if ty == MAC || ty == VLAN {
		if port < 1 || port > len(ps) {
			return nil
		}
		return &ps[port-1]
	}
	if len(ps) == 0 {
		return nil
	}
	return &ps[0]
}

// QuotaOf returns VF vf's quota and guaranteed amount of ty (port for MAC and
// VLAN), as QUERY_FUNC_CAP reports them.
func (t *Tracker) QuotaOf(vf int, ty Type, port int) Quota {
	p := t.pool(ty, port)
	if p == nil || vf < 0 || vf >= len(p.quota) {
		return Quota{}
	}
	return Quota{Quota: p.quota[vf], Guaranteed: p.guaranteed[vf]}
}

// Allocated returns VF vf's quota usage of ty (MTT: entries).
func (t *Tracker) Allocated(vf int, ty Type, port int) int {
	p := t.pool(ty, port)
	if p == nil || vf < 0 || vf >= len(p.allocated) {
		return 0
	}
	return p.allocated[vf]
}

// Counts returns the number of objects of each type VF vf owns, indexed by
// Type. It allocates nothing (the array is returned by value).
func (t *Tracker) Counts(vf int) [NumTypes]int {
	if vf < 0 || vf >= len(t.vfs) {
		return [NumTypes]int{}
	}
	return t.vfs[vf].counts
}

// Walk calls fn for every object VF vf owns, in type order (for tests and
// diagnostics; fn must not call the tracker).
func (t *Tracker) Walk(vf int, fn func(o *Object)) {
	if vf < 0 || vf >= len(t.vfs) {
		return
	}
	for ty := range t.vfs[vf].head {
		for o := t.vfs[vf].head[ty]; o != nil; o = o.next {
			fn(o)
		}
	}
}

// Snapshot copies every VF's counts into dst (len(dst) ≥ NumVFs), for
// gauges at scrape time (through the owner: the PF's PF.Do).
func (t *Tracker) Snapshot(dst [][NumTypes]int) {
	for vf := range t.vfs {
		if vf < len(dst) {
			dst[vf] = t.vfs[vf].counts
		}
	}
}

func (t *Tracker) checkVF(vf int) error {
	if vf < 0 || vf >= len(t.vfs) {
		return fmt.Errorf("vf %d: %w", vf, ErrNoFunc)
	}
	return nil
}

// track adds a new object.
func (t *Tracker) track(vf int, ty Type, id uint64, st State) (*Object, error) {
	m := t.objs[ty]
	if _, ok := m[id]; ok {
		return nil, fmt.Errorf("%v %#x: %w", ty, id, ErrExists)
	}
	o := &Object{Type: ty, ID: id, Owner: vf, State: st}
	m[id] = o
	s := &t.vfs[vf]
	o.next = s.head[ty]
	if o.next != nil {
		o.next.prev = o
	}
	s.head[ty] = o
	s.counts[ty]++
	return o, nil
}

// untrack removes o from the maps and lists and drops its references
// .
func (t *Tracker) untrack(o *Object) {
	t.dropDeps(o)
	delete(t.objs[o.Type], o.ID)
	s := &t.vfs[o.Owner]
	if o.prev != nil {
		o.prev.next = o.next
	} else if s.head[o.Type] == o {
		s.head[o.Type] = o.next
	}
	if o.next != nil {
		o.next.prev = o.prev
	}
	o.prev, o.next = nil, nil
	s.counts[o.Type]--
}

// lookup finds an owned object: not tracked → ErrNotFound,
// another VF's → ErrNotOwner.
func (t *Tracker) lookup(vf int, ty Type, id uint64) (*Object, error) {
	if int(ty) >= NumTypes {
		return nil, fmt.Errorf("type %d: %w", ty, ErrInvalid)
	}
	o := t.objs[ty][id]
	if o == nil {
		return nil, fmt.Errorf("vf %d: %v %#x: %w", vf, ty, id, ErrNotFound)
	}
	if o.Owner != vf {
		return nil, fmt.Errorf("vf %d: %v %#x: %w", vf, ty, id, ErrNotOwner)
	}
	return o, nil
}

// Peek returns VF vf's object without marking it busy (read-only checks).
// A busy object is returned as well.
func (t *Tracker) Peek(vf int, ty Type, id uint64) (*Object, error) {
	return t.lookup(vf, ty, id)
}

// Owner returns the owner of an object, for routing asynchronous events
// (mlx4_get_slave_from_resource_id); ErrNotFound if untracked.
func (t *Tracker) Owner(ty Type, id uint64) (int, error) {
	if int(ty) >= NumTypes {
		return -1, ErrInvalid
	}
	o := t.objs[ty][id]
	if o == nil {
		return -1, fmt.Errorf("%v %#x: %w", ty, id, ErrNotFound)
	}
	return o.Owner, nil
}

// Get marks VF vf's object busy (get_res): not found → ErrNotFound, busy →
// ErrBusy, wrong owner → ErrNotOwner. Put releases it.
func (t *Tracker) Get(vf int, ty Type, id uint64) (*Object, error) {
	o, err := t.lookup(vf, ty, id)
	if err != nil {
		return nil, err
	}
	if o.State == Busy {
		return nil, fmt.Errorf("vf %d: %v %#x: %w", vf, ty, id, ErrBusy)
	}
	o.from = o.State
	o.State = Busy
	return o, nil
}

// Put ends a Get (put_res): the object returns to its previous state.
func (t *Tracker) Put(o *Object) {
	if o.State == Busy {
		o.State = o.from
	}
}

// StartMove begins a state transition of VF vf's object to state to
// (*_res_start_move_to). Not found → ErrNotFound, wrong owner →
// ErrNotOwner, busy → ErrBusy, illegal transition → ErrBadState, a CQ or SRQ
// leaving HW while referenced → ErrBusy. On success the object is Busy
// until EndMove (commit) or AbortMove.
func (t *Tracker) StartMove(vf int, ty Type, id uint64, to State) (*Object, error) {
	o, err := t.lookup(vf, ty, id)
	if err != nil {
		return nil, err
	}
	if o.State == Busy {
		return nil, fmt.Errorf("vf %d: %v %#x: %w", vf, ty, id, ErrBusy)
	}
	if err := moveOK(o, to); err != nil {
		return nil, fmt.Errorf("vf %d: %v %#x state %d → %d: %w", vf, ty, id, o.State, to, err)
	}
	o.from, o.to = o.State, to
	o.State = Busy
	return o, nil
}

// moveOK is the per-type transition table of §2.5.
func moveOK(o *Object, to State) error {
	from := o.State
	switch o.Type {
	case QP, MPT:
		switch to {
		case Reserved:
			if from == Mapped {
				return nil
			}
		case Mapped:
			if from == Reserved || from == QPHW {
				return nil
			}
		case QPHW:
			if from == Mapped {
				return nil
			}
		}
	case CQ, SRQ:
		switch to {
		case Allocated:
			if from == HW {
				if o.Refs > 0 {
					return ErrBusy
				}
				return nil
			}
		case HW:
			if from == Allocated {
				return nil
			}
		}
	case EQ:
		switch to {
		case Reserved:
			if from == HW {
				return nil
			}
		case HW:
			if from == Reserved {
				return nil
			}
		}
	}
	return ErrBadState
}

// EndMove commits a move started by StartMove.
func (t *Tracker) EndMove(o *Object) {
	if o.State == Busy {
		o.State = o.to
	}
}

// AbortMove abandons a move started by StartMove.
func (t *Tracker) AbortMove(o *Object) {
	if o.State == Busy {
		o.State = o.from
	}
}

// AddDep makes o hold a reference on d (a QP on its CQs, SRQ and MTT; a CQ,
// SRQ, EQ or MPT on its MTT). At most 4 per object.
func (t *Tracker) AddDep(o, d *Object) error {
	if int(o.ndeps) >= len(o.deps) {
		return fmt.Errorf("%v %#x: too many references: %w", o.Type, o.ID, ErrInvalid)
	}
	o.deps[o.ndeps] = d
	o.ndeps++
	d.Refs++
	return nil
}

// DropDeps releases every reference o holds (2RST, HW2SW).
func (t *Tracker) DropDeps(o *Object) {
	t.dropDeps(o)
}

func (t *Tracker) dropDeps(o *Object) {
	for i := range o.ndeps {
		if d := o.deps[i]; d != nil && d.Refs > 0 {
			d.Refs--
		}
		o.deps[i] = nil
	}
	o.ndeps = 0
}

// Hold adds a reference to o that no object records (a multicast attachment
// or flow-steering rule on a QP); Unhold drops it.
func (t *Tracker) Hold(o *Object) {
	o.Refs++
}

// Unhold drops a reference taken by Hold.
func (t *Tracker) Unhold(o *Object) {
	if o.Refs > 0 {
		o.Refs--
	}
}

// ReplaceDep moves o's reference from old to nu (MODIFY_CQ resize).
func (t *Tracker) ReplaceDep(o, old, nu *Object) {
	for i := range o.ndeps {
		if o.deps[i] == old {
			if old.Refs > 0 {
				old.Refs--
			}
			o.deps[i] = nu
			nu.Refs++
			return
		}
	}
}
