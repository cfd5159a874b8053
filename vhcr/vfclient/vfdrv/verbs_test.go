package vfdrv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// verbsRig is a PF with n VFs of 1 MiB windows, VF 0's driver, an EQ the
// CQs report to, a CQ and an MR of 4 pages.
type verbsRig struct {
	r  *mastertest.Rig
	d  *Driver
	eq *EQ
	cq *VCQ
	mr *MR
}

func newVerbsRig(t *testing.T, n int) *verbsRig {
	t.Helper()
	r := mastertest.NewWith(t, n, mastertest.Options{Window: 1 << 20})
	r.Start(t)
	d := newDriver(t, r, 0, Options{})
	ctx := context.Background()
	eq, err := d.CreateEQ(ctx, 4, 7)
	ok(t, "CreateEQ", err)
	cq, err := d.CreateVerbsCQ(ctx, 100, eq.EQN)
	ok(t, "CreateVerbsCQ", err)
	handOver(cq)
	mr, err := d.CreateMR(ctx, 4, mlx4.PERM_LOCAL_READ|mlx4.PERM_LOCAL_WRITE|mlx4.PERM_REMOTE_WRITE|mlx4.PERM_REMOTE_READ|mlx4.PERM_ATOMIC, 1)
	ok(t, "CreateMR", err)
	return &verbsRig{r: r, d: d, eq: eq, cq: cq, mr: mr}
}

func (v *verbsRig) qp(t *testing.T, st uint8, caps QPCaps) *VQP {
	t.Helper()
	qp, err := v.d.CreateVerbsQP(context.Background(), QPConfig{ST: st, SendCQ: v.cq.CQN, RecvCQ: v.cq.CQN, PD: 1, QKey: 0x11111111, RemoteQPN: 0x99, DestLID: 6}, caps, false)
	ok(t, "CreateVerbsQP", err)
	return qp
}

// The queues are sized as libmlx4 sizes them (mlx4_calc_sq_wqe_size,
// mlx4_create_qp, mlx4_alloc_qp_buf, mlx4_set_sq_sizes).
func TestVerbsGeometryIsLibmlx4s(t *testing.T) {
	for _, c := range []struct {
		name                   string
		st                     uint8
		caps                   QPCaps
		shift                  uint8
		cnt, spare             uint32
		rqShift                uint8
		rqCnt                  uint32
		sqOff, rqOff           int
		maxSend, maxGS, maxInl int
	}{
		// ibv_rc_pingpong: 1 SGE each way, rx_depth 500, tx 1, no inline:
		// RC needs 16+16+16 (atomic+raddr+data) < bind 32 → 32+16 = 48 → 64.
		{"rc pingpong", mlx4.QP_ST_RC, QPCaps{MaxSendWR: 1, MaxRecvWR: 500, MaxSendSGE: 1, MaxRecvSGE: 1}, 6, 64, 33, 4, 512, 0, 4096, 31, 2, 28},
		// UD: 48-byte datagram + 16 data + 16 ctrl = 80 → 128, 16 + 17
		// spare → 64 WQEs; the RQ's 16-byte stride is smaller: the SQ first.
		{"ud", mlx4.QP_ST_UD, QPCaps{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}, 7, 64, 17, 4, 16, 0, 8192, 47, 4, 60},
		// inline 256 on RC: 16 * ceil(260/16)=272 + 16 raddr + 16 ctrl =
		// 304 → 512; 8 SGEs on the RQ → 128-byte stride, still smaller.
		{"rc inline", mlx4.QP_ST_RC, QPCaps{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 8, MaxInline: 256}, 9, 128, 5, 7, 64, 0, 65536, 123, 30, 448},
		// an RQ stride larger than the SQ's goes first
		{"rq first", mlx4.QP_ST_RC, QPCaps{MaxSendWR: 1, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 16}, 6, 64, 33, 8, 4, 1024, 0, 31, 2, 28},
	} {
		caps := c.caps
		s, r, _ := geometry(&caps, c.st, false)
		if s.shift != c.shift || s.cnt != c.cnt || s.spare != c.spare || r.shift != c.rqShift || r.cnt != c.rqCnt || s.offset != c.sqOff || r.offset != c.rqOff {
			t.Errorf("%s: SQ 2^%d x %d (spare %d) at %d, RQ 2^%d x %d at %d; want SQ 2^%d x %d (spare %d) at %d, RQ 2^%d x %d at %d",
				c.name, s.shift, s.cnt, s.spare, s.offset, r.shift, r.cnt, r.offset, c.shift, c.cnt, c.spare, c.sqOff, c.rqShift, c.rqCnt, c.rqOff)
		}
		if caps.MaxSendWR != c.maxSend || caps.MaxSendSGE != c.maxGS || caps.MaxInline != c.maxInl {
			t.Errorf("%s: caps %+v, want max_send_wr %d, max_send_sge %d, max_inline %d", c.name, caps, c.maxSend, c.maxGS, c.maxInl)
		}
	}
}

