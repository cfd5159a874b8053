package mlx4

import (
	"errors"
	"fmt"
)

// Send opcodes, the low 5 bits of a control segment's owner_opcode:
// MLX4_OPCODE_* of include/linux/mlx4/qp.h and rdma-core
// providers/mlx4/mlx4dv.h (the same values in both).
const (
	OPCODE_NOP              = 0x00
	OPCODE_SEND_INVAL       = 0x01
	OPCODE_RDMA_WRITE       = 0x08
	OPCODE_RDMA_WRITE_IMM   = 0x09
	OPCODE_SEND             = 0x0a
	OPCODE_SEND_IMM         = 0x0b
	OPCODE_LSO              = 0x0e
	OPCODE_RDMA_READ        = 0x10
	OPCODE_ATOMIC_CS        = 0x11
	OPCODE_ATOMIC_FA        = 0x12
	OPCODE_MASKED_ATOMIC_CS = 0x14
	OPCODE_MASKED_ATOMIC_FA = 0x15
	OPCODE_BIND_MW          = 0x18
	OPCODE_FMR              = 0x19
	OPCODE_LOCAL_INVAL      = 0x1b
	OPCODE_CONFIG_CMD       = 0x1f
)

// IsAtomicOpcode reports whether send opcode op (the owner word's low
// bits, WQEOpcodeMask) is an atomic: it reads the remote 8 bytes and writes
// them back (ATOMIC_CS, ATOMIC_FA and their masked forms).
func IsAtomicOpcode(op uint32) bool {
	switch op {
	case OPCODE_ATOMIC_CS, OPCODE_ATOMIC_FA, OPCODE_MASKED_ATOMIC_CS, OPCODE_MASKED_ATOMIC_FA:
		return true
	}
	return false
}

// Receive opcodes, a receive CQE's opcode (MLX4_RECV_OPCODE_*, mlx4dv.h
// and include/linux/mlx4/cq.h).
const (
	RECV_OPCODE_RDMA_WRITE_IMM = 0x00
	RECV_OPCODE_SEND           = 0x01
	RECV_OPCODE_SEND_IMM       = 0x02
	RECV_OPCODE_SEND_INVAL     = 0x03
)

// Bits of the control segment (include/linux/mlx4/qp.h enum
// MLX4_WQE_CTRL_*; mlx4dv.h has the same low-byte ones, SOLICITED as
// MLX4_WQE_CTRL_SOLICIT and IP_CSUM as MLX4_WQE_CTRL_IP_HDR_CSUM).
// NEC, IIP and ILP are bits of owner_opcode; FENCE is bit 6 of fence_size;
// INS_CVLAN and INS_SVLAN are bits of qpn_vlan.ins_vlan; the rest are the
// low byte of srcrb_flags.
const (
	WQE_CTRL_NEC            = 1 << 29 // owner_opcode: no error completion (mlx4_en, post_nop_wqe)
	WQE_CTRL_IIP            = 1 << 28 // owner_opcode: inner IP checksum (mlx4_en tunnels)
	WQE_CTRL_ILP            = 1 << 27 // owner_opcode: inner L4 checksum
	WQE_CTRL_FENCE          = 1 << 6  // fence_size
	WQE_CTRL_INS_CVLAN      = 1 << 6  // ins_vlan
	WQE_CTRL_INS_SVLAN      = 1 << 7  // ins_vlan
	WQE_CTRL_STRONG_ORDER   = 1 << 7  // srcrb_flags [7] SO
	WQE_CTRL_TCP_UDP_CSUM   = 1 << 5  // srcrb_flags [5]
	WQE_CTRL_IP_CSUM        = 1 << 4  // srcrb_flags [4]
	WQE_CTRL_CQ_UPDATE      = 3 << 2  // srcrb_flags [3:2] C: generate a CQE
	WQE_CTRL_SOLICITED      = 1 << 1  // srcrb_flags [1] SE
	WQE_CTRL_FORCE_LOOPBACK = 1 << 0  // srcrb_flags [0] FL
)

// struct mlx4_wqe_mlx_seg (include/linux/mlx4/qp.h): an MLX QP's control
// segment, the 16 bytes of struct mlx4_wqe_ctrl_seg read another way; the
// UD header the driver built (build_mlx_header, build_sriov_qp0_header)
// follows as inline data.
const (
	MLXSegFlags = 0x08 // BE32 flags: VL15, SLR, SL 11:8, CQ update 3:2, force loopback 0
	MLXSegRLID  = 0x0c // BE16 rlid

	MLX4_WQE_MLX_VL15   = 1 << 17
	MLX4_WQE_MLX_SLR    = 1 << 16
	MLXWQEForceLoopback = 1 << 0 // flags bit 0: build_sriov_qp0_header's "force loopback"

	// MLXICRCSize is the last inline segment of an MLX send
	// (set_mlx_icrc_seg): room for the ICRC the HCA computes, no payload.
	MLXICRCSize = 4
)

