package hca

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// A VF with an EQ, a CQ and a QP in INIT.
func setupQP(t *testing.T, v *vf) (cq, qpn uint32, q qpc) {
	t.Helper()
	v.setupEQ(1, 4)
	cq = v.createCQ()
	qpn, q = v.newQP(cq)
	wantS(t, "RST2INIT", v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), mlx4.OK)
	return cq, qpn, q
}

func TestQPContextNamesOtherVFsCQ(t *testing.T) {
	r := newRig(t, 2, nil)
	a, b := r.vf(0), r.vf(1)
	b.setupEQ(1, 4)
	bcq := b.createCQ()
	a.setupEQ(1, 4)
	acq := a.createCQ()
	qpn, q := a.newQP(acq)
	q.scq = bcq
	c := a.cmd(mlx4.RST2INIT_QP, 0, qpn, 0, q.bytes(), false)
	wantS(t, "send CQ of VF 1", a.run(c), mlx4.BAD_OP)
	if c.Reason != refusal.NotOwner {
		t.Fatalf("reason %v", c.Reason)
	}
	q.scq, q.rcq = acq, bcq
	wantS(t, "recv CQ of VF 1", a.qpCmd(mlx4.RST2INIT_QP, qpn, &q), mlx4.BAD_OP)
	// Nothing changed: the QP is still in reset, VF 1's CQ unreferenced.
	if o, _ := r.h.Res.Peek(1, restrack.CQ, uint64(bcq)); o.Refs != 0 {
		t.Fatalf("VF 1's CQ gained %d references", o.Refs)
	}
	if o, _ := r.h.Res.Peek(0, restrack.QP, uint64(qpn)); o.State != restrack.Mapped {
		t.Fatalf("QP state %d", o.State)
	}
	q.rcq = acq
	wantS(t, "own CQs", a.qpCmd(mlx4.RST2INIT_QP, qpn, &q), mlx4.OK)
}

func TestQPContextUnknownCQAndSRQ(t *testing.T) {
	r := newRig(t, 1, nil)
	v := r.vf(0)
	v.setupEQ(1, 4)
	cq := v.createCQ()
	qpn, q := v.newQP(cq)
	q.rcq = 999
	c := v.cmd(mlx4.RST2INIT_QP, 0, qpn, 0, q.bytes(), false)
	wantS(t, "unknown CQ", v.run(c), mlx4.INTERNAL_ERR)
	if c.Reason != refusal.NotFound {
		t.Fatalf("reason %v", c.Reason)
	}
	// A CQ allocated but not in HW (Linux does not check; the model does).
	cold := v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
	q.rcq = cold
	wantS(t, "CQ not in HW", v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), mlx4.BAD_PARAM)
	q.rcq = cq
	q.useSRQ, q.srq = true, 77
	wantS(t, "unknown SRQ", v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), mlx4.INTERNAL_ERR)
	q.srq = v.createSRQ()
	wantS(t, "own SRQ", v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), mlx4.OK)
	if o, _ := r.h.Res.Peek(0, restrack.SRQ, uint64(q.srq)); o.Refs != 1 {
		t.Fatalf("SRQ refs %d", o.Refs)
	}
	wantS(t, "HW2SW_SRQ in use", v.run(v.cmd(mlx4.HW2SW_SRQ, 0, q.srq, 0, nil, false)), mlx4.RESOURCE_BUSY)
}

func TestDestroyCQInUse(t *testing.T) {
	r := newRig(t, 1, nil)
	v := r.vf(0)
	cq, qpn, _ := setupQP(t, v)
	hw2sw := func() mlx4.Status { return v.run(v.cmd(mlx4.HW2SW_CQ, 0, cq, 0, nil, false)) }
	wantS(t, "HW2SW_CQ used by a QP", hw2sw(), mlx4.RESOURCE_BUSY)
	wantS(t, "2RST", v.qpCmd(mlx4.TWO_RST_QP, qpn, nil), mlx4.OK)
	wantS(t, "HW2SW_CQ after 2RST", hw2sw(), mlx4.OK)
	wantS(t, "HW2SW_CQ twice", hw2sw(), mlx4.BAD_PARAM)
}

func TestFreeResOfObjectInHW(t *testing.T) {
	r := newRig(t, 1, nil)
	v := r.vf(0)
	cq, qpn, q := setupQP(t, v)
	wantS(t, "FREE_RES CQ in HW", v.free(restrack.CQ, resOpReserveAndMap, uint64(cq)), mlx4.BAD_OP)
	wantS(t, "FREE_RES QP in HW", v.free(restrack.QP, resOpReserve, 1<<32|uint64(qpn)), mlx4.BAD_OP)
	wantS(t, "unmap QP in HW", v.free(restrack.QP, resOpMapICM, uint64(qpn)), mlx4.BAD_PARAM)
	wantS(t, "FREE_RES MTT in use", v.free(restrack.MTT, resOpReserveAndMap, uint64(q.mtt)), mlx4.RESOURCE_BUSY)
	srq := v.createSRQ()
	wantS(t, "FREE_RES SRQ in HW", v.free(restrack.SRQ, resOpReserveAndMap, uint64(srq)), mlx4.BAD_OP)
	mpt := v.mustAlloc(restrack.MPT, resOpReserve, 0)
	v.mustAlloc(restrack.MPT, resOpMapICM, uint64(mpt))
	wantS(t, "FREE_RES MPT mapped", v.free(restrack.MPT, resOpReserve, uint64(mpt)), mlx4.BAD_OP)
	// Tear down in order: everything succeeds.
	wantS(t, "2RST", v.qpCmd(mlx4.TWO_RST_QP, qpn, nil), mlx4.OK)
	v.must(v.free(restrack.QP, resOpMapICM, uint64(qpn)), "unmap QP")
	v.must(v.free(restrack.QP, resOpReserve, 1<<32|uint64(qpn)), "free QP")
	v.must(v.free(restrack.MTT, resOpReserveAndMap, uint64(q.mtt)), "free MTT")
	v.must(v.run(v.cmd(mlx4.HW2SW_CQ, 0, cq, 0, nil, false)), "HW2SW_CQ")
	v.must(v.free(restrack.CQ, resOpReserveAndMap, uint64(cq)), "free CQ")
	v.must(v.free(restrack.MPT, resOpMapICM, uint64(mpt)), "unmap MPT")
	v.must(v.free(restrack.MPT, resOpReserve, uint64(mpt)), "free MPT")
}