// The context the PF keeps names the queues as laid out, the doorbell
// record and the UAR; RST→INIT leaves every send WQE hardware-owned and
// stamped.
func TestVerbsQPContextAndOwnership(t *testing.T) {
	v := newVerbsRig(t, 1)
	ctx := context.Background()
	qp := v.qp(t, mlx4.QP_ST_RC, QPCaps{MaxSendWR: 16, MaxRecvWR: 256, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInline: 64})
	ok(t, "to INIT", v.d.Modify(ctx, qp.QP, mlx4.QP_STATE_INIT))
	c, err := v.d.QueryQP(ctx, qp.QP)
	ok(t, "QueryQP", err)
	if c.LogSQSize != log2(qp.sq.cnt) || c.LogSQStride != qp.sq.shift-4 || c.LogRQSize != log2(qp.rq.cnt) || c.LogRQStride != qp.rq.shift-4 ||
		c.DBRecAddr != qp.wq.dbrec || c.UsrPage != mlx4.ReservedUARs || c.MTTBase != qp.MTT.Base || c.LogPageSize != 0 || c.PageOffset != 0 ||
		c.CQNSend != v.cq.CQN || c.CQNRecv != v.cq.CQN || c.PD != 1 {
		t.Fatalf("QUERY_QP: %+v; QP %+v", c, qp.sq)
	}
	cc, err := v.d.QueryCQ(ctx, v.cq.CQ)
	ok(t, "QueryCQ", err)
	if cc.DBRecAddr != v.cq.dbrec || cc.UsrPage != mlx4.ReservedUARs || 1<<cc.LogSize != v.cq.nent {
		t.Fatalf("QUERY_CQ: %+v", cc)
	}
	stride := 1 << qp.sq.shift
	for i := uint32(0); i < qp.sq.cnt; i++ {
		w := qp.sendWQE(i)
		ctrl, err := mlx4.DecodeWQECtrl(w)
		ok(t, "DecodeWQECtrl", err)
		if !ctrl.Owner || int(ctrl.Size) != stride/mlx4.WQESegUnit {
			t.Fatalf("WQE %d after RST→INIT: %+v", i, ctrl)
		}
		for o := mlx4.WQEBasicBlock; o < stride; o += mlx4.WQEBasicBlock {
			if binary.BigEndian.Uint32(w[o:]) != mlx4.WQEStamp {
				t.Fatalf("WQE %d chunk at %d not stamped", i, o)
			}
		}
	}
}