// Ownership, size and stamping of send WQEs (drivers/infiniband/hw/mlx4/qp.c
// and rdma-core providers/mlx4/qp.c).
const (
	// WQEOwner is bit 31 of owner_opcode: set when (index & wqe_cnt) != 0,
	// that is 0 on the first pass over the ring (mlx4_post_send,
	// mlx4_ib_post_send); both drivers write the owner_opcode word last.
	WQEOwner = 1 << 31
	// WQEOpcodeMask selects the opcode in owner_opcode.
	WQEOpcodeMask = 0x1f
	// WQESizeMask selects the WQE's size in 16-byte units, the control
	// segment included, in fence_size (stamp_send_wqe: fence_size & 0x3f).
	WQESizeMask = 0x3f
	// WQEBasicBlock is the send WQE basic block (WQEBB) and the stamping
	// stride: 64 bytes.
	WQEBasicBlock = 64
	// WQEStamp is the value stamp_send_wqe (kernel qp.c; rdma-core qp.c,
	// still in rdma-core 44) writes to the first dword of every 64-byte
	// chunk of a WQE after the first, up to the WQE's size, so that a
	// prefetched stale chunk is invalid. It is the same on every pass
	// (the kernel's older multi-WQEBB code stamped 0x7fffffff on odd
	// passes; the one-argument stamp_send_wqe of current kernels and
	// rdma-core v44 has the one value). Within a WQE's size a stamp
	// decodes as an inline segment past the size (ErrWQESegment). At RESET→INIT (the kernel for its
	// own QPs in mlx4_ib_modify_qp; libmlx4's mlx4_qp_init_sq_ownership)
	// every WQE gets owner_opcode = WQEOwner, fence_size = 1 << (wqe_shift
	// - 4) and is stamped; after posting, the WQE sq_spare_wqes ahead is
	// stamped.
	WQEStamp = 0xffffffff
)

// MLX4_INLINE_SEG and MLX4_INLINE_ALIGN (qp.h, mlx4dv.h): an inline
// segment's byte_count has bit 31 set; inline segments do not cross a
// 64-byte boundary of the WQE (libmlx4 starts a new segment there).
// INVALID_LKEY (MLX4_INVALID_LKEY, mlx4dv.h; drivers/infiniband/hw/mlx4)
// ends a receive WQE's scatter list shorter than the maximum.
const (
	INLINE_SEG    = 1 << 31
	INLINE_ALIGN  = 64
	InlineLenMask = 0x7fffffff
	INVALID_LKEY  = 0x100
	WQESegUnit    = 16 // the size field's unit, and every segment's alignment
)

// struct mlx4_wqe_ctrl_seg (16 bytes; include/linux/mlx4/qp.h with union
// mlx4_wqe_qpn_vlan, mlx4dv.h).
const (
	CtrlOwnerOpcode = 0x00 // BE32 owner_opcode
	CtrlVLANTag     = 0x04 // BE16 qpn_vlan.vlan_tag (bf_qpn's high half for BlueFlame)
	CtrlInsVLAN     = 0x06 // qpn_vlan.ins_vlan
	CtrlFenceSize   = 0x07 // qpn_vlan.fence_size: fence bit 6, size 5:0
	CtrlSrcRBFlags  = 0x08 // BE32 srcrb_flags: SRC remote buffer 31:8, flags 7:0
	CtrlImm         = 0x0c // BE32 imm: immediate data or invalidation key
	CtrlSegSize     = 16
)

// struct mlx4_wqe_raddr_seg (16 bytes).
const (
	RAddrRAddr   = 0x00 // BE64 raddr
	RAddrRKey    = 0x08 // BE32 rkey
	RAddrSegSize = 16
)

// struct mlx4_wqe_atomic_seg (16 bytes) and struct
// mlx4_wqe_masked_atomic_seg (32 bytes).
const (
	AtomicSwapAdd           = 0x00 // BE64 swap_add
	AtomicCompare           = 0x08 // BE64 compare
	AtomicSegSize           = 16
	MaskedAtomicSwapAddMask = 0x10 // BE64 swap_add_mask
	MaskedAtomicCompareMask = 0x18 // BE64 compare_mask
	MaskedAtomicSegSize     = 32
)

