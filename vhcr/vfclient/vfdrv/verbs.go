package vfdrv

import (
	"context"
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// The verbs: queue pairs and completion queues whose rings live in the VF's
// memory and which the PF's data path runs, driven as rdma-core's mlx4
// provider (libmlx4) drives a ConnectX-3 (verbs.c mlx4_create_cq,
// mlx4_create_qp, mlx4_modify_qp; qp.c mlx4_post_send, mlx4_post_recv;
// cq.c mlx4_poll_cq, mlx4_arm_cq, mlx4_cq_event). Post and poll take no
// command, no lock and no allocation: WQEs and CQEs in memory, doorbell
// records in memory, and one 32-bit store into the VF's BAR region per
// doorbell.

// Errors of the verbs.
var (
	// ErrQueueFull: the work queue has no room for the request
	// (libmlx4's wq_overflow, ENOMEM).
	ErrQueueFull = errors.New("vfdrv: work queue full")
	// ErrNoBAR: a verbs object needs the VF's BAR region for its
	// doorbells (Options.BAR).
	ErrNoBAR = errors.New("vfdrv: no BAR region for the UAR doorbells")
)

// VCQ is a completion queue a program polls (libmlx4's struct mlx4_cq): a
// ring of 2^LogSize CQEs in the VF's memory, its doorbell record (set_ci,
// arm_db) and the arm doorbell at UAR + MLX4_CQ_DOORBELL.
type VCQ struct {
	*CQ
	d        *Driver
	ring     []byte // the CQEs
	nent     uint32
	entry    int    // CQE slot size, 32 or 64 (Options.CQESize)
	cons     uint32 // consumer index
	dbrec    uint64 // the record's IOVA: set_ci, then arm_db
	setCI    []byte // the record's words
	armDB    []byte
	armSN    uint32 // arm sequence number, +1 per completion event
	armHi    bar.Reg
	armLo    bar.Reg
	events   uint64 // completion EQEs seen for this CQ
	consumed uint64 // of which WaitEvent returned
	last     *VQP   // the QP of the last CQE (cache for the QPN lookup)
}

// VQP is a queue pair with its work queues (libmlx4's struct mlx4_qp).
type VQP struct {
	*QP
	d    *Driver
	Caps QPCaps // what the queues hold (ibv_create_qp's cap on return)
	buf  []byte // the QP buffer: SQ and RQ, the larger stride first
	sq   sq
	rq   rq
	db   []byte // the RQ doorbell record
	send bar.Reg
	// scratch for one WQE: the encoder's view, the bytes, inline data
	wqe    mlx4.SendWQE
	rwqe   mlx4.RecvWQE
	bytes  []byte
	inline []byte
	sigAll bool
}

// qpQueues is what a QP created by CreateVerbsQP adds to its context and
// to its transitions (res.go's context, Modify).
type qpQueues struct {
	v     *VQP
	dbrec uint64
	uar   uint32
}

// SGE is a gather or scatter entry (struct ibv_sge): Addr is an IOVA of
// the VF's memory inside the region LKey names.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// AH is an address handle (libmlx4's struct mlx4_ah: the struct mlx4_av a
// UD send's datagram segment carries).
type AH struct {
	av mlx4.AV
}

// AHAttr is an address handle's attributes (struct ibv_ah_attr, without
// the GRH).
type AHAttr struct {
	DLID        uint16
	SL          uint8
	SrcPathBits uint8
	StaticRate  uint8
	Port        int
	PD          uint32
}

// NewAH builds an address handle as mlx4_create_ah fills struct mlx4_av.
func NewAH(a AHAttr) *AH {
	if a.Port == 0 {
		a.Port = 1
	}
	return &AH{av: mlx4.AV{
		PortPD:            a.PD&mlx4.AVPDMask | uint32(a.Port)<<mlx4.AVPortShift,
		GSLID:             a.SrcPathBits &^ mlx4.AVGRH,
		DLID:              a.DLID,
		StatRate:          a.StaticRate,
		SLTClassFlowLabel: uint32(a.SL) << mlx4.AVSLShift,
	}}
}

// SendWR is a send work request (struct ibv_send_wr without the chain).
// Opcode is the WQE opcode (mlx4.OPCODE_SEND, _SEND_IMM, _RDMA_WRITE,
// _RDMA_WRITE_IMM, _RDMA_READ, _ATOMIC_CS, _ATOMIC_FA).
type SendWR struct {
	WRID      uint64
	Opcode    uint8
	SGE       []SGE
	Signaled  bool
	Solicited bool
	Fence     bool
	Inline    bool
	Imm       uint32 // SEND_IMM, RDMA_WRITE_IMM (host order; the WQE carries it big-endian)
	// RDMA and atomics
	RemoteAddr uint64
	RKey       uint32
	CompareAdd uint64 // ATOMIC_CS: compare; ATOMIC_FA: the addend
	Swap       uint64 // ATOMIC_CS: the swap value
	// UD
	AH         *AH
	RemoteQPN  uint32
	RemoteQKey uint32
}

// RecvWR is a receive work request.
type RecvWR struct {
	WRID uint64
	SGE  []SGE
}

// WC is a work completion (struct ibv_wc, the fields mlx4_poll_one fills).
type WC struct {
	WRID      uint64
	Status    WCStatus
	Syndrome  uint8 // error CQEs: the CQE's syndrome and vendor syndrome
	VendorErr uint8
	Opcode    uint8 // the CQE's opcode: mlx4.OPCODE_* for sends, mlx4.RECV_OPCODE_* for receives
	IsSend    bool
	ByteLen   uint32
	Imm       uint32
	HasImm    bool
	QPN       uint32
	SrcQP     uint32
	SLID      uint16
	SL        uint8
	GRH       bool
}

// WCStatus is a work completion's status (enum ibv_wc_status, as
// mlx4_handle_error_cqe maps the syndromes).
type WCStatus uint8

// Work completion statuses.
const (
	WCSuccess WCStatus = iota
	WCLocLenErr
	WCLocQPOpErr
	WCLocEECOpErr
	WCLocProtErr
	WCWRFlushErr
	WCMWBindErr
	WCBadRespErr
	WCLocAccessErr
	WCRemInvReqErr
	WCRemAccessErr
	WCRemOpErr
	WCRetryExcErr
	WCRNRRetryExcErr
	WCLocRDDViolErr
	WCRemInvRDReqErr
	WCRemAbortErr
	WCInvEECNErr
	WCInvEECStateErr
	WCFatalErr
	WCRespTimeoutErr
	WCGeneralErr
)

var wcStatusNames = [...]string{"success", "local length error", "local QP operation error", "local EE context operation error",
	"local protection error", "WR flushed", "memory window bind error", "bad response error", "local access error",
	"remote invalid request error", "remote access error", "remote operation error", "transport retry counter exceeded",
	"RNR retry counter exceeded", "local RDD violation error", "remote invalid RD request", "aborted error",
	"invalid EE context number", "invalid EE context state", "fatal error", "response timeout error", "general error"}

func (s WCStatus) String() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return fmt.Sprintf("status %d", uint8(s))
}

