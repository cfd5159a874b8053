package vhcr

// cputicks reads the time-stamp counter (constant and invariant on the
// machines vhcrd targets; calibrated against the monotonic clock at start).
func cputicks() uint64