// struct mlx4_av (32 bytes; mlx4dv.h, and the kernel's struct mlx4_av in
// include/linux/mlx4/device.h) and struct mlx4_wqe_datagram_seg (48 bytes:
// the av, then dqpn, qkey, vlan, mac).
const (
	AVPortPD            = 0x00 // BE32 port_pd: port 31:24, PD 23:0
	AVGSLID             = 0x05 // g_slid: GRH bit 7, source LID path bits 6:0
	AVDLID              = 0x06 // BE16 dlid
	AVGIDIndex          = 0x09 // gid_index
	AVStatRate          = 0x0a // stat_rate
	AVHopLimit          = 0x0b // hop_limit
	AVSLTClassFlowLabel = 0x0c // BE32 sl_tclass_flowlabel: SL 31:28, tclass 27:20, flow label 19:0
	AVDGID              = 0x10 // dgid[16]
	AVSize              = 32
	DatagramDQPN        = 0x20 // BE32 dqpn
	DatagramQKey        = 0x24 // BE32 qkey
	DatagramVLAN        = 0x28 // BE16 vlan
	DatagramMAC         = 0x2a // mac[6]
	DatagramSegSize     = 48
)

// struct mlx4_wqe_data_seg (16 bytes), struct mlx4_wqe_inline_seg (4 bytes
// then the data), struct mlx4_wqe_srq_next_seg (16 bytes), struct
// mlx4_wqe_lso_seg (mss_hdr_size, then the header) and struct
// mlx4_wqe_local_inval_seg (32 bytes), all in include/linux/mlx4/qp.h and
// mlx4dv.h.
const (
	DataByteCount     = 0x00 // BE32 byte_count
	DataLKey          = 0x04 // BE32 lkey
	DataAddr          = 0x08 // BE64 addr
	DataSegSize       = 16
	InlineByteCount   = 0x00 // BE32 byte_count: INLINE_SEG | length
	InlineSegSize     = 4    // the header; the data follows
	SRQNextWQEIndex   = 0x02 // BE16 next_wqe_index
	SRQNextSegSize    = 16
	LSOMSSHdrSize     = 0x00 // BE32 mss_hdr_size: MSS 31:16, header size 15:0 (build_lso_seg)
	LSOSegSize        = 4    // then the header, the whole padded to 16 bytes
	LocalInvalMemKey  = 0x08 // BE32 mem_key
	LocalInvalSegSize = 32
)

// MaxSGE bounds the gather entries (data and inline segments) a decoded
// WQE holds: the size field's 63 units less the control segment.
const MaxSGE = WQESizeMask - 1

// Errors of the WQE codecs; each wraps one of these.
var (
	// ErrWQESize: the size field is zero, smaller than the segments the
	// opcode needs, or larger than the buffer.
	ErrWQESize = errors.New("mlx4: WQE size field out of range")
	// ErrWQESegment: a segment runs past the WQE's size.
	ErrWQESegment = errors.New("mlx4: WQE segment past the WQE's size")
	// ErrWQEOpcode: an opcode whose segments this package does not decode
	// (BIND_MW, FMR, CONFIG_CMD, an undefined one), or one not valid on the
	// transport (LSO off UD).
	ErrWQEOpcode = errors.New("mlx4: WQE opcode not decoded")
	// ErrWQETransport: a QP service type other than RC, UC, UD and XRC.
	ErrWQETransport = errors.New("mlx4: WQE on an unsupported transport")
	// ErrWQETooManySGE: more than MaxSGE gather or scatter entries.
	ErrWQETooManySGE = errors.New("mlx4: WQE with more than MaxSGE entries")
)

// WQECtrl is a decoded struct mlx4_wqe_ctrl_seg.
type WQECtrl struct {
	Owner      bool   // owner_opcode bit 31
	Opcode     uint8  // owner_opcode 4:0, OPCODE_*
	OpFlags    uint32 // owner_opcode's other bits (30:5): NEC, IIP, ILP, BlueFlame's index
	VLANTag    uint16 // qpn_vlan.vlan_tag
	InsVLAN    uint8  // qpn_vlan.ins_vlan: INS_CVLAN, INS_SVLAN
	Fence      bool   // fence_size bit 6
	Size       uint8  // fence_size 5:0, 16-byte units, the control segment included
	SrcRBFlags uint32 // srcrb_flags
	Imm        uint32 // imm
}

// RAddrSeg is struct mlx4_wqe_raddr_seg.
type RAddrSeg struct {
	RAddr uint64
	RKey  uint32
}

// AtomicSeg is struct mlx4_wqe_atomic_seg, or with Masked struct
// mlx4_wqe_masked_atomic_seg (MASKED_ATOMIC_CS only; the kernel's
// MASKED_ATOMIC_FA uses the 16-byte segment, add in swap_add and the add
// mask in compare).
type AtomicSeg struct {
	SwapAdd, Compare         uint64
	Masked                   bool
	SwapAddMask, CompareMask uint64
}

// AV is struct mlx4_av.
type AV struct {
	PortPD            uint32
	GSLID             uint8
	DLID              uint16
	GIDIndex          uint8
	StatRate          uint8
	HopLimit          uint8
	SLTClassFlowLabel uint32
	DGID              [16]byte
}

