package mlx4

// CQE layout: struct mlx4_cqe of include/linux/mlx4/cq.h and rdma-core
// providers/mlx4/mlx4dv.h (32 bytes). With 64-byte CQEs (the kernel's
// dev->caps.cqe_size 64, MLX4_CQE_SIZE_EN in INIT_HCA; libmlx4's
// cqe_size from the context response with MLX4_USER_DEV_CAP_LARGE_CQE)
// each slot is 64 bytes and the valid struct is its second half: the
// kernel's get_sw_cqe takes cqe + 1 when entry_size is 64, libmlx4's
// get_sw_cqe adds cqe_size == 64 ? 32 : 0 (CQEOffset).
const (
	CQEVlanMyQPN       = 0x00 // BE32 vlan_my_qpn: QPN 23:0, C-VLAN present 29, S-VLAN 30
	CQEImmedRSSInvalid = 0x04 // BE32 immed_rss_invalid: immediate data or invalidated rkey
	CQEGMLPathRQPN     = 0x08 // BE32 g_mlpath_rqpn: GRH 31, path bits 30:24, source QPN 23:0
	CQESLVID           = 0x0c // BE16 sl_vid: IB SL 15:12; Ethernet SL 15:13, VID 11:0
	CQERLID            = 0x0e // BE16 rlid (cq.h's union with smac[6] over rlid, status, ipv6_ext_mask, badfcs_enc)
	CQEStatus          = 0x10 // BE16 status (the kernel's half of mlx4dv.h's BE32 status)
	CQEIPv6ExtMask     = 0x12 // ipv6_ext_mask
	CQEBadFCSEnc       = 0x13 // badfcs_enc
	CQEByteCnt         = 0x14 // BE32 byte_cnt
	CQEWQEIndex        = 0x18 // BE16 wqe_index: the completed WQE's index (counter) in its queue
	CQEChecksum        = 0x1a // BE16 checksum
	CQEReserved        = 0x1c // reserved[3] (mlx4dv.h: reserved3, ts_15_8, ts_7_0)
	CQEOwnerSROpcode   = 0x1f // owner_sr_opcode: owner 7, is-send 6, opcode 4:0
	CQESize            = 32

	// struct mlx4_err_cqe (cq.h; mlx4dv.h names vendor_err_syndrome
	// vendor_err): the same slot with the error's fields where checksum is.
	ErrCQEMyQPN             = 0x00 // BE32 my_qpn (vlan_my_qpn)
	ErrCQEWQEIndex          = 0x18 // BE16 wqe_index
	ErrCQEVendorErrSyndrome = 0x1a // vendor_err_syndrome
	ErrCQESyndrome          = 0x1b // syndrome: CQE_SYNDROME_*
)

// Bits and masks of the CQE (mlx4dv.h, cq.h).
const (
	CQE_OWNER_MASK         = 0x80
	CQE_IS_SEND_MASK       = 0x40
	CQE_OPCODE_MASK        = 0x1f
	CQE_QPN_MASK           = 0xffffff
	CQE_VLAN_PRESENT_MASK  = 1 << 29 // vlan_my_qpn (mlx4dv.h; cq.h has it as MLX4_CQE_CVLAN_PRESENT_MASK)
	CQE_SVLAN_PRESENT_MASK = 1 << 30 // vlan_my_qpn (cq.h)
	CQE_G_MASK             = 1 << 31 // g_mlpath_rqpn's G: a GRH is in the first 40 bytes of the buffer (IB_WC_GRH)
	CQEMLPathShift         = 24      // g_mlpath_rqpn 30:24: dlid_path_bits ((>> 24) & 0x7f)
	CQEMLPathMask          = 0x7f
	CQE_OPCODE_ERROR       = 0x1e // MLX4_CQE_OPCODE_ERROR
	CQE_OPCODE_RESIZE      = 0x16 // MLX4_CQE_OPCODE_RESIZE: the old buffer's last entry after RESIZE_CQ
	CQESLShift             = 12   // sl_vid >> 12: the SL on IB (mlx4_ib_poll_one)
)

