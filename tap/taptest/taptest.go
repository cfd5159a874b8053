package taptest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vhcrd/vhcrd/hack/testenv"
)

// Available tells why TAP devices and network namespaces cannot be made
// here (nil: they can): not root, no /dev/net/tun, no ip(8).
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("TAP devices and network namespaces need root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("no /dev/net/tun: %w", err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("ip not installed (Debian package iproute2)")
	}
	return nil
}

// Require skips t (under CI fails it) where TAP devices and network
// namespaces cannot be made (Available).
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		testenv.SkipOrFail(t, "%v", err)
	}
}

// NetNS is a network namespace made for one test.
type NetNS struct {
	t    testing.TB
	Name string // as `ip netns` knows it
	Path string // its file, for tap.Open and the config's uplink.netns
}

// New makes a network namespace (ip netns add), deleted at the end of t;
// Require first.
func New(t testing.TB) *NetNS {
	t.Helper()
	n := &NetNS{t: t, Name: fmt.Sprintf("vhcrd-test-%d-%d", os.Getpid(), seq())}
	n.Path = "/run/netns/" + n.Name
	if out, err := exec.Command("ip", "netns", "add", n.Name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", n.Name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.Name).Run() })
	return n
}

var count atomic.Int32

func seq() int32 { return count.Add(1) }

// IP runs `ip -n NAME args...` and returns its output; a failure fails t.
func (n *NetNS) IP(args ...string) string {
	n.t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", n.Name}, args...)...).CombinedOutput()
	if err != nil {
		n.t.Fatalf("ip -n %s %s: %v\n%s", n.Name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Exec returns a command that runs in the namespace (ip netns exec).
func (n *NetNS) Exec(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}