// DatagramSeg is struct mlx4_wqe_datagram_seg.
type DatagramSeg struct {
	AV   AV
	DQPN uint32
	QKey uint32
	VLAN uint16
	MAC  [6]byte
}

// Gather is one gather (or scatter) entry: a struct mlx4_wqe_data_seg, or
// with Inline a struct mlx4_wqe_inline_seg whose Len bytes of data are at
// b[Off:Off+Len] of the decoded buffer (a zero-length data segment, which
// libmlx4 writes as byte_count 0x80000000, decodes as an empty inline one).
type Gather struct {
	Inline    bool
	ByteCount uint32 // data: byte_count; inline: the length (byte_count & InlineLenMask)
	LKey      uint32 // data only
	Addr      uint64 // data only
	Off       int    // inline only: where the data starts in the buffer
}

// LSOSeg is struct mlx4_wqe_lso_seg: the header's HdrSize bytes are at
// b[HdrOff:].
type LSOSeg struct {
	MSS, HdrSize uint16
	HdrOff       int
}

// SendWQE is a decoded send WQE: the control segment, the segments its
// opcode and the QP's transport put after it, and the gather list, in a
// fixed-size value (no allocation).
type SendWQE struct {
	Ctrl WQECtrl

	HasRAddr      bool
	RAddr         RAddrSeg
	HasAtomic     bool
	Atomic        AtomicSeg
	HasDatagram   bool
	Datagram      DatagramSeg
	HasLSO        bool
	LSO           LSOSeg
	HasLocalInval bool
	LocalInvalKey uint32 // mlx4_wqe_local_inval_seg.mem_key

	NSGE int
	SGE  [MaxSGE]Gather
}

// Bytes is the WQE's size in bytes (Ctrl.Size units of 16).
func (w *SendWQE) Bytes() int { return int(w.Ctrl.Size) * WQESegUnit }

func align16(n int) int { return (n + WQESegUnit - 1) &^ (WQESegUnit - 1) }

func decodeCtrl(b []byte) WQECtrl {
	var c WQECtrl
	c.decode(b)
	return c
}

// decode fills c from b[0:16] (CtrlSegSize at hand), in place.
func (c *WQECtrl) decode(b []byte) {
	b = b[:CtrlSegSize]
	oo := get32(b, CtrlOwnerOpcode)
	fs := b[CtrlFenceSize]
	c.Owner, c.Opcode, c.OpFlags = oo&WQEOwner != 0, uint8(oo&WQEOpcodeMask), oo&^(WQEOwner|WQEOpcodeMask)
	c.VLANTag, c.InsVLAN = get16(b, CtrlVLANTag), b[CtrlInsVLAN]
	c.Fence, c.Size = fs&WQE_CTRL_FENCE != 0, fs&WQESizeMask
	c.SrcRBFlags, c.Imm = get32(b, CtrlSrcRBFlags), get32(b, CtrlImm)
}

// encodeCtrl writes c's bytes 4 to 15, with size (16-byte units) for
// c.Size, and returns the owner_opcode word, for the caller to write last.
func encodeCtrl(a *[CtrlSegSize]byte, c *WQECtrl, size uint8) uint32 {
	b := a[:]
	oo := c.OpFlags&^(WQEOwner|WQEOpcodeMask) | uint32(c.Opcode&WQEOpcodeMask)
	if c.Owner {
		oo |= WQEOwner
	}
	put16(b, CtrlVLANTag, c.VLANTag)
	b[CtrlInsVLAN] = c.InsVLAN
	fs := size & WQESizeMask
	if c.Fence {
		fs |= WQE_CTRL_FENCE
	}
	b[CtrlFenceSize] = fs
	put32(b, CtrlSrcRBFlags, c.SrcRBFlags)
	put32(b, CtrlImm, c.Imm)
	return oo
}

// DecodeWQECtrl decodes the control segment at b[0:16].
func DecodeWQECtrl(b []byte) (WQECtrl, error) {
	if len(b) < CtrlSegSize {
		return WQECtrl{}, shortErr("WQE control segment", len(b), CtrlSegSize)
	}
	return decodeCtrl(b), nil
}

// sendLayout is what follows the control segment for an opcode on a
// transport (mlx4_ib_post_send, rdma-core mlx4_post_send): a remote-address
// segment, an atomic segment of 16 or 32 bytes, a datagram segment, a
// local-invalidate segment, an LSO segment.
type sendLayout struct {
	raddr, datagram, lso, localInval bool
	atomic                           int
}

