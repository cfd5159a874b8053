// Command vhcrd is the PF daemon: it maps a BAR region (a tmpfs file, a sysfs
// resource or a vfio-pci region), serves every VF's comm channel from one
// polling thread and exports Prometheus metrics.
//
//	vhcrd serve [flags]      serve VFs (the default command)
//	vhcrd trace [flags]      stream the command trace of a running vhcrd
//	vhcrd vf list|show|set|flr   show and change VFs (admin socket)
//	vhcrd port up|down P     a physical port's link (admin socket)
//	vhcrd config [--check FILE]  print the embedded default configuration, or check a file
//	vhcrd completion SHELL   shell completion (bash, zsh, fish) to stdout
//	vhcrd man DIR            the man pages
//	vhcrd version            the module version and VCS revision
//	vhcrd help [COMMAND]     list commands, or a command's help
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"

	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/metrics/buildinfo"
)

type command struct {
	summary string
	run     func(args []string) error
}

var commands = map[string]command{}

// register adds a subcommand; files of this package call it from init.
func register(name, summary string, run func(args []string) error) {
	commands[name] = command{summary, run}
}

func main() {
	args := os.Args[1:]
	name := "serve"
	if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "--version") {
		name, args = args[0], args[1:]
	} else if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if name != "help" && cli.IsHelp(name) {
		usage()
		return
	}
	if name == "version" || name == "--version" {
		if len(args) > 0 && cli.IsHelp(args[0]) {
			versionHelp("vhcrd").Write(os.Stdout)
			return
		}
		if len(args) > 0 {
			cli.UsageError(os.Stderr, "vhcrd version", fmt.Errorf("unexpected arguments %q", args))
			os.Exit(cli.ExitUsage)
		}
		printVersion("vhcrd")
		return
	}
	c, ok := commands[name]
	if !ok {
		cli.UsageError(os.Stderr, "vhcrd", fmt.Errorf("unknown command %q", name))
		os.Exit(cli.ExitUsage)
	}
	if err := c.run(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		var ue usageError
		if errors.As(err, &ue) {
			cli.UsageError(os.Stderr, "vhcrd "+name, err)
			os.Exit(cli.ExitUsage)
		}
		fmt.Fprintf(os.Stderr, "vhcrd %s: %v\n", name, err)
		os.Exit(1)
	}
}

// usageError is a command's usage error: exit status 2 (other errors: 1).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// printVersion prints the module version and VCS revision the binary was
// built from (what vhcrd_build_info exports).
func printVersion(tool string) {
	v, r, mod := buildinfo.Read()
	if mod {
		r += " (modified)"
	}
	fmt.Printf("%s %s revision %s %s\n", tool, v, r, runtime.Version())
}

// exitStatus is the exit statuses of vhcrd's client commands.
const exitStatus = "0 done, 1 refused or failed, 2 usage"

// versionHelp is `TOOL version --help`.
func versionHelp(tool string) *cli.Help {
	return &cli.Help{Usage: tool + " version     (or " + tool + " --version)",
		About:    "prints the module version, the VCS revision the binary was built from (\"(modified)\" for a dirty tree) and the Go version",
		Examples: []string{tool + " version", tool + " --version"}, Exit: "0"}
}

// topExamples are `vhcrd --help`'s examples and vhcrd.1's.
var topExamples = []string{"vhcrd serve --num-vfs 8", "vhcrd vf list", "vhcrd vf set 3 --vlan 100 --qos 2",
	"vhcrd vf flr 3", "vhcrd port down 1", "vhcrd trace --vf 3 --json"}

// usage is `vhcrd --help`: the commands, on stdout.
func usage() {
	names := make([]string, 0, len(commands))
	for n := range commands {
		if !hidden[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	h := cli.Help{Usage: "vhcrd COMMAND [flags]     (vhcrd COMMAND --help: its flags; no COMMAND: serve)",
		Examples: topExamples,
		Exit:     exitStatus}
	for _, n := range names {
		h.Subs = append(h.Subs, cli.Sub{Name: n, Summary: commands[n].summary})
	}
	h.Subs = append(h.Subs, cli.Sub{Name: "version", Summary: "print the version and VCS revision (also --version)"})
	h.Write(os.Stdout)
}

// parseNoArgs parses a command that takes flags only: --help returns
// flag.ErrHelp, a bad flag or a stray argument is a usage error (exit 2).
func parseNoArgs(fs *flag.FlagSet, args []string, h *cli.Help) error {
	if err := cli.Parse(fs, args, h); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() != 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return nil
}
