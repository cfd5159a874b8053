package main

import (
	"strings"

	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
)

// `vfctl completion SHELL`, `vfctl man DIR` and `vfctl help [COMMAND
// [ACTION]]`: clidoc.Builtins over vfctl's command tree.

// actions are the commands that take an action word first (res.go), and
// completion's shells.
var actions = map[string][][2]string{
	"eq":         {{"create", "create an EQ (--map-events: command completions and async events to it)"}, {"destroy", "destroy an EQ"}, {"query", "query an EQ"}},
	"cq":         {{"create", "create a CQ"}, {"destroy", "destroy a CQ"}, {"query", "query a CQ"}},
	"mr":         {{"create", "create a memory region"}, {"destroy", "destroy a memory region"}, {"query", "query a memory region"}},
	"qp":         {{"create", "create a QP (state RST)"}, {"modify", "take a QP to --to init|rtr|rts|sqd|err|rst"}, {"query", "query a QP"}, {"destroy", "destroy a QP"}},
	"completion": clidoc.ShellActions("vfctl"),
}

// internal commands are left out of the tree and the usage (none today).
func internal(summary string) bool { return strings.HasPrefix(summary, "(internal)") }

func init() {
	register("completion", "print shell completion for bash, zsh or fish to stdout", func(a []string) error { return builtins().Completion(a) })
	register("man", "write the man pages (vfctl.1, vfctl-COMMAND.1) into DIR", func(a []string) error { return builtins().Man(a) })
	register("help", "print a command's help: vfctl help [COMMAND [ACTION]] is vfctl COMMAND [ACTION] --help", func(a []string) error { return builtins().Help(a) })
}

// builtins are vfctl's completion, man and help.
func builtins() clidoc.Builtins {
	return clidoc.Builtins{Tool: "vfctl", Tree: toolTree,
		Summary: func(cmd string) string { return commands[cmd].summary },
		Command: func(cmd string) (func([]string) error, [][2]string, bool) {
			c, ok := commands[cmd]
			return c.run, actions[cmd], ok
		},
		HelpExamples: []string{"vfctl help", "vfctl help cmd", "vfctl help qp modify"},
		Usage:        usage,
		Version:      versionHelp,
		UsageErr:     usageErr,
	}
}

func toolTree() *clidoc.Tool {
	t := &clidoc.Tool{Name: "vfctl", Summary: "the VF side of vhcrd as a tool",
		Description: "vfctl attaches to the region a running vhcrd serve maps (its layout comes from the region's header), brings VF comm channels up, posts commands and drives load. It reads PF_STATE and tests the regions' owner claim first: a region no PF serves, or whose PF died, is reported at once, and a PF that holds the claim while starting is waited for.",
		Examples:    topExamples,
		ExitStatus:  "0 done, 1 refused or failed (the device said no, or no PF serves), 2 usage error."}
	entries := map[string]clidoc.Entry{}
	for n, c := range commands {
		if !internal(c.summary) {
			entries[n] = clidoc.Entry{Summary: c.summary, Run: c.run, Actions: actions[n]}
		}
	}
	return t.Add(entries)
}
