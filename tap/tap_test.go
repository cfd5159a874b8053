package tap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/tap"
	"github.com/vhcrd/vhcrd/tap/taptest"
)

func TestOpenRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", "a/b", "x y", "eth0:1", "0123456789abcdef", ".", ".."} {
		if d, err := tap.Open(name, ""); !errors.Is(err, tap.ErrName) {
			if d != nil {
				d.Close()
			}
			t.Errorf("Open(%q): %v, want ErrName", name, err)
		}
	}
}

func TestOpenRefusesAMissingNamespace(t *testing.T) {
	taptest.Require(t)
	if _, err := tap.Open("vhtap0", "/run/netns/no-such-namespace-of-vhcrd"); !errors.Is(err, tap.ErrNetNS) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open in a missing namespace: %v, want ErrNetNS wrapping ENOENT", err)
	}
}

// arpRequest is who-has tip tell sip (from mac), broadcast.
func arpRequest(mac [6]byte, sip, tip [4]byte) []byte {
	b := make([]byte, 42)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(b[6:], mac[:])
	binary.BigEndian.PutUint16(b[12:], 0x0806)
	copy(b[14:], []byte{0, 1, 8, 0, 6, 4, 0, 1})
	copy(b[22:], mac[:])
	copy(b[28:], sip[:])
	copy(b[38:], tip[:])
	return b
}

// TestDeviceInANamespace: the device is made, up, in the namespace the
// test made and not in the test's own; a frame written to it reaches that
// namespace's stack (an ARP request for the address the test gave it),
// whose reply is read back; Close leaves the device with its address,
// Open attaches to it again, Remove ends it.
func TestDeviceInANamespace(t *testing.T) {
	taptest.Require(t)
	ns := taptest.New(t)
	d, err := tap.Open("vhtap0", ns.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if out := ns.IP("-o", "link", "show", "vhtap0"); !strings.Contains(out, "UP") {
		t.Fatalf("the device in its namespace is not up: %s", out)
	}
	if err := exec.Command("ip", "link", "show", "vhtap0").Run(); err == nil {
		t.Fatal("the device is in the test's own namespace too")
	}
	ns.IP("addr", "add", "10.199.0.1/24", "dev", "vhtap0")
	mac := [6]byte{0x02, 0, 0, 0, 0, 0x99}
	if _, err := d.Write(arpRequest(mac, [4]byte{10, 199, 0, 2}, [4]byte{10, 199, 0, 1})); err != nil {
		t.Fatal(err)
	}
	// A bound on a stack that never answers (a failure, not a timing).
	if err := d.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 2048)
	for {
		n, err := d.Read(b)
		if err != nil {
			t.Fatalf("no ARP reply: %v", err)
		}
		f := b[:n]
		// The namespace's own IPv6 router and listener solicitations
		// come too; the reply is the ARP frame to our MAC.
		if n < 42 || binary.BigEndian.Uint16(f[12:]) != 0x0806 || !bytes.Equal(f[:6], mac[:]) {
			continue
		}
		if binary.BigEndian.Uint16(f[20:]) != 2 || !bytes.Equal(f[28:32], []byte{10, 199, 0, 1}) || !bytes.Equal(f[32:38], mac[:]) {
			t.Fatalf("not the ARP reply: % x", f)
		}
		break
	}
	idx := ns.IP("-o", "link", "show", "vhtap0")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Persistent: closed (as a killed daemon's), it stays with its
	// address; Open attaches to the same device.
	if out := ns.IP("-o", "addr", "show", "dev", "vhtap0"); !strings.Contains(out, "10.199.0.1/24") {
		t.Fatalf("the closed device lost its address: %s", out)
	}
	d, err = tap.Open("vhtap0", ns.Path)
	if err != nil {
		t.Fatalf("attaching again: %v", err)
	}
	if got := ns.IP("-o", "link", "show", "vhtap0"); strings.Fields(got)[0] != strings.Fields(idx)[0] {
		t.Fatalf("attached to another device: %q, was %q", got, idx)
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if out, err := ns.Exec("ip", "link", "show", "vhtap0").CombinedOutput(); err == nil {
		t.Fatalf("the device outlived Remove: %s", out)
	}
}

// TestCloseEndsARead: a Read blocked on an idle device returns when the
// device is closed.
func TestCloseEndsARead(t *testing.T) {
	taptest.Require(t)
	ns := taptest.New(t)
	d, err := tap.Open("vhtap1", ns.Path)
	if err != nil {
		t.Fatal(err)
	}
	// IPv6 off: nothing of the namespace's own comes to the read.
	_ = ns.Exec("sysctl", "-qw", "net.ipv6.conf.vhtap1.disable_ipv6=1").Run()
	got := make(chan error, 1)
	go func() {
		b := make([]byte, 2048)
		for {
			if _, err := d.Read(b); err != nil {
				got <- err
				return
			}
		}
	}()
	d.Close()
	if err := <-got; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read after Close: %v, want os.ErrClosed", err)
	}
}
