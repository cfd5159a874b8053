package hca

// The VFs' multicast joins, aggregated per port as mlx4_ib's mcg.c does:
// a VF's MCMemberRecord Set (join) or Delete (leave) through the tunnel is
// the PF's to answer, not the SA's. The PF keeps each group a VF joined
// (by MGID, per port): the members' join states and the record the SA
// gave the PF. A join the PF's own membership already covers is answered
// at once with that record (the VF's PortGID and join state in it);
// otherwise the PF joins on the wire for the union of its members' states
// with its own PortGID (the port's GID, GUID index 0), and answers every
// VF waiting once the SA does, with the SA's status (one request waits per
// VF; each VF retry sends the PF's join again, the VFs' timers being the
// PF's). A leave is answered
// at once; when no member needs a join state any more, the PF leaves the
// group for it on the wire. A join with a zero MGID (the SA to assign one)
// goes to the SA as the VF sent it. A VF's reset (ResetFunction) leaves
// its groups. A VF is a member of at most mcgMaxGroups groups per port
// (so that one VF cannot fill the PF's table for the others): past that a
// join is refused with the SA's "no resources" status.

import (
	"encoding/binary"
	"slices"

	"github.com/vhcrd/vhcrd/mad"
)

// mcgMaxGroups bounds the groups of a port one VF makes the PF keep.
const mcgMaxGroups = 256

// mcGroup is a multicast group the port's VFs joined.
type mcGroup struct {
	rec     [mad.MCMemberRecordSize]byte // the SA's answer to the PF's join
	valid   bool                         // rec holds the SA's answer for joined
	joined  uint8                        // the PF's join state with the SA
	members map[int]uint8                // VF -> join state
	tid     uint64                       // the PF's join in flight (0: none)
	asked   uint8                        // its join state
	pending []mcPending                  // VFs waiting for it
	o       WireMAD                      // the last VF request's addressing (the SA's), to join again
}

// mcPending is a VF's join waiting for the PF's.
type mcPending struct {
	vf  int
	req mad.MAD // the VF's request, TID as the tunnel set it (slave byte)
	js  uint8
}

// mcgPort is one port's groups.
type mcgPort map[[16]byte]*mcGroup

// memberOf is VF vf's join state in g (a nil g has no members).
func (g *mcGroup) memberOf(vf int) (uint8, bool) {
	if g == nil {
		return 0, false
	}
	js, ok := g.members[vf]
	return js, ok
}

// count is how many of the port's groups VF vf is a member of.
func (p mcgPort) count(vf int) int {
	n := 0
	for _, g := range p {
		if _, ok := g.members[vf]; ok {
			n++
		}
	}
	return n
}

// union is the join state the members need.
func (g *mcGroup) union() uint8 {
	var u uint8
	for _, js := range g.members {
		u |= js
	}
	return u
}

// mcgMultiplex takes a VF's MCMemberRecord join or leave, o the MAD the
// multiplexer built (its addressing, the SA's). It reports false for a MAD
// the SA is to have as it is.
func (h *HCA) mcgMultiplex(vf int, port uint8, o *WireMAD) bool {
	m := &o.MAD
	if m.AttrID() != mad.AttrMCMemberRecord || m.Method() != mad.MethodSet && m.Method() != mad.MethodSADelete {
		return false
	}
	rec := m[mad.SAData:]
	var mgid [16]byte
	copy(mgid[:], rec[mad.MCMRMGID:])
	if mgid == ([16]byte{}) {
		return false // the SA assigns the MGID: its answer names the group
	}
	t := &h.tun
	if t.mcg[port-1] == nil {
		t.mcg[port-1] = mcgPort{}
	}
	groups := t.mcg[port-1]
	js := rec[mad.MCMRScopeJoin] & mad.MCMRJoinStateMask
	g := groups[mgid]
	if m.Method() == mad.MethodSADelete {
		h.mcgLeave(vf, port, o, g, js)
		return true
	}
	if _, member := g.memberOf(vf); !member && groups.count(vf) >= mcgMaxGroups {
		h.mcgAnswer(port, m, mad.MethodGetResp, mad.SAStatusNoResources, rec, js)
		return true
	}
	if g == nil {
		g = &mcGroup{members: map[int]uint8{}}
		groups[mgid] = g
	}
	g.members[vf] |= js
	if g.valid && g.joined&js == js {
		h.mcgAnswer(port, m, mad.MethodGetResp, 0, g.rec[:], js)
		return true
	}
	// One waiting request per VF (its latest: a retry replaces it), and
	// the PF's join sent again for each, so that the VFs' own retries are
	// the PF's when the SA did not answer.
	p := mcPending{vf: vf, req: *m, js: js}
	if i := slices.IndexFunc(g.pending, func(q mcPending) bool { return q.vf == vf }); i >= 0 {
		p.js |= g.pending[i].js
		g.pending[i] = p
	} else {
		g.pending = append(g.pending, p)
	}
	g.o = *o
	h.mcgJoinWire(port, o, g, mad.MethodSet, g.joined|g.union())
	return true
}

// mcgLeave takes VF vf's leave of js from group g (nil: not one it joined):
// answered at once; the PF leaves on the wire what no member needs.
func (h *HCA) mcgLeave(vf int, port uint8, o *WireMAD, g *mcGroup, js uint8) {
	m := &o.MAD
	rec := m[mad.SAData:]
	if g == nil {
		h.mcgAnswer(port, m, mad.MethodSADelete|mad.MethodResp, 0, rec, js)
		return
	}
	h.mcgAnswer(port, m, mad.MethodSADelete|mad.MethodResp, 0, g.rec[:], js)
	h.mcgDrop(port, o, g, vf, js)
}

