package hca

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// fakeUplink records the frames a port's switch sends out.
type fakeUplink struct {
	frames  [][]byte
	ports   []int
	flushes int
}

func (u *fakeUplink) Send(phys int, b []byte) {
	u.frames = append(u.frames, bytes.Clone(b))
	u.ports = append(u.ports, phys)
}

func (u *fakeUplink) Flush() { u.flushes++ }

// ethFrame is a frame from src to dst of n bytes in all (EtherType IPv4).
func ethFrame(dst, src uint64, n int) []byte {
	b := make([]byte, n)
	eswitch.PutMAC(b, dst)
	eswitch.PutMAC(b[6:], src)
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	for i := 14; i < n; i++ {
		b[i] = byte(i)
	}
	return b
}

// ethRig: port 1 Ethernet; VF 0 in VST (VLAN 100, priority 5) with spoof
// check, VF 1 VGT; each with a raw Ethernet QP (MLX, as mlx4_en's TX
// ring) in RTS and a region of frames.
type ethRig struct {
	d    *dpRig
	up   *fakeUplink
	vfs  [2]*tvf
	qps  [2]*tqp
	keys [2]uint32
	mem  [2]uint64 // the region's first page (IOVA); its VA is ethVA
}

const ethVA = 0x500000

func newEthRig(t testing.TB) *ethRig {
	t.Helper()
	on := true
	r := &ethRig{up: &fakeUplink{}}
	r.d = newDPRig(t, 2, func(c *config.Config) {
		c.Ports[0].LinkLayer = "eth"
		c.VFs.Overrides = map[string]config.VF{"0": {VST: &config.VST{VLAN: 100, QoS: 5}, SpoofCheck: &on}}
	})
	r.d.h.SetUplink(r.up)
	for vf := range 2 {
		if err := r.d.h.ActivateVF(vf); err != nil {
			t.Fatal(err)
		}
		v := r.d.setup(vf)
		r.vfs[vf] = v
		r.keys[vf], r.mem[vf] = v.mr(ethVA, 1, mlx4.PERM_LOCAL_WRITE, v.pd)
		q := v.qp(qpOpts{st: mlx4.QP_ST_MLX})
		q.connect(0, 0)
		r.qps[vf] = q
	}
	return r
}

// sendFrame posts frame (through the region) on VF vf's QP, with the
// control segment's VLAN insertion ins, and runs it.
func (r *ethRig) sendFrame(vf int, frame []byte, ins uint8, tag uint16) {
	r.d.t.Helper()
	r.vfs[vf].fill(r.mem[vf], frame)
	w := send(mlx4.OPCODE_SEND, sge(r.keys[vf], ethVA, uint32(len(frame))))
	w.Ctrl.InsVLAN, w.Ctrl.VLANTag = ins, tag
	r.qps[vf].post(w, nil)
	if n := r.qps[vf].run(4); n != 1 {
		r.d.t.Fatalf("VF %d: %d WQEs ran", vf, n)
	}
}

