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
//	vfctl pingpong --vf N (--peer-vf M | [HOST]) [-s SIZE] [-n ITERS] [-r RX] [-e] [-c] [--ud]
//	vfctl bw --vf N (--peer-vf M | [HOST]) [-s SIZE] [-n ITERS] [-t TX] [-Q CQMOD]
//	vfctl flr --vf N
//	vfctl bench --vhcrd bin/vhcrd
//	vfctl completion bash|zsh|fish | man DIR | help [COMMAND [ACTION]]
//
// vfctl links no PF, HCA or tracker (TestVFSideLinksNoPF): bench starts
// vhcrd as a process for every figure that needs the PF.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/metrics/buildinfo"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
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
	if len(os.Args) < 2 {
		cli.UsageError(os.Stderr, "vfctl", errors.New("want a command"))
		os.Exit(cli.ExitUsage)
	}
	if os.Args[1] != "help" && cli.IsHelp(os.Args[1]) {
		usage()
		return
	}
	if os.Args[1] == "version" || os.Args[1] == "--version" {
		if len(os.Args) > 2 && cli.IsHelp(os.Args[2]) {
			versionHelp().Write(os.Stdout)
			return
		}
		if len(os.Args) > 2 {
			cli.UsageError(os.Stderr, "vfctl version", fmt.Errorf("unexpected arguments %q", os.Args[2:]))
			os.Exit(cli.ExitUsage)
		}
		v, r, mod := buildinfo.Read()
		if mod {
			r += " (modified)"
		}
		fmt.Printf("vfctl %s revision %s %s\n", v, r, runtime.Version())
		return
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		cli.UsageError(os.Stderr, "vfctl", fmt.Errorf("unknown command %q", os.Args[1]))
		os.Exit(cli.ExitUsage)
	}
	err := c.run(os.Args[2:])
	opCancel()
	if err != nil {
		var ee exitError
		var ue usageError
		switch {
		case errors.As(err, &ee):
			os.Exit(ee.code)
		case errors.Is(err, flag.ErrHelp):
			return
		case errors.As(err, &ue):
			cli.UsageError(os.Stderr, "vfctl "+os.Args[1], err)
			os.Exit(cli.ExitUsage)
		}
		fmt.Fprintf(os.Stderr, "vfctl %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// versionHelp is `vfctl version --help`.
func versionHelp() *cli.Help {
	return &cli.Help{Usage: "vfctl version     (or vfctl --version)",
		About:    "prints the module version, the VCS revision the binary was built from (\"(modified)\" for a dirty tree) and the Go version",
		Examples: []string{"vfctl version", "vfctl --version"}, Exit: "0"}
}

// exitStatus is every vfctl command's exit statuses.
const exitStatus = "0 done, 1 refused or failed, 2 usage"

// usage is `vfctl --help`: the commands, on stdout.
func usage() {
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !internal(c.summary) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	h := cli.Help{Usage: "vfctl COMMAND [flags]     (vfctl COMMAND --help: its flags)",
		About:    "every command that attaches takes --bar file:PATH and --timeout (default 30s); a region no PF\nserves, or whose PF died (no process holds its owner claim), is reported at once; a PF that\nis starting is waited for.",
		Examples: topExamples,
		Exit:     exitStatus}
	for _, n := range names {
		h.Subs = append(h.Subs, cli.Sub{Name: n, Summary: commands[n].summary})
	}
	h.Subs = append(h.Subs, cli.Sub{Name: "version", Summary: "print the version and VCS revision (also --version)"})
	h.Write(os.Stdout)
}

// usageError is a usage error: exit status 2 (a refusal or failure: 1).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usageErr(err error) error { return usageError{err} }

// topExamples are `vfctl --help`'s examples and vfctl.1's.
var topExamples = []string{"vfctl init --vf 3", "vfctl cmd --vf 3 QUERY_FUNC_CAP", "vfctl res --vf 3 --events",
	"vfctl load --vfs 0-7 --duration 2s --json", "vfctl flr --vf 3"}

// Objects' numbers on a fresh PF, in the examples: VF 0's first EQ is the
// one --eqn names, its first CQ 128, its first QP 2120 (MTT base 73 after
// the EQ and the CQ) and its first MR MPT 16.
var (
	exEQ = "vfctl eq create --vf 0 --eqn 1 --map-events"
	exCQ = "vfctl cq create --vf 0 --eqn 1"
	exQP = "vfctl qp create --vf 0 --cq 128 --type ud"
	exMR = "vfctl mr create --vf 0"
)

// examples are each command's --help examples, by FlagSet name: each list
// runs as printed, in order, against a PF that just started (a test does).
var examples = map[string][]string{
	"init":       {"vfctl init --vf 3", "vfctl init --vf 3 --json --timeout 5s"},
	"cmd":        {"vfctl cmd --vf 3 QUERY_FUNC_CAP", "vfctl cmd --vf 3 QUERY_FUNC_CAP --op-mod 1 --in-mod 2", "vfctl cmd --vf 3 --json QUERY_FW"},
	"flr":        {"vfctl flr --vf 3"},
	"port":       {"vfctl port --phys-port 1 --state down", "vfctl port --phys-port 1 --state active"},
	"load":       {"vfctl load --vfs 0-7 --duration 2s --json", "vfctl load --one-thread --vfs 0-7 --bystander 0"},
	"pingpong":   {"vfctl pingpong --vf 0 --peer-vf 1 -n 100 -c", "vfctl pingpong --vf 2 --peer-vf 3 --ud -s 1024 -n 100 -e"},
	"bw":         {"vfctl bw --vf 0 --peer-vf 1 -n 500"},
	"mad":        {"vfctl mad --vf 3 get pkeys", "vfctl mad --vf 7 bm-set --bkey 0x1 --slid 9 --sgid fe80::2:c903:0:7"},
	"res":        {"vfctl res --vf 2 --events", "vfctl res --vf 2 --json"},
	"ptys":       {"vfctl ptys --vf 2 --port 1", "vfctl ptys --vf 2 --port 1 --json"},
	"bench":      {"vfctl bench --vhcrd bin/vhcrd --rounds 1 --iters 20000 --sock-iters 2000 --irq-iters 2000 --persist-iters 2000 --fair=false --dp-write-iters 200 --dp-send-iters 20000 --dp-ping-iters 1000"},
	"eq create":  {"vfctl eq create --vf 0 --eqn 1 --log-size 6 --map-events"},
	"cq create":  {exEQ, "vfctl cq create --vf 0 --eqn 1 --log-size 8"},
	"cq query":   {exEQ, exCQ, "vfctl cq query --vf 0 --cqn 128"},
	"cq destroy": {exEQ, exCQ, "vfctl cq destroy --vf 0 --cqn 128"},
	"mr query":   {exMR, "vfctl mr query --vf 0 --mpt 16 --json"},
	"mr destroy": {exMR, "vfctl mr destroy --vf 0 --mpt 16"},
	"qp destroy": {exEQ, exCQ, exQP, "vfctl qp destroy --vf 0 --qpn 2120 --mtt 73"},
	"eq":         {exEQ, "vfctl eq query --vf 0 --eqn 1 --json"},
	"cq":         {exEQ, exCQ, "vfctl cq query --vf 0 --cqn 128"},
	"mr":         {"vfctl mr create --vf 0 --pages 4", "vfctl mr destroy --vf 0 --mpt 16"},
	"qp":         {exEQ, exCQ, exQP, "vfctl qp modify --vf 0 --qpn 2120 --mtt 73 --cq 128 --to init"},
	"qp create":  {exEQ, exCQ, "vfctl qp create --vf 0 --cq 128 --type ud --port 1"},
	"qp modify":  {exEQ, exCQ, exQP, "vfctl qp modify --vf 0 --qpn 2120 --mtt 73 --cq 128 --type ud --to init"},
	"qp query":   {exEQ, exCQ, exQP, "vfctl qp query --vf 0 --qpn 2120 --mtt 73 --cq 128"},
	"mr create":  {"vfctl mr create --vf 0 --pages 8"},
	"eq query":   {"vfctl eq create --vf 0 --eqn 1", "vfctl eq query --vf 0 --eqn 1"},
	"eq destroy": {"vfctl eq create --vf 0 --eqn 1", "vfctl eq destroy --vf 0 --eqn 1"},
}

// synopses are the usage lines of commands with positional arguments.
var synopses = map[string]string{
	"cmd":      "vfctl cmd OPCODE [flags]",
	"pingpong": "vfctl pingpong --vf N (--peer-vf M | [HOST]) [flags]     (no HOST: the server)",
	"bw":       "vfctl bw --vf N (--peer-vf M | [HOST]) [flags]     (no HOST: the server)",
	"mad":      "vfctl mad get nodeinfo|portinfo|pkeys|guids|nodedesc | bm-get | bm-set [flags]",
}

// help is the --help of the command or action fs parses.
func help(fs *flag.FlagSet) *cli.Help {
	u := synopses[fs.Name()]
	if u == "" {
		u = "vfctl " + fs.Name() + " [flags]"
	}
	summary := ""
	if c, ok := commands[fs.Name()]; ok {
		summary = c.summary
	} else if cmd, act, ok := strings.Cut(fs.Name(), " "); ok {
		for _, a := range actions[cmd] {
			if a[0] == act {
				summary = a[1]
			}
		}
	}
	return &cli.Help{Usage: u, About: summary, Examples: examples[fs.Name()], Exit: exitStatus}
}

// parseFlags parses fs: a bad flag is a usage error, and so is a missing
// --vf where fs has one (vfFlag).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseOnly(fs, args); err != nil {
		return err
	}
	return checkVF(fs)
}

