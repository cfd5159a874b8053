// Command vhcrd is the PF daemon: it maps a BAR region (a tmpfs file, a sysfs
// resource or a vfio-pci region), serves every VF's comm channel from one
// polling thread and exports Prometheus metrics.
//
//	vhcrd serve [flags]      serve VFs (the default command)
//	vhcrd trace [flags]      stream the command trace of a running vhcrd
//	vhcrd vf list|show|set|flr   show and change VFs (admin socket)
//	vhcrd port up|down P     a physical port's link (admin socket)
//	vhcrd config             print the embedded default configuration
//	vhcrd version            the module version and VCS revision
//	vhcrd help               list commands
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"

	"github.com/vhcrd/vhcrd/metrics"
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
	if name == "help" || name == "-h" || name == "--help" {
		usage()
		return
	}
	if name == "version" || name == "--version" {
		printVersion("vhcrd")
		return
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "vhcrd: unknown command %q\n", name)
		usage()
		os.Exit(2)
	}
	if err := c.run(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "vhcrd %s: %v\n", name, err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
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
	v, r, mod := metrics.BuildInfo()
	if mod {
		r += " (modified)"
	}
	fmt.Printf("%s %s revision %s %s\n", tool, v, r, runtime.Version())
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: vhcrd COMMAND [flags]     (vhcrd COMMAND --help: its flags)\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		if !hidden[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(os.Stderr, `  version    print the version and VCS revision (also --version)

examples:
  vhcrd serve --num-vfs 8 --metrics-addr 127.0.0.1:9464
  vhcrd vf list
  vhcrd vf set 3 --vlan 100 --qos 2
  vhcrd port down 1
  vhcrd trace --vf 3 --json

exit status: 0 done, 1 refused or failed, 2 usage
`)
}