func TestQuotaExhaustion(t *testing.T) {
	small := func(c *config.Config) {
		q := map[string]config.Quota{}
		for _, k := range []string{"qp", "cq", "srq", "mpt", "mtt", "mac", "vlan", "counter"} {
			q[k] = config.Quota{Quota: intp(3), Guaranteed: intp(1)}
		}
		c.VFs.Default.Quotas = q
	}
	for _, tc := range []struct {
		ty   restrack.Type
		op   uint8
		in   func(i int) uint64
		want mlx4.Status
	}{
		{restrack.QP, resOpReserve, func(int) uint64 { return 1 }, mlx4.INTERNAL_ERR},
		{restrack.CQ, resOpReserveAndMap, nil, mlx4.INTERNAL_ERR},
		{restrack.SRQ, resOpReserveAndMap, nil, mlx4.INTERNAL_ERR},
		{restrack.MPT, resOpReserve, nil, mlx4.INTERNAL_ERR},
		{restrack.MTT, resOpReserveAndMap, func(int) uint64 { return 0 }, mlx4.INTERNAL_ERR},
		{restrack.Counter, resOpReserve, nil, mlx4.INTERNAL_ERR},
		{restrack.XRCD, resOpReserve, nil, mlx4.INTERNAL_ERR},
		{restrack.MAC, resOpReserveAndMap, func(i int) uint64 { return 0x0002c9000100 + uint64(i) }, mlx4.BAD_PARAM},
		{restrack.VLAN, resOpReserveAndMap, func(i int) uint64 { return uint64(10 + i) }, mlx4.BAD_PARAM},
	} {
		t.Run(tc.ty.String(), func(t *testing.T) {
			r := newRig(t, 2, small)
			v := r.vf(0)
			var s mlx4.Status
			var c *Cmd
			n := 0
			for ; n < 1<<16; n++ {
				in := uint64(0)
				if tc.in != nil {
					in = tc.in(n)
				}
				inMod := uint32(tc.ty)
				if tc.ty == restrack.MAC || tc.ty == restrack.VLAN {
					inMod |= 1 << 8 // VF port 1
				}
				c = v.cmd(mlx4.ALLOC_RES, in, inMod, tc.op, nil, false)
				if s = v.run(c); s != mlx4.OK {
					break
				}
			}
			wantS(t, fmt.Sprintf("allocation %d", n+1), s, tc.want)
			if c.Reason != refusal.Quota {
				t.Fatalf("reason %v", c.Reason)
			}
			if tc.ty != restrack.XRCD && n != 3 {
				t.Fatalf("quota 3, got %d", n)
			}
			// VF 1 is not affected.
			if tc.ty != restrack.VLAN {
				in := uint64(0)
				if tc.in != nil {
					in = tc.in(100)
				}
				inMod := uint32(tc.ty)
				if tc.ty == restrack.MAC {
					inMod |= 1 << 8
				}
				c := r.vf(1).cmd(mlx4.ALLOC_RES, in, inMod, tc.op, nil, false)
				wantS(t, "VF 1", r.vf(1).run(c), mlx4.OK)
			}
		})
	}
}

func TestPKeyIndex(t *testing.T) {
	r := newRig(t, 4, nil)
	vfs := map[int]*vf{}
	for _, tc := range []struct {
		vf       int
		pkey     uint8
		want     mlx4.Status
		physPKey byte
	}{
		{0, 0, mlx4.OK, 0}, {0, 1, mlx4.OK, 1}, {0, 2, mlx4.BAD_PARAM, 0}, {0, 255, mlx4.BAD_PARAM, 0},
		{3, 1, mlx4.OK, 2}, {3, 2, mlx4.OK, 3}, {3, 3, mlx4.BAD_PARAM, 0}, // VF 3: map [0 2 3]
	} {
		v := vfs[tc.vf]
		if v == nil {
			v = r.vf(tc.vf)
			vfs[tc.vf] = v
			v.setupEQ(1, 4)
		}
		cq := v.createCQ()
		qpn, q := v.newQP(cq)
		q.pkey = tc.pkey
		c := v.cmd(mlx4.RST2INIT_QP, 0, qpn, 0, q.bytes(), false)
		s := v.run(c)
		wantS(t, fmt.Sprintf("VF %d pkey_index %d", tc.vf, tc.pkey), s, tc.want)
		if s != mlx4.OK {
			if c.Reason != refusal.PKey {
				t.Fatalf("reason %v", c.Reason)
			}
			continue
		}
		out := v.cmd(mlx4.QUERY_QP, 0, qpn, 0, nil, true)
		v.must(v.run(out), "QUERY_QP")
		if got := out.Outbox[mlx4.QPMailboxPriPath+mlx4.PathPKeyIndex]; got != tc.physPKey {
			t.Fatalf("VF %d virtual %d → physical %d, want %d", tc.vf, tc.pkey, got, tc.physPKey)
		}
		if st := out.Outbox[mlx4.QPMailboxContext+mlx4.QPCFlags] >> 4; st != byte(mlx4.QP_STATE_INIT) {
			t.Fatalf("queried state %d", st)
		}
	}
}

func TestPortTheVFDoesNotHave(t *testing.T) {
	r := newRig(t, 2, func(c *config.Config) {
		c.VFs.Overrides = map[string]config.VF{"1": {Ports: []int{2}}}
	})
	v := r.vf(1)
	v.setupEQ(1, 4)
	cq := v.createCQ()
	qpn, q := v.newQP(cq)
	q.vfPort = 2
	c := v.cmd(mlx4.RST2INIT_QP, 0, qpn, 0, q.bytes(), false)
	wantS(t, "QP on VF port 2", v.run(c), mlx4.BAD_PARAM)
	if c.Reason != refusal.Port {
		t.Fatalf("reason %v", c.Reason)
	}
	q.vfPort = 1
	wantS(t, "QP on VF port 1", v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), mlx4.OK)
	out := v.cmd(mlx4.QUERY_QP, 0, qpn, 0, nil, true)
	v.must(v.run(out), "QUERY_QP")
	if out.Outbox[mlx4.QPMailboxPriPath+mlx4.PathSchedQueue]>>6&1 != 1 {
		t.Fatal("sched_queue not rewritten to physical port 2")
	}
	for _, tc := range []struct {
		op  mlx4.Opcode
		mod uint32
		in  uint64
	}{
		{mlx4.INIT_PORT, 2, 0},
		{mlx4.CLOSE_PORT, 2, 0},
		{mlx4.SET_PORT, 2, 0},
		{mlx4.DUMP_ETH_STATS, 0, 0},
		{mlx4.SET_MCAST_FLTR, 3, 0},
		{mlx4.PROMISC, 1, 2 << 62},
	} {
		c := v.cmd(tc.op, tc.in, tc.mod, 0, make([]byte, 512), true)
		wantS(t, tc.op.String(), v.run(c), mlx4.BAD_PARAM)
	}
	v.must(v.run(v.cmd(mlx4.INIT_PORT, 0, 1, 0, nil, false)), "INIT_PORT 1")
	if !r.h.PortOpen(1, 2) || r.h.PortOpen(1, 1) {
		t.Fatal("VF port 1 is physical port 2")
	}
	// MAC on a port the VF lacks.
	c = v.cmd(mlx4.ALLOC_RES, 0x0002c9000001, uint32(restrack.MAC)|2<<8, resOpReserveAndMap, nil, false)
	wantS(t, "MAC on VF port 2", v.run(c), mlx4.BAD_PARAM)
}

