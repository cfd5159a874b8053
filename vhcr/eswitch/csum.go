package eswitch

import (
	"encoding/binary"
	"errors"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Transmit checksum offload: what the device computes for a send WQE
// whose control segment asks for it (MLX4_WQE_CTRL_IP_CSUM,
// MLX4_WQE_CTRL_TCP_UDP_CSUM; mlx4_en asks on every CHECKSUM_PARTIAL
// frame, with no offsets: the device parses the headers). The stack
// leaves a TCP or UDP checksum seeded with its pseudo-header's sum; the
// device computes it whole, as RFC 768 and RFC 793 (IPv4) and RFC 8200
// 8.1 (IPv6) define it, and the IPv4 header checksum (RFC 791).

// Header sizes and offsets of the IPv4, IPv6, TCP and UDP headers the
// offload reads (RFC 791, 8200, 793, 768).
const (
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86dd
	ipv4MinHdr     = 20
	ipv4TotalLen   = 2
	ipv4Proto      = 9
	ipv4Checksum   = 10
	ipv4Src        = 12
	ipv6Hdr        = 40
	ipv6PayloadLen = 4
	ipv6NextHdr    = 6
	ipv6Src        = 8
	protoTCP       = 6
	protoUDP       = 17
	tcpChecksum    = 16
	tcpMinHdr      = 20
	udpChecksum    = 6
	udpHdr         = 8
)

// ErrNoL4 is a frame whose checksum offload finds no IPv4 or IPv6 header
// (directly after the Ethernet header and its tags) carrying TCP or UDP:
// left as it is.
var ErrNoL4 = errors.New("eswitch: no IPv4/IPv6 TCP or UDP header to checksum")

// ChecksumOffload computes, in frame b, the IPv4 header checksum (ip) and
// the TCP or UDP checksum (l4) of its IP packet, after the Ethernet header
// and up to two tags. A frame it cannot parse is left unchanged
// (ErrNoL4, ErrRunt): the device then sends what the VF wrote.
func ChecksumOffload(b []byte, ip, l4 bool) error {
	off, et, err := l3(b)
	if err != nil {
		return err
	}
	switch et {
	case etherTypeIPv4:
		return ipv4Offload(b[off:], ip, l4)
	case etherTypeIPv6:
		if l4 {
			return ipv6Offload(b[off:])
		}
		return nil
	}
	return ErrNoL4
}

// l3 is the offset of the frame's L3 header and its EtherType, past up to
// two tags.
func l3(b []byte) (int, uint16, error) {
	if len(b) < HeaderLen {
		return 0, 0, ErrRunt
	}
	off, et := offType, binary.BigEndian.Uint16(b[offType:])
	for range 2 {
		if et != TPIDCVLAN && et != TPIDSVLAN {
			break
		}
		if off += TagLen; len(b) < off+2 {
			return 0, 0, ErrRunt
		}
		et = binary.BigEndian.Uint16(b[off:])
	}
	return off + 2, et, nil
}

func ipv4Offload(p []byte, ip, l4 bool) error {
	if len(p) < ipv4MinHdr || p[0]>>4 != 4 {
		return ErrNoL4
	}
	ihl := int(p[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(p[ipv4TotalLen:]))
	if ihl < ipv4MinHdr || total < ihl || total > len(p) {
		return ErrNoL4
	}
	if ip {
		p[ipv4Checksum], p[ipv4Checksum+1] = 0, 0
		binary.BigEndian.PutUint16(p[ipv4Checksum:], ^fold(sum(p[:ihl], 0)))
	}
	if !l4 {
		return nil
	}
	// A fragment other than the first has no L4 header.
	if binary.BigEndian.Uint16(p[6:])&0x1fff != 0 {
		return ErrNoL4
	}
	var pseudo [12]byte
	copy(pseudo[:8], p[ipv4Src:ipv4Src+8])
	pseudo[9] = p[ipv4Proto]
	binary.BigEndian.PutUint16(pseudo[10:], uint16(total-ihl))
	return l4Offload(p[ihl:total], p[ipv4Proto], sum(pseudo[:], 0))
}

func ipv6Offload(p []byte) error {
	if len(p) < ipv6Hdr || p[0]>>4 != 6 {
		return ErrNoL4
	}
	n := int(binary.BigEndian.Uint16(p[ipv6PayloadLen:]))
	if ipv6Hdr+n > len(p) {
		return ErrNoL4
	}
	var pseudo [40]byte
	copy(pseudo[:32], p[ipv6Src:ipv6Src+32])
	binary.BigEndian.PutUint32(pseudo[32:], uint32(n))
	pseudo[39] = p[ipv6NextHdr]
	return l4Offload(p[ipv6Hdr:ipv6Hdr+n], p[ipv6NextHdr], sum(pseudo[:], 0))
}

// l4Offload writes the TCP or UDP checksum of segment s (proto), the
// pseudo-header's partial sum ps: the field zeroed, the whole summed.
// UDP's computed 0 is sent as 0xffff (RFC 768).
func l4Offload(s []byte, proto uint8, ps uint32) error {
	var at int
	switch proto {
	case protoTCP:
		if len(s) < tcpMinHdr {
			return ErrNoL4
		}
		at = tcpChecksum
	case protoUDP:
		if len(s) < udpHdr {
			return ErrNoL4
		}
		at = udpChecksum
	default:
		return ErrNoL4
	}
	s[at], s[at+1] = 0, 0
	c := ^fold(sum(s, ps))
	if c == 0 && proto == protoUDP {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(s[at:], c)
	return nil
}

// sum adds b's 16-bit big-endian words (a last odd byte padded with zero)
// to acc, without folding.
func sum(b []byte, acc uint32) uint32 {
	for len(b) >= 2 {
		acc += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	return acc
}

// fold is the ones' complement sum of acc's 16-bit halves.
func fold(acc uint32) uint16 {
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}

// RxChecksum is what ConnectX-3 reports of a received frame's checksums
// in its CQE (mlx4.CQE_STATUS_*, the checksum field): IPv4 or IPv6, IPOK
// for an IPv4 header whose checksum verifies (and any IPv6 header), TCP
// or UDP, and a checksum field of mlx4.CQEChecksumOK when the segment's
// checksum verifies (else its ones' complement sum: mlx4_en then leaves
// it to the stack). Fragments and IPv4 options are flagged; a frame that
// is not IP reports 0, 0.
func RxChecksum(b []byte) (status, csum uint16) {
	off, et, err := l3(b)
	if err != nil {
		return 0, 0
	}
	p := b[off:]
	switch et {
	case etherTypeIPv4:
		return rxIPv4(p)
	case etherTypeIPv6:
		if len(p) < ipv6Hdr || p[0]>>4 != 6 {
			return 0, 0
		}
		status = mlx4.CQE_STATUS_IPV6 | mlx4.CQE_STATUS_IPOK
		n := int(binary.BigEndian.Uint16(p[ipv6PayloadLen:]))
		if ipv6Hdr+n > len(p) {
			return status, 0
		}
		var pseudo [40]byte
		copy(pseudo[:32], p[ipv6Src:ipv6Src+32])
		binary.BigEndian.PutUint32(pseudo[32:], uint32(n))
		pseudo[39] = p[ipv6NextHdr]
		l4s, c := rxL4(p[ipv6Hdr:ipv6Hdr+n], p[ipv6NextHdr], sum(pseudo[:], 0))
		return status | l4s, c
	}
	return 0, 0
}

func rxIPv4(p []byte) (status, csum uint16) {
	if len(p) < ipv4MinHdr || p[0]>>4 != 4 {
		return 0, 0
	}
	ihl := int(p[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(p[ipv4TotalLen:]))
	if ihl < ipv4MinHdr || total < ihl || total > len(p) {
		return mlx4.CQE_STATUS_IPV4, 0
	}
	status = mlx4.CQE_STATUS_IPV4
	if fold(sum(p[:ihl], 0)) == 0xffff {
		status |= mlx4.CQE_STATUS_IPOK
	}
	if ihl > ipv4MinHdr {
		status |= mlx4.CQE_STATUS_IPV4OPT
	}
	if binary.BigEndian.Uint16(p[6:])&0x3fff != 0 { // more fragments, or an offset
		return status | mlx4.CQE_STATUS_IPV4F, 0
	}
	var pseudo [12]byte
	copy(pseudo[:8], p[ipv4Src:ipv4Src+8])
	pseudo[9] = p[ipv4Proto]
	binary.BigEndian.PutUint16(pseudo[10:], uint16(total-ihl))
	l4s, c := rxL4(p[ihl:total], p[ipv4Proto], sum(pseudo[:], 0))
	return status | l4s, c
}

// rxL4 is the TCP or UDP status bit of segment s and its verification: the
// folded sum of the pseudo-header (ps) and the segment, 0xffff when the
// checksum holds. A UDP checksum of 0 (none sent over IPv4) verifies.
func rxL4(s []byte, proto uint8, ps uint32) (uint16, uint16) {
	switch proto {
	case protoTCP:
		if len(s) < tcpMinHdr {
			return 0, 0
		}
		return mlx4.CQE_STATUS_TCP, fold(sum(s, ps))
	case protoUDP:
		if len(s) < udpHdr {
			return 0, 0
		}
		if binary.BigEndian.Uint16(s[udpChecksum:]) == 0 {
			return mlx4.CQE_STATUS_UDP, mlx4.CQEChecksumOK
		}
		return mlx4.CQE_STATUS_UDP, fold(sum(s, ps))
	}
	return 0, 0
}
