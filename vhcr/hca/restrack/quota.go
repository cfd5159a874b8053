package restrack

import "fmt"

// Quota is one function's quota and guaranteed amount of a type. For MAC and
// VLAN the amounts are per port.
type Quota struct {
	Quota      int
	Guaranteed int
}

// Override replaces the computed quota of one type for one VF (VF < 0: for
// every VF). A negative Quota or Guaranteed keeps the computed value.
type Override struct {
	VF         int
	Type       Type
	Quota      int
	Guaranteed int
}

// pool is the quota bookkeeping of one type (one port for MAC/VLAN):
// mlx4's res_alloc with res_free/res_reserved (§2.3).
type pool struct {
	quota, guaranteed, allocated []int // per VF
	free, reserved               int
}

func newPool(nvf int) pool {
	return pool{quota: make([]int, nvf), guaranteed: make([]int, nvf), allocated: make([]int, nvf)}
}

// grant is mlx4_grant_resource for VF vf.
func (p *pool) grant(vf, count int) error {
	alloc, q, g := p.allocated[vf], p.quota[vf], p.guaranteed[vf]
	if count < 0 || alloc+count > q || alloc+count < alloc {
		return fmt.Errorf("vf %d: %d + %d > quota %d: %w", vf, alloc, count, q, ErrQuota)
	}
	fromRsvd := 0
	if alloc+count <= g {
		fromRsvd = count
	} else {
		if g > alloc {
			fromRsvd = g - alloc
		}
		fromFree := count - fromRsvd
		if p.free-fromFree < p.reserved-fromRsvd {
			return fmt.Errorf("vf %d: %d from the free pool (free %d, reserved %d): %w", vf, fromFree, p.free, p.reserved, ErrQuota)
		}
	}
	p.allocated[vf] += count
	p.free -= count
	p.reserved -= fromRsvd
	return nil
}

// release is mlx4_release_resource.
func (p *pool) release(vf, count int) {
	alloc, g := p.allocated[vf], p.guaranteed[vf]
	if count > alloc {
		count = alloc // never underflow; a tracker bug, not VF input
	}
	toRsvd := 0
	if alloc-count < g {
		toRsvd = g - (alloc - count)
		if toRsvd > count {
			toRsvd = count
		}
	}
	p.allocated[vf] -= count
	p.free += count
	p.reserved += toRsvd
}

// initQuotas is initialize_res_quotas for a pool of n instances shared by
// the PF and nvf VFs: guaranteed = n / (2*(nvf+1)), quota = n/2 +
// guaranteed, the PF's guaranteed share reserved as well.
func (p *pool) initQuotas(n, nvf int) {
	g := n / (2 * (nvf + 1))
	p.free = n
	p.reserved = g // the PF's guaranteed share
	for vf := range p.quota {
		p.guaranteed[vf] = g
		p.quota[vf] = n/2 + g
		p.reserved += g
	}
}

// applyOverride sets one VF's amounts and rebalances the reserve.
func (p *pool) set(vf, quota, guaranteed int) {
	p.reserved -= p.guaranteed[vf]
	p.quota[vf], p.guaranteed[vf] = quota, guaranteed
	p.reserved += guaranteed
}
