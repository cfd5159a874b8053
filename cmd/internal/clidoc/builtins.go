package clidoc

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/cli"
)

// Builtins are the commands both tools have as git and kubectl have them:
// `TOOL completion SHELL` prints shell completion (bash, zsh, fish) to
// stdout, `TOOL man DIR` writes the man pages (TOOL.1, TOOL-COMMAND.1) and
// `TOOL help [COMMAND [ACTION]]` is `TOOL [COMMAND [ACTION]] --help`.
// Completion and pages come from the tool's command tree: every command's
// flags are those it parses.
type Builtins struct {
	// Tool is the tool's name ("vhcrd").
	Tool string
	// Tree builds the tool's command tree.
	Tree func() *Tool
	// Summary is a command's one-line summary.
	Summary func(cmd string) string
	// Command is a command's run function and its action words (ok false:
	// no such command).
	Command func(cmd string) (run func([]string) error, actions [][2]string, ok bool)
	// HelpExamples are `help`'s examples.
	HelpExamples []string
	// Usage prints the top-level usage (`TOOL help` without words).
	Usage func()
	// Version is the help of `TOOL version`.
	Version func() *cli.Help
	// UsageErr marks err as a usage error (exit 2).
	UsageErr func(error) error
}

// ShellActions are the action words of tool's completion command, one per shell,
// with where each script is installed.
func ShellActions(tool string) [][2]string {
	return [][2]string{
		{"bash", "bash completion (source it, or install it as /usr/share/bash-completion/completions/" + tool + ")"},
		{"zsh", "zsh completion (install it as _" + tool + " in a directory of $fpath)"},
		{"fish", "fish completion (install it as ~/.config/fish/completions/" + tool + ".fish)"},
	}
}

// parse parses args for a builtin: --help is flag.ErrHelp, anything else
// that fails a usage error.
func (b Builtins) parse(fs *flag.FlagSet, args []string, h *cli.Help) error {
	if err := cli.Parse(fs, args, h); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return b.UsageErr(err)
	}
	return nil
}

// Completion is `TOOL completion SHELL`.
func (b Builtins) Completion(args []string) error {
	shell := ""
	if len(args) > 0 && !cli.IsHelp(args[0]) && args[0] != "" && args[0][0] != '-' {
		shell, args = args[0], args[1:]
	}
	name := "completion"
	if shell != "" {
		name += " " + shell
	}
	fs := NewFlagSet(name, flag.ContinueOnError)
	h := &cli.Help{Usage: b.Tool + " completion SHELL", About: b.Summary("completion"),
		Examples: []string{b.Tool + " completion bash", b.Tool + " completion zsh", b.Tool + " completion fish"}, Exit: "0 printed, 2 usage"}
	for _, a := range ShellActions(b.Tool) {
		if shell == "" {
			h.Subs = append(h.Subs, cli.Sub{Name: a[0], Summary: a[1]})
		} else if a[0] == shell {
			h.Usage, h.About, h.Examples = b.Tool+" completion "+shell, a[1], []string{b.Tool + " completion " + shell}
		}
	}
	h.SubsName = "shells"
	if err := b.parse(fs, args, h); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return b.UsageErr(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if shell == "" {
		return b.UsageErr(errors.New("want a shell: bash, zsh or fish"))
	}
	if err := Completion(os.Stdout, b.Tree(), shell); err != nil {
		if errors.Is(err, ErrShell) {
			return b.UsageErr(fmt.Errorf("unknown shell %q: want bash, zsh or fish", shell))
		}
		return err
	}
	return nil
}

// Man is `TOOL man DIR`.
func (b Builtins) Man(args []string) error {
	fs := NewFlagSet("man", flag.ContinueOnError)
	h := &cli.Help{Usage: b.Tool + " man DIR", About: b.Summary("man"),
		Examples: []string{b.Tool + " man man1"}, Exit: "0 written, 1 failed, 2 usage"}
	if err := b.parse(fs, args, h); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		return b.UsageErr(errors.New("want one DIR"))
	}
	if err := ManPages(b.Tree(), fs.Arg(0), time.Now()); err != nil {
		return fmt.Errorf("man: %w", err)
	}
	return nil
}

// Help is `TOOL help [WORDS]`: the help of the command the words name.
func (b Builtins) Help(args []string) error {
	if len(args) == 0 {
		b.Usage()
		return nil
	}
	if cli.IsHelp(args[0]) {
		h := cli.Help{Usage: b.Tool + " help [COMMAND [ACTION]]", About: b.Summary("help"),
			Examples: b.HelpExamples, Exit: "0 printed, 2 usage"}
		h.Flags = NewFlagSet("help", flag.ContinueOnError)
		h.Write(os.Stdout)
		return flag.ErrHelp
	}
	if args[0] == "version" {
		b.Version().Write(os.Stdout)
		return nil
	}
	run, acts, ok := b.Command(args[0])
	if !ok || args[0] == "help" {
		if ok {
			return b.Help([]string{"--help"})
		}
		return b.UsageErr(fmt.Errorf("unknown command %q", args[0]))
	}
	if len(args) > 1 {
		found := false
		for _, a := range acts {
			found = found || a[0] == args[1]
		}
		if !found || len(args) > 2 {
			return b.UsageErr(fmt.Errorf("no help for %q", args))
		}
	}
	return run(append(append([]string(nil), args[1:]...), "--help"))
}
