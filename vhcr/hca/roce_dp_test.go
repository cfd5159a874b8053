package hca

import (
	"bytes"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// roceRig: port 1 Ethernet, two VFs (VST as given), each with its MAC
// registered (ALLOC_RES RES_MAC, as mlx4_en does), its default GID in its
// slice of the port's table (SET_PORT GID_TABLE, as mlx4_ib does) and a
// region.
type roceRig struct {
	d    *dpRig
	vfs  [2]*tvf
	smac [2]uint8 // the MAC's index in the port's table
	gid  [2][16]byte
	keys [2]uint32
	mem  [2]uint64
}

func newRoCERig(t testing.TB, vst [2]*config.VST) *roceRig {
	t.Helper()
	r := &roceRig{}
	r.d = newDPRig(t, 2, func(c *config.Config) {
		c.Ports[0].LinkLayer = "eth"
		c.VFs.Overrides = map[string]config.VF{}
		for vf, v := range vst {
			if v != nil {
				c.VFs.Overrides[string(rune('0'+vf))] = config.VF{VST: v}
			}
		}
	})
	for vf := range 2 {
		if err := r.d.h.ActivateVF(vf); err != nil {
			t.Fatal(err)
		}
		v := r.d.setup(vf)
		r.vfs[vf] = v
		c := v.cmd(mlx4.ALLOC_RES, r.d.h.VFMAC(vf, 1), uint32(restrack.MAC)|1<<8, resOpReserveAndMap, nil, false)
		v.must(v.run(c), "ALLOC_RES MAC")
		r.smac[vf] = uint8(c.OutParam)
		g := r.defaultGID(vf)
		r.gid[vf] = g
		v.must(v.run(v.cmd(mlx4.SET_PORT, 0, mlx4.SET_PORT_GID_TABLE<<mlx4.SetPortTypeShift|1, mlx4.SET_PORT_ETH_OPCODE, g[:], false)), "SET_PORT GID_TABLE")
		r.keys[vf], r.mem[vf] = v.mr(0x700000, 1, permAll, v.pd)
	}
	return r
}

// defaultGID is the GID roce_gid_mgmt gives VF vf's netdev first: fe80::
// and the EUI-64 of its MAC.
func (r *roceRig) defaultGID(vf int) (g [16]byte) {
	mac := make([]byte, 6)
	eswitch.PutMAC(mac, r.d.h.VFMAC(vf, 1))
	g[0], g[1] = 0xfe, 0x80
	g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15] = mac[0]^2, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]
	return g
}

// rc is an RC QP of VF vf towards VF peer's QP rqpn as mlx4_ib writes its
// RoCE path: the GRH on, GID index 0 of the VF's (update_gid adds its
// base), the source MAC index, the peer's GID and MAC.
func (r *roceRig) rc(vf, peer int) *tqp {
	q := r.vfs[vf].qp(qpOpts{st: mlx4.QP_ST_RC})
	q.ctx.Pri.GRH, q.ctx.Pri.SMACIndex, q.ctx.Pri.MGIDIndex, q.ctx.Pri.HopLimit = true, r.smac[vf], 0, 1
	q.ctx.Pri.RGID = r.gid[peer]
	eswitch.PutMAC(q.ctx.Pri.DMAC[:], r.d.h.VFMAC(peer, 1))
	return q
}

// TestRoCERCBetweenVFs: an RC SEND over RoCE from VF 0 to VF 1 arrives by
// the path's MAC and GID (no LIDs: the CQE's rlid 0), and the reply the
// other way; the QPs' GID indexes are the port table's, each VF's base
// added.
func TestRoCERCBetweenVFs(t *testing.T) {
	r := newRoCERig(t, [2]*config.VST{})
	a, b := r.rc(0, 1), r.rc(1, 0)
	a.connect(b.qpn, 0)
	b.connect(a.qpn, 0)
	base0, _ := r.d.h.gidSlice(0, 1)
	if got := a.obj().wq.sgidIdx; int(got) != base0 {
		t.Fatalf("VF 0's QP names GID %d of the table, want its base %d", got, base0)
	}
	msg := []byte("roce from VF 0")
	r.vfs[0].fill(r.mem[0], msg)
	b.recv(sge(r.keys[1], 0x700000+1024, 256))
	a.post(send(mlx4.OPCODE_SEND, sge(r.keys[0], 0x700000, uint32(len(msg)))), nil)
	if n := a.run(4); n != 1 {
		t.Fatalf("%d WQEs ran", n)
	}
	if got := r.vfs[1].read(r.mem[1]+1024, len(msg)); !bytes.Equal(got, msg) {
		t.Fatalf("VF 1 got %q", got)
	}
	var recv, sent int
	for _, g := range r.d.take() {
		switch {
		case g.e.IsError():
			t.Fatalf("error CQE %+v", g.e)
		case g.e.IsSend:
			sent++
		default:
			recv++
			if g.e.ByteCnt != uint32(len(msg)) || g.e.RLID != 0 {
				t.Fatalf("receive CQE %+v", g.e)
			}
		}
	}
	if recv != 1 || sent != 1 {
		t.Fatalf("%d receive and %d send CQEs", recv, sent)
	}
	// Nothing allocates per WQE on the RoCE path either (the queues are
	// eight deep: seven WQEs, one per run, AllocsPerRun's warm-up one).
	for range 7 {
		b.recv(sge(r.keys[1], 0x700000+1024, 256))
		a.post(send(mlx4.OPCODE_SEND, sge(r.keys[0], 0x700000, 64)), nil)
	}
	if n := testing.AllocsPerRun(6, func() {
		if a.run(1) != 1 {
			t.Fatal("no send ran")
		}
	}); n != 0 {
		t.Fatalf("%.1f allocations per RoCE SEND", n)
	}
}