// mcgDrop removes js from VF vf's membership of g and leaves on the wire
// the states no member needs any more (o: a MAD with the SA's addressing
// to reuse).
func (h *HCA) mcgDrop(port uint8, o *WireMAD, g *mcGroup, vf int, js uint8) {
	if g.members[vf] &^= js; g.members[vf] == 0 {
		delete(g.members, vf)
	}
	if lost := g.joined &^ g.union(); lost != 0 && g.valid {
		h.mcgJoinWire(port, o, g, mad.MethodSADelete, lost)
		g.joined &^= lost
	}
	if len(g.members) == 0 && g.tid == 0 {
		var mgid [16]byte
		copy(mgid[:], g.rec[mad.MCMRMGID:])
		if mgid == ([16]byte{}) {
			copy(mgid[:], o.MAD[mad.SAData+mad.MCMRMGID:])
		}
		delete(h.tun.mcg[port-1], mgid)
	}
}

// mcgJoinWire sends the PF's own join (or leave) of g for join state js:
// the VF's request o with the port's GID as PortGID and the PF's TID.
func (h *HCA) mcgJoinWire(port uint8, o *WireMAD, g *mcGroup, method, js uint8) {
	t := &h.tun
	w := *o
	m := &w.MAD
	m[3] = method
	tid := h.pfTID(int(port))
	binary.BigEndian.PutUint64(m[8:], tid)
	rec := m[mad.SAData:]
	v := h.portView(int(port))
	binary.BigEndian.PutUint64(rec[mad.MCMRPortGID:], v.prefix)
	binary.BigEndian.PutUint64(rec[mad.MCMRPortGID+8:], uint64(h.Cfg.Ports[port-1].PortGUIDValue()))
	rec[mad.MCMRScopeJoin] = rec[mad.MCMRScopeJoin]&^mad.MCMRJoinStateMask | js
	if method == mad.MethodSet {
		g.tid, g.asked = tid, js
	}
	t.mcgOut = w
	if t.wire != nil && t.wire.SendMAD(port, &t.mcgOut) {
		return
	}
	h.localWire(port, &t.mcgOut)
}

// mcgAnswered takes the SA's answer to the PF's join (its TID tid): the
// group's record, and every waiting VF answered with its status.
func (h *HCA) mcgAnswered(port uint8, m *mad.MAD) bool {
	if port < 1 || int(port) > len(h.tun.mcg) {
		return false
	}
	tid := m.TID()
	for mgid, g := range h.tun.mcg[port-1] {
		if g.tid != tid {
			continue
		}
		g.tid = 0
		st := m.Status() &^ mad.StatusDirection
		if st == 0 {
			copy(g.rec[:], m[mad.SAData:])
			g.valid, g.joined = true, g.joined|g.asked
		}
		// Answer the VFs the join covers (or that the SA refused); one that
		// came while it was in flight and asks for more waits for another.
		rest := g.pending[:0]
		for _, p := range g.pending {
			switch {
			case st == 0 && g.joined&p.js != p.js:
				rest = append(rest, p)
			case st == 0:
				h.mcgAnswer(port, &p.req, mad.MethodGetResp, 0, g.rec[:], p.js)
			default:
				h.mcgAnswer(port, &p.req, mad.MethodGetResp, st, p.req[mad.SAData:], p.js)
				if g.members[p.vf] &^= p.js; g.members[p.vf] == 0 {
					delete(g.members, p.vf)
				}
			}
		}
		g.pending = rest
		if len(rest) > 0 {
			h.mcgJoinWire(port, &g.o, g, mad.MethodSet, g.joined|g.union())
		}
		if len(g.members) == 0 && !g.valid {
			delete(h.tun.mcg[port-1], mgid)
		}
		return true
	}
	return false
}

// mcgAnswer answers a VF's request req (its TID's slave byte names the VF) with
// method, status and the record rec carrying the VF's PortGID and join
// state js, as the SA would; it reaches the VF through the tunnel's
// ingress.
func (h *HCA) mcgAnswer(port uint8, req *mad.MAD, method uint8, status uint16, rec []byte, js uint8) {
	r := *req
	r[3] = method
	r.SetStatus(status)
	out := r[mad.SAData : mad.SAData+mad.MCMemberRecordSize]
	copy(out, rec[:mad.MCMemberRecordSize])
	copy(out[mad.MCMRPortGID:mad.MCMRPortGID+16], req[mad.SAData+mad.MCMRPortGID:])
	out[mad.MCMRScopeJoin] = out[mad.MCMRScopeJoin]&^mad.MCMRJoinStateMask | js
	wc := mad.WC{SrcQP: 1, QPN: 1}
	if h.mad != nil {
		pi, _ := h.mad.PortInfo(port)
		wc.SLID = pi.MasterSMLID
	}
	h.queueMAD(port, &wc, nil, &r)
}

// mcgResetVF leaves every group VF vf joined (its reset).
func (h *HCA) mcgResetVF(vf int) {
	for i, groups := range h.tun.mcg {
		port := uint8(i + 1)
		for mgid, g := range groups {
			js, ok := g.members[vf]
			if !ok {
				continue
			}
			rest := g.pending[:0]
			for _, p := range g.pending {
				if p.vf != vf {
					rest = append(rest, p)
				}
			}
			g.pending = rest
			o := g.o // the SA's addressing, a request for the group
			copy(o.MAD[mad.SAData+mad.MCMRMGID:], mgid[:])
			h.mcgDrop(port, &o, g, vf, js)
		}
	}
}
