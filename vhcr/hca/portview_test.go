package hca

import (
	"sync"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
)

// attachEngine gives the HCA of l a MAD engine built from its
// configuration, as cmd/vhcrd does.
func attachEngine(tb testing.TB, l *dpLoop) *mad.Engine {
	tb.Helper()
	return withEngine(tb, l.p.d.h)
}

// smSetPortInfo is an SM's SubnSet(PortInfo) of port 1 with the LMC lmc,
// everything else as it is (the state not changed).
func smSetPortInfo(tb testing.TB, e *mad.Engine, lmc uint8) {
	pi, err := e.PortInfo(1)
	if err != nil {
		tb.Error(err)
		return
	}
	pi.LMC, pi.PortState, pi.PortPhysicalState = lmc, mad.PortNoChange, mad.PhysNoChange
	var in mad.MAD
	in[0], in[1], in[2], in[3] = 1, mad.ClassSubnLID, 1, mad.MethodSet
	in[16], in[17] = byte(mad.AttrPortInfo>>8), byte(mad.AttrPortInfo&0xff)
	in[23] = 1 // attribute modifier: port 1
	if err := pi.Encode(in.SMPData()); err != nil {
		tb.Error(err)
		return
	}
	out, res := e.ProcessMAD(mad.IgnoreAll, 1, &mad.WC{SLID: 1}, nil, &in)
	if res&mad.Reply == 0 || out.Status() != 0 {
		tb.Errorf("SubnSet(PortInfo): result %d status %#x", res, out.Status())
	}
}

// TestPortViewWithSMSets: the data path routes every packet from the MAD
// engine's published port view while an SM changes the port from another
// goroutine (as OpenSM's Sets arrive through the fabric server, mad/ibsim,
// beside the poller): LMC 0 and 1 alternate (LID 5 answers to DLID 5 with
// both) and a P_Key no QP uses changes, so every SEND is delivered; at the
// end the view routing used is the engine's. Run under -race.
func TestPortViewWithSMSets(t *testing.T) {
	l := sendLoop(t)
	e := attachEngine(t, l)
	h := l.p.d.h
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			smSetPortInfo(t, e, uint8(i&1))
			if _, err := e.Inject(1, mad.Injection{What: mad.ChangePKeys, PKeyIndex: 9, PKey: uint16(0x8000 | i&0x7fff)}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 500 {
		l.step(t)
	}
	close(stop)
	wg.Wait()
	smSetPortInfo(t, e, 1)
	if v := h.portView(1); !v.active || v.lid != 5 || v.lmc != 1 {
		t.Fatalf("port view %+v after the SM's last Set (LMC 1)", v)
	}
	k, _ := e.PKey(1, 9)
	if got := h.pkey(1, 9); got != k {
		t.Fatalf("P_Key[9] %#x, the engine's %#x", got, k)
	}
	// A port the SM takes down routes nothing.
	if err := e.SetPortState(1, mad.PortDown); err != nil {
		t.Fatal(err)
	}
	if _, _, rr := h.routePort(1, 5, pktSize{}); rr != routeDown {
		t.Fatalf("route on a Down port: %d", rr)
	}
	if s := h.EngineStats(l.p.a.n).ErrorCQEs.Load(); s != 0 {
		t.Fatalf("%d error CQEs while the SM changed the port", s)
	}
}

// BenchmarkSend64MAD is BenchmarkSend64 with the MAD engine attached (as
// vhcrd runs): the ports' state, LIDs and P_Keys come from the engine.
func BenchmarkSend64MAD(b *testing.B) {
	l := sendLoop(b)
	attachEngine(b, l)
	b.ReportAllocs()
	b.SetBytes(64)
	b.ResetTimer()
	for range b.N {
		l.step(b)
	}
}
