package hca

// The CM's paravirtualisation, as mlx4_ib's PF does it (drivers/infiniband/
// hw/mlx4/cm.c): the VFs' connection managers all speak through the port's
// one QP1, so the communication IDs they choose could collide on the wire,
// and an incoming CM MAD must find its VF. The PF therefore gives every
// connection a comm ID of its own (pv_cm_id):
//
//   - a VF's REQ, REP, MRA, SIDR REQ and REJ with reason Timeout leave with
//     the PF's ID for (slave, the VF's local comm ID) as their local comm ID,
//     allocated at the first of them; RTU, DREQ, DREP, LAP and APR must name
//     an ID the VF already has (otherwise they are dropped: a VF cannot speak
//     for another's connection); other REJs and SIDR REPs leave as they are;
//   - an incoming REQ or SIDR REQ goes to the VF whose GUID its primary
//     remote port GID names (mlx4_ib_find_real_gid), and its sender's comm ID
//     is remembered for a later REJ with reason Timeout; every other CM MAD
//     names the PF's ID in its remote comm ID, which is replaced by the VF's
//     own;
//   - a DREQ (either way) or an incoming REJ starts the mapping's 30 s
//     cleanup (CM_CLEANUP_CACHE_TIMEOUT), so that retries and the DREP still
//     find it; a VF's reset drops all of its mappings
//     (mlx4_ib_cm_paravirt_clean).
//
// Unlike the kernel's xarray, each VF's mappings are a fixed table
// (cmPerVF), so that a VF that opens connections without end exhausts its
// own table and no other VF's; an allocation that finds the table full is
// dropped and counted (TunDropCM), as the kernel drops the MAD when
// id_map_alloc fails. A PF ID encodes the VF and the table slot, with a
// sequence number that starts at random, so that a restarted PF (whose
// tables are empty: a lost mapping costs its connection's disconnect
// exchange, as a PF driver reload does) is unlikely to hand out the IDs of
// the connections its predecessor mapped (nothing checks it can't).

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

const (
	cmSlotBits = 10
	cmPerVF    = 1 << cmSlotBits // connections a VF has mapped at once
	cmVFBits   = 7               // MLX4_MFUNC_MAX functions: VF indices below 128
	cmSeqShift = cmSlotBits + cmVFBits
	cmRejPerVF = 64 // REQs a VF received that a REJ Timeout may still answer
)

// cmEntry is one mapping: the PF's ID and the VF's (sl_cm_id).
type cmEntry struct {
	pv     uint32 // 0: free
	sl     uint32
	expire uint64 // the cleanup's deadline (h.now()), 0: none scheduled
}

// cmRej is a REQ a VF received: its sender's comm ID (rej_tmout_entry).
type cmRej struct {
	remote uint32
	expire uint64 // 0: free
}

// cmVF is one VF's mappings.
type cmVF struct {
	ids  [cmPerVF]cmEntry
	next int // the cyclic allocation's cursor
	rej  [cmRejPerVF]cmRej
	rnxt int
}

// cmState is the HCA's CM paravirtualisation (on the poller).
type cmState struct {
	vfs []*cmVF // allocated at a VF's first CM MAD
	seq uint32
}

// live reports whether e maps a connection at now.
func (e *cmEntry) live(now uint64) bool { return e.pv != 0 && (e.expire == 0 || now < e.expire) }

func (h *HCA) cmVF(vf int) *cmVF {
	c := &h.tun.cm
	if c.vfs == nil {
		c.vfs = make([]*cmVF, h.NumVFs)
		c.seq = rand.Uint32()
	}
	if c.vfs[vf] == nil {
		c.vfs[vf] = new(cmVF)
	}
	return c.vfs[vf]
}

// bySL is id_map_find_by_sl_id for the VF's comm ID sl.
func (v *cmVF) bySL(sl uint32, now uint64) *cmEntry {
	for i := range v.ids {
		if e := &v.ids[i]; e.sl == sl && e.live(now) {
			return e
		}
	}
	return nil
}

// cmAlloc is id_map_alloc: a free (or expired) slot of VF vf's table for
// sl, with a fresh PF ID; nil when the table is full.
func (h *HCA) cmAlloc(vf int, v *cmVF, sl uint32, now uint64) *cmEntry {
	for n := 0; n < cmPerVF; n++ {
		i := (v.next + n) % cmPerVF
		if e := &v.ids[i]; !e.live(now) {
			v.next = (i + 1) % cmPerVF
			c := &h.tun.cm
			c.seq++
			if c.seq<<cmSeqShift == 0 && vf == 0 && i == 0 {
				c.seq++ // 0 is a free entry's
			}
			*e = cmEntry{pv: c.seq<<cmSeqShift | uint32(vf)<<cmSlotBits | uint32(i), sl: sl}
			h.tun.stats.CMIDs.Add(1)
			return e
		}
	}
	return nil
}

// cmByPV is the pv_id_table lookup: the VF and mapping of the PF ID pv.
func (h *HCA) cmByPV(pv uint32, now uint64) (int, *cmEntry) {
	vf, i := int(pv>>cmSlotBits&(1<<cmVFBits-1)), int(pv&(cmPerVF-1))
	c := &h.tun.cm
	if pv == 0 || vf >= len(c.vfs) || c.vfs[vf] == nil {
		return -1, nil
	}
	if e := &c.vfs[vf].ids[i]; e.pv == pv && e.live(now) {
		return vf, e
	}
	return -1, nil
}

