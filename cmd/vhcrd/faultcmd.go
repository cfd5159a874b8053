package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/vhcr/faultinj"
)

// `vhcrd fault add|list|clear|kinds`: fault rules over the admin socket
// (adminfault.go), and the catalogue (kinds, no socket).

func init() {
	register("fault", "inject faults into the VFs' drivers: add, list, clear (admin socket), kinds", runFault)
	subcommands["fault"] = [][2]string{
		{"add", "arm a fault rule; prints its id"},
		{"list", "the armed rules with their counts"},
		{"clear", "disarm rule ID, or every rule"},
		{"kinds", "the catalogue: every kind, its arguments, what the PF does, the driver path it aims at"},
	}
}

// faultAddAbout is `vhcrd fault add --help`'s account of a rule.
const faultAddAbout = `arm a rule: fault KIND for VF N (default: any VF) at a VHCR_POST of opcode --op
(a name such as QUERY_FUNC_CAP, a number, or any) or at comm command --comm (RESET,
VHCR0, VHCR1, VHCR2, VHCR_EN, VHCR_POST, FLAGS for the reset request, or any); with
neither, the kind's own point (the event and port kinds, internal_err, vf_reset,
pf_offline, no_vf_reset_cap: now, once; the FLAGS kinds: the reset request; the
command kinds: any VHCR_POST). The data-path kinds (cqe_error, cqe_drop, cqe_dup,
cq_overrun) fire at the CQEs the engine writes, --op naming the completed work
request's opcode (SEND, RDMA_WRITE, ..., RECV for a receive, or any). It fires at the
--nth matching occurrence (default 1),
at --every one, or at each with probability --prob drawn from a PRNG seeded with
--seed (the same seed and the same driver: the same faults at the same commands).
--arg K=V sets the kind's arguments (vhcrd fault kinds lists them). Prints the
rule's id (--json: the rule as armed).`

// faultHelp is the --help of `vhcrd fault` (sub "") and of its actions.
func faultHelp(sub string, fs *flag.FlagSet) *cli.Help {
	ex := map[string][]string{
		"": {"vhcrd fault kinds", "vhcrd fault add --kind status --vf 1 --op QUERY_FUNC_CAP --arg status=BAD_PARAM",
			"vhcrd fault list", "vhcrd fault clear"},
		"add": {"vhcrd fault add --kind status --vf 1 --op QUERY_FUNC_CAP --arg status=BAD_PARAM",
			"vhcrd fault add --kind delay --vf 2 --op any --prob 0.01 --seed 7 --arg us=80s",
			"vhcrd fault add --kind reset_version --comm RESET",
			"vhcrd fault add --kind flags_no_ack --vf 3",
			"vhcrd fault add --kind port_flap --arg port=1 --arg us=500ms --arg count=3",
			"vhcrd fault add --kind cqe_error --vf 1 --op SEND --arg syndrome=REM_ACCESS_ERR",
			"vhcrd fault add --kind cq_overrun --vf 1 --op RECV"},
		"list":  {"vhcrd fault list", "vhcrd fault list --json"},
		"clear": {"vhcrd fault add --kind never --vf 4 --comm VHCR_EN", "vhcrd fault clear 1", "vhcrd fault clear"},
		"kinds": {"vhcrd fault kinds", "vhcrd fault kinds --json"},
	}
	h := actionHelp("fault", sub, map[string]string{"": "ACTION [flags]     (vhcrd fault ACTION --help: its flags)",
		"add": "add --kind KIND [flags]", "list": "list [flags]", "clear": "clear [ID] [flags]", "kinds": "kinds [flags]"}, ex)
	h.Flags = fs
	switch sub {
	case "":
		h.About = "injects faults into the VFs' drivers through the daemon's admin socket (--admin-socket PATH, or --bar SPEC to find it); docs/faults.md has the catalogue"
	case "add":
		h.About = faultAddAbout
	}
	return h
}

// actionHelp is the --help of `vhcrd CMD` (sub "": its actions listed from
// subcommands) and of its action sub (About: the action's summary), with
// usage[sub] after "vhcrd CMD " and examples ex[sub].
func actionHelp(cmd, sub string, usage map[string]string, ex map[string][]string) *cli.Help {
	h := &cli.Help{Usage: "vhcrd " + cmd + " " + usage[sub], Examples: ex[sub], Exit: exitStatus}
	for _, c := range subcommands[cmd] {
		if sub == "" {
			h.Subs = append(h.Subs, cli.Sub{Name: c[0], Summary: c[1]})
		} else if c[0] == sub {
			h.About = c[1]
		}
	}
	return h
}

// argFlag is --arg K=V, repeatable.
type argFlag struct{ m *map[string]string }

func (a argFlag) String() string { return "" }

func (a argFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return errors.New("want K=V")
	}
	if *a.m == nil {
		*a.m = map[string]string{}
	}
	if _, dup := (*a.m)[k]; dup {
		return fmt.Errorf("%s given twice", k)
	}
	(*a.m)[k] = v
	return nil
}

// faultAddFlags adds add's flags to fs, filling s.
func faultAddFlags(fs *flag.FlagSet, s *faultinj.Spec) {
	fs.StringVar(&s.Kind, "kind", "", "the fault `KIND` (vhcrd fault kinds)")
	fs.Var(optInt{&s.VF}, "vf", "the `VF` (default: any)")
	fs.StringVar(&s.Op, "op", "", "fire at a VHCR_POST of `OPCODE` (an mlx4 name, a number, or any)")
	fs.StringVar(&s.Comm, "comm", "", "fire at comm command `CMD` (RESET, VHCR0..2, VHCR_EN, VHCR_POST, FLAGS, any)")
	fs.Uint64Var(&s.Nth, "nth", 0, "fire at the `N`th matching occurrence (default 1)")
	fs.BoolVar(&s.Every, "every", false, "fire at every matching occurrence")
	fs.Float64Var(&s.Prob, "prob", 0, "fire at each matching occurrence with probability `P` (0 < P <= 1)")
	fs.Uint64Var(&s.Seed, "seed", 0, "the PRNG's `SEED` (with --prob)")
	fs.Var(argFlag{&s.Args}, "arg", "the kind's argument `K=V` (repeatable)")
}

