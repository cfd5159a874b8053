package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
)

// `vfctl completion SHELL` prints shell completion (bash, zsh, fish) to
// stdout, `vfctl man DIR` writes the man pages (vfctl.1, vfctl-COMMAND.1)
// and `vfctl help [COMMAND [ACTION]]` is `vfctl [COMMAND [ACTION]] --help`,
// as git and kubectl have them. Completion and pages come from the command
// tree: every command's flags are those it parses.

// actions are the commands that take an action word first (res.go), and
// completion's shells.
var actions = map[string][][2]string{
	"eq":         {{"create", "create an EQ (--map-events: command completions and async events to it)"}, {"destroy", "destroy an EQ"}, {"query", "query an EQ"}},
	"cq":         {{"create", "create a CQ"}, {"destroy", "destroy a CQ"}, {"query", "query a CQ"}},
	"mr":         {{"create", "create a memory region"}, {"destroy", "destroy a memory region"}, {"query", "query a memory region"}},
	"qp":         {{"create", "create a QP (state RST)"}, {"modify", "take a QP to --to init|rtr|rts|sqd|err|rst"}, {"query", "query a QP"}, {"destroy", "destroy a QP"}},
	"completion": shellActions,
}

// shellActions are completion's: one per shell.
var shellActions = [][2]string{{"bash", "bash completion (source it, or install it as /usr/share/bash-completion/completions/vfctl)"},
	{"zsh", "zsh completion (install it as _vfctl in a directory of $fpath)"},
	{"fish", "fish completion (install it as ~/.config/fish/completions/vfctl.fish)"}}

// internal commands are left out of the tree and the usage (none today).
func internal(summary string) bool { return strings.HasPrefix(summary, "(internal)") }

func init() {
	register("completion", "print shell completion for bash, zsh or fish to stdout", runCompletion)
	register("man", "write the man pages (vfctl.1, vfctl-COMMAND.1) into DIR", runMan)
	register("help", "print a command's help: vfctl help [COMMAND [ACTION]] is vfctl COMMAND [ACTION] --help", runHelp)
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

func runCompletion(args []string) error {
	shell := ""
	if len(args) > 0 && !cli.IsHelp(args[0]) && args[0] != "" && args[0][0] != '-' {
		shell, args = args[0], args[1:]
	}
	name := "completion"
	if shell != "" {
		name += " " + shell
	}
	fs := clidoc.NewFlagSet(name, flag.ContinueOnError)
	h := &cli.Help{Usage: "vfctl completion SHELL", About: commands["completion"].summary,
		Examples: []string{"vfctl completion bash", "vfctl completion zsh", "vfctl completion fish"}, Exit: "0 printed, 2 usage"}
	for _, a := range shellActions {
		if shell == "" {
			h.Subs = append(h.Subs, cli.Sub{Name: a[0], Summary: a[1]})
		} else if a[0] == shell {
			h.Usage, h.About, h.Examples = "vfctl completion "+shell, a[1], []string{"vfctl completion " + shell}
		}
	}
	h.SubsName = "shells"
	if err := cli.Parse(fs, args, h); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageErr(err)
	}
	if fs.NArg() != 0 {
		return usageErr(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if shell == "" {
		return usageErr(errors.New("want a shell: bash, zsh or fish"))
	}
	if err := clidoc.Completion(os.Stdout, toolTree(), shell); err != nil {
		if errors.Is(err, clidoc.ErrShell) {
			return usageErr(fmt.Errorf("unknown shell %q: want bash, zsh or fish", shell))
		}
		return err
	}
	return nil
}

func runMan(args []string) error {
	fs := clidoc.NewFlagSet("man", flag.ContinueOnError)
	h := &cli.Help{Usage: "vfctl man DIR", About: commands["man"].summary,
		Examples: []string{"vfctl man man1"}, Exit: "0 written, 1 failed, 2 usage"}
	if err := cli.Parse(fs, args, h); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageErr(err)
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		return usageErr(errors.New("want one DIR"))
	}
	if err := clidoc.ManPages(toolTree(), fs.Arg(0), time.Now()); err != nil {
		return fmt.Errorf("man: %w", err)
	}
	return nil
}

// runHelp is `vfctl help [WORDS]`: the help of the command the words name.
func runHelp(args []string) error {
	if len(args) == 0 {
		usage()
		return nil
	}
	if cli.IsHelp(args[0]) {
		h := cli.Help{Usage: "vfctl help [COMMAND [ACTION]]", About: commands["help"].summary,
			Examples: []string{"vfctl help", "vfctl help cmd", "vfctl help qp modify"}, Exit: "0 printed, 2 usage"}
		fs := clidoc.NewFlagSet("help", flag.ContinueOnError)
		h.Flags = fs
		h.Write(os.Stdout)
		return flag.ErrHelp
	}
	if args[0] == "version" {
		versionHelp().Write(os.Stdout)
		return nil
	}
	c, ok := commands[args[0]]
	if !ok || args[0] == "help" {
		if ok {
			return runHelp([]string{"--help"})
		}
		return usageErr(fmt.Errorf("unknown command %q", args[0]))
	}
	if acts := actions[args[0]]; len(args) > 1 {
		found := false
		for _, a := range acts {
			found = found || a[0] == args[1]
		}
		if !found || len(args) > 2 {
			return usageErr(fmt.Errorf("no help for %q", args))
		}
	}
	return c.run(append(append([]string(nil), args[1:]...), "--help"))
}