// wcStatus is mlx4_handle_error_cqe's mapping.
func wcStatus(syndrome uint8) WCStatus {
	switch syndrome {
	case mlx4.CQE_SYNDROME_LOCAL_LENGTH_ERR:
		return WCLocLenErr
	case mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR:
		return WCLocQPOpErr
	case mlx4.CQE_SYNDROME_LOCAL_PROT_ERR:
		return WCLocProtErr
	case mlx4.CQE_SYNDROME_WR_FLUSH_ERR:
		return WCWRFlushErr
	case mlx4.CQE_SYNDROME_MW_BIND_ERR:
		return WCMWBindErr
	case mlx4.CQE_SYNDROME_BAD_RESP_ERR:
		return WCBadRespErr
	case mlx4.CQE_SYNDROME_LOCAL_ACCESS_ERR:
		return WCLocAccessErr
	case mlx4.CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
		return WCRemInvReqErr
	case mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR:
		return WCRemAccessErr
	case mlx4.CQE_SYNDROME_REMOTE_OP_ERR:
		return WCRemOpErr
	case mlx4.CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
		return WCRetryExcErr
	case mlx4.CQE_SYNDROME_RNR_RETRY_EXC_ERR:
		return WCRNRRetryExcErr
	case mlx4.CQE_SYNDROME_REMOTE_ABORTED_ERR:
		return WCRemAbortErr
	}
	return WCGeneralErr
}

