package tick

// Now reads the time-stamp counter (constant and invariant on the machines
// vhcrd targets; calibrated against the monotonic clock by PerNS).
func Now() uint64
