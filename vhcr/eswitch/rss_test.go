package eswitch

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// msKey is the key of Microsoft's RSS verification suite.
var msKey = func() (k [mlx4.RSSKeySize]byte) {
	b, _ := hex.DecodeString("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")
	copy(k[:], b)
	return k
}()

// TestToeplitzVectors: Microsoft's verification suite ("Verifying the RSS
// Hash Calculation"), IPv4 and IPv6, with and without the TCP ports.
func TestToeplitzVectors(t *testing.T) {
	for _, c := range []struct {
		src, dst         string
		sport, dport     uint16
		withPorts, addrs uint32
	}{
		{"66.9.149.187", "161.142.100.80", 2794, 1766, 0x51ccc178, 0x323e8fc2},
		{"199.92.111.2", "65.69.140.83", 14230, 4739, 0xc626b0ea, 0xd718262a},
		{"24.19.198.95", "12.22.207.184", 12898, 38024, 0x5c2b394a, 0xd2d0a5de},
		{"3ffe:2501:200:1fff::7", "3ffe:2501:200:3::1", 2794, 1766, 0x40207d3d, 0x2cc18cd5},
		{"3ffe:501:8::260:97ff:fe40:efab", "ff02::1", 14230, 4739, 0xdde51bbf, 0x0f0c461c},
	} {
		s, d := netip.MustParseAddr(c.src).AsSlice(), netip.MustParseAddr(c.dst).AsSlice()
		in := append(append([]byte{}, s...), d...)
		if h := Toeplitz(&msKey, in); h != c.addrs {
			t.Errorf("%s > %s: %#x, want %#x", c.src, c.dst, h, c.addrs)
		}
		in = binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(in, c.sport), c.dport)
		if h := Toeplitz(&msKey, in); h != c.withPorts {
			t.Errorf("%s:%d > %s:%d: %#x, want %#x", c.src, c.sport, c.dst, c.dport, h, c.withPorts)
		}
	}
}

// ipv4TCP is an Ethernet frame (tagged if vid != 0) with an IPv4 TCP
// header from src:sport to dst:dport; proto 17 makes it UDP.
func ipv4TCP(vid uint16, src, dst string, sport, dport uint16, proto uint8) []byte {
	b := make([]byte, 14, 80)
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	if vid != 0 {
		b = append(b[:12], 0x81, 0, byte(vid>>8), byte(vid), 0x08, 0)
	}
	ip := make([]byte, 20)
	ip[0], ip[9] = 0x45, proto
	binary.BigEndian.PutUint16(ip[2:], 40)
	copy(ip[12:], netip.MustParseAddr(src).AsSlice())
	copy(ip[16:], netip.MustParseAddr(dst).AsSlice())
	l4 := make([]byte, 20)
	binary.BigEndian.PutUint16(l4, sport)
	binary.BigEndian.PutUint16(l4[2:], dport)
	return append(append(b, ip...), l4...)
}

// TestRSSSteer: mlx4_en's context (TCP and IP hashed, no UDP, Toeplitz,
// four rings) sends a TCP segment by its 4-tuple's hash to base + the
// hash's two low bits, tagged or not; a UDP datagram by its addresses'
// hash; an ARP frame to default_qpn unhashed; with MLX4_RSS_UDP_IPV4 UDP
// by its 4-tuple to base_qpn_udp's rings; RSSOf reads the context as
// mlx4_en_config_rss_steer writes it.
func TestRSSSteer(t *testing.T) {
	ctx := make([]byte, mlx4.RSSContextSize)
	binary.BigEndian.PutUint32(ctx[mlx4.RSSBaseQPN:], 2<<mlx4.RSSLogRingsShift|0x840)
	binary.BigEndian.PutUint32(ctx[mlx4.RSSDefaultQPN:], 0x840)
	binary.BigEndian.PutUint32(ctx[mlx4.RSSBaseQPNUDP:], 0x880)
	ctx[mlx4.RSSHashFn] = mlx4.RSS_HASH_TOP
	ctx[mlx4.RSSFlags] = mlx4.RSS_IPV4 | mlx4.RSS_TCP_IPV4 | mlx4.RSS_IPV6 | mlx4.RSS_TCP_IPV6
	copy(ctx[mlx4.RSSKey:], msKey[:])
	r := RSSOf(ctx)
	if r.BaseQPN != 0x840 || r.LogRings != 2 || r.DefaultQPN != 0x840 || r.Key != msKey {
		t.Fatalf("RSSOf: %+v", r)
	}
	for _, vid := range []uint16{0, 100} {
		qpn, h := r.Steer(ipv4TCP(vid, "66.9.149.187", "161.142.100.80", 2794, 1766, 6))
		if h != 0x51ccc178 || qpn != 0x840+0x51ccc178&3 {
			t.Errorf("TCP (VLAN %d): QPN %#x hash %#x", vid, qpn, h)
		}
	}
	if qpn, h := r.Steer(ipv4TCP(0, "66.9.149.187", "161.142.100.80", 2794, 1766, 17)); h != 0x323e8fc2 || qpn != 0x840+0x323e8fc2&3 {
		t.Errorf("UDP without UDP hashing: QPN %#x hash %#x, want its addresses' hash", qpn, h)
	}
	arp := make([]byte, 60)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	if qpn, h := r.Steer(arp); qpn != 0x840 || h != 0 {
		t.Errorf("ARP: QPN %#x hash %#x, want the default unhashed", qpn, h)
	}
	r.Flags |= mlx4.RSS_UDP_IPV4
	if qpn, h := r.Steer(ipv4TCP(0, "66.9.149.187", "161.142.100.80", 2794, 1766, 17)); h != 0x51ccc178 || qpn != 0x880+0x51ccc178&3 {
		t.Errorf("UDP with UDP hashing: QPN %#x hash %#x", qpn, h)
	}
}
