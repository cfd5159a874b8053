package hca

import (
	"cmp"
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

const testWindow = 1 << 20 // 1 MiB of DMA memory per VF

// rig is a model HCA with heap-backed DMA windows.
type rig struct {
	t  testing.TB
	h  *HCA
	sp *dma.Space
}

func newRig(t testing.TB, nvf int, edit func(*config.Config)) *rig {
	t.Helper()
	cfg := config.Default()
	// Smaller pools keep quota tests fast.
	cfg.Resources.LogQPs, cfg.Resources.LogCQs, cfg.Resources.LogSRQs = 14, 10, 10
	cfg.Resources.LogMPTs, cfg.Resources.LogMTTs = 12, 14
	if edit != nil {
		edit(cfg)
	}
	h, err := New(cfg, nvf)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := bar.NewMem("dma", int64(nvf)*testWindow)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := dma.NewSpace(mem, 0, testWindow, nvf)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, h: h, sp: sp}
}

// vf is one VF's view of the rig: it builds commands as a VF driver would
// and runs them through the executors.
type vf struct {
	r  *rig
	n  int
	w  *dma.Window
	eq int // EQ number mapped for every event, -1 before setupEQ
	// next free page of the window for rings (IOVA)
	page uint64
}

func (r *rig) vf(n int) *vf {
	w, err := r.sp.Window(n)
	if err != nil {
		r.t.Fatal(err)
	}
	return &vf{r: r, n: n, w: w, eq: -1, page: 0x10000}
}

// cmd builds a command; inbox (if not nil) is copied into a heap shadow.
func (v *vf) cmd(op mlx4.Opcode, inParam uint64, inMod uint32, opMod uint8, inbox []byte, outbox bool) *Cmd {
	c := &Cmd{VF: v.n, InParam: inParam, InMod: inMod, Op: op, OpMod: opMod, Mem: v.w, Token: 0xffff}
	if inbox != nil {
		c.Inbox = new([mlx4.MailboxSize]byte)
		copy(c.Inbox[:], inbox)
	}
	if outbox {
		c.Outbox = new([mlx4.MailboxSize]byte)
	}
	return c
}

// run executes c through Exec, as the PF does.
func (v *vf) run(c *Cmd) mlx4.Status {
	s := v.r.h.Exec(c)
	if s != mlx4.OK && c.Reason == refusal.None {
		v.r.t.Errorf("%v from VF %d: status %v without a reason", c.Op, v.n, s)
	}
	return s
}

func (v *vf) must(s mlx4.Status, what string) {
	v.r.t.Helper()
	if s != mlx4.OK {
		v.r.t.Fatalf("VF %d %s: %v", v.n, what, s)
	}
}

// alloc runs ALLOC_RES and returns out_param's low word.
func (v *vf) alloc(ty restrack.Type, op uint8, in uint64) (uint32, mlx4.Status) {
	c := v.cmd(mlx4.ALLOC_RES, in, uint32(ty), op, nil, false)
	s := v.run(c)
	return uint32(c.OutParam), s
}

func (v *vf) free(ty restrack.Type, op uint8, in uint64) mlx4.Status {
	return v.run(v.cmd(mlx4.FREE_RES, in, uint32(ty), op, nil, false))
}

func (v *vf) mustAlloc(ty restrack.Type, op uint8, in uint64) uint32 {
	v.r.t.Helper()
	n, s := v.alloc(ty, op, in)
	v.must(s, "ALLOC_RES "+ty.String())
	return n
}

// mtt allocates 2^order MTT entries and writes page addresses into them.
func (v *vf) mtt(order int, pages ...uint64) uint32 {
	v.r.t.Helper()
	base := v.mustAlloc(restrack.MTT, resOpReserveAndMap, uint64(order))
	if len(pages) > 0 {
		v.must(v.writeMTT(uint64(base), pages), "WRITE_MTT")
	}
	return base
}

func (v *vf) writeMTT(start uint64, ents []uint64) mlx4.Status {
	in := make([]byte, 16+8*len(ents))
	binary.BigEndian.PutUint64(in, start)
	for i, e := range ents {
		binary.BigEndian.PutUint64(in[16+8*i:], e)
	}
	if len(in) > mlx4.MailboxSize {
		in = in[:mlx4.MailboxSize]
	}
	return v.run(v.cmd(mlx4.WRITE_MTT, 0, uint32(len(ents)), 0, in, false))
}

// newPage hands out one zeroed 4 KiB page of the VF's window, as Linux's
// mlx4_create_eq allocates EQ memory (SW2HW_EQ sets the owner bits).
func (v *vf) newPage() uint64 {
	p := v.page
	v.page += 0x1000
	buf := make([]byte, 0x1000)
	if err := v.w.CopyOut(p, buf); err != nil {
		v.r.t.Fatal(err)
	}
	return p
}

func eqContext(logSize int, mttBase uint32) []byte {
	b := make([]byte, mlx4.EQContextSize)
	mlx4.EQContext{LogSize: logSize, MTTBase: uint64(mttBase)}.Encode(b) // 4 KiB pages
	return b
}

// createEQ makes EQ eqn with 2^logSize entries (≤ 128: one page).
func (v *vf) createEQ(eqn, logSize int) mlx4.Status {
	v.r.t.Helper()
	base := v.mtt(0, v.newPage())
	return v.run(v.cmd(mlx4.SW2HW_EQ, 0, uint32(eqn), 0, eqContext(logSize, base), false))
}

