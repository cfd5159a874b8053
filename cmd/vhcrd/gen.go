package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
)

// `vhcrd gen DIR` (hidden) writes shell completion (vhcrd.bash, _vhcrd,
// vhcrd.fish) and man pages (vhcrd.1, vhcrd-COMMAND.1) generated from the
// command tree: every command's flags are those it parses.

// subcommands are the commands that take an action word first.
var subcommands = map[string][][2]string{
	"vf": {{"list", "every VF: channel state, admin and operational vport state"}, {"show", "one VF (vhcrd vf show N)"},
		{"set", "change VF N's settings as ip link set DEV vf N does on an mlx4 host"}, {"flr", "function-level reset of VF N"}},
	"port": {{"up", "bring physical port P up (vhcrd port up P)"}, {"down", "take physical port P down"}},
}

// hidden commands are left out of the tree.
var hidden = map[string]bool{"gen": true}

func init() {
	register("gen", "(internal) write shell completion and man pages into DIR", runGen)
}

func toolTree() *clidoc.Tool {
	t := &clidoc.Tool{Name: "vhcrd", Summary: "the PF side of the mlx4 SR-IOV command path",
		Description: "vhcrd maps a BAR region (a file, a sysfs resource or a vfio-pci region), serves every VF's comm channel from one polling thread, exports Prometheus metrics and takes operators' changes on a local admin socket.",
		Examples: []string{"vhcrd serve --num-vfs 8 --metrics-addr 127.0.0.1:9464", "vhcrd vf list", "vhcrd vf set 3 --vlan 100 --qos 2",
			"vhcrd vf flr 3", "vhcrd port down 1", "vhcrd trace --vf 3 --json"},
		ExitStatus: "0 done, 1 refused or failed (the device or the daemon said no), 2 usage error."}
	entries := map[string]clidoc.Entry{}
	for n, c := range commands {
		if !hidden[n] {
			entries[n] = clidoc.Entry{Summary: c.summary, Run: c.run, Actions: subcommands[n]}
		}
	}
	return t.Add(entries)
}

func runGen(args []string) error {
	if len(args) != 1 || args[0] == "" || args[0][0] == '-' {
		return usageError{errors.New("usage: vhcrd gen DIR")}
	}
	if err := clidoc.Generate(toolTree(), args[0], time.Now()); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	return nil
}
