package perftest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/irq"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// pair is two VFs of one PF, each with its end.
type pair struct {
	r    *mastertest.Rig
	a, b *Endpoint
}

// newPair brings VFs 0 and 1 up and builds an end on each with cfg (the
// PSNs differ), connected to each other.
func newPair(t *testing.T, cfg Config) *pair { return newPairIRQ(t, cfg, false) }

// newPairIRQ is newPair with each driver waiting on its VF's MSI-X vector
// 0 when irq is set.
func newPairIRQ(t *testing.T, cfg Config, withIRQ bool) *pair {
	t.Helper()
	var r *mastertest.Rig
	var set *irq.Set
	if withIRQ {
		r, set = mastertest.NewWithInterrupts(t, 2, 2, mastertest.Options{Window: 4 << 20})
	} else {
		r = mastertest.NewWith(t, 2, mastertest.Options{Window: 4 << 20})
	}
	r.Start(t)
	lid := r.HCA.Cfg.Ports[0].LID
	if lid == 0 {
		t.Fatal("the rig's port 1 has LID 0")
	}
	ctx := context.Background()
	p := &pair{r: r}
	ends := make([]*Endpoint, 2)
	for i := range ends {
		opt := vfdrv.Options{BAR: r.VFBARs[i]}
		if set != nil {
			opt.IRQ = mastertest.VectorFile(t, set, i, 0)
		}
		d, err := vfdrv.New(r.InitVF(t, i), opt)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg
		c.PSN = uint32(0x1000 * (i + 1))
		if ends[i], err = NewEndpoint(ctx, d, c, lid); err != nil {
			t.Fatalf("VF %d: %v", i, err)
		}
	}
	p.a, p.b = ends[0], ends[1]
	for i, e := range ends {
		if err := e.Connect(ctx, ends[1-i].Local); err != nil {
			t.Fatalf("VF %d connect: %v", i, err)
		}
	}
	t.Cleanup(func() {
		for _, e := range ends {
			if err := e.Close(context.Background()); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	return p
}

// both runs f on each end concurrently (each end's driver on its own
// goroutine) and fails the test on either's error.
func both[T any](t *testing.T, a, b *Endpoint, f func(e *Endpoint, server bool) (T, error)) (T, T) {
	t.Helper()
	var ra, rb T
	var ea, eb error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); rb, eb = f(b, true) }()
	go func() { defer wg.Done(); ra, ea = f(a, false) }()
	wg.Wait()
	if ea != nil || eb != nil {
		t.Fatalf("client: %v; server: %v", ea, eb)
	}
	return ra, rb
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// ibv_rc_pingpong's and ibv_ud_pingpong's loop between two VFs, every
// message checked, in poll and in event mode.
func TestPingPong(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		irq  bool
	}{
		{"rc", Config{Size: 4096, RxDepth: 500, Check: true}, false},
		{"rc inline", Config{Size: 16, RxDepth: 256, Check: true}, false},
		{"rc events", Config{Size: 4096, RxDepth: 256, Check: true, Events: true}, false},
		{"ud", Config{UD: true, Size: 2048, RxDepth: 500, Check: true}, false},
		{"ud events", Config{UD: true, Size: 1024, RxDepth: 500, Check: true, Events: true}, false},
		{"rc events msi-x", Config{Size: 4096, RxDepth: 256, Check: true, Events: true}, true},
		{"ud events msi-x", Config{UD: true, Size: 1024, RxDepth: 500, Check: true, Events: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPairIRQ(t, c.cfg, c.irq)
			ctx := testCtx(t)
			const iters = 200
			ra, rb := both(t, p.a, p.b, func(e *Endpoint, server bool) (Result, error) { return e.PingPong(ctx, iters, server) })
			for _, r := range []Result{ra, rb} {
				if r.Iters != iters || r.Bytes != int64(c.cfg.Size)*iters*2 || r.Elapsed <= 0 {
					t.Errorf("result %+v", r)
				}
			}
			if c.cfg.Events {
				// On MSI-X the PF raises the vector for the completion
				// EQEs (the driver re-arms its EQ after every one); whether
				// a wait outlasted the driver's spin and slept on the
				// eventfd until one is the machine's timing, so the
				// driver's wake-ups are bounded, not required.
				var raised [2]uint64
				if err := p.r.PF.Do(func() { raised = [2]uint64{p.r.HCA.Stats(0).Interrupts.Load(), p.r.HCA.Stats(1).Interrupts.Load()} }); err != nil {
					t.Fatal(err)
				}
				for i, e := range []*Endpoint{p.a, p.b} {
					if e.CQ.Events() == 0 || e.D.Stats.CompEvents != e.CQ.Events() {
						t.Errorf("events mode: %d completion events, driver counted %d", e.CQ.Events(), e.D.Stats.CompEvents)
					}
					if c.irq && (raised[i] == 0 || e.D.Stats.Interrupts > raised[i]) {
						t.Errorf("events on MSI-X: VF %d's vector raised %d times, the driver woken by it %d times", i, raised[i], e.D.Stats.Interrupts)
					}
					if !c.irq && (raised[i] != 0 || e.D.Stats.Interrupts != 0) {
						t.Errorf("events without MSI-X: VF %d's vector raised %d times, driver woken %d", i, raised[i], e.D.Stats.Interrupts)
					}
				}
			}
			t.Logf("%s", ra.Lines())
		})
	}
}

// ib_write_bw's stream: the written bytes arrive in the other VF's buffer.
// Its QP (tx_depth 128, one receive WQE) spans one page more than Linux's
// qp_get_mtt_size says, which a PF takes.
func TestWriteBW(t *testing.T) {
	p := newPair(t, Config{Size: 65536, RxDepth: 1, TxDepth: 128, Selective: true})
	ctx := testCtx(t)
	const iters = 64
	msg := make([]byte, 65536)
	fill(msg, 77)
	if err := p.a.D.Write(p.a.SendAddr(), msg); err != nil {
		t.Fatal(err)
	}
	r, err := p.a.WriteBW(ctx, iters, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Iters != iters || r.MBps() <= 0 {
		t.Errorf("result %+v", r)
	}
	got := make([]byte, len(msg))
	if err := p.b.D.Read(p.b.RecvAddr(), got); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != msg[i] {
			t.Fatalf("byte %d of the written buffer is %#x, want %#x", i, got[i], msg[i])
		}
	}
	t.Logf("%d x %d bytes: %.1f MB/s, %.0f msg/s", iters, r.Size, r.MBps(), r.MsgRate())
}

// The SEND message rate stream: every SEND finds a receive.
func TestSendRate(t *testing.T) {
	p := newPair(t, Config{Size: 64, RxDepth: 512, TxDepth: 64, Selective: true})
	ctx := testCtx(t)
	const iters = 5000
	var credits atomic.Int64
	ra, rb := both(t, p.a, p.b, func(e *Endpoint, server bool) (BWResult, error) {
		if server {
			return e.ReceiveLoop(ctx, iters, &credits)
		}
		return e.SendRate(ctx, iters, 0, &credits)
	})
	if ra.Iters != iters || rb.Iters != iters {
		t.Errorf("sent %d, received %d", ra.Iters, rb.Iters)
	}
	t.Logf("%d SENDs of 64 bytes: %.0f msg/s", iters, ra.MsgRate())
}

// PingPongPair: ibv_rc_pingpong's loop with both ends on one goroutine,
// every message checked, the receives topped up (iters > rx_depth); it
// polls, and refuses ends in event mode.
func TestPingPongPair(t *testing.T) {
	for _, cfg := range []Config{{Size: 64, RxDepth: 100, Check: true}, {UD: true, Size: 1024, RxDepth: 100, Check: true}} {
		p := newPair(t, cfg)
		const iters = 300
		r, err := PingPongPair(testCtx(t), p.a, p.b, iters)
		if err != nil || r.Iters != iters || r.Bytes != int64(cfg.Size)*iters*2 || r.Elapsed <= 0 {
			t.Fatalf("UD %v: %+v, %v", cfg.UD, r, err)
		}
		if p.a.routs < 1 || p.b.routs < 1 {
			t.Errorf("receives left posted: %d and %d", p.a.routs, p.b.routs)
		}
	}
	p := newPair(t, Config{Size: 64, RxDepth: 16, Events: true})
	if _, err := PingPongPair(testCtx(t), p.a, p.b, 1); err == nil {
		t.Fatal("PingPongPair took ends in event mode")
	}
}

// SendRatePair: the SEND stream with both ends on one goroutine: every
// send completes and every message arrives, more of them than the
// receive queue holds.
func TestSendRatePair(t *testing.T) {
	p := newPair(t, Config{Size: 64, RxDepth: 512, TxDepth: 64, Selective: true})
	const iters = 5000
	r, err := SendRatePair(testCtx(t), p.a, p.b, iters, 0)
	if err != nil || r.Iters != iters || r.Elapsed <= 0 {
		t.Fatalf("%+v, %v", r, err)
	}
	if n := p.b.CQ.Poll(p.b.wc[:]); n != 0 {
		t.Errorf("%d completions left on the receiver's CQ", n)
	}
	t.Logf("%d SENDs of 64 bytes: %.0f msg/s", iters, r.MsgRate())
}
