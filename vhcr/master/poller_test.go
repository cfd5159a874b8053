package master

import (
	"testing"
	"time"
)

// TestIdleDefaults: a zero field of Options.Idle takes DefaultIdle's value;
// a set one is kept.
func TestIdleDefaults(t *testing.T) {
	if got := (Idle{}).withDefaults(); got != DefaultIdle {
		t.Errorf("zero Idle: %+v, want %+v", got, DefaultIdle)
	}
	got := Idle{SpinFor: time.Microsecond, FutexTimeout: time.Second}.withDefaults()
	want := Idle{SpinFor: time.Microsecond, YieldFor: DefaultIdle.YieldFor, MaxSleep: DefaultIdle.MaxSleep, FutexTimeout: time.Second}
	if got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	r := newStepRig(t, 1)
	if r.pf.idle != DefaultIdle {
		t.Errorf("New without Idle: %+v", r.pf.idle)
	}
}
