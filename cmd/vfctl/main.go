// Command vfctl is the VF side of vhcrd as a tool: it attaches to the region
// a running `vhcrd serve` maps (its layout comes from the region's header),
// brings VF comm channels up, posts commands and drives load.
//
//	vfctl init --vf N
//	vfctl cmd --vf N OPCODE [--op-mod M] [--in-mod X] [--in FILE] [--in-param X] [--out-param X]
//	vfctl eq|cq|mr create|destroy|query --vf N ...     (objects live in vhcrd)
//	vfctl qp create|modify --to init|rtr|rts|sqd|err|rst|query|destroy --vf N ...
//	vfctl res --vf N [--events]                       (a whole EQ/CQ/SRQ/MR/QP lifecycle)
//	vfctl mad --vf N get nodeinfo|portinfo|pkeys|guids|nodedesc | bm-get | bm-set
//	vfctl load --vfs 0-7 --duration 10s [--mix basic|realistic] [--events] [--json]
//	vfctl load --one-thread --vfs 0-63 [--bystander N [--gap 5us] [--rounds 5]] [--json]
//	vfctl flr --vf N
//	vfctl bench --vhcrd bin/vhcrd
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/vhcrd/vhcrd/vhcr"
)

type command struct {
	summary string
	run     func(args []string) error
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string) error) {
	commands[name] = command{summary, run}
}

// exitError carries an exit status (a non-OK command status exits 1).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	if len(os.Args) < 2 || os.Args[1] == "help" || os.Args[1] == "-h" || os.Args[1] == "--help" {
		usage()
		return
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "vfctl: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err := c.run(os.Args[2:]); err != nil {
		var ee exitError
		switch {
		case errors.As(err, &ee):
			os.Exit(ee.code)
		case errors.Is(err, flag.ErrHelp):
			return
		}
		fmt.Fprintf(os.Stderr, "vfctl %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: vfctl COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", n, commands[n].summary)
	}
}

// parseInterspersed parses flags that may follow positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// barFlag adds --bar to fs.
func barFlag(fs *flag.FlagSet) *string {
	return fs.String("bar", "file:"+vhcr.DefaultBARPath, "the BAR region vhcrd serves (file:PATH); the layout comes from its header")
}

func attach(spec string) (*vhcr.Attachment, error) {
	path, ok := strings.CutPrefix(spec, "file:")
	if !ok {
		return nil, fmt.Errorf("--bar %q: vfctl attaches to file: regions (the VF side of a host's vfio BAR is a VM's business)", spec)
	}
	a, err := vhcr.AttachFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w (is `vhcrd serve` running? `make run` starts it)", err)
		}
		return nil, err
	}
	return a, nil
}