// The status bits of a receive CQE on an Ethernet port (BE16 status at
// CQEStatus; include/linux/mlx4/cq.h MLX4_CQE_STATUS_*), what mlx4_en's
// mlx4_en_process_rx_cq reads: TCP or UDP with IPOK and a checksum field
// of 0xffff is CHECKSUM_UNNECESSARY.
const (
	CQE_STATUS_IPV4    = 1 << 6
	CQE_STATUS_IPV4F   = 1 << 7 // a fragment
	CQE_STATUS_IPV6    = 1 << 8
	CQE_STATUS_IPV4OPT = 1 << 9 // IPv4 options
	CQE_STATUS_TCP     = 1 << 10
	CQE_STATUS_UDP     = 1 << 11
	CQE_STATUS_IPOK    = 1 << 12
	// CQEChecksumOK is the checksum field of a TCP or UDP segment whose
	// checksum verified.
	CQEChecksumOK = 0xffff
)

// The syndromes of an error CQE (MLX4_CQE_SYNDROME_*, cq.h and
// mlx4dv.h), and the ib_wc_status mlx4_ib_handle_error_cqe (and libmlx4's
// mlx4_handle_error_cqe, IBV_WC_*) maps each to; any other syndrome is
// IB_WC_GENERAL_ERR.
const (
	CQE_SYNDROME_LOCAL_LENGTH_ERR        = 0x01 // IB_WC_LOC_LEN_ERR
	CQE_SYNDROME_LOCAL_QP_OP_ERR         = 0x02 // IB_WC_LOC_QP_OP_ERR
	CQE_SYNDROME_LOCAL_PROT_ERR          = 0x04 // IB_WC_LOC_PROT_ERR
	CQE_SYNDROME_WR_FLUSH_ERR            = 0x05 // IB_WC_WR_FLUSH_ERR
	CQE_SYNDROME_MW_BIND_ERR             = 0x06 // IB_WC_MW_BIND_ERR
	CQE_SYNDROME_BAD_RESP_ERR            = 0x10 // IB_WC_BAD_RESP_ERR
	CQE_SYNDROME_LOCAL_ACCESS_ERR        = 0x11 // IB_WC_LOC_ACCESS_ERR
	CQE_SYNDROME_REMOTE_INVAL_REQ_ERR    = 0x12 // IB_WC_REM_INV_REQ_ERR
	CQE_SYNDROME_REMOTE_ACCESS_ERR       = 0x13 // IB_WC_REM_ACCESS_ERR
	CQE_SYNDROME_REMOTE_OP_ERR           = 0x14 // IB_WC_REM_OP_ERR
	CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR = 0x15 // IB_WC_RETRY_EXC_ERR
	CQE_SYNDROME_RNR_RETRY_EXC_ERR       = 0x16 // IB_WC_RNR_RETRY_EXC_ERR
	CQE_SYNDROME_REMOTE_ABORTED_ERR      = 0x22 // IB_WC_REM_ABORT_ERR
)

// CQE is a decoded struct mlx4_cqe, field by field as the structure has
// them; the methods read the bit fields.
type CQE struct {
	VlanMyQPN       uint32
	ImmedRSSInvalid uint32
	GMLPathRQPN     uint32
	SLVID           uint16
	RLID            uint16
	Status          uint16
	IPv6ExtMask     uint8
	BadFCSEnc       uint8
	ByteCnt         uint32
	WQEIndex        uint16
	Checksum        uint16 // for an error CQE: vendor_err_syndrome 15:8, syndrome 7:0
	Reserved        [3]byte
	Owner           bool  // owner_sr_opcode & CQE_OWNER_MASK
	IsSend          bool  // owner_sr_opcode & CQE_IS_SEND_MASK
	Opcode          uint8 // owner_sr_opcode & CQE_OPCODE_MASK
}

// QPN is the CQE's QP number (vlan_my_qpn & MLX4_CQE_QPN_MASK).
func (c *CQE) QPN() uint32 { return c.VlanMyQPN & CQE_QPN_MASK }

// GRH reports g_mlpath_rqpn's G bit.
func (c *CQE) GRH() bool { return c.GMLPathRQPN&CQE_G_MASK != 0 }

// SrcQPN is the sender's QPN of a UD receive (g_mlpath_rqpn 23:0).
func (c *CQE) SrcQPN() uint32 { return c.GMLPathRQPN & CQE_QPN_MASK }