// layoutFor is the layout of opcode op on service type st; false: the
// transport does not take op (layoutErr says why).
func layoutFor(st uint8, op uint8) (l sendLayout, ok bool) {
	switch st {
	case QP_ST_UD:
		l.datagram = true
		switch op {
		case OPCODE_SEND, OPCODE_SEND_IMM, OPCODE_NOP:
		case OPCODE_LSO:
			l.lso = true
		default:
			return l, false
		}
		return l, true
	case QP_ST_MLX:
		// The packet's headers are the WQE's own first bytes (inline),
		// the control segment a struct mlx4_wqe_mlx_seg: no fixed
		// segment follows it.
		return l, op == OPCODE_SEND || op == OPCODE_NOP
	case QP_ST_RC, QP_ST_UC, QP_ST_XRC:
	default:
		return l, false
	}
	switch op {
	case OPCODE_NOP, OPCODE_SEND, OPCODE_SEND_IMM, OPCODE_SEND_INVAL:
	case OPCODE_RDMA_WRITE, OPCODE_RDMA_WRITE_IMM, OPCODE_RDMA_READ:
		l.raddr = true
	case OPCODE_ATOMIC_CS, OPCODE_ATOMIC_FA, OPCODE_MASKED_ATOMIC_FA:
		l.raddr, l.atomic = true, AtomicSegSize
	case OPCODE_MASKED_ATOMIC_CS:
		l.raddr, l.atomic = true, MaskedAtomicSegSize
	case OPCODE_LOCAL_INVAL:
		l.localInval = true
	default:
		return l, false
	}
	return l, true
}

// layoutErr is why layoutFor refused op on st.
func layoutErr(st uint8, op uint8) error {
	switch st {
	case QP_ST_UD:
		return fmt.Errorf("%w: opcode %#x on UD", ErrWQEOpcode, op)
	case QP_ST_MLX:
		return fmt.Errorf("%w: opcode %#x on MLX", ErrWQEOpcode, op)
	case QP_ST_RC, QP_ST_UC, QP_ST_XRC:
		return fmt.Errorf("%w: opcode %#x", ErrWQEOpcode, op)
	}
	return fmt.Errorf("%w: service type %#x", ErrWQETransport, st)
}

func segErr(what string, at, size int) error {
	return fmt.Errorf("%w: %s at %d in a WQE of %d bytes", ErrWQESegment, what, at, size)
}

// DecodeSendWQE decodes the send WQE at the start of b on a QP of service
// type st (QP_ST_RC, QP_ST_UC, QP_ST_XRC or QP_ST_UD): the control
// segment, the segments its opcode needs, and the gather list (data and
// inline segments) up to the size field, which must be at least 1 and fit
// in b. It reads nothing past Ctrl.Size*16 bytes, copies nothing (inline
// data stays in b) and accepts every bit pattern: a malformed WQE is an
// error wrapping ErrShort, ErrWQESize, ErrWQESegment, ErrWQEOpcode,
// ErrWQETransport or ErrWQETooManySGE.
func DecodeSendWQE(b []byte, st uint8) (SendWQE, error) {
	var w SendWQE
	err := w.Decode(b, st)
	return w, err
}

// Decode is DecodeSendWQE into w, which it overwrites: the poller's
// way, without copying the value out. The gather entries at and past NSGE
// are left as they were, and w must be a value Decode or DecodeSendWQE
// left or the zero value (a segment whose Has flag is false is zero:
// resetSend clears only the others).
func (w *SendWQE) Decode(b []byte, st uint8) error {
	w.resetSend()
	if len(b) < CtrlSegSize {
		return shortErr("send WQE", len(b), CtrlSegSize)
	}
	w.Ctrl.decode(b)
	size := int(w.Ctrl.Size) * WQESegUnit
	if size == 0 || size > len(b) {
		return fmt.Errorf("%w: %d units, %d bytes at hand", ErrWQESize, w.Ctrl.Size, len(b))
	}
	l, ok := layoutFor(st, w.Ctrl.Opcode)
	if !ok {
		return layoutErr(st, w.Ctrl.Opcode)
	}
	p, err := w.decodeFixed(b[:size], l)
	if err != nil {
		return err
	}
	return w.decodeGather(b[:size], p)
}