// Each kind of send WQE reads back through the ABI's decoder as posted,
// owner bit of its pass; the send doorbell word is qpn << 8.
func TestVerbsPostSendWQEBytes(t *testing.T) {
	v := newVerbsRig(t, 1)
	ctx := context.Background()
	rc := v.qp(t, mlx4.QP_ST_RC, QPCaps{MaxSendWR: 16, MaxRecvWR: 256, MaxSendSGE: 2, MaxRecvSGE: 1, MaxInline: 100})
	ud := v.qp(t, mlx4.QP_ST_UD, QPCaps{MaxSendWR: 16, MaxRecvWR: 256, MaxSendSGE: 1, MaxRecvSGE: 1})
	ok(t, "rc INIT", v.d.Modify(ctx, rc.QP, mlx4.QP_STATE_INIT))
	ok(t, "ud INIT", v.d.Modify(ctx, ud.QP, mlx4.QP_STATE_INIT))
	buf := v.mr.IOVA
	payload := []byte("inline payload that crosses the first sixty-four byte boundary of the WQE, twice over")
	ok(t, "Write", v.d.Write(buf, payload))
	sge := []SGE{{Addr: buf, Length: 64, LKey: v.mr.Key}, {Addr: buf + 64, Length: 32, LKey: v.mr.Key}}
	ah := NewAH(AHAttr{DLID: 7, SL: 3, Port: 1, PD: 1})
	cases := []struct {
		qp *VQP
		wr SendWR
	}{
		{rc, SendWR{WRID: 1, Opcode: mlx4.OPCODE_SEND, SGE: sge, Signaled: true}},
		{rc, SendWR{WRID: 2, Opcode: mlx4.OPCODE_SEND_IMM, SGE: sge[:1], Imm: 0xdeadbeef, Solicited: true}},
		{rc, SendWR{WRID: 3, Opcode: mlx4.OPCODE_RDMA_WRITE, SGE: sge, RemoteAddr: 0x123000, RKey: 0x4567, Fence: true}},
		{rc, SendWR{WRID: 4, Opcode: mlx4.OPCODE_RDMA_WRITE_IMM, SGE: sge[:1], RemoteAddr: 0x123000, RKey: 0x4567, Imm: 7}},
		{rc, SendWR{WRID: 5, Opcode: mlx4.OPCODE_RDMA_READ, SGE: sge[:1], RemoteAddr: 0x8000, RKey: 0x99}},
		{rc, SendWR{WRID: 6, Opcode: mlx4.OPCODE_ATOMIC_CS, SGE: []SGE{{Addr: buf, Length: 8, LKey: v.mr.Key}}, RemoteAddr: 0x8008, RKey: 0x99, CompareAdd: 1, Swap: 2}},
		{rc, SendWR{WRID: 7, Opcode: mlx4.OPCODE_ATOMIC_FA, SGE: []SGE{{Addr: buf, Length: 8, LKey: v.mr.Key}}, RemoteAddr: 0x8008, RKey: 0x99, CompareAdd: 5}},
		{rc, SendWR{WRID: 8, Opcode: mlx4.OPCODE_SEND, SGE: []SGE{{Addr: buf, Length: uint32(len(payload))}}, Inline: true, Signaled: true}},
		{ud, SendWR{WRID: 9, Opcode: mlx4.OPCODE_SEND, SGE: sge[:1], AH: ah, RemoteQPN: 0x48, RemoteQKey: 0x11111111, Signaled: true}},
	}
	for i, c := range cases {
		ind := c.qp.sq.head
		n, err := c.qp.PostSend([]SendWR{c.wr})
		if n != 1 || err != nil {
			t.Fatalf("case %d: PostSend %d, %v", i, n, err)
		}
		w, err := mlx4.DecodeSendWQE(c.qp.sendWQE(ind), c.qp.Cfg.ST)
		if err != nil {
			t.Fatalf("case %d: DecodeSendWQE: %v", i, err)
		}
		wr := c.wr
		if w.Ctrl.Opcode != wr.Opcode || w.Ctrl.Owner != (ind&c.qp.sq.cnt != 0) || w.Ctrl.Fence != wr.Fence ||
			(w.Ctrl.SrcRBFlags&mlx4.WQE_CTRL_CQ_UPDATE != 0) != wr.Signaled || (w.Ctrl.SrcRBFlags&mlx4.WQE_CTRL_SOLICITED != 0) != wr.Solicited {
			t.Errorf("case %d: control %+v for %+v", i, w.Ctrl, wr)
		}
		if (wr.Opcode == mlx4.OPCODE_SEND_IMM || wr.Opcode == mlx4.OPCODE_RDMA_WRITE_IMM) && w.Ctrl.Imm != wr.Imm {
			t.Errorf("case %d: imm %#x", i, w.Ctrl.Imm)
		}
		if wr.RKey != 0 && (!w.HasRAddr || w.RAddr.RAddr != wr.RemoteAddr || w.RAddr.RKey != wr.RKey) {
			t.Errorf("case %d: raddr %v %+v", i, w.HasRAddr, w.RAddr)
		}
		switch wr.Opcode {
		case mlx4.OPCODE_ATOMIC_CS:
			if !w.HasAtomic || w.Atomic.SwapAdd != wr.Swap || w.Atomic.Compare != wr.CompareAdd {
				t.Errorf("case %d: atomic %+v", i, w.Atomic)
			}
		case mlx4.OPCODE_ATOMIC_FA:
			if !w.HasAtomic || w.Atomic.SwapAdd != wr.CompareAdd {
				t.Errorf("case %d: atomic %+v", i, w.Atomic)
			}
		}
		if wr.AH != nil {
			d := w.Datagram
			if !w.HasDatagram || d.DQPN != wr.RemoteQPN || d.QKey != wr.RemoteQKey || d.AV.DLID != 7 || d.AV.PortPD != 1<<mlx4.AVPortShift|1 || d.AV.SLTClassFlowLabel>>mlx4.AVSLShift != 3 {
				t.Errorf("case %d: datagram %+v", i, d)
			}
		}
		if wr.Inline {
			var got []byte
			for _, g := range w.SGE[:w.NSGE] {
				if !g.Inline {
					t.Fatalf("case %d: a data segment in an inline WQE", i)
				}
				got = append(got, c.qp.sendWQE(ind)[g.Off:g.Off+int(g.ByteCount)]...)
			}
			if !bytes.Equal(got, payload) || w.NSGE < 2 {
				t.Errorf("case %d: inline %q in %d segments", i, got, w.NSGE)
			}
		} else {
			if w.NSGE != len(wr.SGE) {
				t.Fatalf("case %d: %d SGEs", i, w.NSGE)
			}
			for j, g := range wr.SGE {
				if s := w.SGE[j]; s.Inline || s.Addr != g.Addr || s.ByteCount != g.Length || s.LKey != g.LKey {
					t.Errorf("case %d: SGE %d %+v, want %+v", i, j, s, g)
				}
			}
		}
		reg, err := v.d.uarReg(mlx4.MLX4_SEND_DOORBELL)
		ok(t, "uarReg", err)
		if got := reg.Load(); got != c.qp.QPN<<8 || mlx4.SendDoorbellQPN(got) != c.qp.QPN {
			t.Errorf("case %d: send doorbell %#x, want %#x", i, got, c.qp.QPN<<8)
		}
	}
	// the WQE sq_spare_wqes after the last one posted is stamped (after
	// RST→INIT it has the whole stride as its size)
	w := rc.sendWQE(rc.sq.head - 1 + rc.sq.spare)
	if 1<<rc.sq.shift > mlx4.WQEBasicBlock && binary.BigEndian.Uint32(w[mlx4.WQEBasicBlock:]) != mlx4.WQEStamp {
		t.Error("the WQE sq_spare_wqes ahead is not stamped")
	}
	// a full queue refuses, after posting what fits
	wrs := make([]SendWR, rc.sq.maxPost)
	for i := range wrs {
		wrs[i] = SendWR{Opcode: mlx4.OPCODE_SEND, SGE: sge[:1]}
	}
	if n, err := rc.PostSend(wrs); !errors.Is(err, ErrQueueFull) || n != int(rc.sq.maxPost)-len(cases)+1 {
		t.Errorf("PostSend on a filling queue: %d, %v", n, err)
	}
}