// TestEthSendThroughTheSwitch: mlx4_en's sends on an Ethernet port leave
// by the uplink as the vport policy makes them — VST's tag and priority,
// spoof check's drop, the VF's own tag refused under VST, a link forced
// down — and every WQE completes with its byte count, dropped or not.
func TestEthSendThroughTheSwitch(t *testing.T) {
	r := newEthRig(t)
	h := r.d.h
	mac0, mac1 := h.VFMAC(0, 1), h.VFMAC(1, 1)
	wantSent := func(what string, frame []byte) {
		t.Helper()
		if len(r.up.frames) == 0 || !bytes.Equal(r.up.frames[len(r.up.frames)-1], frame) || r.up.ports[len(r.up.ports)-1] != 1 {
			t.Fatalf("%s: the uplink has %d frames, the last % x", what, len(r.up.frames), r.up.frames)
		}
	}
	count := func(vf int, v eswitch.Verdict) uint64 { return h.EngineStats(vf).EthTx.Get(v) }

	// VGT: as the VF sent it, and with the WQE's C-VLAN.
	f := ethFrame(eswitch.Broadcast, mac1, 100)
	r.sendFrame(1, f, 0, 0)
	wantSent("VGT", f)
	r.sendFrame(1, f, mlx4.WQE_CTRL_INS_CVLAN, 3<<13|7)
	tagged := append(append(bytes.Clone(f[:12]), 0x81, 0, 0x60, 7), f[12:]...)
	wantSent("VGT with the WQE's tag", tagged)

	// VST 100, priority 5: the tag on the wire.
	f0 := ethFrame(mac1, mac0, 60)
	r.sendFrame(0, f0, 0, 0)
	wantSent("VST", append(append(bytes.Clone(f0[:12]), 0x81, 0, 5<<5, 100), f0[12:]...))
	n := len(r.up.frames)
	// Spoof check: another source MAC is dropped; the VF's own tag under VST too.
	r.sendFrame(0, ethFrame(mac1, 0x0002c9ffffff, 60), 0, 0)
	r.sendFrame(0, f0, mlx4.WQE_CTRL_INS_CVLAN, 7)
	if len(r.up.frames) != n || count(0, eswitch.DropSpoof) != 1 || count(0, eswitch.DropTagged) != 1 {
		t.Fatalf("dropped frames reached the uplink (%d → %d) or were not counted: spoof %d, tagged %d",
			n, len(r.up.frames), count(0, eswitch.DropSpoof), count(0, eswitch.DropTagged))
	}
	// Link forced down: nothing leaves.
	h.Funcs[1].LinkState = "down"
	r.sendFrame(1, f, 0, 0)
	h.Funcs[1].LinkState = "auto"
	if len(r.up.frames) != n || count(1, eswitch.DropLinkDown) != 1 {
		t.Fatalf("link down: %d frames, counted %d", len(r.up.frames), count(1, eswitch.DropLinkDown))
	}
	// Every WQE completed, in order, with its byte count.
	got := r.d.take()
	if len(got) != 6 {
		t.Fatalf("%d CQEs for 6 sends", len(got))
	}
	for _, g := range got {
		if g.e.IsError() || !g.e.IsSend || g.e.Opcode != mlx4.OPCODE_SEND {
			t.Fatalf("CQE %+v", g.e)
		}
	}
	if count(0, eswitch.Forward) != 1 || count(1, eswitch.Forward) != 2 {
		t.Fatalf("forwarded %d and %d", count(0, eswitch.Forward), count(1, eswitch.Forward))
	}
	h.FlushUplink()
	h.FlushUplink() // nothing sent since: no second flush
	if r.up.flushes != 1 {
		t.Fatalf("%d flushes", r.up.flushes)
	}
}

// TestEthSendHostile: a frame longer than the port's largest is dropped
// and counted (the WQE completes); a gather entry outside the region is
// the local protection error; LSO, which the model does not advertise, is
// a local QP operation error. No frame leaves, no other VF is touched.
func TestEthSendHostile(t *testing.T) {
	r := newEthRig(t)
	h := r.d.h
	mac1 := h.VFMAC(1, 1)
	q := r.qps[1]
	q.post(send(mlx4.OPCODE_SEND, sge(r.keys[1], ethVA, ethMaxFrame+1)), nil)
	q.run(4)
	if c := r.d.take(); len(c) != 1 || c[0].e.IsError() || h.EngineStats(1).EthTx.Get(eswitch.DropOversize) != 1 {
		t.Fatalf("oversize: %+v, counted %d", c, h.EngineStats(1).EthTx.Get(eswitch.DropOversize))
	}
	r.vfs[1].fill(r.mem[1], ethFrame(eswitch.Broadcast, mac1, 64))
	q.post(send(mlx4.OPCODE_SEND, sge(r.keys[1], ethVA+4090, 64)), nil)
	q.run(4)
	if c := r.d.take(); len(c) != 1 || c[0].e.Syndrome() != mlx4.CQE_SYNDROME_LOCAL_PROT_ERR {
		t.Fatalf("beyond the region: %+v", c)
	}
	p := r.qps[0]
	p.post(&mlx4.SendWQE{Ctrl: mlx4.WQECtrl{Opcode: mlx4.OPCODE_LSO, SrcRBFlags: mlx4.WQE_CTRL_CQ_UPDATE, Size: 4}}, nil)
	p.run(4)
	if c := r.d.take(); len(c) != 1 || c[0].e.Syndrome() != mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR {
		t.Fatalf("LSO: %+v", c)
	}
	if len(r.up.frames) != 0 || h.EngineStats(0).EthTx.Get(eswitch.Forward) != 0 {
		t.Fatalf("%d frames left", len(r.up.frames))
	}
}

