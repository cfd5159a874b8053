package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// cmMAD is a CM MAD (class version 2, Send) of attribute attr with the
// comm IDs local and remote.
func cmMAD(attr uint16, local, remote uint32) mad.MAD {
	var m mad.MAD
	m[0], m[1], m[2], m[3] = 1, mad.ClassCM, 2, mad.MethodSend
	binary.BigEndian.PutUint64(m[8:], 0x0000_0000_1234_0000|uint64(attr))
	binary.BigEndian.PutUint16(m[16:], attr)
	binary.BigEndian.PutUint32(m[mad.CMLocalCommID:], local)
	binary.BigEndian.PutUint32(m[mad.CMRemoteCommID:], remote)
	return m
}

// cmREQ is a REQ from local to the port GID of guid.
func cmREQ(local uint32, guid uint64) mad.MAD {
	m := cmMAD(mad.AttrCMREQ, local, 0)
	binary.BigEndian.PutUint64(m[mad.CMREQRemoteGID:], 0xfe80_0000_0000_0000)
	binary.BigEndian.PutUint64(m[mad.CMREQRemoteGID+8:], guid)
	return m
}

// cmRig is two VFs on port 1 with proxy QP1s and a MAD engine, no wire:
// their CM MADs to the port's LID come back to the port's QP1 (localWire).
type cmRig struct {
	d    *dpRig
	v    [2]*tunVF
	now  uint64
	recv [2]int      // receives posted
	fifo [2][]uint64 // the offsets of the receives not yet taken, oldest first
}

func newCMRig(t *testing.T) *cmRig {
	d, _ := madRig(t, 2, false)
	r := &cmRig{d: d, now: 1e12}
	d.h.SetClock(func() uint64 { return r.now })
	r.v[0], r.v[1] = d.tunVF(0), d.tunVF(1)
	return r
}

// send posts m from VF vf's proxy QP1 to the port's LID and returns what
// reaches the other VF's proxy QP1 (ok false: nothing did).
func (r *cmRig) send(vf int, m mad.MAD) (mad.MAD, bool) {
	r.d.t.Helper()
	to := r.v[1-vf]
	off := uint64(0x400 * (1 + r.recv[1-vf]%4))
	to.proxyRecv(to.qp1, off)
	r.recv[1-vf]++
	r.fifo[1-vf] = append(r.fifo[1-vf], off)
	before := to.qp1.obj().RQHead
	r.v[vf].post(r.v[vf].qp1, tunnelQPN(vf, 1, 1), hdr(5), m)
	r.d.h.ServiceTunnel()
	r.d.take()
	var out mad.MAD
	if to.qp1.obj().RQHead == before {
		return out, false
	}
	off, r.fifo[1-vf] = r.fifo[1-vf][0], r.fifo[1-vf][1:]
	got := to.read(to.m+off, mlx4.ProxySQPHdrSize+mad.GRHSize+mad.Size)
	copy(out[:], got[mlx4.ProxySQPHdrSize+mad.GRHSize:])
	return out, true
}

func ids(m mad.MAD) (uint32, uint32) {
	return binary.BigEndian.Uint32(m[mad.CMLocalCommID:]), binary.BigEndian.Uint32(m[mad.CMRemoteCommID:])
}

