package main

import (
	"errors"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/master"
)

// TestIdleFlag: --idle's forms and its refusals.
func TestIdleFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want master.Idle
	}{
		{"default", master.Idle{}},
		{"busy", master.Idle{Busy: true}},
		{"guest-sleep=50us", master.Idle{GuestSleep: 50 * time.Microsecond}},
		{"busy,futex=5ms", master.Idle{Busy: true, FutexTimeout: 5 * time.Millisecond}},
		{"spin=1us,yield=10us,max-sleep=2ms", master.Idle{SpinFor: time.Microsecond, YieldFor: 10 * time.Microsecond, MaxSleep: 2 * time.Millisecond}},
	} {
		var f idleFlag
		if err := f.Set(tc.in); err != nil || f.policy != tc.want || f.String() != tc.in {
			t.Errorf("%q: %+v %q %v, want %+v", tc.in, f.policy, f.String(), err, tc.want)
		}
	}
	for _, in := range []string{"", "fast", "spin", "spin=", "spin=0s", "spin=-1ms", "nap=1ms", "busy,,", "default,busy"} {
		var f idleFlag
		if err := f.Set(in); !errors.Is(err, errIdle) {
			t.Errorf("%q: %v, want errIdle", in, err)
		}
	}
}
