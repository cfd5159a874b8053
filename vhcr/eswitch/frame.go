package eswitch

import (
	"encoding/binary"
	"errors"
)

// Ethernet framing (IEEE 802.3, 802.1Q): what the switch reads of a frame.
// Frames carry no FCS here: mlx4_en neither writes one on send nor, unless
// asked (NETIF_F_RXFCS), receives one.
const (
	HeaderLen    = 14     // destination MAC, source MAC, EtherType
	TagLen       = 4      // TPID, TCI
	MinFrame     = 60     // ETH_ZLEN: the device pads a shorter frame it sends
	TPIDCVLAN    = 0x8100 // ETH_P_8021Q: a C-VLAN tag
	TPIDSVLAN    = 0x88a8 // ETH_P_8021AD: an S-VLAN tag
	offDst       = 0
	offSrc       = 6
	offType      = 12
	offTCI       = 14
	offInnerType = 16
	vidMask      = 0x0fff
	pcpShift     = 13
	deiBit       = 1 << 12
)

// ErrRunt is a frame shorter than its Ethernet header (14 bytes, 18 with
// a VLAN tag).
var ErrRunt = errors.New("eswitch: frame shorter than its Ethernet header")

// Header is a frame's Ethernet header as the switch reads it: one tag at
// most (the outer one) is parsed.
type Header struct {
	Dst, Src  uint64 // 48-bit MACs, the first byte on the wire the most significant
	Tagged    bool   // a tag follows the source MAC (TPID 0x8100 or 0x88a8)
	TPID      uint16 // the tag's TPID
	PCP       uint8  // the tag's priority (802.1p)
	DEI       bool   // the tag's drop-eligible bit
	VID       uint16 // the tag's VLAN; 0 on a tagged frame: priority-tagged
	EtherType uint16 // the EtherType after the tag, if any
	Len       int    // header bytes: 14, or 18 tagged
}

// PrioTagged reports a tag with VLAN 0 (802.1p priority only).
func (h *Header) PrioTagged() bool { return h.Tagged && h.VID == 0 }

// VLANTagged reports a tag with a VLAN other than 0.
func (h *Header) VLANTagged() bool { return h.Tagged && h.VID != 0 }

// MAC reads the 48-bit MAC at b[0:6].
func MAC(b []byte) uint64 {
	return uint64(b[0])<<40 | uint64(b[1])<<32 | uint64(b[2])<<24 | uint64(b[3])<<16 | uint64(b[4])<<8 | uint64(b[5])
}

// PutMAC writes the 48-bit MAC m into b[0:6].
func PutMAC(b []byte, m uint64) {
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(m>>40), byte(m>>32), byte(m>>24), byte(m>>16), byte(m>>8), byte(m)
}

// IsMulticast reports the group bit of a MAC (broadcast included).
func IsMulticast(m uint64) bool { return m>>40&1 != 0 }

// Broadcast is ff:ff:ff:ff:ff:ff.
const Broadcast uint64 = 1<<48 - 1

// ParseHeader reads the Ethernet header of frame b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, ErrRunt
	}
	h := Header{Dst: MAC(b[offDst:]), Src: MAC(b[offSrc:]), Len: HeaderLen}
	t := binary.BigEndian.Uint16(b[offType:])
	if t != TPIDCVLAN && t != TPIDSVLAN {
		h.EtherType = t
		return h, nil
	}
	if len(b) < HeaderLen+TagLen {
		return Header{}, ErrRunt
	}
	tci := binary.BigEndian.Uint16(b[offTCI:])
	h.Tagged, h.TPID, h.Len = true, t, HeaderLen+TagLen
	h.PCP, h.DEI, h.VID = uint8(tci>>pcpShift), tci&deiBit != 0, tci&vidMask
	h.EtherType = binary.BigEndian.Uint16(b[offInnerType:])
	return h, nil
}

// VID is the VLAN of tag control word tci.
func VID(tci uint16) uint16 { return tci & vidMask }

// TCI is a tag's control word: priority, DEI, VLAN.
func TCI(pcp uint8, dei bool, vid uint16) uint16 {
	t := uint16(pcp&7)<<pcpShift | vid&vidMask
	if dei {
		t |= deiBit
	}
	return t
}

// stripTag copies frame in, whose header h is tagged, into out without
// its tag. It returns the length.
func stripTag(out, in []byte) int {
	copy(out[:offType], in[:offType])
	return offType + copy(out[offType:], in[offType+TagLen:])
}

// pad zeroes out[n:MinFrame] when n is short of MinFrame and returns the
// frame's padded length (the device pads what it sends to ETH_ZLEN).
func pad(out []byte, n int) int {
	if n >= MinFrame {
		return n
	}
	clear(out[n:MinFrame])
	return MinFrame
}