// TestTunnelCM: a connection between two VFs of a port, as cm.c remaps it —
// the REQ reaches the VF its remote port GID names with the PF's comm ID
// as its local one, the REP comes back with the active side's own ID as
// its remote one, the RTU and the DREQ/DREP follow; a VF cannot speak for
// the other's connection, an ID the PF does not know is dropped, the
// mapping goes 30 s after the DREQ and at once with the VF's reset.
func TestTunnelCM(t *testing.T) {
	r := newCMRig(t)
	h := r.d.h
	st := h.TunnelStats()
	guidB, _ := h.mad.GUID(1, 2)
	drops := func() uint64 { return st.Drops[TunDropCM].Load() }

	req, ok := r.send(0, cmREQ(0x1111, guidB))
	pvA, rem := ids(req)
	if !ok || req.AttrID() != mad.AttrCMREQ || pvA == 0x1111 || pvA == 0 || rem != 0 {
		t.Fatalf("REQ at VF 1: delivered %v, comm IDs %#x %#x", ok, pvA, rem)
	}
	want := cmREQ(pvA, guidB)
	if req != want {
		t.Fatalf("REQ changed beyond its local comm ID:\n% x\nwant\n% x", req[:112], want[:112])
	}
	rep, ok := r.send(1, cmMAD(mad.AttrCMREP, 0x2222, pvA))
	pvB, rem := ids(rep)
	if !ok || pvB == 0x2222 || pvB == pvA || rem != 0x1111 {
		t.Fatalf("REP at VF 0: delivered %v, comm IDs %#x %#x (want PF's, 0x1111)", ok, pvB, rem)
	}
	if rtu, ok := r.send(0, cmMAD(mad.AttrCMRTU, 0x1111, pvB)); !ok || rtu != cmMAD(mad.AttrCMRTU, pvA, 0x2222) {
		l, rm := ids(rtu)
		t.Fatalf("RTU at VF 1: delivered %v, comm IDs %#x %#x", ok, l, rm)
	}
	if n := st.CMIDs.Load(); n != 2 {
		t.Fatalf("%d comm IDs given, want 2 (the REQ's and the REP's)", n)
	}

	// VF 1 speaking for VF 0's connection (VF 0's comm ID as its own),
	// and a remote comm ID that is nobody's: dropped and counted.
	for _, c := range []struct {
		name string
		vf   int
		m    mad.MAD
	}{
		{"VF 1 with VF 0's comm ID", 1, cmMAD(mad.AttrCMDREQ, 0x1111, pvB)},
		{"an unknown remote comm ID", 1, cmMAD(mad.AttrCMDREQ, 0x2222, pvA^0x5a5a0000)},
		{"an RTU for no connection", 0, cmMAD(mad.AttrCMRTU, 0x7777, pvB)},
	} {
		before := drops()
		if _, ok := r.send(c.vf, c.m); ok || drops() != before+1 {
			t.Errorf("%s: delivered %v, cm drops %d → %d", c.name, ok, before, drops())
		}
	}

	// Disconnect: the DREQ and DREP cross, and 30 s later the mapping is
	// gone (a late DREP retry finds nothing).
	if dreq, ok := r.send(0, cmMAD(mad.AttrCMDREQ, 0x1111, pvB)); !ok || dreq != cmMAD(mad.AttrCMDREQ, pvA, 0x2222) {
		l, rm := ids(dreq)
		t.Fatalf("DREQ at VF 1: delivered %v, attr %#x, comm IDs %#x %#x (want %#x %#x)", ok, dreq.AttrID(), l, rm, pvA, 0x2222)
	}
	r.now += 1e9
	if drep, ok := r.send(1, cmMAD(mad.AttrCMDREP, 0x2222, pvA)); !ok || drep != cmMAD(mad.AttrCMDREP, pvB, 0x1111) {
		t.Fatalf("DREP at VF 0: delivered %v", ok)
	}
	r.now += mlx4.CM_CLEANUP_CACHE_TIMEOUT
	before := drops()
	if _, ok := r.send(1, cmMAD(mad.AttrCMDREP, 0x2222, pvA)); ok || drops() != before+1 {
		t.Fatalf("a DREP after the cleanup: delivered %v, cm drops %d → %d", ok, before, drops())
	}

	// A new connection, and VF 0's reset: VF 1's REP names an ID that is
	// gone.
	req, ok = r.send(0, cmREQ(0x3333, guidB))
	pvA2, _ := ids(req)
	if !ok || pvA2 == pvA {
		t.Fatalf("second REQ: delivered %v, PF comm ID %#x (first %#x)", ok, pvA2, pvA)
	}
	h.ResetFunction(0) // its QPs go too: nothing to receive with
	before = drops()
	r.v[1].post(r.v[1].qp1, tunnelQPN(1, 1, 1), hdr(5), cmMAD(mad.AttrCMREP, 0x4444, pvA2))
	h.ServiceTunnel()
	if drops() != before+1 {
		t.Fatalf("REP after VF 0's reset: cm drops %d → %d", before, drops())
	}
}

// TestTunnelCMRejTimeout: a REJ with reason Timeout that names no comm ID
// of the PF's (the active side gave up before any REP) finds the VF whose
// REQ it answers by the REQ's sender's comm ID; other REJs pass unchanged.
func TestTunnelCMRejTimeout(t *testing.T) {
	r := newCMRig(t)
	guidB, _ := r.d.h.mad.GUID(1, 2)
	req, ok := r.send(0, cmREQ(0x1111, guidB))
	pvA, _ := ids(req)
	if !ok {
		t.Fatal("REQ not delivered")
	}
	// VF 0's CM gives up: a REJ Timeout with its own comm ID; VF 1 has
	// no ID of the PF's yet, so only the REQ's sender names it.
	rej := cmMAD(mad.AttrCMREJ, 0x1111, 0)
	binary.BigEndian.PutUint16(rej[mad.CMREJReason:], mad.CMREJTimeout)
	got, ok := r.send(0, rej)
	if l, _ := ids(got); !ok || l != pvA {
		t.Fatalf("REJ Timeout at VF 1: delivered %v, local comm ID %#x, want %#x", ok, l, pvA)
	}
	// VF 1's REJ (another reason) leaves as it is; VF 0 gets it by the
	// remote comm ID, its own restored.
	rej2 := cmMAD(mad.AttrCMREJ, 0x2222, pvA)
	binary.BigEndian.PutUint16(rej2[mad.CMREJReason:], 28) // consumer reject
	got, ok = r.send(1, rej2)
	if l, rm := ids(got); !ok || l != 0x2222 || rm != 0x1111 {
		t.Fatalf("REJ at VF 0: delivered %v, comm IDs %#x %#x", ok, l, rm)
	}
}

// TestTunnelCMTableBound: a VF that opens connections without end fills
// its own table and gets drops; the other VF still connects.
func TestTunnelCMTableBound(t *testing.T) {
	r := newCMRig(t)
	h := r.d.h
	guidA, _ := h.mad.GUID(1, 1)
	for i := range cmPerVF {
		if !h.cmMultiplex(1, ptr(cmREQ(uint32(0x10000+i), guidA))) {
			t.Fatalf("REQ %d refused below the bound", i)
		}
	}
	before := h.TunnelStats().Drops[TunDropCM].Load()
	if _, ok := r.send(1, cmREQ(0x99999, guidA)); ok || h.TunnelStats().Drops[TunDropCM].Load() != before+1 {
		t.Fatal("a REQ beyond the VF's table was not dropped")
	}
	guidB, _ := h.mad.GUID(1, 2)
	if _, ok := r.send(0, cmREQ(0x1111, guidB)); !ok {
		t.Fatal("the other VF's REQ was refused")
	}
}

func ptr(m mad.MAD) *mad.MAD { return &m }
