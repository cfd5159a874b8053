package buildinfo

import "runtime/debug"

// Version and Revision may be set by the build (-ldflags -X). Version
// empty: the module version from the binary's build information. Revision
// is the fallback for builds that Go does not stamp with vcs.revision (a
// git worktree, -buildvcs=false); the stamp wins where there is one.
var Version, Revision = "", ""

// Read returns the module version and the VCS revision the binary was
// built from (runtime/debug.ReadBuildInfo; "unknown" where the build
// recorded none, as in `go test` binaries), and whether the tree had
// uncommitted changes.
func Read() (version, revision string, modified bool) {
	version, revision = Version, Revision
	if revision == "" {
		revision = "unknown"
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if version == "" {
			version = "unknown"
		}
		return
	}
	if version == "" {
		version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if version == "" {
		version = "unknown"
	}
	return
}
