// Command vhcrd is the PF daemon: it maps a BAR region (a tmpfs file, a sysfs
// resource or a vfio-pci region), serves every VF's comm channel from one
// polling thread and exports Prometheus metrics.
//
//	vhcrd serve [flags]      serve VFs (the default command)
//	vhcrd trace [flags]      stream the command trace of a running vhcrd
//	vhcrd config             print the embedded default configuration
//	vhcrd help               list commands
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
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
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if name == "help" || name == "-h" || name == "--help" {
		usage()
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

func usage() {
	fmt.Fprintln(os.Stderr, "usage: vhcrd COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
}