// uarReg is the register at off of the driver's UAR page (Options.UAR).
func (d *Driver) uarReg(off int64) (bar.Reg, error) {
	if d.opt.BAR == nil {
		return bar.Reg{}, ErrNoBAR
	}
	page := mlx4.UARPageOffset(d.uar(), uint64(d.opt.BAR.Size()))
	return bar.NewReg(d.opt.BAR, int64(page)+off)
}

// uar is the UAR index the verbs objects name in their contexts.
func (d *Driver) uar() uint32 {
	if d.opt.UAR != 0 {
		return d.opt.UAR
	}
	return mlx4.ReservedUARs
}

// cqeSize is the CQE slot size (Options.CQESize, default 32).
func (d *Driver) cqeSize() int {
	if d.opt.CQESize == 2*mlx4.CQESize {
		return d.opt.CQESize
	}
	return mlx4.CQESize
}

// CreateVerbsCQ creates a CQ for at least entries completions reporting
// to EQ eqn, as mlx4_create_cq does: 2^k ≥ entries+1 zeroed CQEs, a
// doorbell record (set_ci and arm_db zero), the context naming the UAR and
// the record, arm_sn 1.
func (d *Driver) CreateVerbsCQ(ctx context.Context, entries, eqn int) (*VCQ, error) {
	if entries < 1 || entries > 1<<22-1 {
		return nil, fmt.Errorf("%w: CQ of %d entries", ErrArgument, entries)
	}
	arm, err := d.uarReg(mlx4.MLX4_CQ_DOORBELL)
	if err != nil {
		return nil, err
	}
	armLo, err := d.uarReg(mlx4.MLX4_CQ_DOORBELL + 4)
	if err != nil {
		return nil, err
	}
	nent := alignQueueSize(entries + 1)
	logSize := int(log2(nent))
	entry := d.cqeSize()
	rec, err := d.allocDB(dbCQ)
	if err != nil {
		return nil, err
	}
	var in [mlx4.CQContextSize]byte
	cq := &CQ{LogSize: logSize, EQN: eqn}
	pages := max(1, int(nent)*entry/mlx4.PageSize)
	res, err := d.create(ctx, pages,
		vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResCQ, OpMod: opReserveAndMap},
		func(n uint32) vfclient.Request { return freeReq(ResCQ, opReserveAndMap, uint64(n)) },
		func(n uint32, b buffer) []vfclient.Request {
			cq.CQN, cq.buffer = n, b
			d.zero(b.IOVA, b.Pages*mlx4.PageSize)
			mlx4.CQContext{LogSize: logSize, UsrPage: d.uar(), CompEQN: uint8(eqn), MTTBase: b.MTT.Base, DBRecAddr: rec}.Encode(in[:])
			return []vfclient.Request{{Op: mlx4.SW2HW_CQ, InMod: n, In: in[:]}}
		})
	if res == nil {
		d.freeDB(dbCQ, rec)
		return nil, err
	}
	cq.hw = completed(err) && res[1].Status == mlx4.OK
	if err != nil {
		_ = d.DestroyCQ(ctx, cq)
		d.freeDB(dbCQ, rec)
		return nil, err
	}
	v := &VCQ{CQ: cq, d: d, ring: d.mem[cq.IOVA : cq.IOVA+uint64(nent)*uint64(entry)], nent: nent, entry: entry,
		dbrec: rec, setCI: d.mem[rec+mlx4.CQDBRecSetCI : rec+mlx4.CQDBRecSetCI+4],
		armDB: d.mem[rec+mlx4.CQDBRecArmDB : rec+mlx4.CQDBRecArmDB+4], armSN: 1, armHi: arm, armLo: armLo}
	if d.cqs == nil {
		d.cqs = map[uint32]*VCQ{}
	}
	d.cqs[cq.CQN] = v
	return v, nil
}

// DestroyVerbsCQ destroys cq and returns its doorbell record.
func (d *Driver) DestroyVerbsCQ(ctx context.Context, cq *VCQ) error {
	if err := d.DestroyCQ(ctx, cq.CQ); err != nil {
		return err
	}
	delete(d.cqs, cq.CQN)
	d.freeDB(dbCQ, cq.dbrec)
	return nil
}