// Receive WQEs read back as posted, with the MLX4_INVALID_LKEY terminator
// when shorter than the stride, and the RQ record counts them.
func TestVerbsPostRecvWQEBytes(t *testing.T) {
	v := newVerbsRig(t, 1)
	qp := v.qp(t, mlx4.QP_ST_RC, QPCaps{MaxSendWR: 4, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 3})
	ok(t, "INIT", v.d.Modify(context.Background(), qp.QP, mlx4.QP_STATE_INIT))
	if qp.rq.shift != 6 || qp.Caps.MaxRecvSGE != 4 {
		t.Fatalf("3 SGEs: a %d-byte stride holding %d", 1<<qp.rq.shift, qp.Caps.MaxRecvSGE)
	}
	sge := []SGE{{Addr: v.mr.IOVA, Length: 100, LKey: v.mr.Key}, {Addr: v.mr.IOVA + 100, Length: 50, LKey: v.mr.Key},
		{Addr: v.mr.IOVA + 150, Length: 10, LKey: v.mr.Key}, {Addr: v.mr.IOVA + 160, Length: 10, LKey: v.mr.Key}}
	stride := 1 << qp.rq.shift
	for i := 1; i <= int(qp.rq.maxPost)+1; i++ {
		k := 1 + i%4
		n, err := qp.PostRecv([]RecvWR{{WRID: uint64(i), SGE: sge[:k]}})
		if i > int(qp.rq.maxPost) {
			if !errors.Is(err, ErrQueueFull) || n != 0 {
				t.Fatalf("recv %d on a full RQ: %d, %v", i, n, err)
			}
			continue
		}
		ok(t, "PostRecv", err)
		off := qp.rq.offset + (i-1)*stride
		w := qp.buf[off : off+stride]
		r, err := mlx4.DecodeRecvWQE(w, false)
		ok(t, "DecodeRecvWQE", err)
		if r.NSGE != k || r.SGE[0].Addr != sge[0].Addr || r.SGE[0].LKey != v.mr.Key || r.SGE[0].ByteCount != 100 {
			t.Errorf("recv WQE %d: %+v", i, r.SGE[:r.NSGE])
		}
		// shorter than the stride: the next entry is the terminator
		if k < 4 && binary.BigEndian.Uint32(w[k*mlx4.DataSegSize+mlx4.DataLKey:]) != mlx4.INVALID_LKEY {
			t.Errorf("recv WQE %d of %d entries has no MLX4_INVALID_LKEY terminator", i, k)
		}
		if got := binary.BigEndian.Uint32(qp.db); got != uint32(i) {
			t.Errorf("RQ record %d after %d receives", got, i)
		}
	}
}

