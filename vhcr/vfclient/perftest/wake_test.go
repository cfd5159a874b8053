package perftest

import (
	"context"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// TestPingPongWakesSleepingPF: a PF that blocks on its futex doorbell for
// an hour (shared-memory regions, spin and yield of microseconds) serves a
// ping-pong in poll and in event mode: each send doorbell and CQ arm of
// vfdrv wakes it (vfclient's VF.Ring), as a command post does. Without the
// ring the first send after the PF fell asleep waits the hour (the test's
// context ends first).
func TestPingPongWakesSleepingPF(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"rc", Config{Size: 64, RxDepth: 16, Check: true}},
		{"rc events", Config{Size: 64, RxDepth: 16, Check: true, Events: true}},
		{"ud", Config{UD: true, Size: 64, RxDepth: 16, Check: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := mastertest.NewWith(t, 2, mastertest.Options{Window: 4 << 20, Files: true,
				Idle: master.Idle{SpinFor: time.Microsecond, YieldFor: 2 * time.Microsecond, MaxSleep: time.Hour, FutexTimeout: time.Hour}})
			r.Start(t)
			ctx := context.Background()
			ends := make([]*Endpoint, 2)
			for i := range ends {
				d, err := vfdrv.New(r.InitVF(t, i), vfdrv.Options{BAR: r.VFBARs[i]})
				if err != nil {
					t.Fatal(err)
				}
				cfg := c.cfg
				cfg.PSN = uint32(0x1000 * (i + 1))
				if ends[i], err = NewEndpoint(ctx, d, cfg, r.HCA.Cfg.Ports[0].LID); err != nil {
					t.Fatalf("VF %d: %v", i, err)
				}
			}
			for i, e := range ends {
				if err := e.Connect(ctx, ends[1-i].Local); err != nil {
					t.Fatalf("VF %d connect: %v", i, err)
				}
			}
			sleeps := r.PF.Stats().Sleeps
			tctx := testCtx(t)
			const iters = 100
			both(t, ends[0], ends[1], func(e *Endpoint, server bool) (Result, error) { return e.PingPong(tctx, iters, server) })
			if r.PF.Stats().Sleeps == sleeps {
				t.Log("the PF never slept during the ping-pong: the wake path was not exercised")
			}
		})
	}
}