// TestEthSendAllocatesNothing: a raw Ethernet send, switch, receive and
// uplink included, allocates nothing per WQE.
func TestEthSendAllocatesNothing(t *testing.T) {
	r := newEthRig(t)
	r.d.h.SetUplink(nopUplink{})
	r.ethRX(0, 7)
	f := ethFrame(r.d.h.VFMAC(0, 1), r.d.h.VFMAC(1, 1), 200)
	r.vfs[1].fill(r.mem[1], f)
	q := r.qps[1]
	// Seven sends posted (the ring has eight slots), each to VF 0 on its
	// VLAN, then run one at a time: AllocsPerRun's warm-up and six
	// measured runs.
	for range 7 {
		w := send(mlx4.OPCODE_SEND, sge(r.keys[1], ethVA, uint32(len(f))))
		w.Ctrl.InsVLAN, w.Ctrl.VLANTag = mlx4.WQE_CTRL_INS_CVLAN, 100
		q.post(w, nil)
	}
	if a := testing.AllocsPerRun(6, func() {
		if q.run(1) != 1 {
			t.Fatal("no send ran")
		}
	}); a != 0 {
		t.Fatalf("%.1f allocations per send", a)
	}
	if n := r.d.h.EngineStats(0).EthRx.Get(eswitch.Forward); n != 7 {
		t.Fatalf("VF 0 received %d frames, want 7", n)
	}
}

type nopUplink struct{}

func (nopUplink) Send(int, []byte) {}
func (nopUplink) Flush()           {}

// ethRX gives VF vf of r an RX ring as mlx4_en makes one (an MLX QP with
// a one-stride send queue and a receive queue, in RTS) attached to its MAC
// (unicast) and to broadcast, with n receive WQEs of 2 KiB posted.
func (r *ethRig) ethRX(vf, n int) *tqp {
	r.d.t.Helper()
	v := r.vfs[vf]
	q := v.qp(qpOpts{st: mlx4.QP_ST_MLX, sqStride: 2, rqLogS: 0})
	q.connect(0, 0)
	mac := r.d.h.VFMAC(vf, 1)
	for _, g := range []struct {
		mac   uint64
		steer byte
	}{{mac, 2}, {eswitch.Broadcast, 0}} {
		gid := make([]byte, 16)
		gid[ethGIDPort], gid[ethGIDSteer] = 1, g.steer
		eswitch.PutMAC(gid[ethGIDMAC:], g.mac)
		v.must(v.run(v.cmd(mlx4.QP_ATTACH, 0, q.qpn|mcgProtETH<<28, 1, gid, false)), "QP_ATTACH")
	}
	for range n {
		q.recv(sge(r.keys[vf], ethVA+2048, 2048))
	}
	return q
}

