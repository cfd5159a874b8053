package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
)

// `vhcrd completion SHELL` prints shell completion (bash, zsh, fish) to
// stdout, `vhcrd man DIR` writes the man pages (vhcrd.1, vhcrd-COMMAND.1)
// and `vhcrd help [COMMAND [ACTION]]` is `vhcrd [COMMAND [ACTION]] --help`,
// as git and kubectl have them. Completion and pages come from the command
// tree: every command's flags are those it parses.

// subcommands are the commands that take an action word first.
var subcommands = map[string][][2]string{
	"vf": {{"list", "every VF: channel state, admin and operational vport state"}, {"show", "one VF (vhcrd vf show N)"},
		{"set", "change VF N's settings as ip link set DEV vf N does on an mlx4 host"}, {"flr", "function-level reset of VF N"}},
	"port":       {{"up", "bring physical port P up (vhcrd port up P)"}, {"down", "take physical port P down"}},
	"completion": shellActions,
}

// shellActions are completion's: one per shell.
var shellActions = [][2]string{{"bash", "bash completion (source it, or install it as /usr/share/bash-completion/completions/vhcrd)"},
	{"zsh", "zsh completion (install it as _vhcrd in a directory of $fpath)"},
	{"fish", "fish completion (install it as ~/.config/fish/completions/vhcrd.fish)"}}

// hidden commands are left out of the tree and the usage (none today).
var hidden = map[string]bool{}

func init() {
	register("completion", "print shell completion for bash, zsh or fish to stdout", runCompletion)
	register("man", "write the man pages (vhcrd.1, vhcrd-COMMAND.1) into DIR", runMan)
	register("help", "print a command's help: vhcrd help [COMMAND [ACTION]] is vhcrd COMMAND [ACTION] --help", runHelp)
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
	h := &cli.Help{Usage: "vhcrd completion SHELL", About: commands["completion"].summary,
		Examples: []string{"vhcrd completion bash", "vhcrd completion zsh", "vhcrd completion fish"}, Exit: "0 printed, 2 usage"}
	for _, a := range shellActions {
		if shell == "" {
			h.Subs = append(h.Subs, cli.Sub{Name: a[0], Summary: a[1]})
		} else if a[0] == shell {
			h.Usage, h.About, h.Examples = "vhcrd completion "+shell, a[1], []string{"vhcrd completion " + shell}
		}
	}
	h.SubsName = "shells"
	if err := parseNoArgs(fs, args, h); err != nil {
		return err
	}
	if shell == "" {
		return usageError{errors.New("want a shell: bash, zsh or fish")}
	}
	if err := clidoc.Completion(os.Stdout, toolTree(), shell); err != nil {
		if errors.Is(err, clidoc.ErrShell) {
			return usageError{fmt.Errorf("unknown shell %q: want bash, zsh or fish", shell)}
		}
		return err
	}
	return nil
}

func runMan(args []string) error {
	fs := clidoc.NewFlagSet("man", flag.ContinueOnError)
	h := &cli.Help{Usage: "vhcrd man DIR", About: commands["man"].summary,
		Examples: []string{"vhcrd man man1"}, Exit: "0 written, 1 failed, 2 usage"}
	if err := cli.Parse(fs, args, h); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		return usageError{errors.New("want one DIR")}
	}
	if err := clidoc.ManPages(toolTree(), fs.Arg(0), time.Now()); err != nil {
		return fmt.Errorf("man: %w", err)
	}
	return nil
}

// runHelp is `vhcrd help [WORDS]`: the help of the command the words name.
func runHelp(args []string) error {
	if len(args) == 0 {
		usage()
		return nil
	}
	if cli.IsHelp(args[0]) {
		h := cli.Help{Usage: "vhcrd help [COMMAND [ACTION]]", About: commands["help"].summary,
			Examples: []string{"vhcrd help", "vhcrd help serve", "vhcrd help vf set"}, Exit: "0 printed, 2 usage"}
		fs := clidoc.NewFlagSet("help", flag.ContinueOnError)
		h.Flags = fs
		h.Write(os.Stdout)
		return flag.ErrHelp
	}
	if args[0] == "version" {
		versionHelp("vhcrd").Write(os.Stdout)
		return nil
	}
	c, ok := commands[args[0]]
	if !ok || args[0] == "help" {
		if ok {
			return runHelp([]string{"--help"})
		}
		return usageError{fmt.Errorf("unknown command %q", args[0])}
	}
	if acts := subcommands[args[0]]; len(args) > 1 {
		found := false
		for _, a := range acts {
			found = found || a[0] == args[1]
		}
		if !found || len(args) > 2 {
			return usageError{fmt.Errorf("no help for %q", args)}
		}
	}
	return c.run(append(append([]string(nil), args[1:]...), "--help"))
}