func TestWriteMTT(t *testing.T) {
	r := newRig(t, 2, nil)
	a, b := r.vf(0), r.vf(1)
	base := uint64(a.mtt(2)) // 4 entries
	other := uint64(b.mtt(2))
	for _, tc := range []struct {
		name  string
		start uint64
		n     int
		want  mlx4.Status
	}{
		{"inside", base, 4, mlx4.OK},
		{"tail", base + 3, 1, mlx4.OK},
		{"beyond the allocation", base + 2, 3, mlx4.BAD_PARAM},
		{"before it", base - 1, 2, mlx4.BAD_PARAM},
		{"another VF's", other, 1, mlx4.BAD_PARAM},
		{"unallocated", 1 << 13, 1, mlx4.BAD_PARAM},
		{"huge start", 1 << 60, 1, mlx4.BAD_PARAM},
	} {
		ents := make([]uint64, tc.n)
		for i := range ents {
			ents[i] = 0x1000 * uint64(i+1)
		}
		c := a.cmd(mlx4.WRITE_MTT, 0, uint32(tc.n), 0, nil, false)
		c.Inbox = new([mlx4.MailboxSize]byte)
		binary.BigEndian.PutUint64(c.Inbox[:], tc.start)
		for i, e := range ents {
			binary.BigEndian.PutUint64(c.Inbox[16+8*i:], e)
		}
		s := a.run(c)
		wantS(t, tc.name, s, tc.want)
		if s != mlx4.OK && c.Reason != refusal.MTT {
			t.Fatalf("%s: reason %v", tc.name, c.Reason)
		}
	}
	// Length beyond the mailbox (Linux does not check).
	big := a.mtt(10)
	c := a.cmd(mlx4.WRITE_MTT, 0, 511, 0, make([]byte, 16), false)
	binary.BigEndian.PutUint64(c.Inbox[:], uint64(big))
	wantS(t, "511 entries", a.run(c), mlx4.BAD_PARAM)
	c = a.cmd(mlx4.WRITE_MTT, 0, 510, 0, make([]byte, 16), false)
	binary.BigEndian.PutUint64(c.Inbox[:], uint64(big))
	wantS(t, "510 entries", a.run(c), mlx4.OK)
	// READ_MTT reads back what was written, and only the VF's own.
	out := a.cmd(mlx4.READ_MTT, base, 4, 0, nil, true)
	a.must(a.run(out), "READ_MTT")
	if e := binary.BigEndian.Uint64(out.Outbox[16+8:]); e != 0x2000|1 {
		t.Fatalf("entry 1 = %#x", e)
	}
	wantS(t, "READ_MTT of VF 1", a.run(a.cmd(mlx4.READ_MTT, other, 1, 0, nil, true)), mlx4.BAD_PARAM)
}

func mptEntry(flags, pd uint32, mttBase uint32, mttSize uint32) []byte {
	b := make([]byte, mlx4.MPTEntrySize)
	binary.BigEndian.PutUint32(b[mlx4.MPTFlags:], flags)
	binary.BigEndian.PutUint32(b[mlx4.MPTPDFlags:], pd)
	binary.BigEndian.PutUint64(b[mlx4.MPTMTTAddr:], uint64(mttBase)*mlx4.MTTEntrySize)
	binary.BigEndian.PutUint32(b[mlx4.MPTMTTSz:], mttSize)
	return b
}

func TestMPT(t *testing.T) {
	r := newRig(t, 2, nil)
	a, b := r.vf(0), r.vf(1)
	own := a.mtt(2)
	other := b.mtt(2)
	newMPT := func() uint32 {
		idx := a.mustAlloc(restrack.MPT, resOpReserve, 0)
		a.mustAlloc(restrack.MPT, resOpMapICM, uint64(idx))
		return idx
	}
	sw2hw := func(idx uint32, e []byte) (mlx4.Status, *Cmd) {
		c := a.cmd(mlx4.SW2HW_MPT, 0, idx, 0, e, false)
		return a.run(c), c
	}
	idx := newMPT()
	s, c := sw2hw(idx, mptEntry(mlx4.MPT_FLAG_REGION, 5, other, 4))
	wantS(t, "MPT over VF 1's MTTs", s, mlx4.BAD_OP)
	if c.Reason != refusal.MTT {
		t.Fatalf("reason %v", c.Reason)
	}
	s, _ = sw2hw(idx, mptEntry(mlx4.MPT_FLAG_REGION, 5, own, 5))
	wantS(t, "MPT beyond its MTTs", s, mlx4.BAD_OP)
	s, _ = sw2hw(idx, mptEntry(mlx4.MPT_FLAG_REGION, 5, own+1, 2))
	wantS(t, "MPT not at an MTT base", s, mlx4.INTERNAL_ERR)
	s, _ = sw2hw(idx, mptEntry(mlx4.MPT_FLAG_REGION, 3<<17|5, own, 4)) // PD of slave 2 = VF 1
	wantS(t, "PD of another function", s, mlx4.BAD_OP)
	s, _ = sw2hw(idx, mptEntry(0, 5, own, 4))
	wantS(t, "memory window", s, mlx4.BAD_OP)
	s, _ = sw2hw(idx, mptEntry(mlx4.MPT_FLAG_REGION, 2<<17|5, own, 4)) // slave 1 = VF 0
	wantS(t, "own MTTs and PD", s, mlx4.OK)
	if o, _ := r.h.Res.Peek(0, restrack.MTT, uint64(own)); o.Refs != 1 {
		t.Fatalf("MTT refs %d", o.Refs)
	}
	q := a.cmd(mlx4.QUERY_MPT, 0, idx, 0, nil, true)
	a.must(a.run(q), "QUERY_MPT")
	if binary.BigEndian.Uint32(q.Outbox[mlx4.MPTMTTSz:]) != 4 {
		t.Fatal("QUERY_MPT does not return the entry")
	}
	wantS(t, "QUERY_MPT of VF 0's MPT by VF 1", b.run(b.cmd(mlx4.QUERY_MPT, 0, idx, 0, nil, true)), mlx4.BAD_OP)
	wantS(t, "HW2SW_MPT by VF 1", b.run(b.cmd(mlx4.HW2SW_MPT, 0, idx, 0, nil, false)), mlx4.BAD_OP)
	a.must(a.run(a.cmd(mlx4.HW2SW_MPT, 0, idx, 0, nil, false)), "HW2SW_MPT")
	if o, _ := r.h.Res.Peek(0, restrack.MTT, uint64(own)); o.Refs != 0 {
		t.Fatalf("MTT refs after HW2SW %d", o.Refs)
	}
	s, _ = sw2hw(newMPT(), mptEntry(mlx4.MPT_FLAG_REGION|mlx4.MPT_FLAG_PHYSICAL, 0, 0, 0))
	wantS(t, "physical MPT", s, mlx4.OK)
}

