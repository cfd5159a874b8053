package vhcr

import (
	"sync"
	"time"
)

// ticksPerNS converts cputicks deltas to nanoseconds, measured once over a
// few milliseconds.
var ticksPerNS = sync.OnceValue(func() float64 {
	t0, c0 := time.Now(), cputicks()
	for time.Since(t0) < 5*time.Millisecond {
	}
	t1, c1 := time.Now(), cputicks()
	r := float64(c1-c0) / float64(t1.Sub(t0).Nanoseconds())
	if r <= 0 {
		return 1
	}
	return r
})

func ticksToNS(d uint64, perNS float64) uint64 { return uint64(float64(d) / perNS) }

// Ticks reads the cycle counter the poller times commands with.
func Ticks() uint64 { return cputicks() }

// TicksPerNS is the cycle counter's rate, calibrated once.
func TicksPerNS() float64 { return ticksPerNS() }
