package eswitch

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// udp4 is an Ethernet frame (tags as given) with an IPv4 header of 20
// bytes and a UDP datagram of payload bytes, checksums seeded as Linux
// leaves them for CHECKSUM_PARTIAL (the IP checksum 0, the UDP one the
// pseudo-header's sum).
func udp4(payload int, proto uint8, tags ...uint16) []byte {
	f := frame(Broadcast, macVF, 0, tags...)
	f = f[:len(f)-2]
	f = binary.BigEndian.AppendUint16(f, etherTypeIPv4)
	l4 := udpHdr
	if proto == protoTCP {
		l4 = tcpMinHdr
	}
	ip := make([]byte, ipv4MinHdr+l4+payload)
	ip[0], ip[8], ip[9] = 0x45, 64, proto
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	copy(ip[12:], []byte{10, 79, 0, 1, 10, 79, 0, 255})
	for i := ipv4MinHdr + l4; i < len(ip); i++ {
		ip[i] = byte(i * 7)
	}
	binary.BigEndian.PutUint16(ip[20:], 40000)
	binary.BigEndian.PutUint16(ip[22:], 9)
	if proto == protoUDP {
		binary.BigEndian.PutUint16(ip[24:], uint16(l4+payload))
	} else {
		ip[20+12] = 5 << 4 // data offset: 20 bytes
	}
	return append(f, ip...)
}

// verify4 checks an IPv4 frame's header and L4 checksums the way a
// receiver does: each sum, the checksum included, folds to 0xffff.
func verify4(t *testing.T, f []byte) {
	t.Helper()
	off, _, _ := l3(f)
	p := f[off:]
	ihl := int(p[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(p[2:]))
	if c := fold(sum(p[:ihl], 0)); c != 0xffff {
		t.Fatalf("IPv4 header sums to %#x", c)
	}
	var ps [12]byte
	copy(ps[:8], p[12:20])
	ps[9] = p[9]
	binary.BigEndian.PutUint16(ps[10:], uint16(total-ihl))
	if c := fold(sum(p[ihl:total], sum(ps[:], 0))); c != 0xffff {
		t.Fatalf("L4 segment sums to %#x", c)
	}
}

func TestChecksumOffload(t *testing.T) {
	for _, c := range []struct {
		name string
		f    []byte
	}{
		{"UDP over IPv4", udp4(100, protoUDP)},
		{"UDP, odd length", udp4(101, protoUDP)},
		{"TCP over IPv4", udp4(1000, protoTCP)},
		{"UDP, tagged", udp4(60, protoUDP, TPIDCVLAN, 100)},
		{"UDP, two tags", udp4(60, protoUDP, TPIDSVLAN, 100, TPIDCVLAN, 7)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := ChecksumOffload(c.f, true, true); err != nil {
				t.Fatal(err)
			}
			verify4(t, c.f)
		})
	}
	// IPv6: UDP with its pseudo-header.
	f := frame(Broadcast, macVF, 0)
	f = binary.BigEndian.AppendUint16(f[:len(f)-2], etherTypeIPv6)
	ip6 := make([]byte, ipv6Hdr+udpHdr+33)
	ip6[0], ip6[6], ip6[7] = 0x60, protoUDP, 64
	binary.BigEndian.PutUint16(ip6[4:], udpHdr+33)
	ip6[8], ip6[9], ip6[23], ip6[24], ip6[25], ip6[39] = 0xfe, 0x80, 1, 0xff, 0x02, 1
	binary.BigEndian.PutUint16(ip6[ipv6Hdr+4:], udpHdr+33)
	for i := ipv6Hdr + udpHdr; i < len(ip6); i++ {
		ip6[i] = byte(i)
	}
	f = append(f, ip6...)
	if err := ChecksumOffload(f, true, true); err != nil {
		t.Fatal(err)
	}
	p := f[HeaderLen:]
	var ps [40]byte
	copy(ps[:32], p[8:40])
	binary.BigEndian.PutUint32(ps[32:], udpHdr+33)
	ps[39] = protoUDP
	if c := fold(sum(p[40:], sum(ps[:], 0))); c != 0xffff {
		t.Fatalf("IPv6 UDP sums to %#x", c)
	}
	// Not IP, not TCP/UDP, cut short: left as they are.
	arp := frame(Broadcast, macVF, 28)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	icmp := udp4(56, 1)
	for _, b := range [][]byte{arp, icmp, udp4(100, protoUDP)[:30]} {
		was := append([]byte(nil), b...)
		if err := ChecksumOffload(b, false, true); !errors.Is(err, ErrNoL4) && !errors.Is(err, ErrRunt) || string(b) != string(was) {
			t.Fatalf("%v, frame changed %v", err, string(b) != string(was))
		}
	}
}