func TestCQChecks(t *testing.T) {
	r := newRig(t, 2, nil)
	a, b := r.vf(0), r.vf(1)
	b.setupEQ(5, 4)
	cqn := a.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
	mtt := a.mtt(0, a.newPage())
	sw2hw := func(v *vf, cq uint32, ctx []byte) (mlx4.Status, *Cmd) {
		c := v.cmd(mlx4.SW2HW_CQ, 0, cq, 0, ctx, false)
		return v.run(c), c
	}
	// EQ 5 exists only for VF 1: VF 0 cannot use it (Linux does not check).
	s, c := sw2hw(a, cqn, cqContext(7, 5, mtt))
	wantS(t, "comp_eqn not the VF's", s, mlx4.BAD_PARAM)
	if c.Reason != refusal.EQ {
		t.Fatalf("reason %v", c.Reason)
	}
	a.setupEQ(2, 4)
	s, _ = sw2hw(a, cqn, cqContext(13, 2, mtt)) // needs 2 pages
	wantS(t, "CQ larger than its MTT", s, mlx4.BAD_OP)
	s, _ = sw2hw(b, cqn, cqContext(7, 5, mtt))
	wantS(t, "VF 1 on VF 0's CQ", s, mlx4.BAD_OP)
	s, _ = sw2hw(a, cqn, cqContext(7, 2, mtt))
	wantS(t, "good CQ", s, mlx4.OK)
	q := a.cmd(mlx4.QUERY_CQ, 0, cqn, 0, nil, true)
	a.must(a.run(q), "QUERY_CQ")
	if q.Outbox[mlx4.CQCCompEQN] != 2 {
		t.Fatal("QUERY_CQ context")
	}
	wantS(t, "QUERY_CQ by VF 1", b.run(b.cmd(mlx4.QUERY_CQ, 0, cqn, 0, nil, true)), mlx4.BAD_OP)
	// MODIFY_CQ resize onto a bigger MTT moves the reference.
	mtt2 := a.mtt(1, a.newPage(), a.newPage())
	m := a.cmd(mlx4.MODIFY_CQ, 0, cqn, 0, cqContext(8, 2, mtt2), false)
	a.must(a.run(m), "MODIFY_CQ resize")
	o1, _ := r.h.Res.Peek(0, restrack.MTT, uint64(mtt))
	o2, _ := r.h.Res.Peek(0, restrack.MTT, uint64(mtt2))
	if o1.Refs != 0 || o2.Refs != 1 {
		t.Fatalf("refs after resize %d %d", o1.Refs, o2.Refs)
	}
	bm := b.mtt(1)
	m = a.cmd(mlx4.MODIFY_CQ, 0, cqn, 0, cqContext(8, 2, bm), false)
	wantS(t, "resize onto VF 1's MTT", a.run(m), mlx4.BAD_OP)
	// A CQ not in HW: QUERY_CQ and MODIFY_CQ answer OK without executing (mlx4).
	cold := a.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
	a.must(a.run(a.cmd(mlx4.QUERY_CQ, 0, cold, 0, nil, true)), "QUERY_CQ cold")
}

func TestSRQChecks(t *testing.T) {
	r := newRig(t, 1, nil)
	v := r.vf(0)
	srqn := v.mustAlloc(restrack.SRQ, resOpReserveAndMap, 0)
	mtt := v.mtt(0)
	c := v.cmd(mlx4.SW2HW_SRQ, 0, srqn, 0, srqContext(srqn+1, mtt), false)
	wantS(t, "SRQN mismatch", v.run(c), mlx4.BAD_PARAM)
	wantS(t, "QUERY_SRQ before HW", v.run(v.cmd(mlx4.QUERY_SRQ, 0, srqn, 0, nil, true)), mlx4.RESOURCE_BUSY)
	v.must(v.run(v.cmd(mlx4.SW2HW_SRQ, 0, srqn, 0, srqContext(srqn, mtt), false)), "SW2HW_SRQ")
	v.must(v.run(v.cmd(mlx4.ARM_SRQ, 42, srqn, 0, nil, false)), "ARM_SRQ")
	q := v.cmd(mlx4.QUERY_SRQ, 0, srqn, 0, nil, true)
	v.must(v.run(q), "QUERY_SRQ")
	if binary.BigEndian.Uint16(q.Outbox[mlx4.SRQCLimitWatermark:]) != 42 {
		t.Fatal("limit watermark")
	}
	v.must(v.run(v.cmd(mlx4.HW2SW_SRQ, 0, srqn, 0, nil, false)), "HW2SW_SRQ")
	v.must(v.free(restrack.SRQ, resOpReserveAndMap, uint64(srqn)), "free SRQ")
}

// Every (QP state, transition) pair, with the documented status.
func TestEveryIllegalQPTransition(t *testing.T) {
	withCtx := map[mlx4.Opcode]bool{mlx4.RST2INIT_QP: true, mlx4.INIT2INIT_QP: true, mlx4.INIT2RTR_QP: true,
		mlx4.RTR2RTS_QP: true, mlx4.RTS2RTS_QP: true, mlx4.SQERR2RTS_QP: true, mlx4.SQD2SQD_QP: true, mlx4.SQD2RTS_QP: true}
	ops := []mlx4.Opcode{mlx4.RST2INIT_QP, mlx4.INIT2INIT_QP, mlx4.INIT2RTR_QP, mlx4.RTR2RTS_QP, mlx4.RTS2RTS_QP,
		mlx4.SQERR2RTS_QP, mlx4.TWO_ERR_QP, mlx4.RTS2SQD_QP, mlx4.SQD2SQD_QP, mlx4.SQD2RTS_QP, mlx4.TWO_RST_QP,
		mlx4.QUERY_QP, mlx4.SUSPEND_QP, mlx4.UNSUSPEND_QP}
	states := []mlx4.QPState{mlx4.QP_STATE_RST, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS, mlx4.QP_STATE_SQER, mlx4.QP_STATE_SQD, mlx4.QP_STATE_ERR}
	r := newRig(t, 1, func(c *config.Config) {
		c.VFs.Default.Quotas = map[string]config.Quota{"qp": {Quota: intp(1000), Guaranteed: intp(10)}, "mtt": {Quota: intp(1000), Guaranteed: intp(10)}}
	})
	v := r.vf(0)
	v.setupEQ(1, 4)
	cq := v.createCQ()
	for _, st := range states {
		for _, op := range ops {
			qpn, q := v.newQP(cq)
			if st != mlx4.QP_STATE_RST {
				v.must(v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), "RST2INIT")
				r.h.fw.qps[qpn].State = st // SQER is reachable only through the data path
			}
			var want mlx4.Status
			var to mlx4.QPState
			switch {
			case op == mlx4.RST2INIT_QP:
				want, to = mlx4.BAD_PARAM, st
				if st == mlx4.QP_STATE_RST {
					want, to = mlx4.OK, mlx4.QP_STATE_INIT
				}
			case op == mlx4.TWO_RST_QP:
				want, to = mlx4.OK, mlx4.QP_STATE_RST
				if st == mlx4.QP_STATE_RST {
					want = mlx4.BAD_PARAM
				}
			case st == mlx4.QP_STATE_RST:
				want, to = mlx4.RESOURCE_BUSY, mlx4.QP_STATE_RST
			case op == mlx4.QUERY_QP || op == mlx4.SUSPEND_QP || op == mlx4.UNSUSPEND_QP:
				want, to = mlx4.OK, st
			default:
				tr, _ := mlx4.QPTransitionOf(op) // qp.c's op[][]
				want, to = mlx4.BAD_PARAM, st
				if tr.Has(st) {
					want, to = mlx4.OK, tr.To
				}
			}
			var ctx *qpc
			if withCtx[op] {
				ctx = &q
			}
			got := v.qpCmd(op, qpn, ctx)
			if got != want {
				t.Errorf("%v on a QP in state %d: %v, want %v", op, st, got, want)
			}
			now := mlx4.QP_STATE_RST
			if qp := r.h.fw.qps[qpn]; qp != nil {
				now = qp.State
			}
			if now != to {
				t.Errorf("%v on a QP in state %d: state %d, want %d", op, st, now, to)
			}
			v.r.h.ResetFunction(0) // fresh objects for the next pair
			v.page = 0x10000
			v.setupEQ(1, 4)
			cq = v.createCQ()
		}
	}
}

