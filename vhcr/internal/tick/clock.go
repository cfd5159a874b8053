package tick

import (
	"sync"
	"time"
)

// PerNS is the counter's rate in ticks per nanosecond, measured once over a
// few milliseconds against the monotonic clock.
var PerNS = sync.OnceValue(func() float64 {
	t0, c0 := time.Now(), Now()
	for time.Since(t0) < 5*time.Millisecond {
	}
	t1, c1 := time.Now(), Now()
	r := float64(c1-c0) / float64(t1.Sub(t0).Nanoseconds())
	if r <= 0 {
		return 1
	}
	return r
})

// ToNS converts a tick count to nanoseconds at perNS ticks per nanosecond.
func ToNS(d uint64, perNS float64) uint64 { return uint64(float64(d) / perNS) }
