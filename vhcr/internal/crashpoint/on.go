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

// stall is ActionEnvVar=stall: Hit blocks its goroutine (the poller)
// forever instead of killing the process.
var stall bool

func init() {
	selected, nth = parse(os.Getenv(EnvVar))
	stall = os.Getenv(ActionEnvVar) == ActionStall
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

// Hit sends SIGKILL to this process at the selected point's Nth hit (or,
// with ActionEnvVar=stall, never returns: the poller stops scanning while
// the rest of the process runs on). Only the poller calls it, so the count
// needs no lock.
func Hit(name string) {
	if selected == "" || name != selected {
		return
	}
	if hits++; hits == nth {
		if stall {
			select {}
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; do not run another instruction of the PF
	}
}