func TestQPVerify(t *testing.T) {
	r := newRig(t, 2, func(c *config.Config) {
		c.Ports[1].LinkLayer = "eth"
		c.Ports[1].LID = 0
	})
	v := r.vf(0)
	_, qpn, q := setupQP(t, v)
	q.rateLimit = 5
	wantS(t, "rate limit", v.qpCmd(mlx4.INIT2RTR_QP, qpn, &q), mlx4.BAD_OP)
	q.rateLimit = 0
	q.optpar = mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH
	q.mgid = 1
	wantS(t, "IB mgid_index 1", v.qpCmd(mlx4.INIT2RTR_QP, qpn, &q), mlx4.BAD_PARAM)
	q.mgid = 0
	v.must(v.qpCmd(mlx4.INIT2RTR_QP, qpn, &q), "INIT2RTR")
	out := v.cmd(mlx4.QUERY_QP, 0, qpn, 0, nil, true)
	v.must(v.run(out), "QUERY_QP")
	if out.Outbox[mlx4.QPMailboxPriPath+mlx4.PathMGIDIndex] != 1 { // slave & 0x7f for IB
		t.Fatalf("mgid rewritten to %d", out.Outbox[mlx4.QPMailboxPriPath+mlx4.PathMGIDIndex])
	}
	// RoCE: INIT2RTR on the Ethernet port needs a source MAC the VF registered.
	cq2 := v.createCQ()
	qpn2, q2 := v.newQP(cq2)
	q2.vfPort = 2
	v.must(v.qpCmd(mlx4.RST2INIT_QP, qpn2, &q2), "RST2INIT eth")
	q2.smac = 0
	wantS(t, "unregistered smac", v.qpCmd(mlx4.INIT2RTR_QP, qpn2, &q2), mlx4.BAD_PARAM)
	c := v.cmd(mlx4.ALLOC_RES, 0x0002c9aabbcc, uint32(restrack.MAC)|2<<8, resOpReserveAndMap, nil, false)
	v.must(v.run(c), "MAC")
	idx := uint32(c.OutParam)
	q2.smac = uint8(idx)
	v.must(v.qpCmd(mlx4.INIT2RTR_QP, qpn2, &q2), "INIT2RTR with own smac")
	// Another VF's MAC index is not usable.
	w := r.vf(1)
	w.setupEQ(1, 4)
	wcq := w.createCQ()
	wq, wc := w.newQP(wcq)
	wc.vfPort = 2
	w.must(w.qpCmd(mlx4.RST2INIT_QP, wq, &wc), "VF 1 RST2INIT")
	wc.smac = uint8(idx)
	wantS(t, "VF 0's smac index", w.qpCmd(mlx4.INIT2RTR_QP, wq, &wc), mlx4.BAD_PARAM)
}

func TestQPAttachHoldsQP(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(0)
	_, qpn, _ := setupQP(t, v)
	gid := make([]byte, 16)
	gid[0] = 0xff
	v.must(v.run(v.cmd(mlx4.QP_ATTACH, 0, qpn, 1, gid, false)), "attach")
	wantS(t, "attach by VF 1", r.vf(1).run(r.vf(1).cmd(mlx4.QP_ATTACH, 0, qpn, 1, gid, false)), mlx4.BAD_OP)
	wantS(t, "attach twice", v.run(v.cmd(mlx4.QP_ATTACH, 0, qpn, 1, gid, false)), mlx4.INTERNAL_ERR)
	// As mlx4's mcg_list, the attachment outlives 2RST and holds the QP.
	v.must(v.qpCmd(mlx4.TWO_RST_QP, qpn, nil), "2RST")
	v.must(v.free(restrack.QP, resOpMapICM, uint64(qpn)), "unmap")
	wantS(t, "free while attached", v.free(restrack.QP, resOpReserve, 1<<32|uint64(qpn)), mlx4.RESOURCE_BUSY)
	v.must(v.run(v.cmd(mlx4.QP_ATTACH, 0, qpn, 0, gid, false)), "detach a QP in reset")
	v.must(v.free(restrack.QP, resOpReserve, 1<<32|uint64(qpn)), "free after detach")
}

func TestSpecialProxyQP(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(0)
	own := uint64(BaseProxySQPN + 8*1)
	v.mustAlloc(restrack.QP, resOpMapICM, own)
	_, s := v.alloc(restrack.QP, resOpMapICM, uint64(BaseProxySQPN+8*2))
	wantS(t, "VF 1's proxy QP", s, mlx4.INTERNAL_ERR)
	// Its Q_Key is the reserved one whatever the VF writes.
	v.setupEQ(1, 4)
	cq := v.createCQ()
	q := qpc{st: mlx4.QP_ST_UD, scq: cq, rcq: cq, mtt: v.mtt(0, v.newPage()), sqLog: 3, rqLog: 3}
	in := q.bytes()
	binary.BigEndian.PutUint32(in[mlx4.QPMailboxContext+mlx4.QPCQKey:], 0x1234)
	v.must(v.run(v.cmd(mlx4.RST2INIT_QP, 0, uint32(own), 0, in, false)), "RST2INIT proxy")
	out := v.cmd(mlx4.QUERY_QP, 0, uint32(own), 0, nil, true)
	v.must(v.run(out), "QUERY_QP proxy")
	if k := binary.BigEndian.Uint32(out.Outbox[mlx4.QPMailboxContext+mlx4.QPCQKey:]); k != mlx4.RESERVED_QKEY_BASE+8 {
		t.Fatalf("proxy Q_Key %#x", k)
	}
	v.must(v.qpCmd(mlx4.TWO_RST_QP, uint32(own), nil), "2RST proxy")
	v.must(v.free(restrack.QP, resOpMapICM, own), "unmap proxy")
	if n := r.h.Counts(0)[restrack.QP]; n != 0 {
		t.Fatalf("proxy QP still tracked: %d", n)
	}
	if a := r.h.Res.Allocated(0, restrack.QP, 0); a != 0 {
		t.Fatalf("proxy QP charged %d", a)
	}
}