// TestRoCERCLost: an RC packet nobody takes on the port is lost, as on a
// wire: the sender retries after its ACK timeout until transport retry
// exceeded — a GID that is not the peer VF's, a MAC no VF has, a QP of
// another VF than the MAC's, the peer's link forced down, and a VST VF's
// tagged packet to a VGT VF's untagged QP.
func TestRoCERCLost(t *testing.T) {
	for _, c := range []struct {
		name string
		vst  [2]*config.VST
		edit func(r *roceRig, a, b *tqp)
	}{
		{"another GID", [2]*config.VST{}, func(r *roceRig, a, b *tqp) { a.ctx.Pri.RGID[15] ^= 1 }},
		{"a MAC no VF has", [2]*config.VST{}, func(r *roceRig, a, b *tqp) { a.ctx.Pri.DMAC[5] ^= 0x40 }},
		{"VF 0's own MAC to VF 1's QP", [2]*config.VST{}, func(r *roceRig, a, b *tqp) {
			eswitch.PutMAC(a.ctx.Pri.DMAC[:], r.d.h.VFMAC(0, 1))
			a.ctx.Pri.RGID = r.gid[0]
		}},
		{"the peer's link down", [2]*config.VST{}, func(r *roceRig, a, b *tqp) {
			down := "disable"
			if _, err := r.d.h.SetVF(1, VFSettingsChange{LinkState: &down}); err != nil {
				r.d.t.Fatal(err)
			}
		}},
		{"VST to VGT", [2]*config.VST{{VLAN: 100}, nil}, func(r *roceRig, a, b *tqp) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRoCERig(t, c.vst)
			a, b := r.rc(0, 1), r.rc(1, 0)
			c.edit(r, a, b)
			a.connect(b.qpn, 0)
			b.connect(a.qpn, 0)
			b.recv(sge(r.keys[1], 0x700000+1024, 256))
			a.post(send(mlx4.OPCODE_SEND, sge(r.keys[0], 0x700000, 8)), nil)
			a.settle(4)
			wantCQE(t, r.d.take(), eCQE(r.vfs[0].cq, a.qpn, 0, true, mlx4.CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR))
			if n := r.d.h.EngineStats(0).TransportRetries.Load(); n == 0 {
				t.Fatal("no retry counted")
			}
		})
	}
}

// TestRoCEVSTPair: two VFs in VST on the same VLAN reach each other over
// RoCE (the forced tag on both ends); on different VLANs they do not.
func TestRoCEVSTPair(t *testing.T) {
	for _, c := range []struct {
		vlan1 int
		ok    bool
	}{{100, true}, {200, false}} {
		r := newRoCERig(t, [2]*config.VST{{VLAN: 100, QoS: 3}, {VLAN: c.vlan1}})
		a, b := r.rc(0, 1), r.rc(1, 0)
		a.connect(b.qpn, 0)
		b.connect(a.qpn, 0)
		b.recv(sge(r.keys[1], 0x700000+1024, 256))
		a.post(send(mlx4.OPCODE_SEND, sge(r.keys[0], 0x700000, 8)), nil)
		a.settle(4)
		var recv int
		for _, g := range r.d.take() {
			if !g.e.IsSend && !g.e.IsError() {
				recv++
			}
		}
		if (recv == 1) != c.ok {
			t.Errorf("VST 100 to VST %d: %d receives, want delivered %v", c.vlan1, recv, c.ok)
		}
	}
}

