package buildinfo

import (
	"runtime/debug"
	"testing"
)

// What -X sets is what Read reports, where the build stamped no VCS
// revision (a test binary: go test records none); unset, both are "unknown"
// rather than empty, so that vhcrd_build_info never has an empty label.
func TestReadTakesLinkerValues(t *testing.T) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				t.Skip("this test binary carries a VCS stamp, which wins over Revision")
			}
		}
	}
	defer func(v, r string) { Version, Revision = v, r }(Version, Revision)
	Version, Revision = "v1.2.3", "0123abcd"
	if v, r, _ := Read(); v != "v1.2.3" || r != "0123abcd" {
		t.Errorf("Read() = %q, %q; want the -X values v1.2.3, 0123abcd", v, r)
	}
	Version, Revision = "", ""
	v, r, _ := Read()
	if r != "unknown" || v == "" {
		t.Errorf("Read() = %q, %q with nothing set; want a version (the module's or unknown) and revision unknown", v, r)
	}
}