// handOver plays the PF's SW2HW_CQ: every CQE of the zeroed ring
// hardware-owned for the first pass, as firmware hands it over (a zero CQE
// reads as software-owned: owner 0 = !!(0 & nent)).
func handOver(cq *VCQ) {
	for i := uint32(0); i < cq.nent; i++ {
		writeCQE(cq, i+cq.nent, mlx4.CQE{})
	}
}

// writeCQE plays the device: CQE n of cq, owner bit of its pass.
func writeCQE(cq *VCQ, n uint32, c mlx4.CQE) {
	c.Owner = mlx4.CQEOwner(n, cq.nent)
	b := mlx4.EncodeCQE(c)
	at := int(n&(cq.nent-1))*cq.entry + mlx4.CQEOffset(cq.entry)
	copy(cq.ring[at:at+mlx4.CQESize], b[:])
}

// Poll takes the CQEs software owns, maps them to their work requests
// (an unsignalled run of sends completes with the CQE of its last),
// writes set_ci once, and stops at the first hardware-owned CQE across
// the ring's wrap; Arm writes arm_db and the two UAR words.
func TestVerbsPollAndArm(t *testing.T) {
	v := newVerbsRig(t, 1)
	qp := v.qp(t, mlx4.QP_ST_RC, QPCaps{MaxSendWR: 8, MaxRecvWR: 256, MaxSendSGE: 1, MaxRecvSGE: 1})
	ok(t, "INIT", v.d.Modify(context.Background(), qp.QP, mlx4.QP_STATE_INIT))
	sge := []SGE{{Addr: v.mr.IOVA, Length: 8, LKey: v.mr.Key}}
	wrs := []SendWR{{WRID: 10, Opcode: mlx4.OPCODE_SEND, SGE: sge}, {WRID: 11, Opcode: mlx4.OPCODE_SEND, SGE: sge}, {WRID: 12, Opcode: mlx4.OPCODE_SEND, SGE: sge, Signaled: true}}
	if n, err := qp.PostSend(wrs); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	if n, err := qp.PostRecv([]RecvWR{{WRID: 20, SGE: sge}}); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	var wc [4]WC
	if n := v.cq.Poll(wc[:]); n != 0 {
		t.Fatalf("%d completions from a zeroed (hardware-owned) ring", n)
	}
	cq := v.cq
	writeCQE(cq, 0, mlx4.CQE{VlanMyQPN: qp.QPN, IsSend: true, Opcode: mlx4.OPCODE_SEND, WQEIndex: 2})
	writeCQE(cq, 1, mlx4.CQE{VlanMyQPN: qp.QPN, Opcode: mlx4.RECV_OPCODE_SEND_IMM, ByteCnt: 8, ImmedRSSInvalid: 0xabc, GMLPathRQPN: 0x77, RLID: 5, SLVID: 2 << mlx4.CQESLShift})
	e := mlx4.CQE{VlanMyQPN: qp.QPN, IsSend: true, WQEIndex: 3}
	e.SetError(mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, 0x88)
	writeCQE(cq, 2, e)
	if n := cq.Poll(wc[:]); n != 3 {
		t.Fatalf("Poll: %d", n)
	}
	if w := wc[0]; w.WRID != 12 || !w.IsSend || w.Status != WCSuccess || w.QPN != qp.QPN {
		t.Errorf("send WC %+v", w)
	}
	if w := wc[1]; w.WRID != 20 || w.IsSend || !w.HasImm || w.Imm != 0xabc || w.SrcQP != 0x77 || w.SLID != 5 || w.SL != 2 || w.ByteLen != 8 {
		t.Errorf("recv WC %+v", w)
	}
	if w := wc[2]; w.Status != WCRemAccessErr || w.Syndrome != mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR || w.VendorErr != 0x88 {
		t.Errorf("error WC %+v", w)
	}
	if got := binary.BigEndian.Uint32(cq.setCI); got != 3 {
		t.Errorf("set_ci %d", got)
	}
	// across the wrap: the next pass's CQEs have the owner bit set
	for i := uint32(3); i < cq.nent+2; i++ {
		writeCQE(cq, i, mlx4.CQE{VlanMyQPN: qp.QPN, Opcode: mlx4.RECV_OPCODE_SEND})
	}
	total := 0
	for {
		n := cq.Poll(wc[:])
		if n == 0 {
			break
		}
		total += n
	}
	if total != int(cq.nent)-1 || cq.cons != cq.nent+2 {
		t.Errorf("took %d CQEs across the wrap, consumer index %d", total, cq.cons)
	}
	cq.Arm(false)
	sn, cmd, ci := mlx4.SplitCQArmDB(binary.BigEndian.Uint32(cq.armDB))
	if sn != 1 || cmd != mlx4.MLX4_CQ_DB_REQ_NOT || ci != cq.cons {
		t.Errorf("arm_db sn %d cmd %#x ci %d", sn, cmd, ci)
	}
	hi, lo := cq.armHi.Load(), cq.armLo.Load()
	sn, cmd, cqn, ci := mlx4.SplitCQDoorbell(uint64(hi)<<32 | uint64(lo))
	if sn != 1 || cmd != mlx4.MLX4_CQ_DB_REQ_NOT || cqn != cq.CQN || ci != cq.cons {
		t.Errorf("CQ doorbell sn %d cmd %#x cqn %#x ci %d", sn, cmd, cqn, ci)
	}
	cq.Arm(true)
	if _, cmd, _ := mlx4.SplitCQArmDB(binary.BigEndian.Uint32(cq.armDB)); cmd != mlx4.MLX4_CQ_DB_REQ_NOT_SOL {
		t.Errorf("solicited arm cmd %#x", cmd)
	}
}

