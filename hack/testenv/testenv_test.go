package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// fakeTB records how a helper ended the test instead of ending it.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }

func (f *fakeTB) Skipf(format string, args ...any) { f.skip = fmt.Sprintf(format, args...) }

func TestSkipOrFail(t *testing.T) {
	for _, ci := range []string{"", "false", "true"} {
		t.Setenv("CI", ci)
		f := &fakeTB{TB: t}
		SkipOrFail(f, "no %s here", "qemu")
		if ci == "true" {
			if f.skip != "" || !strings.HasPrefix(f.fatal, "no qemu here") {
				t.Errorf("CI=%q: fatal %q skip %q, want a failure", ci, f.fatal, f.skip)
			}
			continue
		}
		if f.fatal != "" || !strings.HasPrefix(f.skip, "no qemu here") {
			t.Errorf("CI=%q: fatal %q skip %q, want a skip", ci, f.fatal, f.skip)
		}
	}
}

func TestLookPath(t *testing.T) {
	t.Setenv("CI", "")
	f := &fakeTB{TB: t}
	if p := LookPath(f, "sh", "dash"); p == "" || f.skip != "" || f.fatal != "" {
		t.Fatalf("sh: %q, skip %q, fatal %q", p, f.skip, f.fatal)
	}
	const missing = "vhcrd-testenv-no-such-tool"
	if p := LookPath(f, missing, "no-such-package"); p != "" || !strings.Contains(f.skip, "Debian package no-such-package") {
		t.Fatalf("missing tool: %q, skip %q", p, f.skip)
	}
	t.Setenv("CI", "true")
	f = &fakeTB{TB: t}
	if LookPath(f, missing, "no-such-package"); !strings.Contains(f.fatal, "Debian package no-such-package") || f.skip != "" {
		t.Fatalf("missing tool under CI: fatal %q, skip %q", f.fatal, f.skip)
	}
}