func runFault(args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("want an action: add, list, clear or kinds")}
	}
	if cli.IsHelp(args[0]) {
		faultHelp("", nil).Write(os.Stdout)
		return flag.ErrHelp
	}
	sub, args := args[0], args[1:]
	fs := clidoc.NewFlagSet("fault "+sub, flag.ContinueOnError)
	var af adminFlags
	var spec faultinj.Spec
	switch sub {
	case "add":
		faultAddFlags(fs, &spec)
		af.add(fs)
	case "list", "clear":
		af.add(fs)
	case "kinds":
		fs.BoolVar(&af.json, "json", false, "print the catalogue as JSON")
	default:
		return usageError{fmt.Errorf("unknown fault action %q: want add, list, clear or kinds", sub)}
	}
	pos, err := parseArgs(fs, args, faultHelp(sub, fs))
	if err != nil {
		return err
	}
	q := adminRequest{Cmd: "fault." + sub}
	switch sub {
	case "kinds":
		if len(pos) != 0 {
			return usageError{fmt.Errorf("kinds takes no arguments, got %q", pos)}
		}
		return printKinds(af.json)
	case "add", "list":
		if len(pos) != 0 {
			return usageError{fmt.Errorf("%s takes no arguments, got %q", sub, pos)}
		}
		if sub == "add" {
			if spec.Kind == "" {
				return usageError{errors.New("add needs --kind (vhcrd fault kinds lists them)")}
			}
			q.Fault = &spec
		}
	case "clear":
		if len(pos) > 1 {
			return usageError{fmt.Errorf("clear takes at most one rule id, got %q", pos)}
		}
		if len(pos) == 1 {
			n, err := strconv.Atoi(pos[0])
			if err != nil || n < 1 {
				return usageError{fmt.Errorf("clear: rule id %q is not a number from 1", pos[0])}
			}
			q.ID = n
		}
	}
	if err := checkFaultFields(&q); err != nil {
		return usageError{err}
	}
	return af.call(q, func(raw []byte) error { return printFault(sub, raw) })
}

// printFault prints the admin socket's answer raw to fault sub.
func printFault(sub string, raw []byte) error {
	switch sub {
	case "add":
		var st faultinj.RuleStatus
		if err := json.Unmarshal(raw, &st); err != nil {
			return err
		}
		fmt.Println(st.ID)
	case "list":
		var rs []faultinj.RuleStatus
		if err := json.Unmarshal(raw, &rs); err != nil {
			return err
		}
		fmt.Printf("%-4s %-8s %-8s %-5s %s\n", "ID", "HITS", "SEEN", "DONE", "RULE")
		for _, r := range rs {
			fmt.Printf("%-4d %-8d %-8d %-5v %s\n", r.ID, r.Hits, r.Seen, r.Done, r.Args)
		}
	case "clear":
		var r struct {
			N int `json:"cleared"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		fmt.Printf("%d rules cleared\n", r.N)
	}
	return nil
}

// kindJSON is one kind in `vhcrd fault kinds --json`.
type kindJSON struct {
	Kind    string            `json:"kind"`
	Group   string            `json:"group"`
	Points  []string          `json:"points"`
	Default string            `json:"default_point"`
	Event   bool              `json:"event_only,omitempty"`
	Success bool              `json:"success_only,omitempty"`
	Args    map[string]string `json:"args,omitempty"`
	Does    string            `json:"does"`
	Driver  string            `json:"driver"`
}

func printKinds(asJSON bool) error {
	var out []kindJSON
	for _, k := range faultinj.Kinds() {
		in := k.Info()
		j := kindJSON{Kind: in.Name, Group: in.Group.String(), Default: in.Default.String(), Event: in.Event, Success: in.Success,
			Does: in.Does, Driver: in.Driver}
		for _, p := range []faultinj.Point{faultinj.PointPost, faultinj.PointComm, faultinj.PointFlags, faultinj.PointNow, faultinj.PointCQE} {
			if in.Points&p != 0 {
				j.Points = append(j.Points, p.String())
			}
		}
		if len(in.Params) > 0 {
			j.Args = map[string]string{}
			for _, p := range in.Params {
				j.Args[p] = faultinj.ParamInfo[p]
			}
		}
		out = append(out, j)
	}
	if asJSON {
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(append(b, '\n'))
		return err
	}
	for _, j := range out {
		args := make([]string, 0, len(j.Args))
		for a := range j.Args {
			args = append(args, a)
		}
		sort.Strings(args)
		fmt.Printf("%s (%s; at %s", j.Kind, j.Group, strings.Join(j.Points, ", "))
		if j.Success {
			fmt.Print(", successful completions only")
		}
		if len(args) > 0 {
			fmt.Printf("; args %s", strings.Join(args, ", "))
		}
		fmt.Printf(")\n  %s\n  driver: %s\n", j.Does, j.Driver)
	}
	fmt.Println("\noutbox_field's fields:")
	for _, f := range faultinj.Fields() {
		fmt.Printf("  %-22s %s: %s\n", f.Name, f.Op, f.Doc)
	}
	return nil
}
