package hca

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The hostile VF on the data path: what each forged input gets.

// TestDataRST2INITGeometry: the firmware's checks of the work-queue
// geometry at RST2INIT.
func TestDataRST2INITGeometry(t *testing.T) {
	d := newDPRig(t, 2, nil)
	a := d.setup(0)
	try := func(edit func(c *mlx4.QPContext), mttOrder int, pages ...uint64) mlx4.Status {
		t.Helper()
		qpn := a.mustAlloc(restrack.QP, resOpReserve, 1)
		a.mustAlloc(restrack.QP, resOpMapICM, uint64(qpn))
		c := mlx4.QPContext{ST: mlx4.QP_ST_RC, PD: a.pd, LogSQSize: 3, LogSQStride: 3, LogRQSize: 3, LogRQStride: 2, UsrPage: 128,
			CQNSend: a.cq, CQNRecv: a.cq, MTTBase: uint64(a.mtt(mttOrder, pages...)), DBRecAddr: a.newPage(),
			Pri: mlx4.QPPath{Port: 1, CounterIndex: 0xff}}
		edit(&c)
		b := make([]byte, mlx4.QPMailboxSize)
		mlx4.QPMailbox{Ctx: c}.Encode(b)
		return a.run(a.cmd(mlx4.RST2INIT_QP, 0, qpn, 0, b, false))
	}
	none := func(*mlx4.QPContext) {}
	wantS(t, "a QP libmlx4 would make", try(none, 0, a.newPage()), mlx4.OK)
	wantS(t, "usr_page 2047, the VF's last UAR", try(func(c *mlx4.QPContext) { c.UsrPage = vfUARPages - 1 }, 0, a.newPage()), mlx4.OK)
	wantS(t, "usr_page 0, the reserved UAR", try(func(c *mlx4.QPContext) { c.UsrPage = 0 }, 0, a.newPage()), mlx4.BAD_PARAM)
	wantS(t, "usr_page past the VF's UARs", try(func(c *mlx4.QPContext) { c.UsrPage = vfUARPages }, 0, a.newPage()), mlx4.BAD_PARAM)
	wantS(t, "usr_page far past", try(func(c *mlx4.QPContext) { c.UsrPage = 0xfffff }, 0, a.newPage()), mlx4.BAD_PARAM)
	// A ring of 8 KiB + 512 (4 pages of MTT) over an allocation of 4
	// entries with one written: the firmware's refusal.
	big := func(c *mlx4.QPContext) { c.LogSQSize = 6 }
	wantS(t, "ring larger than the MTT entries written", try(big, 2, a.newPage()), mlx4.BAD_PARAM)
	// Larger than the MTT allocation itself: mlx4's check_mtt_range
	// (-EPERM) refuses before the firmware sees it.
	wantS(t, "ring larger than the MTT allocation", try(big, 0, a.newPage()), mlx4.BAD_OP)
	wantS(t, "ring page outside the window", try(none, 0, uint64(testWindow)), mlx4.BAD_PARAM)
	wantS(t, "send stride of 32 bytes", try(func(c *mlx4.QPContext) { c.LogSQStride = 1 }, 0, a.newPage()), mlx4.BAD_PARAM)
	wantS(t, "page size 2^43", try(func(c *mlx4.QPContext) { c.LogPageSize = 31 }, 0, a.newPage()), mlx4.BAD_PARAM)
	// mlx4_en's send ring: 1024 64-byte WQEs in one 64 KiB page
	// (mlx4_buf_direct_alloc), rq_size_stride 0 (a 16-byte receive queue
	// past the page, which qp_get_mtt_size rounds away): accepted, the
	// receive queue without a page.
	en := func(c *mlx4.QPContext) {
		c.ST, c.LogSQSize, c.LogSQStride, c.LogRQSize, c.LogRQStride, c.LogPageSize = mlx4.QP_ST_MLX, 10, 2, 0, 0, 4
	}
	wantS(t, "mlx4_en's send ring in one 64 KiB page", try(en, 0, 0xf0000), mlx4.OK)
	// A refused RST2INIT leaves the QP in reset: the MTT is free again.
	n := 0
	for _, qp := range d.h.fw.qps {
		if qp.tr.Owner == 0 {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d QPs of VF 0 in HW, want the 3 accepted", n)
	}
	for _, qp := range d.h.fw.qps {
		if w := qp.wq; w != nil && w.sqCnt == 1024 {
			if len(w.pages) != 1 || w.sqAddr(1023, 63) != 0xf0000+0xffff || w.rqAddr(0, 0) != noPage {
				t.Fatalf("mlx4_en's ring: pages %#x, last SQ byte %#x, RQ %#x", w.pages, w.sqAddr(1023, 63), w.rqAddr(0, 0))
			}
		}
	}
}

// snapshot is a copy of a VF's whole window.
func snapshot(t testing.TB, w *dma.Window) []byte {
	b := make([]byte, w.Size())
	if err := w.CopyIn(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDataHostileKeys: forged and misused keys get the syndromes hardware
// gives, put the QPs where hardware puts them, and write nothing of the
// victim's and nothing of a bystander VF's.
func TestDataHostileKeys(t *testing.T) {
	type tc struct {
		name string
		// post posts A's WQE; the victim is B.
		post       func(p *rcPair)
		syndrome   uint8
		victimErr  bool  // B's QP goes to ERR
		victimEv   uint8 // and takes this event
		victimCQEs int   // CQEs on B's CQ
	}
	write := func(key uint32, raddr uint64, rkey uint32, n uint32, lkeyAddr uint64) func(p *rcPair) {
		return func(p *rcPair) {
			w := send(mlx4.OPCODE_RDMA_WRITE, sge(key, lkeyAddr, n))
			w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: raddr, RKey: rkey}
			p.qa.post(w, nil)
		}
	}
	cases := []tc{
		{name: "SGE outside the window (reserved lkey)", post: func(p *rcPair) {
			p.qa.post(send(mlx4.OPCODE_SEND, sge(reservedLKey(0), testWindow-8, 64)), nil)
		}, syndrome: mlx4.CQE_SYNDROME_LOCAL_PROT_ERR},
		{name: "SGE beyond its region", post: func(p *rcPair) {
			p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA+8000, 300)), nil)
		}, syndrome: mlx4.CQE_SYNDROME_LOCAL_PROT_ERR},
		{name: "forged lkey (another variant byte)", post: func(p *rcPair) {
			p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka^0x5a, vaA, 8)), nil)
		}, syndrome: mlx4.CQE_SYNDROME_LOCAL_PROT_ERR},
		{name: "another VF's key as lkey", post: func(p *rcPair) {
			p.qa.post(send(mlx4.OPCODE_SEND, sge(p.kb, vaB, 8)), nil)
		}, syndrome: mlx4.CQE_SYNDROME_LOCAL_PROT_ERR},
		{name: "the PF's reserved lkey", post: func(p *rcPair) {
			p.qa.post(send(mlx4.OPCODE_SEND, sge(modelReservedLKey, 0x1000, 8)), nil)
		}, syndrome: mlx4.CQE_SYNDROME_LOCAL_PROT_ERR},
		{name: "another VF's rkey without remote write", post: func(p *rcPair) {
			k, _ := p.b.mr(0x900000, 1, mlx4.PERM_LOCAL_WRITE|mlx4.PERM_REMOTE_READ, p.b.pd)
			write(p.ka, 0x900000, k, 16, vaA)(p)
		}, syndrome: mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, victimErr: true, victimEv: mlx4.EventWQAccessError},
		{name: "another VF's rkey of another PD", post: func(p *rcPair) {
			k, _ := p.b.mr(0x900000, 1, permAll, p.b.pd+1)
			write(p.ka, 0x900000, k, 16, vaA)(p)
		}, syndrome: mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, victimErr: true, victimEv: mlx4.EventWQAccessError},
		{name: "the reserved lkey of the victim as rkey", post: func(p *rcPair) {
			write(p.ka, 0x20000, reservedLKey(1), 16, vaA)(p)
		}, syndrome: mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, victimErr: true, victimEv: mlx4.EventWQAccessError},
		{name: "rkey past its region", post: func(p *rcPair) { write(p.ka, vaB+8190, p.kb, 16, vaA)(p) },
			syndrome: mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, victimErr: true, victimEv: mlx4.EventWQAccessError},
		{name: "RDMA READ on a QP without remote read", post: func(p *rcPair) {
			p.qb.obj().wq.rre = false
			w := send(mlx4.OPCODE_RDMA_READ, sge(p.ka, vaA, 8))
			w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB, RKey: p.kb}
			p.qa.post(w, nil)
		}, syndrome: mlx4.CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, victimErr: true, victimEv: mlx4.EventWQInvalReq},
		{name: "atomic on an unaligned address", post: func(p *rcPair) {
			w := send(mlx4.OPCODE_ATOMIC_FA, sge(p.ka, vaA, 8))
			w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB + 4, RKey: p.kb}
			w.HasAtomic = true
			p.qa.post(w, nil)
		}, syndrome: mlx4.CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, victimErr: true, victimEv: mlx4.EventWQInvalReq},
		{name: "RDMA READ into a read-only sink", post: func(p *rcPair) {
			k, _ := p.a.mr(0x300000, 1, 0, p.a.pd)
			w := send(mlx4.OPCODE_RDMA_READ, sge(k, 0x300000, 8))
			w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB, RKey: p.kb}
			p.qa.post(w, nil)
		}, syndrome: mlx4.CQE_SYNDROME_LOCAL_PROT_ERR},
		{name: "SEND longer than the receive WQE", post: func(p *rcPair) {
			p.qb.recv(sge(p.kb, vaB, 8))
			p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64)), nil)
		}, syndrome: mlx4.CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, victimErr: true, victimCQEs: 1},
		{name: "SEND into a receive WQE with a forged lkey", post: func(p *rcPair) {
			p.qb.recv(sge(p.kb^0x77, vaB, 64))
			p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
		}, syndrome: mlx4.CQE_SYNDROME_REMOTE_OP_ERR, victimErr: true, victimCQEs: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newRCPair(t, permAll, qpOpts{rnrRetry: 7})
			by := p.d.setup(2)
			before := snapshot(t, by.w)
			p.a.fill(p.ma, pattern(64, 3))
			c.post(p)
			victim := snapshot(t, p.b.w) // with what the posts wrote (receive WQEs, new MRs)
			evB := len(p.b.events())
			p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil) // flushed
			p.qa.run(16)
			var onA []gotCQE
			onB := 0
			for _, g := range p.d.take() {
				if g.cqn == p.a.cq {
					onA = append(onA, g)
				} else {
					onB++
				}
			}
			wantCQE(t, onA, eCQE(p.a.cq, p.qa.qpn, 0, true, c.syndrome), eCQE(p.a.cq, p.qa.qpn, 1, true, mlx4.CQE_SYNDROME_WR_FLUSH_ERR))
			if p.qa.obj().State != mlx4.QP_STATE_ERR {
				t.Fatalf("requester in %v", p.qa.obj().State)
			}
			if got := p.qb.obj().State == mlx4.QP_STATE_ERR; got != c.victimErr {
				t.Fatalf("responder in %v", p.qb.obj().State)
			}
			if onB != c.victimCQEs {
				t.Fatalf("%d CQEs on the responder's CQ, want %d", onB, c.victimCQEs)
			}
			ev := p.b.events()[evB:]
			if c.victimEv != 0 && !slices.Contains(ev, c.victimEv) || c.victimEv == 0 && len(ev) != 0 {
				t.Fatalf("responder's events %#x, want %#x", ev, c.victimEv)
			}
			after := snapshot(t, p.b.w)
			// Only the responder's CQ ring, its records and its QP state may
			// change; none of its data pages.
			if !bytes.Equal(after[p.mb:p.mb+8192], victim[p.mb:p.mb+8192]) {
				t.Fatal("the responder's region changed")
			}
			if !bytes.Equal(snapshot(t, by.w), before) {
				t.Fatal("a bystander VF's memory changed")
			}
		})
	}
}

