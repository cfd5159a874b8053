//go:build !amd64

package tick

import "time"

var base = time.Now()

// Now reads the monotonic clock in nanoseconds where there is no cycle
// counter to read.
func Now() uint64 { return uint64(time.Since(base)) }