func TestEQOverrunAndOwnerBit(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(0)
	page := v.page
	v.setupEQ(3, 2) // 4 entries
	for i := range 4 {
		e := CompletionEQE(uint16(i+1), mlx4.BAD_PARAM, 0x1122334455667788)
		if err := r.h.PostEQE(0, mlx4.EventCmd, &e); err != nil {
			t.Fatalf("EQE %d: %v", i, err)
		}
	}
	e := CompletionEQE(5, mlx4.OK, 0)
	if err := r.h.PostEQE(0, mlx4.EventCmd, &e); !errors.Is(err, ErrOverrun) {
		t.Fatalf("5th EQE on a 4-entry EQ: %v", err)
	}
	if n := r.h.Stats(0).Overruns.Load(); n != 1 {
		t.Fatalf("overruns %d", n)
	}
	got := v.readEQE(page, 1)
	if got[mlx4.EQEType] != mlx4.EventCmd || binary.BigEndian.Uint16(got[mlx4.EQECmdToken:]) != 2 || got[mlx4.EQECmdStatus] != byte(mlx4.BAD_PARAM) ||
		binary.BigEndian.Uint64(got[mlx4.EQECmdOutParam:]) != 0x1122334455667788 || got[mlx4.EQEOwner]&0x80 != 0 || got[mlx4.EQESlaveID] != 1 {
		t.Fatalf("EQE 1 = % x", got)
	}
	// The VF consumed 2: two more fit, written with the owner bit set (second pass).
	if err := r.h.EQDoorbell(0, 3, 2|1<<31); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		e := CompletionEQE(uint16(10+i), mlx4.OK, 0)
		if err := r.h.PostEQE(0, mlx4.EventCmd, &e); err != nil {
			t.Fatalf("after doorbell, EQE %d: %v", i, err)
		}
	}
	if err := r.h.PostEQE(0, mlx4.EventCmd, &e); !errors.Is(err, ErrOverrun) {
		t.Fatalf("full again: %v", err)
	}
	got = v.readEQE(page, 0)
	if binary.BigEndian.Uint16(got[mlx4.EQECmdToken:]) != 10 || got[mlx4.EQEOwner]&0x80 == 0 {
		t.Fatalf("wrapped EQE = % x", got)
	}
	if n := r.h.Stats(0).EQEs.Load(); n != 6 {
		t.Fatalf("EQEs %d", n)
	}
	// QUERY_EQ shows the indexes.
	q := v.cmd(mlx4.QUERY_EQ, 0, 3, 0, nil, true)
	v.must(v.run(q), "QUERY_EQ")
	if binary.BigEndian.Uint32(q.Outbox[mlx4.EQCProducerIndex:]) != 6 || binary.BigEndian.Uint32(q.Outbox[mlx4.EQCConsumerIndex:]) != 2 {
		t.Fatal("QUERY_EQ indexes")
	}
	// VF 1 has nothing mapped.
	if err := r.h.PostEQE(1, mlx4.EventCmd, &e); !errors.Is(err, ErrNoEQ) || r.h.HasEQ(1, mlx4.EventCmd) {
		t.Fatalf("VF 1: %v", err)
	}
	// Writing an EQE, and refusing one for a VF with no EQ, allocate
	// nothing: the VF consumes each EQE (doorbell at the producer index)
	// so that every call takes the writing path.
	ci := uint32(6)
	var failed error
	allocs := testing.AllocsPerRun(50, func() {
		_ = r.h.EQDoorbell(0, 3, ci)
		if err := r.h.PostEQE(0, mlx4.EventCmd, &e); err != nil && failed == nil {
			failed = err
		}
		ci++
		_ = r.h.PostEQE(1, mlx4.EventCmd, &e)
	})
	if failed != nil {
		t.Fatalf("PostEQE with room in the EQ: %v", failed)
	}
	if allocs != 0 {
		t.Fatalf("PostEQE allocates %v", allocs)
	}
}

func TestEQRingChecked(t *testing.T) {
	r := newRig(t, 1, nil)
	v := r.vf(0)
	outside := v.mtt(0, testWindow) // one page beyond the window
	c := v.cmd(mlx4.SW2HW_EQ, 0, 1, 0, eqContext(4, outside), false)
	wantS(t, "ring outside the window", v.run(c), mlx4.BAD_PARAM)
	if c.Reason != refusal.MTT {
		t.Fatalf("reason %v", c.Reason)
	}
	unwritten := v.mtt(0)
	wantS(t, "MTT never written", v.run(v.cmd(mlx4.SW2HW_EQ, 0, 1, 0, eqContext(4, unwritten), false)), mlx4.BAD_PARAM)
	wantS(t, "ring bigger than its MTT", v.run(v.cmd(mlx4.SW2HW_EQ, 0, 1, 0, eqContext(8, outside), false)), mlx4.BAD_OP)
	wantS(t, "eqn 1024", v.run(v.cmd(mlx4.SW2HW_EQ, 0, 1024, 0, eqContext(4, unwritten), false)), mlx4.BAD_PARAM)
	if n := r.h.Counts(0)[restrack.EQ]; n != 0 {
		t.Fatalf("failed SW2HW_EQ left %d EQs", n)
	}
	wantS(t, "MAP_EQ to no EQ", v.run(v.cmd(mlx4.MAP_EQ, 1<<mlx4.EventCmd, 1, 0, nil, false)), mlx4.BAD_PARAM)
	v.setupEQ(1, 4)
	wantS(t, "SW2HW_EQ twice", v.createEQ(1, 4), mlx4.INTERNAL_ERR)
	v.must(v.run(v.cmd(mlx4.HW2SW_EQ, 0, 1, 0, nil, false)), "HW2SW_EQ")
	if r.h.HasEQ(0, mlx4.EventCmd) {
		t.Fatal("event map still points at a destroyed EQ")
	}
	wantS(t, "QUERY_EQ gone", v.run(v.cmd(mlx4.QUERY_EQ, 0, 1, 0, nil, true)), mlx4.INTERNAL_ERR)
}

func TestAsyncEventsRouteToOwner(t *testing.T) {
	r := newRig(t, 3, func(c *config.Config) {
		c.VFs.Overrides = map[string]config.VF{"2": {Ports: []int{2}}}
	})
	a, b := r.vf(0), r.vf(1)
	apage, bpage := a.page, b.page
	_, aqp, _ := setupQP(t, a)
	bcq, _, _ := setupQP(t, b)
	if err := r.h.QPEvent(aqp, mlx4.EventCommEst); err != nil {
		t.Fatal(err)
	}
	if err := r.h.CQError(bcq, 1); err != nil {
		t.Fatal(err)
	}
	e := a.readEQE(apage, 0)
	if e[mlx4.EQEType] != mlx4.EventCommEst || binary.BigEndian.Uint32(e[mlx4.EQEData:]) != aqp {
		t.Fatalf("VF 0 EQE % x", e)
	}
	e = b.readEQE(bpage, 0)
	if e[mlx4.EQEType] != mlx4.EventCQError || binary.BigEndian.Uint32(e[mlx4.EQEData:]) != bcq || e[mlx4.EQECQErrSyndrome] != 1 {
		t.Fatalf("VF 1 EQE % x", e)
	}
	if err := r.h.QPEvent(0x7ffff0, mlx4.EventCommEst); !errors.Is(err, restrack.ErrNotFound) {
		t.Fatalf("untracked QP: %v", err)
	}
	// mlx4_eq_int: the EQE's QPN is 24 bits (& 0xffffff), its owner the
	// tracker's QP of the low 23 (mlx4_get_slave_from_resource_id), and
	// mlx4_slave_event forwards the EQE as it came; bits 31:24 are dropped.
	if err := r.h.QPEvent(0xff<<24|1<<23|aqp, mlx4.EventPathMig); err != nil {
		t.Fatal(err)
	}
	if e := a.readEQE(apage, 1); e[mlx4.EQEType] != mlx4.EventPathMig || binary.BigEndian.Uint32(e[mlx4.EQEData:]) != 1<<23|aqp {
		t.Fatalf("VF 0 EQE of QPN %#x: % x", 1<<23|aqp, e)
	}
	// Port 2 changes: VF 0 and VF 1 (ports [1 2]) get it as their port 2;
	// VF 2 (ports [2]) has no EQ: counted, not delivered.
	n, err := r.h.PortChange(2, mlx4.PORT_CHANGE_SUBTYPE_ACTIVE)
	if n != 2 || !errors.Is(err, ErrNoEQ) {
		t.Fatalf("port change to %d VFs, %v", n, err)
	}
	e = a.readEQE(apage, 2)
	if d, err := mlx4.DecodeEQE(e[:]); err != nil || d.Type != mlx4.EventPortChange || d.Port != 2 || d.Subtype != mlx4.PORT_CHANGE_SUBTYPE_ACTIVE {
		t.Fatalf("port change EQE % x", e)
	}
	if r.h.Stats(2).NoEQ.Load() != 1 {
		t.Fatal("VF 2's dropped event not counted")
	}
}