func (w *SendWQE) decodeFixed(b []byte, l sendLayout) (int, error) {
	p := CtrlSegSize
	need := func(what string, n int) error {
		if p+n > len(b) {
			return segErr(what, p, len(b))
		}
		return nil
	}
	if l.raddr {
		if err := need("remote-address segment", RAddrSegSize); err != nil {
			return p, err
		}
		w.HasRAddr = true
		w.RAddr = RAddrSeg{RAddr: get64(b, p+RAddrRAddr), RKey: get32(b, p+RAddrRKey)}
		p += RAddrSegSize
	}
	if l.atomic != 0 {
		if err := need("atomic segment", l.atomic); err != nil {
			return p, err
		}
		w.HasAtomic = true
		w.Atomic = AtomicSeg{SwapAdd: get64(b, p+AtomicSwapAdd), Compare: get64(b, p+AtomicCompare)}
		if l.atomic == MaskedAtomicSegSize {
			w.Atomic.Masked = true
			w.Atomic.SwapAddMask, w.Atomic.CompareMask = get64(b, p+MaskedAtomicSwapAddMask), get64(b, p+MaskedAtomicCompareMask)
		}
		p += l.atomic
	}
	if l.localInval {
		if err := need("local-invalidate segment", LocalInvalSegSize); err != nil {
			return p, err
		}
		w.HasLocalInval, w.LocalInvalKey = true, get32(b, p+LocalInvalMemKey)
		p += LocalInvalSegSize
	}
	if l.datagram {
		if err := need("datagram segment", DatagramSegSize); err != nil {
			return p, err
		}
		w.HasDatagram = true
		decodeDatagram(&w.Datagram, b[p:])
		p += DatagramSegSize
	}
	if l.lso {
		if err := need("LSO segment", LSOSegSize); err != nil {
			return p, err
		}
		v := get32(b, p+LSOMSSHdrSize)
		w.HasLSO = true
		w.LSO = LSOSeg{MSS: uint16(v >> 16), HdrSize: uint16(v), HdrOff: p + LSOSegSize}
		p = align16(p + LSOSegSize + int(w.LSO.HdrSize))
		if p > len(b) {
			return p, segErr("LSO header", w.LSO.HdrOff, len(b))
		}
	}
	return p, nil
}

func (w *SendWQE) decodeGather(b []byte, p int) error {
	for p < len(b) {
		if w.NSGE == MaxSGE {
			return fmt.Errorf("%w: at %d", ErrWQETooManySGE, p)
		}
		bc := get32(b, p)
		g := &w.SGE[w.NSGE]
		if bc&INLINE_SEG != 0 {
			n := int(bc & InlineLenMask)
			if n > len(b)-p-InlineSegSize {
				return segErr("inline data", p, len(b))
			}
			*g = Gather{Inline: true, ByteCount: uint32(n), Off: p + InlineSegSize}
			p = align16(p + InlineSegSize + n)
		} else {
			if p+DataSegSize > len(b) {
				return segErr("data segment", p, len(b))
			}
			*g = Gather{ByteCount: bc, LKey: get32(b, p+DataLKey), Addr: get64(b, p+DataAddr)}
			p += DataSegSize
		}
		w.NSGE++
	}
	return nil
}

func decodeDatagram(d *DatagramSeg, b []byte) {
	d.AV = AV{
		PortPD: get32(b, AVPortPD), GSLID: b[AVGSLID], DLID: get16(b, AVDLID), GIDIndex: b[AVGIDIndex],
		StatRate: b[AVStatRate], HopLimit: b[AVHopLimit], SLTClassFlowLabel: get32(b, AVSLTClassFlowLabel),
	}
	copy(d.AV.DGID[:], b[AVDGID:AVDGID+16])
	d.DQPN, d.QKey, d.VLAN = get32(b, DatagramDQPN), get32(b, DatagramQKey), get16(b, DatagramVLAN)
	copy(d.MAC[:], b[DatagramMAC:DatagramMAC+6])
}

func encodeDatagram(b []byte, d DatagramSeg) {
	put32(b, AVPortPD, d.AV.PortPD)
	b[AVGSLID] = d.AV.GSLID
	put16(b, AVDLID, d.AV.DLID)
	b[AVGIDIndex], b[AVStatRate], b[AVHopLimit] = d.AV.GIDIndex, d.AV.StatRate, d.AV.HopLimit
	put32(b, AVSLTClassFlowLabel, d.AV.SLTClassFlowLabel)
	copy(b[AVDGID:], d.AV.DGID[:])
	put32(b, DatagramDQPN, d.DQPN)
	put32(b, DatagramQKey, d.QKey)
	put16(b, DatagramVLAN, d.VLAN)
	copy(b[DatagramMAC:], d.MAC[:])
}

