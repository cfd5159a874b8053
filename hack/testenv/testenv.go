package testenv

import (
	"os"
	"os/exec"
	"strings"
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

// Module is the module path of vhcrd's packages.
const Module = "github.com/vhcrd/vhcrd"

// DepsWithin fails t for every package of the module that pkg (a full
// import path) depends on, through `go list -deps`, other than itself and
// allowed: how a package's import rule in ARCHITECTURE.md is checked.
func DepsWithin(t testing.TB, pkg string, allowed ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	ok := map[string]bool{pkg: true}
	for _, a := range allowed {
		ok[a] = true
	}
	for _, p := range strings.Fields(string(out)) {
		if !ok[p] && strings.HasPrefix(p, Module+"/") {
			t.Errorf("%s depends on %s", strings.TrimPrefix(pkg, Module+"/"), p)
		}
	}
}
