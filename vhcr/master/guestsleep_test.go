package master

import (
	"testing"
	"time"
)

// TestGuestSleepBound: with a guest attached the idle poller's next sleep
// is an eighth of the time it has been idle, from 50 µs up to GuestSleep
// (so a guest's command waits up to GuestSleep only after 8 * GuestSleep
// of idleness: 160 ms with the default 20 ms); without a guest it doubles
// up to MaxSleep.
func TestGuestSleepBound(t *testing.T) {
	p := &PF{idle: DefaultIdle}
	gs := DefaultIdle.GuestSleep
	p.guests.Add(1)
	for _, c := range []struct{ idle, want time.Duration }{
		{0, 50 * time.Microsecond},
		{200 * time.Microsecond, 50 * time.Microsecond},
		{8 * time.Millisecond, time.Millisecond},
		{8 * gs / 2, gs / 2},
		{8 * gs, gs},
		{time.Second, gs},
	} {
		if got := time.Duration(p.nextSleep(int64(time.Millisecond), c.idle.Nanoseconds())); got != c.want {
			t.Errorf("guest attached, idle %v: next sleep %v, want %v", c.idle, got, c.want)
		}
	}
	p.guests.Add(-1)
	if got := time.Duration(p.nextSleep(int64(DefaultIdle.MaxSleep/4), time.Second.Nanoseconds())); got != DefaultIdle.MaxSleep/2 {
		t.Errorf("no guest: next sleep after %v is %v, want %v (doubling)", DefaultIdle.MaxSleep/4, got, DefaultIdle.MaxSleep/2)
	}
	if got := time.Duration(p.nextSleep(int64(DefaultIdle.MaxSleep), time.Second.Nanoseconds())); got != DefaultIdle.MaxSleep {
		t.Errorf("no guest: next sleep after MaxSleep is %v, want MaxSleep", got)
	}
}