// Posting and polling allocate nothing.
func TestVerbsPostPollAllocateNothing(t *testing.T) {
	v := newVerbsRig(t, 1)
	qp := v.qp(t, mlx4.QP_ST_RC, QPCaps{MaxSendWR: 64, MaxRecvWR: 256, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInline: 64})
	ok(t, "INIT", v.d.Modify(context.Background(), qp.QP, mlx4.QP_STATE_INIT))
	sge := []SGE{{Addr: v.mr.IOVA, Length: 64, LKey: v.mr.Key}}
	send := []SendWR{{Opcode: mlx4.OPCODE_RDMA_WRITE, SGE: sge, RemoteAddr: 0x1000, RKey: 1, Signaled: true}}
	inl := []SendWR{{Opcode: mlx4.OPCODE_SEND, SGE: sge, Inline: true, Signaled: true}}
	recv := []RecvWR{{SGE: sge}}
	var wc [1]WC
	n := uint32(0)
	a := testing.AllocsPerRun(200, func() {
		if _, err := qp.PostSend(send); err != nil {
			t.Fatal(err)
		}
		if _, err := qp.PostSend(inl); err != nil {
			t.Fatal(err)
		}
		if _, err := qp.PostRecv(recv); err != nil {
			t.Fatal(err)
		}
		// play the device: complete both sends and the receive
		writeCQE(v.cq, n, mlx4.CQE{VlanMyQPN: qp.QPN, IsSend: true, WQEIndex: uint16(qp.sq.head - 1)})
		writeCQE(v.cq, n+1, mlx4.CQE{VlanMyQPN: qp.QPN})
		n += 2
		for v.cq.Poll(wc[:]) > 0 {
		}
		v.cq.Arm(false)
	})
	if a != 0 {
		t.Errorf("%.1f allocations per post/poll round", a)
	}
}