// TestEthSwitchDelivers: the switch steers by destination MAC among the
// VFs of the port and applies each receiver's ingress — VF 0 in VST 100
// (priority 5), VF 1 VGT stripping VLANs as mlx4_en asks: VF 1's untagged
// broadcast does not reach VF 0 (another VLAN) but leaves by the uplink;
// its frame tagged 100 to VF 0's MAC arrives there untagged, the tag
// hidden from the CQE, and stays in the device; VF 0's frame to VF 1
// arrives with the VST tag stripped and reported (C-VLAN, TCI); a unicast
// to no VF's MAC leaves by the uplink; with no receive WQE the frame is
// dropped and counted.
func TestEthSwitchDelivers(t *testing.T) {
	r := newEthRig(t)
	h := r.d.h
	mac0, mac1 := h.VFMAC(0, 1), h.VFMAC(1, 1)
	rx0, rx1 := r.ethRX(0, 1), r.ethRX(1, 4)
	rxCQEs := func(vf int) []mlx4.CQE {
		var c []mlx4.CQE
		for _, g := range r.d.take() {
			if !g.e.IsSend && g.cqn == r.vfs[vf].cq {
				c = append(c, g.e)
			}
		}
		return c
	}
	recvd := func(vf int, n int) []byte { return r.vfs[vf].read(r.mem[vf]+2048, n) }

	r.sendFrame(1, ethFrame(eswitch.Broadcast, mac1, 80), 0, 0)
	if h.EngineStats(0).EthRx.Get(eswitch.DropUntagged) != 1 || len(r.up.frames) != 1 || len(rxCQEs(0)) != 0 {
		t.Fatalf("VF 1's untagged broadcast: VF 0 dropped %d as untagged, the uplink has %d frames",
			h.EngineStats(0).EthRx.Get(eswitch.DropUntagged), len(r.up.frames))
	}
	f := ethFrame(mac0, mac1, 100)
	r.sendFrame(1, f, mlx4.WQE_CTRL_INS_CVLAN, 100)
	if c := rxCQEs(0); len(c) != 1 || c[0].ByteCnt != 100 || c[0].VlanMyQPN != rx0.qpn || c[0].IsError() || !bytes.Equal(recvd(0, 100), f) {
		t.Fatalf("VF 1's frame on VLAN 100 to VF 0: CQEs %+v, data % x", c, recvd(0, 100))
	}
	if len(r.up.frames) != 1 {
		t.Fatal("a unicast to a VF of the port left by the uplink")
	}
	f = ethFrame(mac1, mac0, 60)
	r.sendFrame(0, f, 0, 0)
	c := rxCQEs(1)
	if len(c) != 1 || c[0].ByteCnt != 60 || c[0].VlanMyQPN != rx1.qpn|mlx4.CQE_VLAN_PRESENT_MASK || c[0].SLVID != 5<<13|100 || !bytes.Equal(recvd(1, 60), f) {
		t.Fatalf("VF 0's frame to VF 1: CQEs %+v, data % x", c, recvd(1, 60))
	}
	r.sendFrame(1, ethFrame(0x02c9ffffff01, mac1, 60), 0, 0)
	if len(r.up.frames) != 2 || len(rxCQEs(0))+len(rxCQEs(1)) != 0 {
		t.Fatalf("a unicast to no VF: %d frames on the uplink", len(r.up.frames))
	}
	// VF 0 has no receive WQE left.
	r.sendFrame(1, ethFrame(mac0, mac1, 100), mlx4.WQE_CTRL_INS_CVLAN, 100)
	if h.EngineStats(0).EthRxNoWQE.Load() != 1 || len(rxCQEs(0)) != 0 {
		t.Fatalf("no receive WQE: %d counted", h.EngineStats(0).EthRxNoWQE.Load())
	}
}

