package hca

import "github.com/vhcrd/vhcrd/vhcr/hca/restrack"

// ResetFunction releases exactly VF vf's resources, in mlx4's cleanup order
// (mlx4_delete_all_resources_for_slave, §2.8): VLANs and MACs (every
// reference unregistered from the port tables), QPs (those in HW get the
// implicit 2RST: multicast detach, references dropped), SRQs and CQs (from
// HW: implicit HW2SW), MPTs, EQs (implicit HW2SW_EQ), MTTs (entries
// forgotten), counters, XRCDs. Then the VF's event-to-EQ map is cleared
// (all 64 types, not only event 0 as mlx4's reset_slave), and its ports,
// filters and event counters' EQ state are reset, and its vport admin state
// deactivated (DeactivateVF). Other VFs are untouched.
// It returns what was released per type. Used for the VF's RESET, for FLR
// and after a protocol error.
func (h *HCA) ResetFunction(vf int) restrack.Released {
	if vf < 0 || vf >= len(h.fw.vfs) {
		return restrack.Released{}
	}
	h.tptChanged()       // keycache.go: the VF's MPTs and MTTs go
	h.mcgResetVF(vf)     // mcg.go: its multicast groups left
	h.cmResetVF(vf)      // cm.go: its connections' comm IDs forgotten
	h.gidsResetVF(vf)    // roce.go: its RoCE GIDs emptied
	defer h.ethReindex() // eth.go: its QPs' attachments gone from the switch
	rel := h.Res.DeleteAll(vf, func(o *restrack.Object) {
		switch o.Type {
		case restrack.MAC:
			for range max(o.Refs, 1) {
				unregister(h.fw.ports[o.Port-1].MAC[:], o.Index)
			}
		case restrack.VLAN:
			for range max(o.Refs, 1) {
				unregister(h.fw.ports[o.Port-1].VLAN[:], o.Index)
			}
		case restrack.QP:
			h.wqDrop(h.fw.qps[uint32(o.ID)])
			if qp := h.fw.qps[uint32(o.ID)]; qp != nil {
				h.dpForget(&qp.dps)
			}
			delete(h.fw.qps, uint32(o.ID))
			delete(h.fw.mcg, uint32(o.ID))
		case restrack.SRQ:
			if q := h.fw.srqs[uint32(o.ID)]; q != nil {
				h.dpForget(&q.dps)
			}
			delete(h.fw.srqs, uint32(o.ID))
		case restrack.CQ:
			h.dropCQ(uint32(o.ID))
		case restrack.MPT:
			delete(h.fw.mpts, o.ID)
		case restrack.EQ:
			h.unwatch(h.fw.eqs[o.ID])
			delete(h.fw.eqs, o.ID)
			h.eqPos(o.Owner, int(o.ID&eqnMask), 0, false)
		case restrack.MTT:
			delete(h.fw.mtt, o.ID)
		case restrack.Counter:
			delete(h.fw.counterPort, o.ID)
		}
	})
	h.dpDetachVF(vf) // no QP of the VF left on the data path's lists
	h.DeactivateVF(vf)
	v := &h.fw.vfs[vf]
	v.clearEvents()
	v.PortOpen = [2]bool{}
	v.OldVLAN = false
	v.Promisc = [2]bool{}
	v.McastOn = [2]bool{}
	v.VLANFltr = [2][128]uint32{}
	return rel
}

// Counts returns the number of objects of each type (indexed by
// restrack.Type) VF vf owns, without allocating: for the per-VF resource
// gauges.
func (h *HCA) Counts(vf int) [restrack.NumTypes]int { return h.Res.Counts(vf) }