// An inline SGE outside the VF's memory, one whose end wraps past 2^64
// among them, is the caller's error: ErrArgument, nothing posted.
func TestVerbsInlineOutsideMemory(t *testing.T) {
	v := newVerbsRig(t, 1)
	qp := v.qp(t, mlx4.QP_ST_RC, QPCaps{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInline: 64})
	ok(t, "INIT", v.d.Modify(context.Background(), qp.QP, mlx4.QP_STATE_INIT))
	mem := uint64(len(v.d.Memory()))
	for _, addr := range []uint64{mem - 8, mem, ^uint64(0) - 7} {
		wr := []SendWR{{Opcode: mlx4.OPCODE_SEND, SGE: []SGE{{Addr: addr, Length: 16}}, Inline: true}}
		n, err := qp.PostSend(wr)
		if n != 0 || !errors.Is(err, ErrArgument) {
			t.Errorf("inline SGE of 16 bytes at %#x: posted %d, %v; want 0, ErrArgument", addr, n, err)
		}
	}
	if qp.sq.head != 0 {
		t.Errorf("SQ head %d after refused posts, want 0", qp.sq.head)
	}
}

// BenchmarkVerbsPostPoll is the VF side of one message: a send WQE and a
// receive WQE posted, their CQEs (played by the benchmark, the QP is in
// INIT) polled, the CQ re-armed; make bench prints its ns/op and allocs/op.
func BenchmarkVerbsPostPoll(b *testing.B) {
	r := mastertest.NewWith(b, 1, mastertest.Options{Window: 1 << 20})
	r.Start(b)
	d, err := New(r.InitVF(b, 0), Options{BAR: r.VFBARs[0]})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	eq, err := d.CreateEQ(ctx, 4, 7)
	if err != nil {
		b.Fatal(err)
	}
	cq, err := d.CreateVerbsCQ(ctx, 1000, eq.EQN)
	if err != nil {
		b.Fatal(err)
	}
	handOver(cq)
	mr, err := d.CreateMR(ctx, 1, mlx4.PERM_LOCAL_READ|mlx4.PERM_LOCAL_WRITE, 1)
	if err != nil {
		b.Fatal(err)
	}
	qp, err := d.CreateVerbsQP(ctx, QPConfig{ST: mlx4.QP_ST_RC, SendCQ: cq.CQN, RecvCQ: cq.CQN, PD: 1}, QPCaps{MaxSendWR: 64, MaxRecvWR: 256, MaxSendSGE: 1, MaxRecvSGE: 1}, false)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Modify(ctx, qp.QP, mlx4.QP_STATE_INIT); err != nil {
		b.Fatal(err)
	}
	sge := []SGE{{Addr: mr.IOVA, Length: 64, LKey: mr.Key}}
	send := []SendWR{{Opcode: mlx4.OPCODE_SEND, SGE: sge, Signaled: true}}
	recv := []RecvWR{{SGE: sge}}
	var wc [2]WC
	n := uint32(0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := qp.PostSend(send); err != nil {
			b.Fatal(err)
		}
		if _, err := qp.PostRecv(recv); err != nil {
			b.Fatal(err)
		}
		writeCQE(cq, n, mlx4.CQE{VlanMyQPN: qp.QPN, IsSend: true, WQEIndex: uint16(qp.sq.head - 1)})
		writeCQE(cq, n+1, mlx4.CQE{VlanMyQPN: qp.QPN})
		n += 2
		for cq.Poll(wc[:]) > 0 {
		}
		cq.Arm(false)
	}
}