// parseOnly parses fs: a bad flag is a usage error.
func parseOnly(fs *flag.FlagSet, args []string) error {
	if err := cli.Parse(fs, args, help(fs)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageErr(err)
	}
	return nil
}

// checkVF is the usage error of a missing --vf where fs has one (vfFlag).
func checkVF(fs *flag.FlagSet) error {
	if f := fs.Lookup("vf"); f != nil && f.Value.String() == "-1" {
		return usageErr(errors.New("--vf N is required (the VF to act as)"))
	}
	return nil
}

// vfFlag adds the required --vf to fs (parseFlags checks it).
func vfFlag(fs *flag.FlagSet) *int { return fs.Int("vf", -1, "VF index (required)") }

// parseInterspersed parses flags that may follow positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseOnly(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, checkVF(fs)
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// timeout is --timeout, which barFlag adds to every command.
var timeout = new(time.Duration)

// opCtx is the context of the command's waits: it ends --timeout after the
// command started.
var opCtx = sync.OnceValue(func() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	opCancel = cancel
	return ctx
})

// opCancel releases opCtx's timer; main calls it when the command ends.
var opCancel = func() {}

// vfBARs are the --vf-bar flags: VF N's BAR region where it is not the
// file next to --bar.
var vfBARs = vfBARFlag{}

