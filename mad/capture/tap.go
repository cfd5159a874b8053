package capture

import "github.com/vhcrd/vhcrd/mad"

// Tap records the MADs an engine processes: each request as it arrived
// (addressing from the work completion and GRH) and each reply as it would
// leave. MADs processed without a work completion were generated locally
// and are not recorded.
type Tap struct {
	Engine *mad.Engine
	W      *Writer
}

// ProcessMAD calls Engine.ProcessMAD and records the exchange.
func (t *Tap) ProcessMAD(flags mad.Flags, port uint8, wc *mad.WC, grh *mad.GRH, in *mad.MAD) (mad.MAD, mad.Result) {
	if wc == nil || in == nil {
		return t.Engine.ProcessMAD(flags, port, wc, grh, in)
	}
	pi, err := t.Engine.PortInfo(port)
	if err != nil {
		return t.Engine.ProcessMAD(flags, port, wc, grh, in)
	}
	smp := in.MgmtClass() == mad.ClassSubnLID || in.MgmtClass() == mad.ClassSubnDirected
	req := Packet{
		SLID: wc.SLID, DLID: pi.LID | uint16(wc.DLIDPathBits)&(1<<pi.LMC-1), SL: wc.SL,
		DestQP: wc.QPN, SrcQP: wc.SrcQP, PKey: mad.DefaultPKey, MAD: in,
	}
	if smp {
		req.VL = 15
	} else {
		req.QKey = mad.QP1QKey
		if wc.QKeyValid {
			req.QKey = wc.QKey
		}
		if k, ok := t.Engine.PKey(port, int(wc.PKeyIndex)); ok {
			req.PKey = k
		}
	}
	if grh != nil && wc.GRHPresent {
		req.GRH = grh
	}
	// The request is recorded before processing, so that traps it
	// raises follow it in the capture.
	_ = t.W.WritePacket(&req)
	out, res := t.Engine.ProcessMAD(flags, port, wc, grh, in)
	if res&mad.Reply == 0 {
		return out, res
	}
	rsp := req
	if pi, err := t.Engine.PortInfo(port); err == nil {
		req.DLID = pi.LID | uint16(wc.DLIDPathBits)&(1<<pi.LMC-1)
	}
	rsp.SLID, rsp.DLID = req.DLID, req.SLID
	rsp.DestQP, rsp.SrcQP = req.SrcQP, req.DestQP
	rsp.MAD = &out
	if !smp {
		rsp.QKey = mad.QP1QKey
	}
	if req.GRH != nil {
		g := *req.GRH
		g.SGID, g.DGID = g.DGID, g.SGID
		rsp.GRH = &g
	}
	_ = t.W.WritePacket(&rsp)
	return out, res
}
