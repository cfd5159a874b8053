package faultinj

import "math/bits"

// numPoints is the number of Point bits.
const numPoints = 5

// Set is the armed rules of one PF and its selector. It belongs to the
// poller (the PF changes it between scans, through PF.Do): no locks.
type Set struct {
	numVFs int
	rules  []*Rule
	nextID int
	armed  Point
	// vfs[i] has bit vf set where a live rule of point 1<<i may fire for
	// VF vf: the per-VF half of the armed check.
	vfs      [numPoints][]uint64
	injected [NumKinds]uint64
}

// NewSet returns an empty set for a PF with numVFs VFs.
func NewSet(numVFs int) *Set {
	s := &Set{numVFs: numVFs, nextID: 1}
	for i := range s.vfs {
		s.vfs[i] = make([]uint64, (numVFs+63)/64)
	}
	return s
}

// NumVFs is the VF count the set was made for.
func (s *Set) NumVFs() int { return s.numVFs }

// Armed is the points at which some live rule may fire: the PF's one
// check on its hot path (it caches this mask).
func (s *Set) Armed() Point { return s.armed }

// Add compiles and arms a rule; its ID is the set's next.
func (s *Set) Add(sp Spec) (*Rule, error) {
	r, err := Compile(sp, s.numVFs)
	if err != nil {
		return nil, err
	}
	r.ID = s.nextID
	s.nextID++
	s.rules = append(s.rules, r)
	s.recompute()
	return r, nil
}

// Clear disarms rule id (0: every rule) and returns the rules removed.
func (s *Set) Clear(id int) []*Rule {
	var out []*Rule
	keep := s.rules[:0]
	for _, r := range s.rules {
		if id == 0 || r.ID == id {
			out = append(out, r)
		} else {
			keep = append(keep, r)
		}
	}
	for i := len(keep); i < len(s.rules); i++ {
		s.rules[i] = nil
	}
	s.rules = keep
	s.recompute()
	return out
}

// Rules returns the rules in the order they were armed.
func (s *Set) Rules() []*Rule { return append([]*Rule(nil), s.rules...) }

// recompute rebuilds the armed masks from the live rules.
func (s *Set) recompute() {
	s.armed = 0
	for i := range s.vfs {
		clear(s.vfs[i])
	}
	for _, r := range s.rules {
		if r.done {
			continue
		}
		s.armed |= r.Point
		m := s.vfs[bits.TrailingZeros8(uint8(r.Point))]
		if r.VF == Any {
			for w := range m {
				m[w] = ^uint64(0)
			}
		} else {
			m[r.VF>>6] |= 1 << (r.VF & 63)
		}
	}
}

// Match is one occurrence at point pt of VF vf with key (the opcode, the
// comm command; 0 at PointFlags; CQEKey at PointCQE); cond qualifies it:
// at PointPost, whether the VHCR_POST carries the 'e' bit (the Event
// kinds count only those); at PointCQE, whether the completion is a
// success (the Success kinds count only those). Every live rule that matches counts the occurrence (a
// probabilistic rule draws from its PRNG once); the first that fires
// (in the order the rules were armed) is returned, counted as injected,
// and the others' firing is void for this occurrence. nil: no fault. It
// allocates nothing.
func (s *Set) Match(pt Point, vf, key int, cond bool) *Rule {
	if s.armed&pt == 0 || vf < 0 || vf >= s.numVFs {
		return nil
	}
	if s.vfs[bits.TrailingZeros8(uint8(pt))][vf>>6]&(1<<(vf&63)) == 0 {
		return nil
	}
	var fired *Rule
	spent := false
	for _, r := range s.rules {
		if r.Point != pt || r.done || (r.VF != Any && r.VF != vf) || (r.Key != Any && r.Key != key) {
			continue
		}
		if in := &infos[r.Kind]; (in.Event || in.Success) && !cond {
			continue
		}
		r.seen++
		fire := false
		switch {
		case r.Every:
			fire = true
		case r.Prob > 0:
			fire = r.rng.below(r.Prob)
		default:
			if r.seen == r.Nth {
				fire, r.done, spent = true, true, true
			}
		}
		if fire && fired == nil {
			fired = r
			r.hits++
			s.injected[r.Kind]++
		}
	}
	if spent {
		s.recompute()
	}
	return fired
}

// FireNow fires a rule whose point is PointNow (once, when armed): it is
// counted as injected and done. It reports false for a rule of another
// point or one fired already.
func (s *Set) FireNow(r *Rule) bool {
	if r.Point != PointNow || r.done {
		return false
	}
	r.seen++
	r.hits++
	r.done = true
	s.injected[r.Kind]++
	s.recompute()
	return true
}

// Injected is how many faults of kind k fired since the set was made
// (cleared rules included).
func (s *Set) Injected(k Kind) uint64 {
	if !k.Valid() {
		return 0
	}
	return s.injected[k]
}

// InjectedAll copies the counts by kind into dst.
func (s *Set) InjectedAll(dst *[NumKinds]uint64) { *dst = s.injected }

// RuleStatus is a rule as vhcrd fault list shows it.
type RuleStatus struct {
	ID   int    `json:"id"`
	Spec Spec   `json:"rule"`
	Args string `json:"args"` // the rule as vhcrd fault add's flags
	Seen uint64 `json:"seen"` // matching occurrences
	Hits uint64 `json:"hits"` // faults fired
	Done bool   `json:"done"` // will fire no more (an nth rule past its occurrence, a now rule fired)
}

// Status reports r.
func (r *Rule) Status() RuleStatus {
	sp := r.Spec()
	return RuleStatus{ID: r.ID, Spec: sp, Args: r.String(), Seen: r.seen, Hits: r.hits, Done: r.done}
}

// Hits is how many faults r fired.
func (r *Rule) Hits() uint64 { return r.hits }

// Seen is how many occurrences matched r.
func (r *Rule) Seen() uint64 { return r.seen }

// Done reports whether r fires no more.
func (r *Rule) Done() bool { return r.done }
