package mad_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

// countSink counts traps without keeping them.
type countSink struct{ n int }

func (c *countSink) SendTrap(mad.Trap) { c.n++ }

func newBenchEngine(b *testing.B, mutate func(*mad.NodeConfig)) (*mad.Engine, *madtest.Clock, *countSink) {
	cfg := madtest.Node()
	if mutate != nil {
		mutate(&cfg)
	}
	clock, sink := madtest.NewClock(), new(countSink)
	e, err := mad.New(cfg, mad.Options{Now: clock.Now, Sink: sink})
	if err != nil {
		b.Fatal(err)
	}
	return e, clock, sink
}

func BenchmarkSubnGetPortInfo(b *testing.B) {
	f := newFixture(b, nil)
	in := madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0, nil)
	wc := madtest.SMIWC(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, res := f.e.ProcessMAD(0, 1, wc, nil, in); res != mad.Success|mad.Reply {
			b.Fatal(res)
		}
	}
}

// BenchmarkGSIPKeyViolation: a PerfMgt Get whose P_Key index names an
// invalid entry: violation, trap 257 (rate-limited after the first, since
// the fixture's clock does not move) and a drop.
func BenchmarkGSIPKeyViolation(b *testing.B) {
	f := newFixture(b, nil)
	in := madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0)
	wc := madtest.GSIWC(0x21, 3)
	b.ReportAllocs()
	for b.Loop() {
		if _, res := f.e.ProcessMAD(0, 1, wc, nil, in); res != mad.Success|mad.Consumed {
			b.Fatal(res)
		}
	}
}

// BenchmarkGSIPKeyViolationTrap is the same with the clock past the trap
// interval every time, so every call builds and sends trap 257.
func BenchmarkGSIPKeyViolationTrap(b *testing.B) {
	e, clock, sink := newBenchEngine(b, nil)
	in := madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0)
	wc := madtest.GSIWC(0x21, 3)
	b.ReportAllocs()
	for b.Loop() {
		clock.Advance(1 << 30)
		if _, res := e.ProcessMAD(0, 1, wc, nil, in); res != mad.Success|mad.Consumed {
			b.Fatal(res)
		}
		e.PollTraps()
	}
	if sink.n == 0 {
		b.Fatal("no traps sent")
	}
}

// BenchmarkBMGetBadBKey: BKeyInfo Get with a wrong B_Key and the protect
// bit set: answered with the key hidden.
func BenchmarkBMGetBadBKey(b *testing.B) {
	f := newFixture(b, bkeyNode(0xB0B0, true, 0))
	in := madtest.BM(mad.MethodGet, mad.AttrBKeyInfo, 0, 0xBAD, nil)
	wc := madtest.GSIWC(0x21, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, res := f.e.ProcessMAD(0, 1, wc, nil, in); res != mad.Success|mad.Reply {
			b.Fatal(res)
		}
	}
}

// BenchmarkBMSetBadBKey: a Set with a wrong B_Key: violation and trap 259.
func BenchmarkBMSetBadBKey(b *testing.B) {
	e, clock, sink := newBenchEngine(b, bkeyNode(0xB0B0, true, 0))
	in := madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 0xBAD, nil)
	wc := madtest.GSIWC(0x21, 0)
	wc.GRHPresent = true
	grh := testGRH()
	b.ReportAllocs()
	for b.Loop() {
		clock.Advance(1 << 30)
		if _, res := e.ProcessMAD(0, 1, wc, grh, in); res != mad.Success|mad.Consumed {
			b.Fatal(res)
		}
		e.PollTraps()
	}
	if sink.n == 0 {
		b.Fatal("no traps sent")
	}
}