// BenchmarkVerbsPingPongTurn is the VF side of one ping-pong turn as
// perftest's PingPongPair makes it (ibv_rc_pingpong's loop): one SEND
// posted and its CQE polled (the CQE played by the benchmark, the QP in
// INIT), with a busy-polling PF, so that the doorbell costs what it costs
// against a running poller (no futex wake). This is the VF's own work on
// the ping-pong's half round trip; make bench prints its ns/op.
func BenchmarkVerbsPingPongTurn(b *testing.B) {
	r := mastertest.NewWith(b, 1, mastertest.Options{Window: 1 << 20, Idle: master.Idle{Busy: true}})
	r.Start(b)
	d, err := New(r.InitVF(b, 0), Options{BAR: r.VFBARs[0]})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	eq, err := d.CreateEQ(ctx, 4, 7)
	if err != nil {
		b.Fatal(err)
	}
	cq, err := d.CreateVerbsCQ(ctx, 1000, eq.EQN)
	if err != nil {
		b.Fatal(err)
	}
	handOver(cq)
	mr, err := d.CreateMR(ctx, 1, mlx4.PERM_LOCAL_READ|mlx4.PERM_LOCAL_WRITE, 1)
	if err != nil {
		b.Fatal(err)
	}
	qp, err := d.CreateVerbsQP(ctx, QPConfig{ST: mlx4.QP_ST_RC, SendCQ: cq.CQN, RecvCQ: cq.CQN, PD: 1}, QPCaps{MaxSendWR: 64, MaxRecvWR: 256, MaxSendSGE: 1, MaxRecvSGE: 1}, false)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Modify(ctx, qp.QP, mlx4.QP_STATE_INIT); err != nil {
		b.Fatal(err)
	}
	send := []SendWR{{Opcode: mlx4.OPCODE_SEND, SGE: []SGE{{Addr: mr.IOVA, Length: 64, LKey: mr.Key}}, Signaled: true}}
	// the send CQE of each pass, encoded once
	var cqes [2][mlx4.CQESize]byte
	for pass := range cqes {
		cqes[pass] = mlx4.EncodeCQE(mlx4.CQE{VlanMyQPN: qp.QPN, IsSend: true, Owner: pass == 1})
	}
	var wc [2]WC
	n := uint32(0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := qp.PostSend(send); err != nil {
			b.Fatal(err)
		}
		at := int(n&(cq.nent-1))*cq.entry + mlx4.CQEOffset(cq.entry)
		copy(cq.ring[at:at+mlx4.CQESize], cqes[n/cq.nent&1][:])
		n++
		if cq.Poll(wc[:]) != 1 {
			b.Fatal("no CQE")
		}
		qp.sq.tail = qp.sq.head // the CQE names WQE 0: the ring is the benchmark's
	}
}
