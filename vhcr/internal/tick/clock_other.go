//go:build !amd64

package vhcr

import "time"

var tickBase = time.Now()

func cputicks() uint64 { return uint64(time.Since(tickBase)) }
