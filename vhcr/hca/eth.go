package hca

import (
	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Raw Ethernet. On a port whose link layer is Ethernet an MLX QP
// (MLX4_QP_ST_MLX) is mlx4_en's ring: each send WQE is one frame (its
// gather list, inline headers and data segments), which the port's
// embedded switch (vhcr/eswitch) passes or drops under the vport policy
// the PF wrote into the QP's primary path (VST, spoof check) and the VF's
// link state, and sends out of the port (the Uplink). The WQE completes
// either way, as on ConnectX-3: the switch's drops are counted
// (EngineStats.EthTx), not reported to the VF.

// Uplink takes the frames a port's switch sends out of the device: the
// capture file or TAP device cmd/vhcrd opens. Send must not keep b; it
// runs on the engine's goroutine. Flush is called when the poller goes
// idle, so that a buffered capture reaches its file.
type Uplink interface {
	Send(phys int, b []byte)
	Flush()
}

// SetUplink installs the ports' uplink (nil: frames leaving the device
// go nowhere).
func (h *HCA) SetUplink(u Uplink) { h.eth.uplink = u }

// FlushUplink flushes the uplink's buffered frames (the poller's idle
// chores).
func (h *HCA) FlushUplink() {
	if h.eth.uplink != nil && h.eth.sent {
		h.eth.sent = false
		h.eth.uplink.Flush()
	}
}

// PortEthMTU is the Ethernet MTU of the model's ports (QUERY_PORT's eth
// MTU): with an Ethernet header and one tag, the largest frame a VF sends.
const (
	PortEthMTU  = 1500
	ethMaxFrame = PortEthMTU + eswitch.HeaderLen + eswitch.TagLen
	// ethBuf holds a gathered frame: a WQE may describe more than the
	// largest frame (counted oversize, not gathered).
	ethBuf = ethMaxFrame
)

// ethState is the engine's raw Ethernet scratch.
type ethState struct {
	uplink Uplink
	sent   bool // a frame went to the uplink since its last Flush
	frame  [ethBuf]byte
	out    [ethBuf + 2*eswitch.TagLen]byte
}

// ethPathOf reads the QP's switch policy from its stored context (at
// every modify: VST and spoof check rewrite the primary path at INIT2RTR).
func (h *HCA) ethPathOf(qp *qpObj) {
	w := qp.wq
	w.ethOn = w.st == mlx4.QP_ST_MLX && qp.Port >= 1 && qp.Port <= len(h.Cfg.Ports) && h.isEth(qp.Port)
	if !w.ethOn {
		return
	}
	t := &h.fw.ports[qp.Port-1]
	pri := qp.Ctx[mlx4.QPMailboxPriPath : mlx4.QPMailboxPriPath+mlx4.QPPathSize]
	w.eth = eswitch.PathOf(pri,
		func(i int) (uint16, bool) {
			if i >= len(t.VLAN) || t.VLAN[i].Refs == 0 {
				return 0, false
			}
			return uint16(t.VLAN[i].Value), true
		},
		func(i int) (uint64, bool) {
			if i >= len(t.MAC) || t.MAC[i].Refs == 0 {
				return 0, false
			}
			return t.MAC[i].Value & eswitch.Broadcast, true
		}, false)
}

// sendEth executes a raw Ethernet send WQE: the frame gathered, the
// switch's egress applied, the frame to the uplink, the WQE completed.
// Only SEND: the model advertises no LSO. A gather list the keys refuse is
// the local protection error, as for any send.
func (h *HCA) sendEth(qp *qpObj, total uint64) bool {
	w := qp.wq
	d := &h.dp.send
	e := &h.eth
	st := &h.fw.vfs[w.vf].eng
	if d.Ctrl.Opcode != mlx4.OPCODE_SEND {
		h.sqError(qp, d.Ctrl.Opcode, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
		return true
	}
	if total > ethMaxFrame {
		st.EthTx.Count(eswitch.DropOversize)
		h.sqDone(qp, uint32(total))
		return true
	}
	if !h.gather(e.frame[:total], total) {
		h.sqError(qp, d.Ctrl.Opcode, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR)
		return true
	}
	p := &w.eth
	p.LinkDown = !h.VFLinkUp(w.vf, qp.Port)
	n, v := p.Egress(e.out[:], e.frame[:total], eswitch.WQEVLANOf(&d.Ctrl), ethMaxFrame)
	st.EthTx.Count(v)
	if v == eswitch.Forward && e.uplink != nil {
		e.uplink.Send(qp.Port, e.out[:n])
		e.sent = true
	}
	h.sqDone(qp, uint32(total))
	return true
}
