package main

import (
	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
)

// `vhcrd completion SHELL`, `vhcrd man DIR` and `vhcrd help [COMMAND
// [ACTION]]`: clidoc.Builtins over vhcrd's command tree.

// subcommands are the commands that take an action word first.
var subcommands = map[string][][2]string{
	"vf": {{"list", "every VF: channel state, admin and operational vport state"}, {"show", "one VF (vhcrd vf show N)"},
		{"set", "change VF N's settings as ip link set DEV vf N does on an mlx4 host"}, {"flr", "function-level reset of VF N"}},
	"port":       {{"up", "bring physical port P up (vhcrd port up P)"}, {"down", "take physical port P down"}},
	"completion": clidoc.ShellActions("vhcrd"),
}

// hidden commands are left out of the tree and the usage (bench-irq, the
// PF process of vfctl bench).
var hidden = map[string]bool{}

func init() {
	register("completion", "print shell completion for bash, zsh or fish to stdout", func(a []string) error { return builtins().Completion(a) })
	register("man", "write the man pages (vhcrd.1, vhcrd-COMMAND.1) into DIR", func(a []string) error { return builtins().Man(a) })
	register("help", "print a command's help: vhcrd help [COMMAND [ACTION]] is vhcrd COMMAND [ACTION] --help", func(a []string) error { return builtins().Help(a) })
}

// builtins are vhcrd's completion, man and help.
func builtins() clidoc.Builtins {
	return clidoc.Builtins{Tool: "vhcrd", Tree: toolTree,
		Summary: func(cmd string) string { return commands[cmd].summary },
		Command: func(cmd string) (func([]string) error, [][2]string, bool) {
			c, ok := commands[cmd]
			return c.run, subcommands[cmd], ok
		},
		HelpExamples: []string{"vhcrd help", "vhcrd help serve", "vhcrd help vf set"},
		Usage:        usage,
		Version:      func() *cli.Help { return versionHelp("vhcrd") },
		UsageErr:     func(err error) error { return usageError{err} },
	}
}

func toolTree() *clidoc.Tool {
	t := &clidoc.Tool{Name: "vhcrd", Summary: "the PF side of the mlx4 SR-IOV command path",
		Description: "vhcrd maps a BAR region (a file, a sysfs resource or a vfio-pci region), serves every VF's comm channel from one polling thread, exports Prometheus metrics and takes operators' changes on a local admin socket.",
		Examples:    topExamples,
		ExitStatus:  "0 done, 1 refused or failed (the device or the daemon said no), 2 usage error."}
	entries := map[string]clidoc.Entry{}
	for n, c := range commands {
		if !hidden[n] {
			entries[n] = clidoc.Entry{Summary: c.summary, Run: c.run, Actions: subcommands[n]}
		}
	}
	return t.Add(entries)
}