// EncodeSendWQE is DecodeSendWQE's inverse: it writes w's control segment,
// its Has* segments in the order the drivers put them (remote address,
// atomic, local invalidate, datagram, LSO) and its gather list into b,
// zeroing the padding, and returns the WQE's length in bytes (Ctrl.Size is
// written as that length in 16-byte units, whatever w says). Inline
// entries' data (ByteCount bytes each) is taken in order from inline, and
// an LSO header (LSO.HdrSize bytes) from its start; Off and HdrOff are
// ignored. The owner_opcode word is written last, as the drivers do; a
// WQE longer than 63 units is ErrWQESize, a b too small ErrShort.
func EncodeSendWQE(b []byte, w *SendWQE, inline []byte) (int, error) {
	n, need := sendWQELen(w)
	if n > WQESizeMask*WQESegUnit {
		return 0, fmt.Errorf("%w: %d bytes", ErrWQESize, n)
	}
	if len(b) < n {
		return 0, shortErr("send WQE buffer", len(b), n)
	}
	if len(inline) < need {
		return 0, shortErr("inline data", len(inline), need)
	}
	clear(b[:n])
	p := CtrlSegSize
	if w.HasRAddr {
		put64(b, p+RAddrRAddr, w.RAddr.RAddr)
		put32(b, p+RAddrRKey, w.RAddr.RKey)
		p += RAddrSegSize
	}
	if w.HasAtomic {
		put64(b, p+AtomicSwapAdd, w.Atomic.SwapAdd)
		put64(b, p+AtomicCompare, w.Atomic.Compare)
		p += AtomicSegSize
		if w.Atomic.Masked {
			put64(b, p-AtomicSegSize+MaskedAtomicSwapAddMask, w.Atomic.SwapAddMask)
			put64(b, p-AtomicSegSize+MaskedAtomicCompareMask, w.Atomic.CompareMask)
			p += MaskedAtomicSegSize - AtomicSegSize
		}
	}
	if w.HasLocalInval {
		put32(b, p+LocalInvalMemKey, w.LocalInvalKey)
		p += LocalInvalSegSize
	}
	if w.HasDatagram {
		encodeDatagram(b[p:], w.Datagram)
		p += DatagramSegSize
	}
	if w.HasLSO {
		put32(b, p+LSOMSSHdrSize, uint32(w.LSO.MSS)<<16|uint32(w.LSO.HdrSize))
		copy(b[p+LSOSegSize:], inline[:w.LSO.HdrSize])
		inline = inline[w.LSO.HdrSize:]
		p = align16(p + LSOSegSize + int(w.LSO.HdrSize))
	}
	sges := w.SGE[:min(max(w.NSGE, 0), MaxSGE)]
	for i := range sges {
		g := &sges[i] // not a copy of the entry the caller just stored
		if g.Inline {
			l := int(g.ByteCount & InlineLenMask)
			put32(b, p, INLINE_SEG|uint32(l))
			copy(b[p+InlineSegSize:], inline[:l])
			inline = inline[l:]
			p = align16(p + InlineSegSize + l)
			continue
		}
		d := (*[DataSegSize]byte)(b[p : p+DataSegSize])
		put32(d[:], DataByteCount, g.ByteCount&^INLINE_SEG)
		put32(d[:], DataLKey, g.LKey)
		put64(d[:], DataAddr, g.Addr)
		p += DataSegSize
	}
	put32(b, CtrlOwnerOpcode, encodeCtrl((*[CtrlSegSize]byte)(b[:CtrlSegSize]), &w.Ctrl, uint8(n/WQESegUnit))) // owner_opcode last
	return n, nil
}

// sendWQELen is the encoded length of w and the inline bytes it takes.
func sendWQELen(w *SendWQE) (n, inline int) {
	n = CtrlSegSize
	if w.HasRAddr {
		n += RAddrSegSize
	}
	if w.HasAtomic {
		n += AtomicSegSize
		if w.Atomic.Masked {
			n += MaskedAtomicSegSize - AtomicSegSize
		}
	}
	if w.HasLocalInval {
		n += LocalInvalSegSize
	}
	if w.HasDatagram {
		n += DatagramSegSize
	}
	if w.HasLSO {
		n = align16(n + LSOSegSize + int(w.LSO.HdrSize))
		inline += int(w.LSO.HdrSize)
	}
	sges := w.SGE[:min(max(w.NSGE, 0), MaxSGE)]
	for i := range sges {
		if g := &sges[i]; g.Inline {
			l := int(g.ByteCount & InlineLenMask)
			n = align16(n + InlineSegSize + l)
			inline += l
		} else {
			n += DataSegSize
		}
	}
	return n, inline
}

// AddInline appends inline entries for length bytes of data to w's gather
// list, split the way rdma-core's mlx4_post_send splits them: a new
// segment at each MLX4_INLINE_ALIGN boundary of the WQE, so that none
// crosses one. It returns false, leaving w unchanged, when the entries
// would exceed MaxSGE.
func (w *SendWQE) AddInline(length int) bool {
	n, _ := sendWQELen(w)
	k := w.NSGE
	for length > 0 {
		if k == MaxSGE {
			return false
		}
		room := INLINE_ALIGN - (n+InlineSegSize)%INLINE_ALIGN
		l := min(length, room)
		w.SGE[k] = Gather{Inline: true, ByteCount: uint32(l)}
		k++
		n += InlineSegSize + l
		length -= l
	}
	w.NSGE = k
	return true
}

