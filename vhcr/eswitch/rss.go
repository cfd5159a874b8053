package eswitch

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Receive side scaling: an RSS indirection QP (mlx4_en's with more than
// one RX ring) takes a frame the switch steered to it and hands it to one
// of its rings by a hash of its headers, which the ring's CQE reports
// (immed_rss_invalid: mlx4_en's skb hash). What is hashed is as the
// context's flags say, in Microsoft RSS's order (source address,
// destination address, then source and destination port): an IPv4 or
// IPv6 TCP segment its 4-tuple with MLX4_RSS_TCP_*, a UDP datagram its
// 4-tuple with MLX4_RSS_UDP_* (to base_qpn_udp's rings), else the packet's
// address pair with MLX4_RSS_IPV4 or _IPV6 (a fragment too); anything
// else goes to default_qpn unhashed.

// RSS is an RSS context (mlx4.RSSContextSize bytes of an RSS QP's
// context).
type RSS struct {
	BaseQPN, BaseQPNUDP uint32 // the rings: BaseQPN + hash's low LogRings bits
	LogRings            uint8
	DefaultQPN          uint32
	HashFn, Flags       uint8
	Key                 [mlx4.RSSKeySize]byte
}

// RSSOf reads the context from b, the mlx4.RSSContextSize bytes at
// mlx4.RSS_OFFSET_IN_QPC_PRI_PATH of a QP context's primary path.
func RSSOf(b []byte) RSS {
	base := binary.BigEndian.Uint32(b[mlx4.RSSBaseQPN:])
	r := RSS{BaseQPN: base & 0xffffff, LogRings: uint8(base >> mlx4.RSSLogRingsShift & 0x1f),
		DefaultQPN: binary.BigEndian.Uint32(b[mlx4.RSSDefaultQPN:]) & 0xffffff,
		BaseQPNUDP: binary.BigEndian.Uint32(b[mlx4.RSSBaseQPNUDP:]) & 0xffffff,
		HashFn:     b[mlx4.RSSHashFn], Flags: b[mlx4.RSSFlags]}
	copy(r.Key[:], b[mlx4.RSSKey:mlx4.RSSKey+mlx4.RSSKeySize])
	return r
}

// Steer is where the context sends frame b (as it arrives, tags
// included): the ring's QPN and the hash its CQE reports (0: not hashed,
// default_qpn).
func (r *RSS) Steer(b []byte) (qpn, hash uint32) {
	var in [36]byte // the largest input: two IPv6 addresses and two ports
	n, udp := r.input(b, in[:])
	if n == 0 {
		return r.DefaultQPN, 0
	}
	if r.HashFn == mlx4.RSS_HASH_TOP {
		hash = Toeplitz(&r.Key, in[:n])
	} else {
		// XOR: the input's 32-bit words folded (n is 8, 12, 32 or 36).
		for i := 0; i+4 <= n; i += 4 {
			hash ^= binary.BigEndian.Uint32(in[i:])
		}
	}
	base := r.BaseQPN
	if udp {
		base = r.BaseQPNUDP
	}
	return base + hash&(1<<r.LogRings-1), hash
}

// input writes the hashed bytes of frame b into in and returns how many
// (0: none), and whether they are a UDP 4-tuple.
func (r *RSS) input(b []byte, in []byte) (int, bool) {
	off, et, err := l3(b)
	if err != nil {
		return 0, false
	}
	p := b[off:]
	var addr, proto int
	var frag bool
	var tcpF, udpF, ipF uint8
	switch {
	case et == etherTypeIPv4 && len(p) >= ipv4MinHdr && p[0]>>4 == 4:
		ihl := int(p[0]&0xf) * 4
		if ihl < ipv4MinHdr || len(p) < ihl {
			return 0, false
		}
		addr, proto, frag = 4, int(p[ipv4Proto]), binary.BigEndian.Uint16(p[6:])&0x3fff != 0
		copy(in, p[ipv4Src:ipv4Src+8])
		p = p[ihl:]
		tcpF, udpF, ipF = mlx4.RSS_TCP_IPV4, mlx4.RSS_UDP_IPV4, mlx4.RSS_IPV4
	case et == etherTypeIPv6 && len(p) >= ipv6Hdr && p[0]>>4 == 6:
		addr, proto = 16, int(p[ipv6NextHdr])
		copy(in, p[ipv6Src:ipv6Src+32])
		p = p[ipv6Hdr:]
		tcpF, udpF, ipF = mlx4.RSS_TCP_IPV6, mlx4.RSS_UDP_IPV6, mlx4.RSS_IPV6
	default:
		return 0, false
	}
	ports := !frag && len(p) >= 4
	switch {
	case ports && proto == protoTCP && r.Flags&tcpF != 0:
		return 2*addr + copy(in[2*addr:], p[:4]), false
	case ports && proto == protoUDP && r.Flags&udpF != 0:
		return 2*addr + copy(in[2*addr:], p[:4]), true
	case r.Flags&ipF != 0:
		return 2 * addr, false
	}
	return 0, false
}

// Toeplitz is the Toeplitz hash of in under key (Microsoft's RSS
// hash): for each bit of in that is set, the 32 bits of key that start
// at that bit are XORed in.
func Toeplitz(key *[mlx4.RSSKeySize]byte, in []byte) uint32 {
	var h uint32
	v := binary.BigEndian.Uint32(key[:]) // the window: key bits i .. i+31
	for i, c := range in {
		next := key[i+4] // the key byte that shifts in over this byte
		if i+4 >= len(key) {
			next = 0
		}
		for bit := 7; bit >= 0; bit-- {
			if c>>bit&1 != 0 {
				h ^= v
			}
			v = v<<1 | uint32(next>>bit&1)
		}
	}
	return h
}