func TestMACVLANAndCounters(t *testing.T) {
	r := newRig(t, 2, nil)
	a, b := r.vf(0), r.vf(1)
	mac := uint64(0x0002c9010203)
	c := a.cmd(mlx4.ALLOC_RES, mac, uint32(restrack.MAC)|1<<8, resOpReserveAndMap, nil, false)
	a.must(a.run(c), "MAC")
	idx := int(uint32(c.OutParam))
	c = b.cmd(mlx4.ALLOC_RES, mac, uint32(restrack.MAC)|1<<8, resOpReserveAndMap, nil, false)
	b.must(b.run(c), "same MAC by VF 1")
	if r.h.fw.ports[0].MAC[idx].Refs != 2 {
		t.Fatal("shared MAC table entry not refcounted")
	}
	// Old API: port in out_param.
	c = a.cmd(mlx4.ALLOC_RES, mac+1, uint32(restrack.MAC), resOpReserveAndMap, nil, false)
	c.OutParam = 1
	a.must(a.run(c), "MAC old API")
	wantS(t, "FREE MAC VF 1 never had", b.free(restrack.MAC, resOpReserveAndMap, mac+1), mlx4.BAD_PARAM)
	r.h.ResetFunction(0)
	if r.h.fw.ports[0].MAC[idx].Refs != 1 {
		t.Fatalf("after VF 0's reset the entry has %d refs", r.h.fw.ports[0].MAC[idx].Refs)
	}
	// VLAN old API (the port in out_param) is a no-op success; without a
	// port it is BAD_PARAM (vlan_alloc_res).
	c = a.cmd(mlx4.ALLOC_RES, 5, uint32(restrack.VLAN), resOpReserveAndMap, nil, false)
	c.OutParam = 1
	a.must(a.run(c), "VLAN old API")
	wantS(t, "VLAN without a port", a.run(a.cmd(mlx4.ALLOC_RES, 5, uint32(restrack.VLAN), resOpReserveAndMap, nil, false)), mlx4.BAD_PARAM)
	cnt := a.mustAlloc(restrack.Counter, resOpReserve, 0)
	a.must(a.run(a.cmd(mlx4.QUERY_IF_STAT, 0, cnt, 0, nil, true)), "QUERY_IF_STAT")
	wantS(t, "QUERY_IF_STAT of VF 0's counter", b.run(b.cmd(mlx4.QUERY_IF_STAT, 0, cnt, 0, nil, true)), mlx4.BAD_OP)
	wantS(t, "FREE_RES counter of VF 0", b.free(restrack.Counter, resOpReserve, uint64(cnt)), mlx4.BAD_OP)
	b.must(b.free(restrack.Counter, resOpReserve, uint64(r.h.Cfg.Resources.Counters-1)), "sink counter")
	wantS(t, "ALLOC_RES EQ", a.run(a.cmd(mlx4.ALLOC_RES, 0, uint32(restrack.EQ), 0, nil, false)), mlx4.BAD_PARAM)
	wantS(t, "ALLOC_RES CQ RESERVE", a.run(a.cmd(mlx4.ALLOC_RES, 0, uint32(restrack.CQ), 0, nil, false)), mlx4.BAD_PARAM)
	wantS(t, "CONFIG_DEV set", a.run(a.cmd(mlx4.CONFIG_DEV, 0, 0, 0, nil, true)), mlx4.BAD_OP)
	a.must(a.run(a.cmd(mlx4.CONFIG_DEV, 0, 0, 1, nil, true)), "CONFIG_DEV get")
}

func TestCompletionEQELayout(t *testing.T) {
	e := CompletionEQE(0xbeef, mlx4.RESOURCE_BUSY, 0x0102030405060708)
	want := [mlx4.EQESize]byte{1: 0x0a, 6: 0xbe, 7: 0xef, 0x0f: 0x06, 0x10: 1, 2, 3, 4, 5, 6, 7, 8}
	if e != want {
		t.Fatalf("% x", e)
	}
}

func TestResetFunction(t *testing.T) {
	r := newRig(t, 3, nil)
	build := func(v *vf) {
		_, qpn, _ := setupQP(t, v)
		v.createSRQ()
		gid := make([]byte, 16)
		v.must(v.run(v.cmd(mlx4.QP_ATTACH, 0, qpn, 1, gid, false)), "attach")
		mpt := v.mustAlloc(restrack.MPT, resOpReserve, 0)
		v.mustAlloc(restrack.MPT, resOpMapICM, uint64(mpt))
		mtt := v.mtt(1)
		v.must(v.run(v.cmd(mlx4.SW2HW_MPT, 0, mpt, 0, mptEntry(mlx4.MPT_FLAG_REGION, 0, mtt, 2), false)), "MPT")
		c := v.cmd(mlx4.ALLOC_RES, 0x0002c9000000|uint64(v.n), uint32(restrack.MAC)|1<<8, resOpReserveAndMap, nil, false)
		v.must(v.run(c), "MAC")
		v.mustAlloc(restrack.Counter, resOpReserve, 0)
		v.mustAlloc(restrack.XRCD, resOpReserve, 0)
		v.must(v.run(v.cmd(mlx4.INIT_PORT, 0, 1, 0, nil, false)), "INIT_PORT")
	}
	vfs := []*vf{r.vf(0), r.vf(1), r.vf(2)}
	for _, v := range vfs {
		build(v)
	}
	before0, before2 := fingerprint(r.h, 0), fingerprint(r.h, 2)
	counts := r.h.Counts(1)
	rel := r.h.ResetFunction(1)
	if restrack.Released(counts) != rel {
		t.Fatalf("released %v, owned %v", rel, counts)
	}
	if c := r.h.Counts(1); c != ([restrack.NumTypes]int{}) {
		t.Fatalf("VF 1 counts after reset: %v", c)
	}
	for _, ty := range []restrack.Type{restrack.QP, restrack.CQ, restrack.SRQ, restrack.MPT, restrack.MTT, restrack.Counter, restrack.XRCD} {
		if n := r.h.Res.Allocated(1, ty, 0); n != 0 {
			t.Fatalf("VF 1 still charged %d %v", n, ty)
		}
	}
	if r.h.HasEQ(1, mlx4.EventCmd) || r.h.PortOpen(1, 1) {
		t.Fatal("VF 1's event map or port survived the reset")
	}
	if fingerprint(r.h, 0) != before0 || fingerprint(r.h, 2) != before2 {
		t.Fatal("other VFs changed")
	}
	// VF 1 starts again.
	vfs[1] = r.vf(1)
	build(vfs[1])
	if r.h.Counts(1) != counts {
		t.Fatalf("rebuilt %v, want %v", r.h.Counts(1), counts)
	}
}

