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
	req, ok := t.Request(port, wc, grh, in)
	out, res := t.Engine.ProcessMAD(flags, port, wc, grh, in)
	if ok && res&mad.Reply != 0 {
		t.Reply(&req, &out)
	}
	return out, res
}

// Request records a MAD arriving on port with the given work completion and
// GRH, and returns the packet for Reply. It records nothing (ok false) for
// a MAD without a work completion. Call it before processing, so that traps
// the MAD raises follow it in the capture.
func (t *Tap) Request(port uint8, wc *mad.WC, grh *mad.GRH, in *mad.MAD) (req Packet, ok bool) {
	if wc == nil || in == nil {
		return Packet{}, false
	}
	pi, err := t.Engine.PortInfo(port)
	if err != nil {
		return Packet{}, false
	}
	req = Packet{
		SLID: wc.SLID, DLID: pi.LID | uint16(wc.DLIDPathBits)&(1<<pi.LMC-1), SL: wc.SL,
		DestQP: wc.QPN, SrcQP: wc.SrcQP, PKey: mad.DefaultPKey, MAD: in,
	}
	if isSMP(in) {
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
	_ = t.W.WritePacket(&req)
	return req, true
}

// Reply records the reply to a request Request recorded.
func (t *Tap) Reply(req *Packet, out *mad.MAD) {
	rsp := *req
	rsp.SLID, rsp.DLID = req.DLID, req.SLID
	rsp.DestQP, rsp.SrcQP = req.SrcQP, req.DestQP
	rsp.MAD = out
	if !isSMP(req.MAD) {
		rsp.QKey = mad.QP1QKey
	}
	if req.GRH != nil {
		g := req.GRH.Reply()
		rsp.GRH = &g
	}
	_ = t.W.WritePacket(&rsp)
}

func isSMP(m *mad.MAD) bool {
	return m.MgmtClass() == mad.ClassSubnLID || m.MgmtClass() == mad.ClassSubnDirected
}