// TestEthReceiveHostile: a receive WQE with a forged lkey is the
// receiver's local protection error (its CQE, its RX QP to ERR), and the
// sender's WQE completes normally: one VF's broken RX ring costs no other
// VF anything.
func TestEthReceiveHostile(t *testing.T) {
	r := newEthRig(t)
	h := r.d.h
	rx := r.ethRX(0, 0)
	rx.recv(sge(r.keys[0]^0x5a, ethVA+2048, 2048))
	r.sendFrame(1, ethFrame(h.VFMAC(0, 1), h.VFMAC(1, 1), 100), mlx4.WQE_CTRL_INS_CVLAN, 100)
	var rxErr, txOK int
	for _, g := range r.d.take() {
		switch {
		case g.cqn == r.vfs[0].cq && g.e.Syndrome() == mlx4.CQE_SYNDROME_LOCAL_PROT_ERR && g.e.IsError():
			rxErr++
		case g.cqn == r.vfs[1].cq && g.e.IsSend && !g.e.IsError():
			txOK++
		}
	}
	if rxErr != 1 || txOK != 1 || rx.obj().State != mlx4.QP_STATE_ERR || r.qps[1].obj().State != mlx4.QP_STATE_RTS {
		t.Fatalf("receiver's error CQEs %d (state %v), sender's CQEs %d (state %v)", rxErr, rx.obj().State, txOK, r.qps[1].obj().State)
	}
}

// TestEthChecksumOffload: a UDP datagram VF 1 sends with its checksums as
// the stack leaves them for the device (IPv4 header 0, UDP seeded) and the
// control segment's IP_CSUM | TCP_UDP_CSUM arrives at VF 0 with both
// computed, and VF 0's CQE says so (IPv4, IPOK, UDP, checksum 0xffff:
// mlx4_en's CHECKSUM_UNNECESSARY).
func TestEthChecksumOffload(t *testing.T) {
	r := newEthRig(t)
	h := r.d.h
	r.ethRX(0, 1)
	f := ethFrame(h.VFMAC(0, 1), h.VFMAC(1, 1), 14+20+8+40)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], 20+8+40)
	copy(ip[12:], []byte{10, 79, 0, 2, 10, 79, 0, 1})
	clear(ip[4:8])   // ID, flags, fragment offset
	clear(ip[10:12]) // the header checksum, left to the device
	binary.BigEndian.PutUint16(ip[20:], 40000)
	binary.BigEndian.PutUint16(ip[22:], 9)
	binary.BigEndian.PutUint16(ip[24:], 8+40)
	binary.BigEndian.PutUint16(ip[26:], 0x1234) // a seed, not the checksum
	r.vfs[1].fill(r.mem[1], f)
	w := send(mlx4.OPCODE_SEND, sge(r.keys[1], ethVA, uint32(len(f))))
	w.Ctrl.SrcRBFlags |= mlx4.WQE_CTRL_IP_CSUM | mlx4.WQE_CTRL_TCP_UDP_CSUM
	w.Ctrl.InsVLAN, w.Ctrl.VLANTag = mlx4.WQE_CTRL_INS_CVLAN, 100
	r.qps[1].post(w, nil)
	r.qps[1].run(4)
	var rx []mlx4.CQE
	for _, g := range r.d.take() {
		if g.cqn == r.vfs[0].cq {
			rx = append(rx, g.e)
		}
	}
	want := uint16(mlx4.CQE_STATUS_IPV4 | mlx4.CQE_STATUS_IPOK | mlx4.CQE_STATUS_UDP)
	if len(rx) != 1 || rx[0].Status != want || rx[0].Checksum != mlx4.CQEChecksumOK {
		t.Fatalf("VF 0's CQEs %+v, want status %#x and checksum %#x", rx, want, mlx4.CQEChecksumOK)
	}
	got := r.vfs[0].read(r.mem[0]+2048, len(f))
	if binary.BigEndian.Uint16(got[14+10:]) == 0 || binary.BigEndian.Uint16(got[14+26:]) == 0x1234 {
		t.Fatalf("the checksums were not computed: % x", got[14:14+28])
	}
}