// CreateVerbsQP creates a QP whose queues the driver posts to: the
// geometry from caps as libmlx4 computes it, a zeroed buffer with an MTT
// over it, an RQ doorbell record (none on an SRQ), and the context fields
// the device reads (sq/rq size and stride, log_page_size 0, page offset 0,
// mtt_base, db_rec_addr, usr_page, the CQs, PD, Q_Key, the remote QPN and
// the path) in every transition's mailbox. With sigAll every send is
// signalled (sq_sig_all). The QP stays in RST until Modify.
func (d *Driver) CreateVerbsQP(ctx context.Context, cfg QPConfig, caps QPCaps, sigAll bool) (*VQP, error) {
	send, err := d.uarReg(mlx4.MLX4_SEND_DOORBELL)
	if err != nil {
		return nil, err
	}
	if caps.MaxSendSGE > mlx4.MaxSGE || caps.MaxRecvSGE > mlx4.MaxSGE || caps.MaxInline > mlx4.WQESizeMask*mlx4.WQESegUnit {
		return nil, fmt.Errorf("%w: QP caps %+v", ErrArgument, caps)
	}
	s, r, bytes := geometry(&caps, cfg.ST, cfg.UseSRQ)
	if 1<<s.shift > mlx4.WQESizeMask*mlx4.WQESegUnit+mlx4.WQESegUnit || s.cnt > 1<<15 || r.cnt > 1<<15 {
		return nil, fmt.Errorf("%w: QP caps %+v need %d send WQEs of %d bytes", ErrArgument, caps, s.cnt, 1<<s.shift)
	}
	cfg.LogSQSize, cfg.LogRQSize = log2(s.cnt), log2(max(r.cnt, 1))
	qp, err := d.newQP(ctx, cfg)
	if err != nil {
		return nil, err
	}
	v := &VQP{QP: qp, d: d, Caps: caps, sq: s, rq: r, send: send, sigAll: sigAll,
		bytes: make([]byte, 1<<s.shift), inline: make([]byte, caps.MaxInline)}
	q := &qpQueues{v: v, uar: d.uar()}
	qp.wq = q
	if !cfg.UseSRQ {
		rec, err := d.allocDB(dbRQ)
		if err != nil {
			return nil, err
		}
		q.dbrec, qp.rqdb = rec, rec
		v.db = d.mem[rec : rec+mlx4.RQDBRecSize]
	}
	pages := qp.context().MTTPages()
	if need := (bytes + mlx4.PageSize - 1) / mlx4.PageSize; pages < need {
		pages = need
	}
	mapped := false
	res, err := d.create(ctx, pages,
		vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResQP, OpMod: opReserve, InParam: 1<<32 | 1},
		func(n uint32) vfclient.Request { return freeReq(ResQP, opReserve, 1<<32|uint64(n)) },
		func(n uint32, b buffer) []vfclient.Request {
			qp.QPN, qp.buffer = n, b
			d.zero(b.IOVA, b.Pages*mlx4.PageSize)
			return []vfclient.Request{{Op: mlx4.ALLOC_RES, InMod: ResQP, OpMod: opMapICM, InParam: uint64(n)}}
		})
	if res == nil {
		d.dropQPDB(v)
		return nil, err
	}
	mapped = completed(err) && res[1].Status == mlx4.OK
	if err != nil {
		undo := []vfclient.Request{freeReq(ResQP, opReserve, 1<<32|uint64(qp.QPN)), freeMTTReq(qp.MTT)}
		if mapped {
			undo = append([]vfclient.Request{freeReq(ResQP, opMapICM, uint64(qp.QPN))}, undo...)
		}
		if _, uerr := d.Pipeline(ctx, undo); uerr == nil {
			d.pool.put(qp.IOVA, qp.Pages)
		}
		d.dropQPDB(v)
		return nil, err
	}
	v.buf = d.mem[qp.IOVA : qp.IOVA+uint64(bytes)]
	if d.qps == nil {
		d.qps = map[uint32]*VQP{}
	}
	d.qps[qp.QPN] = v
	return v, nil
}

func (d *Driver) dropQPDB(v *VQP) {
	if v.db != nil {
		d.freeDB(dbRQ, v.QP.wq.dbrec)
		v.db = nil
	}
}