// setupEQ creates an EQ and maps every event type to it.
func (v *vf) setupEQ(eqn, logSize int) {
	v.r.t.Helper()
	v.must(v.createEQ(eqn, logSize), "SW2HW_EQ")
	v.must(v.run(v.cmd(mlx4.MAP_EQ, ^uint64(0), uint32(eqn), 0, nil, false)), "MAP_EQ")
	v.eq = eqn
}

func cqContext(logSize, eqn int, mttBase uint32) []byte {
	b := make([]byte, mlx4.CQContextSize)
	mlx4.CQContext{LogSize: logSize, CompEQN: uint8(eqn), MTTBase: uint64(mttBase)}.Encode(b)
	return b
}

// createCQ allocates a CQ and puts it in HW with completion EQ v.eq.
func (v *vf) createCQ() uint32 {
	v.r.t.Helper()
	cqn := v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
	base := v.mtt(0, v.newPage())
	v.must(v.run(v.cmd(mlx4.SW2HW_CQ, 0, cqn, 0, cqContext(7, v.eq, base), false)), "SW2HW_CQ")
	return cqn
}

func srqContext(srqn uint32, mttBase uint32) []byte {
	b := make([]byte, mlx4.SRQContextSize)
	mlx4.SRQContext{SRQN: srqn, LogSize: 4, LogStride: 2, MTTBase: uint64(mttBase)}.Encode(b)
	return b
}

func (v *vf) createSRQ() uint32 {
	v.r.t.Helper()
	srqn := v.mustAlloc(restrack.SRQ, resOpReserveAndMap, 0)
	base := v.mtt(0, v.newPage())
	v.must(v.run(v.cmd(mlx4.SW2HW_SRQ, 0, srqn, 0, srqContext(srqn, base), false)), "SW2HW_SRQ")
	return srqn
}

// qpContext is a modify-QP mailbox: RC, VF port 1, P_Key index 0, small
// queues (one MTT page).
type qpc struct {
	st           uint8
	vfPort       int
	pkey, mgid   uint8
	optpar       uint32
	scq, rcq     uint32
	srq          uint32
	useSRQ       bool
	mtt          uint32
	rateLimit    uint16
	smac         uint8
	sqLog, rqLog uint8
	uar          uint32 // usr_page; 0: 128, the first a Linux VF hands out
}

func (q qpc) bytes() []byte {
	b := make([]byte, mlx4.QPMailboxSize)
	mlx4.QPMailbox{OptPar: q.optpar, Ctx: mlx4.QPContext{
		ST: q.st, LogSQSize: q.sqLog, LogSQStride: 2, LogRQSize: q.rqLog, LogRQStride: 2,
		Pri: mlx4.QPPath{Port: max(q.vfPort, 1), PKeyIndex: q.pkey, MGIDIndex: q.mgid,
			CounterIndex: uint8(config.Default().Resources.Counters - 1), // the sink
			GRH:          q.smac&mlx4.GRHMyLMCGRH != 0, SMACIndex: q.smac & mlx4.GRHMyLMCSMACMask},
		CQNSend: q.scq, CQNRecv: q.rcq, UseSRQ: q.useSRQ, SRQN: q.srq, RateLimitParams: q.rateLimit,
		MTTBase: uint64(q.mtt), UsrPage: cmp.Or(q.uar, 128),
	}}.Encode(b)
	return b
}

// newQP reserves a QP, maps its ICM and allocates its MTT; it stays in
// reset. It returns the QPN and a context that RST2INIT accepts.
func (v *vf) newQP(cq uint32) (uint32, qpc) {
	v.r.t.Helper()
	qpn := v.mustAlloc(restrack.QP, resOpReserve, 1)
	v.mustAlloc(restrack.QP, resOpMapICM, uint64(qpn))
	mtt := v.mtt(0, v.newPage()) // the queues' page
	return qpn, qpc{st: mlx4.QP_ST_RC, scq: cq, rcq: cq, mtt: mtt, sqLog: 3, rqLog: 3}
}

func (v *vf) qpCmd(op mlx4.Opcode, qpn uint32, q *qpc) mlx4.Status {
	var in []byte
	if q != nil {
		in = q.bytes()
	}
	out := op == mlx4.QUERY_QP
	switch op {
	case mlx4.RST2INIT_QP, mlx4.INIT2INIT_QP, mlx4.INIT2RTR_QP, mlx4.RTR2RTS_QP, mlx4.RTS2RTS_QP,
		mlx4.SQERR2RTS_QP, mlx4.TWO_ERR_QP, mlx4.RTS2SQD_QP, mlx4.SQD2SQD_QP, mlx4.SQD2RTS_QP,
		mlx4.TWO_RST_QP, mlx4.QUERY_QP, mlx4.SUSPEND_QP, mlx4.UNSUSPEND_QP:
	default:
		v.r.t.Fatalf("qpCmd %v", op)
	}
	return v.run(v.cmd(op, 0, qpn, 0, in, out))
}

// readEQE reads EQE i of the VF's ring page p.
func (v *vf) readEQE(p uint64, i int) [mlx4.EQESize]byte {
	var e [mlx4.EQESize]byte
	if err := v.w.CopyIn(e[:], p+uint64(i*mlx4.EQESize)); err != nil {
		v.r.t.Fatal(err)
	}
	return e
}

func wantS(t *testing.T, what string, got, want mlx4.Status) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: status %v, want %v", what, got, want)
	}
}

func intp(n int) *int { return &n }
