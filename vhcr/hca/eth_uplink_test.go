package hca

import (
	"bytes"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// rxCQEs polls every VF's CQ and returns VF vf's receive CQEs.
func (r *ethRig) rxCQEs(vf int) []mlx4.CQE {
	var c []mlx4.CQE
	for _, g := range r.d.take() {
		if !g.e.IsSend && g.cqn == r.vfs[vf].cq {
			c = append(c, g.e)
		}
	}
	return c
}

// tag inserts a C-VLAN tag of TCI tci after f's MACs.
func tag(f []byte, tci uint16) []byte {
	return append(append(bytes.Clone(f[:12]), 0x81, 0, byte(tci>>8), byte(tci)), f[12:]...)
}

// TestEthUplinkIngress: frames the host sends into the port (a TAP
// device's reads) are steered as the VFs' own are, by destination MAC,
// through each receiver's ingress: VF 0's tagged VLAN 100 arrives
// untagged; an untagged broadcast reaches VGT VF 1, padded to the wire's 60
// bytes, and is VF 0's untagged drop; a unicast no VF has is dropped and
// counted; runts and frames past the port's largest are refused at the
// queue; nothing from the host goes back out of the uplink; each frame
// wakes the poller.
func TestEthUplinkIngress(t *testing.T) {
	r := newEthRig(t)
	h := r.d.h
	wakes := 0
	h.SetTunnelWake(func() { wakes++ })
	mac0 := h.VFMAC(0, 1)
	r.ethRX(0, 2)
	r.ethRX(1, 2)
	st := h.UplinkStats(1)
	host := uint64(0x02aabbccdd01)

	f := ethFrame(mac0, host, 100)
	if !h.ReceiveFrame(1, tag(f, 100)) {
		t.Fatal("ReceiveFrame refused a frame")
	}
	if n := h.ServiceUplink(); n != 1 {
		t.Fatalf("ServiceUplink did %d frames, want 1", n)
	}
	if c := r.rxCQEs(0); len(c) != 1 || c[0].ByteCnt != 100 || c[0].VlanMyQPN&mlx4.CQE_VLAN_PRESENT_MASK != 0 || !bytes.Equal(r.vfs[0].read(r.mem[0]+2048, 100), f) {
		t.Fatalf("VF 0's frame on VLAN 100 from the host: CQEs %+v", c)
	}
	arp := ethFrame(eswitch.Broadcast, host, 42)
	h.ReceiveFrame(1, arp)
	h.ServiceUplink()
	if c := r.rxCQEs(1); len(c) != 1 || c[0].ByteCnt != 60 || !bytes.Equal(r.vfs[1].read(r.mem[1]+2048, 60), append(bytes.Clone(arp), make([]byte, 18)...)) {
		t.Fatalf("the host's 42-byte broadcast at VF 1: CQEs %+v", c)
	}
	if n := h.EngineStats(0).EthRx.Get(eswitch.DropUntagged); n != 1 {
		t.Fatalf("VF 0 (VST) dropped %d untagged frames from the host, want 1", n)
	}
	h.ReceiveFrame(1, ethFrame(0x02c9ffffff01, host, 60))
	h.ServiceUplink()
	if h.ReceiveFrame(1, make([]byte, 13)) || h.ReceiveFrame(1, make([]byte, ethMaxFrame+1)) || h.ReceiveFrame(2, arp) || h.ReceiveFrame(0, arp) {
		t.Fatal("a runt, an oversize frame or a frame for a port with no uplink was queued")
	}
	if st.In.Load() != 2 || st.InNoVF.Load() != 1 || st.InRunt.Load() != 1 || st.InOversize.Load() != 1 {
		t.Fatalf("uplink stats in %d, no VF %d, runt %d, oversize %d; want 2 1 1 1", st.In.Load(), st.InNoVF.Load(), st.InRunt.Load(), st.InOversize.Load())
	}
	if len(r.up.frames) != 0 || st.Out.Load() != 0 {
		t.Fatalf("frames from the host went back out of the uplink: %d", len(r.up.frames))
	}
	if wakes != 3 {
		t.Fatalf("%d wakes for 3 queued frames", wakes)
	}
}

// TestEthUplinkFlood: a host flooding the port fills the ingress queue and
// loses the excess, counted; a scan takes at most ethInBudget of its
// frames, so that a VF's send in the same scan is not held behind them.
func TestEthUplinkFlood(t *testing.T) {
	r := newEthRig(t)
	h := r.d.h
	f := ethFrame(0x02c9ffffff01, 0x02aabbccdd01, 60)
	for i := range ethInQueue + 5 {
		if ok := h.ReceiveFrame(1, f); ok != (i < ethInQueue) {
			t.Fatalf("frame %d queued %v", i, ok)
		}
	}
	if n := h.UplinkStats(1).InQueueFull.Load(); n != 5 {
		t.Fatalf("%d frames counted as queue drops, want 5", n)
	}
	r.vfs[1].fill(r.mem[1], ethFrame(eswitch.Broadcast, h.VFMAC(1, 1), 60))
	r.qps[1].post(send(mlx4.OPCODE_SEND, sge(r.keys[1], ethVA, 60)), nil)
	h.SweepQueues()
	scans := 0
	for h.EngineStats(1).EthTx.Get(eswitch.Forward) == 0 {
		if n := h.ServiceUplink(); n > ethInBudget {
			t.Fatalf("a scan took %d frames from the host, above %d", n, ethInBudget)
		}
		h.ServiceQueues(64)
		if scans++; scans > 1 {
			t.Fatalf("VF 1's send waited %d scans behind the host's flood", scans)
		}
	}
	total := 0
	for n := h.ServiceUplink(); n > 0; n = h.ServiceUplink() {
		total += n
	}
	if total+ethInBudget != ethInQueue || h.UplinkStats(1).InNoVF.Load() != ethInQueue {
		t.Fatalf("the flood drained %d+%d frames, want %d", ethInBudget, total, ethInQueue)
	}
}

// TestEthVFFloodKeepsOthersShare: VF 0 fills a 32-WQE ring with frames
// and VF 1 posts four; scans of budget 8 share it between the two VFs'
// rings (round-robin, hca/dpsched.go), so VF 1's four have left the
// switch while most of VF 0's still wait, and then all of VF 0's go too.
func TestEthVFFloodKeepsOthersShare(t *testing.T) {
	r := newEthRig(t)
	h := r.d.h
	var qs [2]*tqp
	for vf := range 2 {
		q := r.vfs[vf].qp(qpOpts{st: mlx4.QP_ST_MLX, sqStride: 2, sqLog: 5})
		q.connect(0, 0)
		qs[vf] = q
		r.vfs[vf].fill(r.mem[vf], ethFrame(eswitch.Broadcast, h.VFMAC(vf, 1), 60))
	}
	for range 32 {
		qs[0].post(send(mlx4.OPCODE_SEND, sge(r.keys[0], ethVA, 60)), nil)
	}
	for range 4 {
		qs[1].post(send(mlx4.OPCODE_SEND, sge(r.keys[1], ethVA, 60)), nil)
	}
	h.SweepQueues()
	sent := func(vf int) uint64 { return h.EngineStats(vf).EthTx.Get(eswitch.Forward) }
	scans := 0
	for sent(1) < 4 {
		h.ServiceQueues(8)
		scans++
	}
	if scans > 2 || sent(0) > 12 {
		t.Fatalf("VF 1's 4 frames took %d scans of 8, VF 0 sent %d meanwhile", scans, sent(0))
	}
	for range 8 {
		h.ServiceQueues(8)
	}
	if sent(0) != 32 {
		t.Fatalf("VF 0 sent %d of its 32", sent(0))
	}
	r.d.take()
}

// FuzzEthUplink: any bytes from the host, to VF 0's or VF 1's MAC or
// anywhere, n times: queued or refused as counted, steered without a
// panic, never back out of the uplink, and each receive CQE no longer than
// the frame padded.
func FuzzEthUplink(f *testing.F) {
	f.Add(tag(ethFrame(0, 0x02aabbccdd01, 100), 100), uint8(0), uint8(3))
	f.Add(ethFrame(eswitch.Broadcast, 0x02aabbccdd01, 42), uint8(1), uint8(12))
	f.Add([]byte{1, 2, 3}, uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, to, n uint8) {
		r := newEthRig(t)
		h := r.d.h
		r.ethRX(0, 4)
		r.ethRX(1, 4)
		if len(b) >= 6 && to < 2 {
			eswitch.PutMAC(b, h.VFMAC(int(to), 1))
		}
		st := h.UplinkStats(1)
		n = n%16 + 1
		for range n {
			h.ReceiveFrame(1, b)
		}
		for h.ServiceUplink() > 0 {
		}
		if c := st.In.Load() + st.InNoVF.Load() + st.InRunt.Load() + st.InOversize.Load(); c != uint64(n) {
			t.Fatalf("%d frames of %d bytes counted %d times", n, len(b), c)
		}
		for _, g := range r.d.take() {
			if !g.e.IsError() && g.e.ByteCnt > uint32(max(len(b), ethMinFrame)) {
				t.Fatalf("a CQE of %d bytes for a frame of %d", g.e.ByteCnt, len(b))
			}
		}
		if len(r.up.frames) != 0 {
			t.Fatal("a frame from the host went back out")
		}
	})
}