// DestroyVerbsQP destroys qp (2RST if needed) and returns its record.
func (d *Driver) DestroyVerbsQP(ctx context.Context, qp *VQP) error {
	if err := d.DestroyQP(ctx, qp.QP); err != nil {
		return err
	}
	delete(d.qps, qp.QPN)
	d.dropQPDB(qp)
	return nil
}

// initOwnership is mlx4_qp_init_sq_ownership, before RESET→INIT: every
// send WQE hardware-owned for the first pass (owner bit set), its size the
// whole stride, and stamped.
func (v *VQP) initOwnership() {
	stride := 1 << v.sq.shift
	for i := 0; i < int(v.sq.cnt); i++ {
		w := v.buf[v.sq.offset+i*stride : v.sq.offset+(i+1)*stride]
		w[mlx4.CtrlFenceSize] = byte(stride / mlx4.WQESegUnit)
		dmaPut32(w[mlx4.CtrlOwnerOpcode:], mlx4.WQEOwner)
		v.stamp(uint32(i))
	}
}

// resetIndices is what mlx4_modify_qp does after a transition to RESET:
// the queues' indices back to 0 and the RQ doorbell record zeroed.
func (v *VQP) resetIndices() {
	v.sq.head, v.sq.tail, v.rq.head, v.rq.tail = 0, 0, 0, 0
	if v.db != nil {
		dmaPut32(v.db, 0)
	}
}

// sendWQE is send WQE n's slot (n modulo the ring).
func (v *VQP) sendWQE(n uint32) []byte {
	off := v.sq.offset + int(n&(v.sq.cnt-1))<<v.sq.shift
	return v.buf[off : off+1<<v.sq.shift]
}

// stamp is stamp_send_wqe: 0xffffffff in the first word of every 64-byte
// chunk of WQE n after the first, up to the size its control segment says.
func (v *VQP) stamp(n uint32) {
	w := v.sendWQE(n)
	ds := int(dmaByte(w, mlx4.CtrlFenceSize)&mlx4.WQESizeMask) * mlx4.WQESegUnit
	for i := mlx4.WQEBasicBlock; i < ds && i < len(w); i += mlx4.WQEBasicBlock {
		dmaPut32(w[i:], mlx4.WQEStamp)
	}
}

// PostSend posts wrs in order and rings the send doorbell once (qpn << 8
// at UAR + MLX4_SEND_DOORBELL), as mlx4_post_send: each WQE's body is
// written, then its owner_opcode word; the WQE sq_spare_wqes ahead is
// stamped. It returns how many it posted; an error names the first it
// could not post (the ones before it are posted and rung).
func (v *VQP) PostSend(wrs []SendWR) (int, error) {
	n := 0
	var err error
	for i := range wrs {
		if v.sq.head+uint32(n)-v.sq.tail >= v.sq.maxPost {
			err = ErrQueueFull
			break
		}
		if err = v.writeSend(&wrs[i], v.sq.head+uint32(n)); err != nil {
			break
		}
		n++
		if i+1 < len(wrs) {
			v.stamp(v.sq.head + uint32(n) - 1 + v.sq.spare)
		}
	}
	if n > 0 {
		v.sq.head += uint32(n)
		v.send.Store(mlx4.SendDoorbell(v.QPN))
		v.d.VF.Ring() // a sleeping PF would find the doorbell at its next timeout
		v.stamp(v.sq.head - 1 + v.sq.spare)
	}
	return n, err
}