// fingerprint describes everything a VF owns: tracker objects with their
// state and references, quota usage, firmware contexts.
func fingerprint(h *HCA, vf int) string {
	s := fmt.Sprint(h.Counts(vf))
	h.Res.Walk(vf, func(o *restrack.Object) {
		s += fmt.Sprintf("|%v:%#x:%d:%d", o.Type, o.ID, o.State, o.Refs)
		switch o.Type {
		case restrack.QP:
			if qp := h.fw.qps[uint32(o.ID)]; qp != nil {
				s += fmt.Sprintf(":%d:%x", qp.State, qp.Ctx)
			}
		case restrack.CQ:
			if cq := h.fw.cqs[uint32(o.ID)]; cq != nil {
				s += fmt.Sprintf(":%x", cq.Ctx)
			}
		case restrack.MPT:
			if m := h.fw.mpts[o.ID]; m != nil {
				s += fmt.Sprintf(":%x", m.Entry)
			}
		case restrack.MTT:
			s += fmt.Sprintf(":%x", h.fw.mtt[o.ID])
		case restrack.EQ:
			if eq := h.fw.eqs[o.ID]; eq != nil {
				s += fmt.Sprintf(":%d:%d", eq.Prod, eq.Cons)
			}
		}
	})
	for _, ty := range []restrack.Type{restrack.QP, restrack.CQ, restrack.SRQ, restrack.MPT, restrack.MTT, restrack.Counter, restrack.XRCD} {
		s += fmt.Sprintf("|%v=%d", ty, h.Res.Allocated(vf, ty, 0))
	}
	s += fmt.Sprint(h.fw.vfs[vf].EventEQ, h.fw.vfs[vf].PortOpen)
	return s
}

// Successful commands on existing objects allocate nothing.
func TestHotPathsDoNotAllocate(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(0)
	cq, qpn, q := setupQP(t, v)
	mpt := v.mustAlloc(restrack.MPT, resOpReserve, 0)
	v.mustAlloc(restrack.MPT, resOpMapICM, uint64(mpt))
	v.must(v.run(v.cmd(mlx4.SW2HW_MPT, 0, mpt, 0, mptEntry(mlx4.MPT_FLAG_REGION, 0, q.mtt, 1), false)), "MPT")
	in := q.bytes()
	cmds := []struct {
		c *Cmd
	}{
		{v.cmd(mlx4.QUERY_QP, 0, qpn, 0, nil, true)},
		{v.cmd(mlx4.INIT2INIT_QP, 0, qpn, 0, in, false)},
		{v.cmd(mlx4.SUSPEND_QP, 0, qpn, 0, nil, false)},
		{v.cmd(mlx4.QUERY_CQ, 0, cq, 0, nil, true)},
		{v.cmd(mlx4.QUERY_MPT, 0, mpt, 0, nil, true)},
		{v.cmd(mlx4.QUERY_EQ, 0, 1, 0, nil, true)},
		{v.cmd(mlx4.WRITE_MTT, 0, 1, 0, make([]byte, 24), false)},
	}
	binary.BigEndian.PutUint64(cmds[len(cmds)-1].c.Inbox[:], uint64(q.mtt))
	for _, x := range cmds {
		inbox := x.c.Inbox
		var saved [mlx4.MailboxSize]byte
		if inbox != nil {
			saved = *inbox
		}
		n := testing.AllocsPerRun(20, func() {
			if inbox != nil {
				*inbox = saved // executors rewrite the shadow (P_Key, port)
			}
			if s := r.h.Exec(x.c); s != mlx4.OK {
				t.Fatalf("%v: %v", x.c.Op, s)
			}
		})
		if n != 0 {
			t.Errorf("%v allocates %v per call", x.c.Op, n)
		}
	}
}

// With a doorbell reader, a ring that looks full is refreshed from the
// VF's doorbell word before an overrun is declared.
func TestDoorbellReader(t *testing.T) {
	r := newRig(t, 1, nil)
	v := r.vf(0)
	v.setupEQ(3, 1) // 2 entries
	word := map[int]uint32{}
	reads := 0
	r.h.SetDoorbellReader(func(vf, eqn int) (uint32, bool) {
		reads++
		return word[eqn], vf == 0
	})
	e := CompletionEQE(1, mlx4.OK, 0)
	for i := range 2 {
		if err := r.h.PostEQE(0, mlx4.EventCmd, &e); err != nil {
			t.Fatalf("EQE %d: %v", i, err)
		}
	}
	if reads != 0 {
		t.Fatalf("doorbell read %d times before the ring looked full", reads)
	}
	if err := r.h.PostEQE(0, mlx4.EventCmd, &e); !errors.Is(err, ErrOverrun) {
		t.Fatalf("nothing consumed: %v", err)
	}
	word[3] = 1 | 1<<31
	if err := r.h.PostEQE(0, mlx4.EventCmd, &e); err != nil {
		t.Fatalf("after consuming one: %v", err)
	}
	word[3] = 0x00ffffff // ahead of the producer: treated as full
	if err := r.h.PostEQE(0, mlx4.EventCmd, &e); !errors.Is(err, ErrOverrun) {
		t.Fatalf("bogus consumer index: %v", err)
	}
	if n := r.h.Stats(0).Overruns.Load(); n != 2 {
		t.Fatalf("overruns %d", n)
	}
	// Re-created on the same EQN, the EQ does not trust the doorbell word
	// left from its earlier life (1): two EQEs, then an overrun, until the
	// VF writes the word again.
	word[3] = 1
	v.must(v.run(v.cmd(mlx4.HW2SW_EQ, 0, 3, 0, nil, false)), "HW2SW_EQ")
	v.setupEQ(3, 1)
	for i := range 2 {
		if err := r.h.PostEQE(0, mlx4.EventCmd, &e); err != nil {
			t.Fatalf("new EQ, EQE %d: %v", i, err)
		}
	}
	if err := r.h.PostEQE(0, mlx4.EventCmd, &e); !errors.Is(err, ErrOverrun) {
		t.Fatalf("stale doorbell trusted: %v", err)
	}
	word[3] = 2
	if err := r.h.PostEQE(0, mlx4.EventCmd, &e); err != nil {
		t.Fatalf("after the VF consumed two: %v", err)
	}
}
