package trace

import "time"

// Clock converts a ring's ticks to wall time: Wall and Ticks were read
// together when the ring was made, PerNS is the tick rate. The conversion is
// done by readers, so that the writer stamps records with one read of its
// cycle counter. Over days the counter and the wall clock drift apart by
// the calibration error of PerNS (the counter is invariant; NTP slews the
// wall clock): a record's time is as exact as a fresh ring's.
type Clock struct {
	Wall  time.Time
	Ticks uint64
	PerNS float64
}

// Time is the wall time of tick t.
func (c *Clock) Time(t uint64) time.Time {
	return c.Wall.Add(time.Duration(float64(int64(t-c.Ticks)) / c.PerNS))
}

// Duration converts a tick count to a duration.
func (c *Clock) Duration(ticks uint64) time.Duration {
	return time.Duration(float64(ticks) / c.PerNS)
}
