package hca

// The VFs' alias GUIDs, registered with the SA as mlx4_ib's alias_GUID.c
// registers them: when a port is Active with an SM (and again when the SM
// asks its clients to reregister, or the port's LID or SM changes), the PF
// sends the SA a GUIDInfoRecord Set for each block of eight GUID indices
// that holds a VF's (slave s owns index s; index 0, the port's own GUID,
// is the SM's and is not in the component mask). The SA then knows each
// VF's GID (OpenSM's alias GUID support: PathRecords, MCMemberRecord
// joins with the VF's PortGID), and sets the port's GUIDInfo table, which
// the port change brings back to the VFs (adoptAliasGUIDs).
//
// The requests are the PF's own MADs: they leave the port's QP1 through the
// tunnel's wire with the TID's most significant byte 0xff ("255 indicates
// the dom0", mlx4_ib_demux_mad) and the port in the next, so that the SA's
// responses come back to the PF, which counts them (AliasGUIDStats). Until
// every block of a port is answered, the port's registration is sent again
// after a backoff (1 s doubling to 32 s, as alias_GUID.c retries): OpenSM
// ignores SA MADs during its first sweep, which is when the ports become
// Active. The deadline bounds the poller's sleep (NextRetry). Only a port
// the wire serves registers: without one no SA is reachable.

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

const (
	guidsPerBlock     = len(mad.GUIDInfo{})
	tidPortByte       = mlx4.MADTIDSlaveByte + 1 // the PF's own TIDs: the port after the dom0 byte
	aliasFirstRetryNS = 1e9
	aliasMaxRetryNS   = 32e9
)

// aliasPort is a port's registration in flight.
type aliasPort struct {
	due     uint64 // when to send again if unanswered (0: nothing pending)
	backoff uint64
	waiting int // blocks sent and not answered
}

// AliasGUIDStats count the PF's GUIDInfoRecord Sets.
type AliasGUIDStats struct {
	Sent, OK, Failed atomic.Uint64
}

// AliasGUIDStats returns the alias GUID registration's counters.
func (h *HCA) AliasGUIDStats() *AliasGUIDStats { return &h.tun.alias }

// registerAliasGUIDs sends the SA a GUIDInfoRecord Set for every block of
// port phys's GUID table that holds a VF's GUID, if the port is Active
// with an SM. It runs on the poller.
func (h *HCA) registerAliasGUIDs(phys int) {
	t := &h.tun
	if h.mad == nil || t.wire == nil || phys < 1 || phys > len(t.aliasPorts) {
		return
	}
	a := &t.aliasPorts[phys-1]
	pi, err := h.mad.PortInfo(uint8(phys))
	if err != nil || pi.PortState != mad.PortActive || pi.MasterSMLID == 0 || pi.LID == 0 {
		a.due, a.waiting = 0, 0
		return
	}
	a.waiting = 0
	for block := 0; block*guidsPerBlock <= h.NumVFs; block++ {
		var mask uint64
		var guids mad.GUIDInfo
		for i := range guidsPerBlock {
			slave := block*guidsPerBlock + i
			if slave == 0 || slave > h.NumVFs || !h.hasPort(slave-1, phys) {
				continue
			}
			if g, ok := h.mad.GUID(uint8(phys), slave); ok {
				guids[i], mask = g, mask|1<<(mad.GUIDInfoRecCompGUID0+i)
			}
		}
		if mask == 0 {
			continue
		}
		if h.sendGUIDInfoRecord(phys, pi.LID, pi.MasterSMLID, uint8(block), mask, &guids) {
			a.waiting++
		}
	}
	if a.waiting == 0 {
		a.due = 0
		return
	}
	a.backoff = min(max(a.backoff*2, aliasFirstRetryNS), aliasMaxRetryNS)
	a.due = h.now() + a.backoff
	t.setAliasArmed(true)
}

// aliasRetries sends again the registrations whose deadline passed and
// reports how many ports it sent for; it disarms when none is pending.
func (h *HCA) aliasRetries() int {
	t := &h.tun
	now, armed, n := h.now(), false, 0
	for i := range t.aliasPorts {
		a := &t.aliasPorts[i]
		if a.due == 0 {
			continue
		}
		if now >= a.due {
			h.registerAliasGUIDs(i + 1)
			n++
		}
		armed = armed || a.due != 0
	}
	t.setAliasArmed(armed)
	return n
}

