package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
)

// `vfctl gen DIR` (hidden) writes shell completion (vfctl.bash, _vfctl,
// vfctl.fish) and man pages (vfctl.1, vfctl-COMMAND.1) generated from the
// command tree: every command's flags are those it parses.

// actions are the commands that take an action word first (res.go).
var actions = map[string][][2]string{
	"eq": {{"create", "create an EQ (--map-events: command completions and async events to it)"}, {"destroy", "destroy an EQ"}, {"query", "query an EQ"}},
	"cq": {{"create", "create a CQ"}, {"destroy", "destroy a CQ"}, {"query", "query a CQ"}},
	"mr": {{"create", "create a memory region"}, {"destroy", "destroy a memory region"}, {"query", "query a memory region"}},
	"qp": {{"create", "create a QP (state RST)"}, {"modify", "take a QP to --to init|rtr|rts|sqd|err|rst"}, {"query", "query a QP"}, {"destroy", "destroy a QP"}},
}

func init() {
	register("gen", "(internal) write shell completion and man pages into DIR", runGen)
}

// internal commands are left out of the tree and the usage.
func internal(summary string) bool { return strings.HasPrefix(summary, "(internal)") }

func toolTree() *clidoc.Tool {
	t := &clidoc.Tool{Name: "vfctl", Summary: "the VF side of vhcrd as a tool",
		Description: "vfctl attaches to the region a running vhcrd serve maps (its layout comes from the region's header), brings VF comm channels up, posts commands and drives load. It reads PF_STATE and tests the regions' owner claim first: a region no PF serves, or whose PF died, is reported at once, and a PF that holds the claim while starting is waited for.",
		Examples: []string{"vfctl init --vf 3", "vfctl cmd --vf 3 QUERY_FUNC_CAP", "vfctl qp create --vf 3 --cq 128 --type ud",
			"vfctl load --vfs 0-7 --duration 5s --json", "vfctl flr --vf 3"},
		ExitStatus: "0 done, 1 refused or failed (the device said no, or no PF serves), 2 usage error."}
	entries := map[string]clidoc.Entry{}
	for n, c := range commands {
		if !internal(c.summary) {
			entries[n] = clidoc.Entry{Summary: c.summary, Run: c.run, Actions: actions[n]}
		}
	}
	return t.Add(entries)
}

func runGen(args []string) error {
	if len(args) != 1 || args[0] == "" || args[0][0] == '-' {
		return usageErr(errors.New("usage: vfctl gen DIR"))
	}
	if err := clidoc.Generate(toolTree(), args[0], time.Now()); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	return nil
}