// writeSend writes wr as send WQE ind (mlx4_post_send's body).
func (v *VQP) writeSend(wr *SendWR, ind uint32) error {
	w := &v.wqe
	// the fields EncodeSendWQE reads, reset (not the whole value: its
	// gather array is 2 KiB)
	w.HasRAddr, w.HasAtomic, w.HasDatagram, w.HasLSO, w.HasLocalInval, w.NSGE = false, false, false, false, false, 0
	flags := uint32(0)
	if wr.Signaled || v.sigAll {
		flags |= mlx4.WQE_CTRL_CQ_UPDATE
	}
	if wr.Solicited {
		flags |= mlx4.WQE_CTRL_SOLICITED
	}
	// field by field: a struct stored whole and then read field by field
	// (EncodeSendWQE) costs the store buffer's forwarding
	c := &w.Ctrl
	c.Owner, c.Opcode, c.Fence, c.SrcRBFlags = mlx4.WQEOwnerBit(ind, v.sq.cnt), wr.Opcode, wr.Fence, flags
	c.OpFlags, c.VLANTag, c.InsVLAN, c.Size, c.Imm = 0, 0, 0, 0, 0
	if wr.Opcode == mlx4.OPCODE_SEND_IMM || wr.Opcode == mlx4.OPCODE_RDMA_WRITE_IMM {
		c.Imm = wr.Imm
	}
	switch v.Cfg.ST {
	case mlx4.QP_ST_UD:
		if wr.AH == nil || (wr.Opcode != mlx4.OPCODE_SEND && wr.Opcode != mlx4.OPCODE_SEND_IMM) {
			return fmt.Errorf("%w: UD send needs an AH and SEND or SEND_IMM", ErrArgument)
		}
		w.HasDatagram = true
		w.Datagram = mlx4.DatagramSeg{AV: wr.AH.av, DQPN: wr.RemoteQPN, QKey: wr.RemoteQKey}
	default:
		switch wr.Opcode {
		case mlx4.OPCODE_SEND, mlx4.OPCODE_SEND_IMM:
		case mlx4.OPCODE_RDMA_WRITE, mlx4.OPCODE_RDMA_WRITE_IMM, mlx4.OPCODE_RDMA_READ:
			w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: wr.RemoteAddr, RKey: wr.RKey}
		case mlx4.OPCODE_ATOMIC_CS, mlx4.OPCODE_ATOMIC_FA:
			if v.Cfg.ST != mlx4.QP_ST_RC || len(wr.SGE) != 1 {
				return fmt.Errorf("%w: an atomic needs RC and one SGE", ErrArgument)
			}
			w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: wr.RemoteAddr, RKey: wr.RKey}
			w.HasAtomic = true
			if wr.Opcode == mlx4.OPCODE_ATOMIC_CS {
				w.Atomic = mlx4.AtomicSeg{SwapAdd: wr.Swap, Compare: wr.CompareAdd}
			} else {
				w.Atomic = mlx4.AtomicSeg{SwapAdd: wr.CompareAdd}
			}
		default:
			return fmt.Errorf("%w: send opcode %#x", ErrArgument, wr.Opcode)
		}
	}
	inl, err := v.writeData(wr)
	if err != nil {
		return err
	}
	n, err := mlx4.EncodeSendWQE(v.bytes, w, v.inline[:inl])
	if err != nil {
		return fmt.Errorf("%w: %w", ErrArgument, err)
	}
	slot := v.sendWQE(ind)
	v.sq.wrid[ind&(v.sq.cnt-1)] = wr.WRID
	// the body, then the owner_opcode word (udma_to_device_barrier between)
	dmaCopy(slot[mlx4.CtrlOwnerOpcode+4:n], v.bytes[mlx4.CtrlOwnerOpcode+4:n])
	dmaPut32(slot[mlx4.CtrlOwnerOpcode:], dmaGet32(v.bytes[mlx4.CtrlOwnerOpcode:]))
	return nil
}

// writeData fills the WQE's data part from wr's SGEs: their bytes copied
// into v.inline for an inline send (their count returned), else the
// gather entries.
func (v *VQP) writeData(wr *SendWR) (int, error) {
	w := &v.wqe
	inl := 0
	if wr.Inline && len(wr.SGE) > 0 {
		for _, g := range wr.SGE {
			if inl+int(g.Length) > len(v.inline) {
				return 0, fmt.Errorf("%w: %d inline bytes, the QP holds %d", ErrArgument, inl+int(g.Length), len(v.inline))
			}
			if err := v.d.Read(g.Addr, v.inline[inl:inl+int(g.Length)]); err != nil {
				return 0, fmt.Errorf("inline SGE: %w", err)
			}
			inl += int(g.Length)
		}
		if !w.AddInline(inl) {
			return 0, fmt.Errorf("%w: %d inline bytes", ErrArgument, inl)
		}
	} else {
		if len(wr.SGE) > v.sq.maxGS {
			return 0, fmt.Errorf("%w: %d SGEs, the QP holds %d", ErrArgument, len(wr.SGE), v.sq.maxGS)
		}
		for i := range wr.SGE {
			g, d := &wr.SGE[i], &w.SGE[i]
			d.Inline, d.ByteCount, d.LKey, d.Addr, d.Off = false, g.Length, g.LKey, g.Addr, 0
		}
		w.NSGE = len(wr.SGE)
	}
	return inl, nil
}