// FuzzChecksumOffload: any frame; an offload that succeeds leaves sums
// a receiver accepts (IPv4).
func FuzzChecksumOffload(f *testing.F) {
	f.Add(udp4(100, protoUDP), true, true)
	f.Add(udp4(3, protoTCP, TPIDCVLAN, 5), false, true)
	f.Add([]byte{1, 2, 3}, true, false)
	f.Fuzz(func(t *testing.T, b []byte, ip, l4 bool) {
		if ChecksumOffload(b, ip, l4) != nil || !ip || !l4 {
			return
		}
		if off, et, err := l3(b); err == nil && et == etherTypeIPv4 && binary.BigEndian.Uint16(b[off+6:])&0x1fff == 0 {
			verify4(t, b)
		}
	})
}

// TestRxChecksum: what the receive CQE says of a frame's checksums: good
// after the offload (UDP, TCP, IPv6 UDP), a corrupted segment not
// CQEChecksumOK, a corrupted IPv4 header without IPOK, a fragment, not IP.
func TestRxChecksum(t *testing.T) {
	good := func(b []byte) []byte {
		if err := ChecksumOffload(b, true, true); err != nil {
			t.Fatal(err)
		}
		return b
	}
	const v4ok = mlx4.CQE_STATUS_IPV4 | mlx4.CQE_STATUS_IPOK
	bad := good(udp4(100, protoUDP))
	bad[len(bad)-1]++
	badIP := good(udp4(100, protoUDP))
	badIP[HeaderLen+8]++ // the TTL
	frag := good(udp4(100, protoUDP))
	frag[HeaderLen+6] = 0x20 // more fragments
	arp := frame(Broadcast, macVF, 28)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	for _, c := range []struct {
		name         string
		f            []byte
		status, csum uint16
		okCsum       bool
	}{
		{"UDP", good(udp4(100, protoUDP)), v4ok | mlx4.CQE_STATUS_UDP, 0, true},
		{"TCP, tagged", good(udp4(999, protoTCP, TPIDCVLAN, 5)), v4ok | mlx4.CQE_STATUS_TCP, 0, true},
		{"UDP, corrupted", bad, v4ok | mlx4.CQE_STATUS_UDP, 0, false},
		// The TTL is not in the UDP checksum: the segment verifies, the
		// header does not (no IPOK: not CHECKSUM_UNNECESSARY).
		{"IPv4 header corrupted", badIP, mlx4.CQE_STATUS_IPV4 | mlx4.CQE_STATUS_UDP, 0, true},
		{"a fragment (its header changed after the offload)", frag, mlx4.CQE_STATUS_IPV4 | mlx4.CQE_STATUS_IPV4F, 0, false},
		{"ARP", arp, 0, 0, false},
	} {
		st, cs := RxChecksum(c.f)
		if st != c.status || (cs == mlx4.CQEChecksumOK) != c.okCsum {
			t.Errorf("%s: status %#x checksum %#x, want status %#x, checksum good %v", c.name, st, cs, c.status, c.okCsum)
		}
	}
}
