//go:build crashpoints

package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Enabled reports whether the binary was built with -tags crashpoints.
const Enabled = true

var (
	selected string
	nth      = 1
	hits     int
)

func init() {
	selected, nth = parse(os.Getenv(EnvVar))
}

// parse splits name[:N]; a bad or missing N is 1.
func parse(v string) (string, int) {
	name, count, ok := strings.Cut(v, ":")
	n := 1
	if ok {
		if k, err := strconv.Atoi(count); err == nil && k > 0 {
			n = k
		}
	}
	return name, n
}

// Hit sends SIGKILL to this process at the selected point's Nth hit. Only
// the poller calls it, so the count needs no lock.
func Hit(name string) {
	if selected == "" || name != selected {
		return
	}
	if hits++; hits == nth {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; do not run another instruction of the PF
	}
}
