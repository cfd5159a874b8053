package master_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestIdleDefaults: a zero field of Options.Idle takes DefaultIdle's value;
// a set one is kept.
func TestIdleDefaults(t *testing.T) {
	if got := (master.Idle{}).WithDefaults(); got != master.DefaultIdle {
		t.Errorf("zero Idle: %+v, want %+v", got, master.DefaultIdle)
	}
	got := master.Idle{SpinFor: time.Microsecond, FutexTimeout: time.Second}.WithDefaults()
	want := master.Idle{SpinFor: time.Microsecond, YieldFor: master.DefaultIdle.YieldFor, MaxSleep: master.DefaultIdle.MaxSleep, FutexTimeout: time.Second, GuestSleep: master.DefaultIdle.GuestSleep}
	if got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	r := newStepRig(t, 1)
	if got := r.PF.IdlePolicy(); got != master.DefaultIdle {
		t.Errorf("New without master.Idle: %+v", got)
	}
}

// TestBusyIdle: a busy poller (Idle.Busy) never blocks however long it
// idles, and still does a blocking poller's chores: a FLAGS reset request
// made while it idles is acknowledged.
func TestBusyIdle(t *testing.T) {
	r := mastertest.NewWith(t, 1, mastertest.Options{Idle: master.Idle{Busy: true, SpinFor: time.Microsecond, YieldFor: 2 * time.Microsecond, FutexTimeout: 2 * time.Millisecond}})
	r.Start(t)
	r.InitVF(t, 0)
	f := regOf(t, r.VFBARs[0], mlx4.MLX4_COMM_CHAN_FLAGS)
	f.Store(f.Load() ^ mlx4.CommFlagsResetReq)
	deadline := time.Now().Add(10 * time.Second) // a hang's bound, not a timed assertion
	for g := f.Load(); (g&mlx4.CommFlagsResetReq != 0) != (g&mlx4.CommFlagsResetAck != 0); g = f.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("the reset request was not acknowledged: flags %#x", g)
		}
		runtime.Gosched()
	}
	if s := r.PF.Stats(); s.Sleeps != 0 || r.PF.Counters().Reset(0, master.ResetRequest) != 1 {
		t.Fatalf("a busy poller blocked %d times, resets %d", s.Sleeps, r.PF.Counters().Reset(0, master.ResetRequest))
	}
}