// TestRoCEUD: a UD datagram over RoCE goes by the datagram segment's MAC
// and the AV's DGID; the receiver's buffer starts with the GRH, whose
// source GID is the sender VF's first GID (update_gid forced the UD QP's
// mgid_index to its base) and whose DGID the AV's; the CQE has the G bit,
// rlid 0 and the priority as its SL; a datagram to a MAC no VF has, with
// a DGID not the receiver's, or whose AV names another port than the QP's
// Ethernet port, is dropped and counted.
func TestRoCEUD(t *testing.T) {
	r := newRoCERig(t, [2]*config.VST{})
	var q [2]*tqp
	for vf := range 2 {
		q[vf] = r.vfs[vf].qp(qpOpts{st: mlx4.QP_ST_UD, qkey: 0x11111111})
		q[vf].ctx.Pri.GRH, q[vf].ctx.Pri.SMACIndex = true, r.smac[vf]
		q[vf].t.must(q[vf].modify(mlx4.INIT2RTR_QP, mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH), "INIT2RTR")
		q[vf].t.must(q[vf].modify(mlx4.RTR2RTS_QP, 0), "RTR2RTS")
	}
	ud := func(mac uint64, dgid [16]byte) *mlx4.SendWQE {
		w := send(mlx4.OPCODE_SEND, sge(r.keys[0], 0x700000, 16))
		w.HasDatagram = true
		w.Datagram = mlx4.DatagramSeg{DQPN: q[1].qpn, QKey: 0x11111111, AV: mlx4.AV{PortPD: 1<<24 | r.vfs[0].pd, GSLID: mlx4.AVGRH,
			HopLimit: 1, SLTClassFlowLabel: 5 << mlx4.AVEthSLShift, DGID: dgid}}
		eswitch.PutMAC(w.Datagram.MAC[:], mac)
		return w
	}
	r.vfs[0].fill(r.mem[0], []byte("a RoCE datagram!"))
	q[1].recv(sge(r.keys[1], 0x700000+1024, 1024))
	q[0].post(ud(r.d.h.VFMAC(1, 1), r.gid[1]), nil)
	q[0].run(4)
	got := r.vfs[1].read(r.mem[1]+1024, 56)
	if got[0]>>4 != 6 || got[6] != 0x1b || !bytes.Equal(got[8:24], r.gid[0][:]) || !bytes.Equal(got[24:40], r.gid[1][:]) || string(got[40:]) != "a RoCE datagram!" {
		t.Fatalf("VF 1's buffer % x", got)
	}
	var cqe *mlx4.CQE
	for _, g := range r.d.take() {
		if !g.e.IsSend {
			e := g.e
			cqe = &e
		}
	}
	if cqe == nil || cqe.IsError() || cqe.GMLPathRQPN&mlx4.CQE_G_MASK == 0 || cqe.GMLPathRQPN&mlx4.CQE_QPN_MASK != q[0].qpn ||
		cqe.RLID != 0 || cqe.SLVID>>mlx4.CQEEthSLShift != 5 || cqe.ByteCnt != 16+40 {
		t.Fatalf("receive CQE %+v", cqe)
	}
	other := r.gid[1]
	other[15] ^= 1
	q[1].recv(sge(r.keys[1], 0x700000+1024, 1024))
	q[0].post(ud(0x02c9ffffff01, r.gid[1]), nil)
	q[0].post(ud(r.d.h.VFMAC(1, 1), other), nil)
	// An AV that names the VF's IB port 2: RoCE stays on the QP's port.
	onIB := ud(r.d.h.VFMAC(1, 1), r.gid[1])
	onIB.Datagram.AV.PortPD = 2<<24 | r.vfs[0].pd
	q[0].post(onIB, nil)
	q[0].run(4)
	if n := r.d.h.EngineStats(0).UDDropped.Load(); n != 3 {
		t.Fatalf("%d datagrams dropped, want 3", n)
	}
	for _, g := range r.d.take() {
		if !g.e.IsSend || g.e.IsError() {
			t.Fatalf("a dropped datagram's CQE %+v", g.e)
		}
	}
}

// TestRoCELoopbackOneVF: two RC QPs of one VF reach each other over RoCE
// (the path's MAC and GID the VF's own), as ibv_rc_pingpong with both
// ends on one VF does.
func TestRoCELoopbackOneVF(t *testing.T) {
	r := newRoCERig(t, [2]*config.VST{})
	a, b := r.rc(0, 0), r.rc(0, 0)
	a.connect(b.qpn, 0)
	b.connect(a.qpn, 0)
	msg := []byte("to myself over RoCE")
	r.vfs[0].fill(r.mem[0], msg)
	b.recv(sge(r.keys[0], 0x700000+1024, 256))
	a.post(send(mlx4.OPCODE_SEND, sge(r.keys[0], 0x700000, uint32(len(msg)))), nil)
	a.run(4)
	if got := r.vfs[0].read(r.mem[0]+1024, len(msg)); !bytes.Equal(got, msg) {
		t.Fatalf("got %q", got)
	}
	for _, g := range r.d.take() {
		if g.e.IsError() {
			t.Fatalf("error CQE %+v", g.e)
		}
	}
}
