// Package tick is the cycle counter the PF times commands with and the
// benchmarks measure round trips with: Now reads it (RDTSC on amd64, the
// monotonic clock elsewhere) and PerNS calibrates it once. It is internal to
// vhcr: the protocol packages do not export benchmark internals.
package tick