// PostRecv posts wrs and writes the RQ doorbell record once (rq.head &
// 0xffff), as mlx4_post_recv: each WQE's scatter list, ended by lkey
// MLX4_INVALID_LKEY when shorter than the stride.
func (v *VQP) PostRecv(wrs []RecvWR) (int, error) {
	if v.db == nil {
		return 0, fmt.Errorf("%w: QP %#x receives on an SRQ", ErrArgument, v.QPN)
	}
	n := 0
	var err error
	stride := 1 << v.rq.shift
	for i := range wrs {
		wr := &wrs[i]
		if v.rq.head+uint32(n)-v.rq.tail >= v.rq.maxPost {
			err = ErrQueueFull
			break
		}
		if len(wr.SGE) > v.rq.maxGS {
			err = fmt.Errorf("%w: %d SGEs, the RQ holds %d", ErrArgument, len(wr.SGE), v.rq.maxGS)
			break
		}
		r := &v.rwqe
		r.NSGE = len(wr.SGE)
		for j, g := range wr.SGE {
			r.SGE[j] = mlx4.Gather{ByteCount: g.Length, LKey: g.LKey, Addr: g.Addr}
		}
		ind := (v.rq.head + uint32(n)) & (v.rq.cnt - 1)
		l, eerr := mlx4.EncodeRecvWQE(v.bytes[:stride], r, false)
		if eerr != nil {
			err = fmt.Errorf("%w: %w", ErrArgument, eerr)
			break
		}
		off := v.rq.offset + int(ind)*stride
		dmaCopy(v.buf[off:off+l], v.bytes[:l])
		v.rq.wrid[ind] = wr.WRID
		n++
	}
	if n > 0 {
		v.rq.head += uint32(n)
		dmaPut32(v.db, v.rq.head&mlx4.RQDBRecHeadMask)
	}
	return n, err
}

// Poll takes up to len(wc) completions (mlx4_poll_cq): CQE n is software's
// when its owner bit equals !!(n & nent); its body is read after the owner
// byte; set_ci is written once after the batch. It returns how many it took.
func (cq *VCQ) Poll(wc []WC) int {
	n := 0
	off := mlx4.CQEOffset(cq.entry)
	var raw [mlx4.CQESize]byte
	var c mlx4.CQE
	for n < len(wc) {
		at := int(cq.cons&(cq.nent-1))*cq.entry + off
		slot := cq.ring[at : at+mlx4.CQESize]
		owner := dmaByte(slot, mlx4.CQEOwnerSROpcode)&mlx4.CQE_OWNER_MASK != 0
		if !mlx4.CQEOwnerSW(owner, cq.cons, cq.nent) {
			break
		}
		dmaCopy(raw[:], slot)
		_ = c.Decode(raw[:])
		cq.cons++
		cq.fill(&wc[n], &c)
		n++
	}
	if n > 0 {
		dmaPut32(cq.setCI, cq.cons&mlx4.CQDBCIMask)
	}
	return n
}

// fill is mlx4_poll_one's work completion.
func (cq *VCQ) fill(w *WC, c *mlx4.CQE) {
	*w = WC{} // then field by field: a literal through a pointer is built aside and copied whole
	w.QPN, w.IsSend, w.Opcode, w.ByteLen = c.QPN(), c.IsSend, c.Opcode, c.ByteCnt
	qp := cq.last
	if qp == nil || qp.QPN != w.QPN {
		qp = cq.d.qps[w.QPN]
		cq.last = qp
	}
	if c.IsError() {
		w.Syndrome, w.VendorErr = c.Syndrome(), c.VendorErr()
		w.Status = wcStatus(w.Syndrome)
	}
	if qp == nil {
		w.Status = WCGeneralErr
		return
	}
	if c.IsSend {
		// the CQE names the last WQE it completes: unsignalled ones
		// before it complete with it
		s := &qp.sq
		s.tail += uint32(c.WQEIndex - uint16(s.tail))
		w.WRID = s.wrid[s.tail&(s.cnt-1)]
		s.tail++
		return
	}
	r := &qp.rq
	if r.cnt > 0 {
		w.WRID = r.wrid[r.tail&(r.cnt-1)]
		r.tail++
	}
	switch c.Opcode {
	case mlx4.RECV_OPCODE_SEND_IMM, mlx4.RECV_OPCODE_RDMA_WRITE_IMM:
		w.Imm, w.HasImm = c.ImmedRSSInvalid, true
	}
	w.SrcQP = c.SrcQPN()
	w.SLID = c.RLID
	w.SL = uint8(c.SLVID >> mlx4.CQESLShift)
	w.GRH = c.GRH()
}