// RecvWQE is a decoded receive WQE: for an SRQ, struct
// mlx4_wqe_srq_next_seg's next_wqe_index, then the scatter list, an array
// of struct mlx4_wqe_data_seg that ends at the stride or at the first
// entry with lkey INVALID_LKEY (mlx4_post_recv, mlx4_ib_post_recv,
// mlx4_post_srq_recv).
type RecvWQE struct {
	NextWQEIndex uint16 // SRQ only
	NSGE         int
	SGE          [MaxSGE]Gather
}

// DecodeRecvWQE decodes the receive WQE b (one stride of the RQ or SRQ
// ring; srq: it begins with the next segment): at most MaxSGE entries,
// ErrWQETooManySGE past that, ErrShort for an SRQ WQE shorter than its
// next segment. The terminating INVALID_LKEY entry is not part of SGE.
// (vhcrd's QUERY_DEV_CAP reports max_rq_sg 32, so a WQE the VF driver
// builds never reaches MaxSGE; a larger stride the VF chose can.)
func DecodeRecvWQE(b []byte, srq bool) (RecvWQE, error) {
	var r RecvWQE
	err := r.Decode(b, srq)
	return r, err
}

// Decode is DecodeRecvWQE into r, which it overwrites; the scatter
// entries at and past NSGE are left as they were.
func (r *RecvWQE) Decode(b []byte, srq bool) error {
	r.NextWQEIndex, r.NSGE = 0, 0
	p := 0
	if srq {
		if len(b) < SRQNextSegSize {
			return shortErr("SRQ WQE", len(b), SRQNextSegSize)
		}
		r.NextWQEIndex = get16(b, SRQNextWQEIndex)
		p = SRQNextSegSize
	}
	for ; p+DataSegSize <= len(b); p += DataSegSize {
		lkey := get32(b, p+DataLKey)
		if lkey == INVALID_LKEY {
			break
		}
		if r.NSGE == MaxSGE {
			return fmt.Errorf("%w: receive WQE at %d", ErrWQETooManySGE, p)
		}
		r.SGE[r.NSGE] = Gather{ByteCount: get32(b, p+DataByteCount), LKey: lkey, Addr: get64(b, p+DataAddr)}
		r.NSGE++
	}
	return nil
}

// EncodeRecvWQE is DecodeRecvWQE's inverse: it writes r into the stride b,
// with the INVALID_LKEY terminator (byte_count 0, addr 0) when the entries
// leave room for one, as mlx4_post_recv does, and returns the bytes
// written. A b that cannot hold the entries is ErrShort; an entry whose
// lkey is INVALID_LKEY would end the list early and is ErrWQESegment.
func EncodeRecvWQE(b []byte, r *RecvWQE, srq bool) (int, error) {
	ns := min(max(r.NSGE, 0), MaxSGE)
	p := 0
	if srq {
		p = SRQNextSegSize
	}
	if n := p + ns*DataSegSize; len(b) < n {
		return 0, shortErr("receive WQE buffer", len(b), n)
	}
	if srq {
		clear(b[:SRQNextSegSize])
		put16(b, SRQNextWQEIndex, r.NextWQEIndex)
	}
	for i, g := range r.SGE[:ns] {
		if g.LKey == INVALID_LKEY {
			return 0, fmt.Errorf("%w: scatter entry %d has lkey MLX4_INVALID_LKEY", ErrWQESegment, i)
		}
		put32(b, p+DataByteCount, g.ByteCount)
		put32(b, p+DataLKey, g.LKey)
		put64(b, p+DataAddr, g.Addr)
		p += DataSegSize
	}
	if p+DataSegSize <= len(b) {
		put32(b, p+DataByteCount, 0)
		put32(b, p+DataLKey, INVALID_LKEY)
		put64(b, p+DataAddr, 0)
		p += DataSegSize
	}
	return p, nil
}

// WQEOwnerBit is the owner bit the drivers write in send WQE index of a
// send queue of wqeCnt entries (a power of two): set on odd passes,
// index & wqe_cnt != 0 (mlx4_post_send, mlx4_ib_post_send). The device
// executes the WQE at its producer index only while the bit reads so.
func WQEOwnerBit(index, wqeCnt uint32) bool { return index&wqeCnt != 0 }

// SQHeadroom is sq_spare_wqes for a send queue of stride 1 << wqeShift:
// the 2 KiB plus one WQE the drivers keep free ahead of the producer, as
// the device may prefetch them (MLX4_IB_SQ_HEADROOM in
// drivers/infiniband/hw/mlx4/mlx4_ib.h; rdma-core verbs.c:
// (2048 >> wqe_shift) + 1). The WQE this far ahead is the one stamped
// after each post.
func SQHeadroom(wqeShift uint) int { return 2048>>wqeShift + 1 }
