package master_test

import (
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/master"
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