// Arm requests a completion event for the next completion (or the next
// solicited one), as mlx4_arm_cq: the arm_db record (sn << 28 | cmd | ci),
// then the doorbell at UAR + MLX4_CQ_DOORBELL, its high word (sn << 28 |
// cmd | cqn) and then the consumer index, the two 32-bit stores of
// mlx4_write64 on a 32-bit host.
func (cq *VCQ) Arm(solicited bool) {
	cmd := uint32(mlx4.MLX4_CQ_DB_REQ_NOT)
	if solicited {
		cmd = mlx4.MLX4_CQ_DB_REQ_NOT_SOL
	}
	sn := uint8(cq.armSN & mlx4.CQDBSNMask)
	ci := cq.cons & mlx4.CQDBCIMask
	dmaPut32(cq.armDB, mlx4.CQArmDB(sn, cmd, ci))
	v := mlx4.CQDoorbell(sn, cmd, cq.CQN, ci)
	cq.armHi.Store(uint32(v >> 32))
	cq.armLo.Store(uint32(v))
	cq.d.VF.Ring()
}

// Events is how many completion events the CQ has had.
func (cq *VCQ) Events() uint64 { return cq.events }

// compEvent is a completion EQE for cqn (dispatch): mlx4_cq_event's
// arm_sn++ happens when the program takes it (WaitEvent).
func (d *Driver) compEvent(cqn uint32) bool {
	cq := d.cqs[cqn&mlx4.ObjectMask]
	if cq == nil {
		return false
	}
	cq.events++
	return true
}

// WaitEvent waits for the CQ's next completion event (ibv_get_cq_event)
// on eq, the EQ the CQ reports to: it consumes eq's EQEs (their doorbell
// re-armed when the driver sleeps on an IRQ eventfd, Options.IRQ) until a
// completion EQE for the CQ arrived, then counts it (mlx4_cq_event:
// arm_sn + 1). The CQ must have been armed (Arm) for the PF to post one.
func (cq *VCQ) WaitEvent(ctx context.Context, eq *EQ) error {
	d := cq.d
	var w waiter
	for cq.events == cq.consumed {
		if d.pump(eq) > 0 {
			continue
		}
		if err := d.idle(ctx, &w); err != nil {
			return err
		}
	}
	cq.consumed++
	cq.armSN++
	return nil
}

// Read copies the VF's memory at iova into dst (memory the PF may write by
// DMA: after the completion that says it did).
func (d *Driver) Read(iova uint64, dst []byte) error {
	if iova > uint64(len(d.mem)) || uint64(len(dst)) > uint64(len(d.mem))-iova {
		return fmt.Errorf("%w: %d bytes at %#x outside the VF's memory", ErrArgument, len(dst), iova)
	}
	dmaCopy(dst, d.mem[iova:])
	return nil
}

// Write copies src into the VF's memory at iova.
func (d *Driver) Write(iova uint64, src []byte) error {
	if iova > uint64(len(d.mem)) || uint64(len(src)) > uint64(len(d.mem))-iova {
		return fmt.Errorf("%w: %d bytes at %#x outside the VF's memory", ErrArgument, len(src), iova)
	}
	dmaCopy(d.mem[iova:iova+uint64(len(src))], src)
	return nil
}

// Memory is the VF's memory (IOVA i is Memory()[i]); a program's own
// buffers in it are its to use, with Read and Write for bytes the PF moves.
func (d *Driver) Memory() []byte { return d.mem }
