package main

import (
	"os"
	"slices"
	"strconv"
	"testing"
)

// takePassedFDs reads the variables as sd_listen_fds_with_names does:
// meant for another pid they are ignored, a count that is no number is an
// error, names map to descriptors from 3 on ("unknown" for a missing name),
// and the variables are unset either way.
func TestTakePassedFDs(t *testing.T) {
	unset := func() {
		for _, k := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
			if _, ok := os.LookupEnv(k); ok {
				t.Fatalf("%s left set", k)
			}
		}
	}
	t.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()+1))
	t.Setenv("LISTEN_FDS", "2")
	t.Setenv("LISTEN_FDNAMES", "vf0-listen:vf0-conn")
	if p, err := takePassedFDs(); err != nil || p != nil {
		t.Fatalf("another pid's descriptors: %v, %v", p, err)
	}
	unset()

	t.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	t.Setenv("LISTEN_FDS", "x")
	if _, err := takePassedFDs(); err == nil {
		t.Fatal("LISTEN_FDS=x accepted")
	}
	unset()

	// Descriptors 3..5 are this process's own (the runtime's): only their
	// close-on-exec flag is set, which they have already.
	t.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	t.Setenv("LISTEN_FDS", "3")
	t.Setenv("LISTEN_FDNAMES", "vf0-irq0:vf0-irq0")
	p, err := takePassedFDs()
	if err != nil {
		t.Fatal(err)
	}
	unset()
	if got := p.take("vf0-irq0"); !slices.Equal(got, []int{3, 4}) {
		t.Fatalf("vf0-irq0: %v, want [3 4]", got)
	}
	if got := p.take("unknown"); !slices.Equal(got, []int{5}) {
		t.Fatalf("the unnamed one: %v, want [5]", got)
	}
	if len(p) != 0 {
		t.Fatalf("left: %v", p)
	}
}

// Without NOTIFY_SOCKET there is no notifier, and a nil one does nothing.
func TestNoNotifySocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n, err := newNotifier(nil)
	if err != nil || n != nil {
		t.Fatalf("newNotifier: %v, %v", n, err)
	}
	n.state("READY=1")
	n.store("vf0-listen", 0)
	n.remove("vf0-listen")
	n.close()
	t.Setenv("NOTIFY_SOCKET", "relative")
	if _, err := newNotifier(nil); err == nil {
		t.Fatal("NOTIFY_SOCKET=relative accepted")
	}
}