// MLPath is g_mlpath_rqpn 30:24, the receive's DLID path bits.
func (c *CQE) MLPath() uint8 { return uint8(c.GMLPathRQPN >> CQEMLPathShift & CQEMLPathMask) }

// IsError reports an error CQE (opcode MLX4_CQE_OPCODE_ERROR).
func (c *CQE) IsError() bool { return c.Opcode == CQE_OPCODE_ERROR }

// Syndrome is struct mlx4_err_cqe's syndrome (CQE_SYNDROME_*).
func (c *CQE) Syndrome() uint8 { return uint8(c.Checksum) }

// VendorErr is struct mlx4_err_cqe's vendor_err_syndrome.
func (c *CQE) VendorErr() uint8 { return uint8(c.Checksum >> 8) }

// SetError makes c an error CQE with syndrome and vendor syndrome
// (struct mlx4_err_cqe's fields over checksum; the opcode
// MLX4_CQE_OPCODE_ERROR; IsSend stays as it is).
func (c *CQE) SetError(syndrome, vendor uint8) {
	c.Opcode = CQE_OPCODE_ERROR
	c.Checksum = uint16(vendor)<<8 | uint16(syndrome)
}

// CQEOffset is where the 32-byte struct mlx4_cqe sits in a CQ slot of
// entrySize bytes: 32 in a 64-byte slot, else 0.
func CQEOffset(entrySize int) int {
	if entrySize == 2*CQESize {
		return CQESize
	}
	return 0
}

// CQEOwner is the owner bit the device writes in the CQE of producer
// index n in a CQ of nent entries (a power of two): set on odd passes,
// !!(n & nent).
func CQEOwner(n, nent uint32) bool { return n&nent != 0 }

// CQEOwnerSW reports whether software owns CQE n of a CQ of nent entries
// whose owner bit reads owner: the kernel's get_sw_cqe and libmlx4's
// return the entry when (owner_sr_opcode & MLX4_CQE_OWNER_MASK) == !!(n &
// nent), NULL otherwise.
func CQEOwnerSW(owner bool, n, nent uint32) bool { return owner == CQEOwner(n, nent) }

// DecodeCQE decodes the struct mlx4_cqe at b[0:32]. Every bit pattern
// decodes; fewer than CQESize bytes is ErrShort.
func DecodeCQE(b []byte) (CQE, error) {
	var c CQE
	err := c.Decode(b)
	return c, err
}

// Decode is DecodeCQE into c, which it overwrites field by field: a
// polling loop's way, without a value returned and copied (a copy of a
// struct just stored field by field is a load the store buffer cannot
// forward).
func (c *CQE) Decode(b []byte) error {
	if len(b) < CQESize {
		*c = CQE{}
		return shortErr("CQE", len(b), CQESize)
	}
	b = b[:CQESize:CQESize] // constant offsets below: no bounds checks
	o := b[CQEOwnerSROpcode]
	c.VlanMyQPN, c.ImmedRSSInvalid, c.GMLPathRQPN = get32(b, CQEVlanMyQPN), get32(b, CQEImmedRSSInvalid), get32(b, CQEGMLPathRQPN)
	c.SLVID, c.RLID, c.Status = get16(b, CQESLVID), get16(b, CQERLID), get16(b, CQEStatus)
	c.IPv6ExtMask, c.BadFCSEnc = b[CQEIPv6ExtMask], b[CQEBadFCSEnc]
	c.ByteCnt, c.WQEIndex, c.Checksum = get32(b, CQEByteCnt), get16(b, CQEWQEIndex), get16(b, CQEChecksum)
	c.Reserved = [3]byte{b[CQEReserved], b[CQEReserved+1], b[CQEReserved+2]}
	c.Owner, c.IsSend, c.Opcode = o&CQE_OWNER_MASK != 0, o&CQE_IS_SEND_MASK != 0, o&CQE_OPCODE_MASK
	return nil
}

// EncodeCQE is DecodeCQE's inverse (owner_sr_opcode bit 5 is written 0).
func EncodeCQE(c CQE) [CQESize]byte {
	var b [CQESize]byte
	putCQE(&b, &c)
	return b
}
