package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// rssRX gives VF vf of r mlx4_en's RX side with n rings (n a power of
// two): n ring QPs on consecutive QPNs, each with receive WQEs, and the
// RSS indirection QP over them (TCP and IP over IPv4 and IPv6 hashed,
// Toeplitz, default_qpn the first ring), attached to the VF's MAC. It
// returns the rings and the context.
func (r *ethRig) rssRX(vf, n int, key byte) ([]*tqp, []byte) {
	r.d.t.Helper()
	v := r.vfs[vf]
	base := v.mustAlloc(restrack.QP, resOpReserve, uint64(n))
	var rings []*tqp
	for i := range n {
		q := v.qp(qpOpts{st: mlx4.QP_ST_MLX, sqStride: 2, rqLogS: 0, qpn: base + uint32(i)})
		q.connect(0, 0)
		for range 4 {
			q.recv(sge(r.keys[vf], ethVA+2048, 2048))
		}
		rings = append(rings, q)
	}
	ctx := make([]byte, mlx4.RSSContextSize)
	log := 0
	for 1<<log < n {
		log++
	}
	binary.BigEndian.PutUint32(ctx[mlx4.RSSBaseQPN:], uint32(log)<<mlx4.RSSLogRingsShift|base)
	binary.BigEndian.PutUint32(ctx[mlx4.RSSDefaultQPN:], base)
	ctx[mlx4.RSSHashFn] = mlx4.RSS_HASH_TOP
	ctx[mlx4.RSSFlags] = mlx4.RSS_IPV4 | mlx4.RSS_TCP_IPV4 | mlx4.RSS_IPV6 | mlx4.RSS_TCP_IPV6
	for i := range mlx4.RSSKeySize {
		ctx[mlx4.RSSKey+i] = key + byte(i*37)
	}
	indir := v.qp(qpOpts{st: mlx4.QP_ST_MLX, sqStride: 2, rss: ctx})
	indir.connect(0, 0)
	gid := make([]byte, 16)
	gid[ethGIDPort], gid[ethGIDSteer] = 1, 2
	eswitch.PutMAC(gid[ethGIDMAC:], r.d.h.VFMAC(vf, 1))
	v.must(v.run(v.cmd(mlx4.QP_ATTACH, 0, indir.qpn|mcgProtETH<<28, 1, gid, false)), "QP_ATTACH")
	return rings, ctx
}

// tcpFrame is an IPv4 TCP segment to dst from port sport.
func tcpFrame(dst uint64, sport uint16) []byte {
	f := ethFrame(dst, 0x02aabbccdd01, 74)
	ip := f[14:]
	ip[0], ip[9] = 0x45, 6
	binary.BigEndian.PutUint16(ip[2:], 60)
	ip[6], ip[7] = 0, 0 // not a fragment
	copy(ip[12:], []byte{10, 79, 0, 254, 10, 79, 0, 2})
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], 5001)
	return f
}

// TestEthRSS: a frame steered to mlx4_en's RSS indirection QP lands on
// the ring its context's Toeplitz hash picks (base + the hash's low
// bits), the hash in the ring's CQE (mlx4_en's skb hash); flows spread
// over both rings; a frame with nothing to hash (ARP) goes to
// default_qpn with hash 0; a context whose rings are not the VF's QPs
// delivers nothing and costs the other VF nothing.
func TestEthRSS(t *testing.T) {
	r := newEthRig(t)
	h := r.d.h
	rings, ctx := r.rssRX(1, 2, 0x6d)
	rs := eswitch.RSSOf(ctx)
	perRing := map[uint32]int{}
	for i := range 6 {
		sport := uint16(40000 + 977*i)
		f := tcpFrame(h.VFMAC(1, 1), sport)
		want, hash := rs.Steer(f)
		h.ReceiveFrame(1, f)
		h.ServiceUplink()
		c := r.rxCQEs(1)
		if len(c) != 1 || c[0].VlanMyQPN&mlx4.CQE_QPN_MASK != want || c[0].ImmedRSSInvalid != hash || hash == 0 {
			t.Fatalf("port %d: CQEs %+v, want one on QP %#x with hash %#x", sport, c, want, hash)
		}
		perRing[want]++
		// Keep each ring's receive WQEs posted.
		for _, q := range rings {
			if q.qpn == want {
				q.recv(sge(r.keys[1], ethVA+2048, 2048))
			}
		}
	}
	if len(perRing) != 2 {
		t.Fatalf("six flows on the rings %v: want both rings used", perRing)
	}
	arp := ethFrame(h.VFMAC(1, 1), 0x02aabbccdd01, 60)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	h.ReceiveFrame(1, arp)
	h.ServiceUplink()
	if c := r.rxCQEs(1); len(c) != 1 || c[0].VlanMyQPN&mlx4.CQE_QPN_MASK != rings[0].qpn || c[0].ImmedRSSInvalid != 0 {
		t.Fatalf("ARP: CQEs %+v, want one on the default ring with no hash", c)
	}

	// VF 0's context naming VF 1's rings: nothing delivered, counted.
	r0 := newEthRig(t)
	h0 := r0.d.h
	theirs, _ := r0.rssRX(1, 2, 1)
	_, ctx0 := r0.rssRX(0, 2, 1)
	binary.BigEndian.PutUint32(ctx0[mlx4.RSSBaseQPN:], 1<<mlx4.RSSLogRingsShift|theirs[0].qpn)
	binary.BigEndian.PutUint32(ctx0[mlx4.RSSDefaultQPN:], theirs[0].qpn)
	forged := r0.vfs[0].qp(qpOpts{st: mlx4.QP_ST_MLX, sqStride: 2, rss: ctx0})
	forged.connect(0, 0)
	gid := make([]byte, 16)
	gid[ethGIDPort], gid[ethGIDSteer] = 1, 2
	eswitch.PutMAC(gid[ethGIDMAC:], 0x02c9000000ee)
	// Attached to a MAC only it has (its own would reach its good context too).
	r0.vfs[0].must(r0.vfs[0].run(r0.vfs[0].cmd(mlx4.QP_ATTACH, 0, forged.qpn|mcgProtETH<<28, 1, gid, false)), "QP_ATTACH")
	before := h0.EngineStats(0).EthRxNoWQE.Load()
	h0.ReceiveFrame(1, tcpFrame(0x02c9000000ee, 40000))
	h0.ServiceUplink()
	if got := r0.rxCQEs(1); len(got) != 0 || h0.EngineStats(0).EthRxNoWQE.Load() != before+1 {
		t.Fatalf("a context naming VF 1's rings: VF 1's CQEs %+v, VF 0's drops %d", got, h0.EngineStats(0).EthRxNoWQE.Load()-before)
	}
}
