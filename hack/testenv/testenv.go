package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// CI reports whether the tests run under CI (the environment has CI=true).
func CI() bool { return os.Getenv("CI") == "true" }

// SkipOrFail ends t for a missing prerequisite: it skips with the reason, or
// under CI fails with it.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf(format+"; required under CI=true", args...)
		return
	}
	t.Skipf(format+"; set CI=true to make this a failure", args...)
}

// LookPath returns the path of tool, or skips (under CI fails) t naming the
// Debian package that provides it.
func LookPath(t testing.TB, tool, debPackage string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		SkipOrFail(t, "%s not installed (Debian package %s)", tool, debPackage)
		return ""
	}
	return p
}