// vfBARFlag is --vf-bar N=file:PATH[@OFFSET], repeatable.
type vfBARFlag map[int]bar.Spec

func (v vfBARFlag) String() string {
	keys := make([]int, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strconv.Itoa(k) + "=" + v[k].String()
	}
	return strings.Join(parts, ",")
}

func (v vfBARFlag) Set(s string) error {
	n, spec, ok := strings.Cut(s, "=")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 0 || i >= wire.MaxVFs {
		return fmt.Errorf("%q: want N=file:PATH[@OFFSET]", s)
	}
	sp, err := bar.ParseSpec(spec)
	if err != nil {
		return err
	}
	if sp.Scheme != "file" {
		return fmt.Errorf("%q: vfctl maps file: regions only", s)
	}
	v[i] = sp
	return nil
}

// barFlag adds --bar, --vf-bar and --timeout to fs.
func barFlag(fs *flag.FlagSet) *string {
	fs.DurationVar(timeout, "timeout", 30*time.Second, "bound on the command's waits: bring-up, each command, the admin socket (load and bench: the bring-up; their run is --duration)")
	fs.Var(vfBARs, "vf-bar", "`N=file:PATH[@OFFSET]`: VF N's BAR region, as given to vhcrd serve --vf-bar (default: the file <bar>.vf<N>); repeatable")
	return fs.String("bar", cli.Default(cli.EnvBAR, "file:"+vfclient.DefaultBARPath), "the BAR region vhcrd serves, `file:PATH`; the layout comes from its header ($VHCRD_BAR sets the default)")
}

func attach(spec string) (*vfclient.Attachment, error) {
	path, ok := strings.CutPrefix(spec, "file:")
	if !ok {
		return nil, fmt.Errorf("--bar %q: vfctl attaches to file: regions (the VF side of a host's vfio BAR is a VM's business)", spec)
	}
	// Fail fast: the header and the owner claim say whether a PF serves
	// (a starting one is waited for); without one every comm command
	// would wait out mlx4's timeouts (30 s, 70 s).
	a, err := vfclient.AttachServing(opCtx(), path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w (is `vhcrd serve` running? `make run` starts it)", err)
	case errors.Is(err, vfclient.ErrPFDead):
		return nil, fmt.Errorf("%w (restart it: `vhcrd serve --bar %s`; `vhcrd clean --bar %s` removes its files)", err, spec, spec)
	case errors.Is(err, vfclient.ErrNoPF):
		return nil, fmt.Errorf("%s: %w (start `vhcrd serve --bar %s`)", path, err, spec)
	case err != nil:
		return nil, err
	}
	for i, sp := range vfBARs {
		if err := a.OpenVFBAR(i, sp.Path, sp.Offset); err != nil {
			a.Close()
			return nil, fmt.Errorf("--vf-bar %d: %w", i, err)
		}
	}
	return a, nil
}