// setAliasArmed records whether a registration waits, counting it in the
// tunnel's work once (tunnelPending).
func (t *tunnel) setAliasArmed(armed bool) {
	switch {
	case armed && !t.aliasArmed:
		t.work.Add(1)
	case !armed && t.aliasArmed:
		t.work.Add(-1)
	}
	t.aliasArmed = armed
}

// aliasNext is the nearest registration deadline, as NextRetry reports it.
func (h *HCA) aliasNext() (uint64, bool) {
	var next uint64
	ok := false
	for i := range h.tun.aliasPorts {
		if d := h.tun.aliasPorts[i].due; d != 0 && (!ok || d < next) {
			next, ok = d, true
		}
	}
	return next, ok
}

// sendGUIDInfoRecord builds and sends one GUIDInfoRecord Set to the SA at
// smLID from port phys (LID lid).
func (h *HCA) sendGUIDInfoRecord(phys int, lid, smLID uint16, block uint8, mask uint64, guids *mad.GUIDInfo) bool {
	t := &h.tun
	o := &t.out
	*o = WireMAD{SQP: 1, DLID: smLID, DQPN: 1, QKey: mad.QP1QKey}
	m := &o.MAD
	m[0], m[1], m[2], m[3] = 1, mad.ClassSubnAdm, mad.SAClassVersion, mad.MethodSet
	binary.BigEndian.PutUint64(m[8:], h.pfTID(phys))
	binary.BigEndian.PutUint16(m[16:], mad.AttrGUIDInfoRecord)
	binary.BigEndian.PutUint16(m[mad.SAHdrAttrOffset:], mad.GUIDInfoRecordSize/8)
	binary.BigEndian.PutUint64(m[mad.SAHdrCompMask:], mad.GUIDInfoRecCompLID|mad.GUIDInfoRecCompBlock|mask)
	r := m[mad.SAData:]
	binary.BigEndian.PutUint16(r, lid)
	r[mad.GUIDInfoRecBlockNum] = block
	_ = guids.Encode(r[mad.GUIDInfoRecGUIDs:]) // 64 bytes: never short
	if !t.wire.SendMAD(uint8(phys), o) {
		return false // not a port the wire serves: no SA to ask
	}
	t.alias.Sent.Add(1)
	return true
}

// pfTID is a fresh transaction ID of the PF's own on port phys: the dom0
// byte, the port, a counter.
func (h *HCA) pfTID(phys int) uint64 {
	h.tun.aliasTID++
	return uint64(mlx4.MADTIDDom0)<<56 | uint64(phys)<<48 | h.tun.aliasTID&(1<<48-1)
}

// pfMAD takes a MAD for the PF itself (its TID's top byte 0xff): the SA's
// answer to a GUIDInfoRecord Set or to a join of the PF's (mcg.go).
func (h *HCA) pfMAD(m *mad.MAD) {
	t := &h.tun
	if m.MgmtClass() == mad.ClassSubnAdm && m.AttrID() == mad.AttrMCMemberRecord && m.IsResponse() {
		// A join's answer; a leave's, or one a later join superseded,
		// finds nothing waiting for it.
		h.mcgAnswered(m[tidPortByte], m)
		t.stats.PFAnswers.Add(1)
		return
	}
	if m.MgmtClass() != mad.ClassSubnAdm || m.AttrID() != mad.AttrGUIDInfoRecord || !m.IsResponse() {
		t.drop(TunDropSlave)
		return
	}
	if m.Status()&^mad.StatusDirection != 0 {
		t.alias.Failed.Add(1) // the SA's refusal: sent again after the backoff
		return
	}
	t.alias.OK.Add(1)
	if p := int(m[tidPortByte]); p >= 1 && p <= len(t.aliasPorts) {
		if a := &t.aliasPorts[p-1]; a.waiting > 0 {
			if a.waiting--; a.waiting == 0 {
				a.due, a.backoff = 0, 0
			}
		}
	}
}