// cmLocalID is get_local_comm_id (a SIDR REQ's RequestID, a SIDR REP has
// none of its own).
func cmLocalID(m *mad.MAD) uint32 { return binary.BigEndian.Uint32(m[mad.CMLocalCommID:]) }

// cmRemoteID is get_remote_comm_id (a SIDR REP's RequestID).
func cmRemoteID(m *mad.MAD) uint32 {
	if m.AttrID() == mad.AttrCMSIDRREP {
		return binary.BigEndian.Uint32(m[mad.CMSIDRReqID:])
	}
	return binary.BigEndian.Uint32(m[mad.CMRemoteCommID:])
}

func setCMRemoteID(m *mad.MAD, id uint32) {
	if m.AttrID() == mad.AttrCMSIDRREP {
		binary.BigEndian.PutUint32(m[mad.CMSIDRReqID:], id)
		return
	}
	binary.BigEndian.PutUint32(m[mad.CMRemoteCommID:], id)
}

func cmREJTimeout(m *mad.MAD) bool {
	return m.AttrID() == mad.AttrCMREJ && binary.BigEndian.Uint16(m[mad.CMREJReason:]) == mad.CMREJTimeout
}

// cmMultiplex is mlx4_ib_multiplex_cm_handler for a CM MAD VF vf sends: it
// rewrites the local comm ID to the PF's, or reports false (drop).
func (h *HCA) cmMultiplex(vf int, m *mad.MAD) bool {
	now := h.now()
	v := h.cmVF(vf)
	var e *cmEntry
	a := m.AttrID()
	switch {
	case a == mad.AttrCMREQ || a == mad.AttrCMREP || a == mad.AttrCMMRA || a == mad.AttrCMSIDRREQ || cmREJTimeout(m):
		sl := cmLocalID(m)
		if e = v.bySL(sl, now); e == nil {
			e = h.cmAlloc(vf, v, sl, now)
		}
	case a == mad.AttrCMREJ || a == mad.AttrCMSIDRREP:
		return true
	default:
		e = v.bySL(cmLocalID(m), now)
	}
	if e == nil {
		return false // an ID the VF never had (or one the table had no room for)
	}
	binary.BigEndian.PutUint32(m[mad.CMLocalCommID:], e.pv) // set_local_comm_id
	if a == mad.AttrCMDREQ {
		e.expire = now + mlx4.CM_CLEANUP_CACHE_TIMEOUT // schedule_delayed
	}
	return true
}

// cmDemux is mlx4_ib_demux_cm_handler for a CM MAD that reached port: the
// VF it is for (its remote comm ID rewritten to the VF's own), or -1.
func (h *HCA) cmDemux(port uint8, m *mad.MAD) int {
	now := h.now()
	a := m.AttrID()
	if a == mad.AttrCMREQ || a == mad.AttrCMSIDRREQ {
		slave := h.slaveOfGUID(port, binary.BigEndian.Uint64(m[mad.CMREQRemoteGID+8:]))
		if slave < 1 || slave > h.NumVFs {
			return -1 // the PF's own GUID (no CM here) or nobody's
		}
		h.cmRemember(slave-1, cmLocalID(m), now) // alloc_rej_tmout
		return slave - 1
	}
	vf, e := h.cmByPV(cmRemoteID(m), now)
	if e == nil {
		if cmREJTimeout(m) {
			return h.cmRejSlave(cmLocalID(m), now) // lookup_rej_tmout_slave
		}
		return -1
	}
	setCMRemoteID(m, e.sl)
	if a == mad.AttrCMDREQ || a == mad.AttrCMREJ {
		e.expire = now + mlx4.CM_CLEANUP_CACHE_TIMEOUT
	}
	return vf
}

// cmRemember is alloc_rej_tmout: remote's REQ reached VF vf (a retry
// re-arms its entry). The table is a ring: the oldest entry gives way.
func (h *HCA) cmRemember(vf int, remote uint32, now uint64) {
	v := h.cmVF(vf)
	for i := range v.rej {
		if r := &v.rej[i]; r.remote == remote && now < r.expire {
			r.expire = now + mlx4.CM_CLEANUP_CACHE_TIMEOUT
			return
		}
	}
	v.rej[v.rnxt] = cmRej{remote: remote, expire: now + mlx4.CM_CLEANUP_CACHE_TIMEOUT}
	v.rnxt = (v.rnxt + 1) % cmRejPerVF
}

// cmRejSlave is lookup_rej_tmout_slave: the VF whose REQ from remote a REJ
// Timeout answers, or -1.
func (h *HCA) cmRejSlave(remote uint32, now uint64) int {
	for vf, v := range h.tun.cm.vfs {
		if v == nil {
			continue
		}
		for i := range v.rej {
			if r := &v.rej[i]; r.remote == remote && now < r.expire {
				return vf
			}
		}
	}
	return -1
}

// cmResetVF is mlx4_ib_cm_paravirt_clean for VF vf (its reset).
func (h *HCA) cmResetVF(vf int) {
	if c := &h.tun.cm; vf < len(c.vfs) && c.vfs[vf] != nil {
		*c.vfs[vf] = cmVF{}
	}
}