// TestDataReservedLKey: the VF's reserved lkey (what mlx4_ib uses for
// its own QPs) addresses the VF's window physically.
func TestDataReservedLKey(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	p.a.fill(0x80000, []byte("kernel-owned buf"))
	p.qb.recv(sge(reservedLKey(1), 0x90000, 64))
	p.qa.post(send(mlx4.OPCODE_SEND, sge(reservedLKey(0), 0x80000, 16)), nil)
	p.qa.run(4)
	if got := p.b.read(0x90000, 16); string(got) != "kernel-owned buf" {
		t.Fatalf("got %q", got)
	}
}

// TestDataHostileRing: stamped and half-written WQEs are not executed (and
// are when they are finished), a WQE over strides not yet written too; a
// WQE with an opcode the transport lacks is a local QP operation error; a ring that
// never ends costs the budget per call; a ring the device can no longer
// read is the QP's catastrophic error.
func TestDataHostileRing(t *testing.T) {
	d, _, b, qa, qb, ka, kb, _, _ := udPair(t)
	qb.recv(sge(kb, vaB, 100))
	// A UD SEND is 80 bytes: its second chunk starts with the data
	// segment's byte_count. Stamped, the WQE waits.
	qa.post(udSend(qb.qpn, 0x2222, false, sge(ka, vaA, 16)), nil)
	stamp := make([]byte, 4)
	binary.BigEndian.PutUint32(stamp, mlx4.WQEStamp)
	qa.write(qa.sqOff+64, stamp)
	for range 3 {
		if n := qa.run(8); n != 0 || qa.obj().SQHead != 0 {
			t.Fatalf("a stamped WQE ran (%d)", n)
		}
	}
	binary.BigEndian.PutUint32(stamp, 16)
	qa.write(qa.sqOff+64, stamp)
	if n := qa.run(8); n != 1 || qb.obj().RQHead != 1 {
		t.Fatalf("the finished WQE: %d, RQ %d", n, qb.obj().RQHead)
	}
	d.take()
	// Half-written: everything but the owner word.
	w := udSend(qb.qpn, 0x2222, false, sge(ka, vaA, 16))
	qa.post(w, nil)
	oo := make([]byte, 4)
	binary.BigEndian.PutUint32(oo, mlx4.WQEOwner|mlx4.OPCODE_SEND) // the previous pass's owner bit
	qa.write(qa.sqOff+1<<qa.sqShift, oo)
	if n := qa.run(8); n != 0 || d.h.sqPending(qa.obj()) {
		t.Fatalf("a half-written WQE ran (%d)", n)
	}
	binary.BigEndian.PutUint32(oo, mlx4.OPCODE_SEND)
	qa.write(qa.sqOff+1<<qa.sqShift, oo)
	if !d.h.sqPending(qa.obj()) || qa.run(8) != 1 {
		t.Fatal("the WQE, now owned, did not run")
	}
	d.take()
	// A WQE larger than the stride spans the strides after it (mlx4_en's
	// 64-byte TXBBs): 20 units, 320 bytes over three 128-byte strides,
	// the two after it still stamped (libmlx4's ownership init: not
	// written yet). It is not taken.
	big := make([]byte, 8)
	binary.BigEndian.PutUint32(big, mlx4.OPCODE_SEND)
	big[mlx4.CtrlFenceSize] = 20
	qa.write(qa.sqOff+2<<qa.sqShift+4, big[4:])
	qa.write(qa.sqOff+2<<qa.sqShift, big[:4])
	if n := qa.run(8); n != 0 || qa.obj().SQHead != 2 {
		t.Fatalf("a WQE with unwritten strides ran (%d, SQ head %d)", n, qa.obj().SQHead)
	}
	// An opcode UD does not have, in its place: local QP operation error.
	qa.post(&mlx4.SendWQE{Ctrl: mlx4.WQECtrl{Opcode: mlx4.OPCODE_RDMA_WRITE, SrcRBFlags: mlx4.WQE_CTRL_CQ_UPDATE}}, nil)
	qa.run(8)
	c := d.take()
	if len(c) != 1 || c[0].e.Syndrome() != mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR || qa.obj().State != mlx4.QP_STATE_SQER {
		t.Fatalf("RDMA_WRITE on UD: %+v, state %v", c, qa.obj().State)
	}
	// UD's send errors leave the receive side working (SQER).
	if !canReceive(qa.obj()) {
		t.Fatal("SQER stopped the receive side")
	}
	_ = b

	// An opcode UD does not have.
	p := newRCPair(t, permAll, qpOpts{})
	p.qa.post(&mlx4.SendWQE{Ctrl: mlx4.WQECtrl{Opcode: mlx4.OPCODE_BIND_MW, SrcRBFlags: mlx4.WQE_CTRL_CQ_UPDATE, Size: 4}}, nil)
	p.qa.run(8)
	if c := p.d.take(); len(c) != 1 || c[0].e.Syndrome() != mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR || p.qa.obj().State != mlx4.QP_STATE_ERR {
		t.Fatalf("BIND_MW: %+v", c)
	}

	// A ring that never ends: the VF keeps every slot valid.
	r := newRCPair(t, permAll, qpOpts{})
	nop := &mlx4.SendWQE{Ctrl: mlx4.WQECtrl{Opcode: mlx4.OPCODE_NOP}}
	for round := range 40 {
		for r.qa.sqHead < r.qa.obj().SQHead+r.qa.sqCnt {
			r.qa.post(nop, nil)
		}
		if n := r.qa.run(3); n != 3 {
			t.Fatalf("round %d: %d WQEs for a budget of 3", round, n)
		}
	}

	// The ring taken away from the device's reads (the IOMMU leaves it
	// only writes): catastrophic error, the event still delivered.
	q := newRCPair(t, permAll, qpOpts{})
	q.qa.post(nop, nil)
	q.a.w.SetPerm(dma.Write)
	n := q.qa.run(8)
	q.a.w.SetPerm(dma.ReadWrite)
	if n != 0 || q.qa.obj().State != mlx4.QP_STATE_ERR || !slices.Contains(q.a.events(), mlx4.EventWQCatasError) {
		t.Fatalf("catastrophic: %d, state %v, events %#x", n, q.qa.obj().State, q.a.events())
	}
	if d.h.EngineStats(0).Catas.Load() != 0 || q.d.h.EngineStats(0).Catas.Load() != 1 {
		t.Fatal("catastrophic errors miscounted")
	}
}

// TestDataOtherVFQPN: a QP whose remote QPN is another VF's QP that is not
// connected back to it cannot reach it: transport retry exceeded, the
// victim untouched.
func TestDataOtherVFQPN(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	c := p.d.setup(2)
	qc := c.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	qc.connect(p.qb.qpn, 5) // B is connected to A, not to C
	p.qb.recv(sge(p.kb, vaB, 64))
	kc, _ := c.mr(vaA, 1, permAll, c.pd)
	qc.post(send(mlx4.OPCODE_SEND, sge(kc, vaA, 8)), nil)
	qc.settle(4)
	got := p.d.take()
	if len(got) != 1 || got[0].cqn != c.cq || got[0].e.Syndrome() != mlx4.CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR {
		t.Fatalf("CQEs %+v", got)
	}
	if p.qb.obj().RQHead != 0 || p.qb.obj().State != mlx4.QP_STATE_RTS {
		t.Fatal("the victim's QP was touched")
	}
}
