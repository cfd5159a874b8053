package mad

import (
	"encoding/binary"
	"fmt"
)

// The headers of a UD packet (IBA 7.7 LRH, 8.3 GRH, 9.2 BTH, 9.3.3 DETH)
// as a software-built header holds them: what an MLX send WQE carries
// before its payload (mlx4_ib's build_mlx_header and
// build_sriov_qp0_header, packed by ib_ud_header_pack).
const (
	LRHSize  = 8
	BTHSize  = 12
	DETHSize = 8
	// The other transport headers (IBA 9.3) and the ICRC, for the size of
	// a packet on the wire (PacketWords).
	RETHSize         = 16 // RDMA: virtual address, R_Key, DMA length
	AtomicETHSize    = 28 // virtual address, R_Key, swap/add and compare data
	AETHSize         = 4  // acknowledge: syndrome, MSN
	AtomicAckETHSize = 8  // the original remote data
	ImmDtSize        = 4  // immediate data
	ICRCSize         = 4

	lrhLNHMask  = 0x03 // byte 1: link next header
	lnhIBALocal = 2    // BTH follows
	lnhIBAGlob  = 3    // GRH follows
	lrhDLID     = 2
	lrhSLID     = 6
	bthOpcodeUD = 0x64 // UD SEND only
	bthOpUDImm  = 0x65 // UD SEND only with immediate
	bthPKey     = 2
	bthDestQP   = 4
	dethQKey    = 0
	dethSrcQP   = 4
)

// UDHeader is a decoded LRH, optional GRH, BTH and DETH.
type UDHeader struct {
	SL         uint8
	VL         uint8
	DLID, SLID uint16
	HasGRH     bool
	GRH        GRH
	PKey       uint16
	DestQP     uint32
	QKey       uint32
	SrcQP      uint32
	Imm        bool // SEND only with immediate: 4 more bytes before the payload
}

// DecodeUDHeader decodes the headers at the start of b and returns them and
// their length (the payload's offset). A header that is not IBA's (LNH not
// 2 or 3), a BTH that is not a UD SEND, or fewer bytes than the headers is
// an error.
func DecodeUDHeader(b []byte) (UDHeader, int, error) {
	var h UDHeader
	if len(b) < LRHSize {
		return h, 0, short("LRH", len(b), LRHSize)
	}
	h.VL, h.SL = b[0]>>4, b[1]>>4
	h.DLID, h.SLID = binary.BigEndian.Uint16(b[lrhDLID:]), binary.BigEndian.Uint16(b[lrhSLID:])
	n := LRHSize
	switch b[1] & lrhLNHMask {
	case lnhIBALocal:
	case lnhIBAGlob:
		if err := h.GRH.Decode(b[n:]); err != nil {
			return h, 0, err
		}
		h.HasGRH = true
		n += GRHSize
	default:
		return h, 0, fmt.Errorf("mad: LRH: LNH %d is not IBA's: %w", b[1]&lrhLNHMask, ErrInvalid)
	}
	if len(b) < n+BTHSize+DETHSize {
		return h, 0, short("BTH and DETH", len(b)-n, BTHSize+DETHSize)
	}
	bth := b[n:]
	switch bth[0] {
	case bthOpcodeUD:
	case bthOpUDImm:
		h.Imm = true
	default:
		return h, 0, fmt.Errorf("mad: BTH: opcode %#x is not a UD SEND: %w", bth[0], ErrInvalid)
	}
	h.PKey = binary.BigEndian.Uint16(bth[bthPKey:])
	h.DestQP = binary.BigEndian.Uint32(bth[bthDestQP:]) & 0xffffff
	n += BTHSize
	h.QKey = binary.BigEndian.Uint32(b[n+dethQKey:])
	h.SrcQP = binary.BigEndian.Uint32(b[n+dethSrcQP:]) & 0xffffff
	n += DETHSize
	if h.Imm {
		if len(b) < n+4 {
			return h, 0, short("immediate data", len(b)-n, 4)
		}
		n += 4
	}
	return h, n, nil
}
