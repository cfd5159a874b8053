package main

// Resource commands: EQs, CQs, MRs and QPs by hand, through the VF driver
// model (vhcr/vfclient/vfdrv). Objects live in the PF; a vfctl process learns the
// numbers of earlier ones from flags (and the rest with QUERY commands) and
// prints the numbers of new ones for the next call.
//
//	vfctl eq create --vf N --eqn E [--log-size K] [--events]
//	vfctl eq destroy|query --vf N --eqn E
//	vfctl cq create --vf N --eqn E [--log-size K]
//	vfctl cq destroy|query --vf N --cqn C
//	vfctl mr create --vf N [--pages P]
//	vfctl mr destroy|query --vf N --mpt I
//	vfctl qp create --vf N --cq C [--rcq C] [--type rc|uc|ud]
//	vfctl qp modify --vf N --qpn Q --to init|rtr|rts|sqd|err|rst [--mtt B --cq C]
//	vfctl qp modify --vf N --qpn Q --op RTR2RTS_QP   (any transition, legal or not)
//	vfctl qp query|destroy --vf N --qpn Q [--mtt B]
//	vfctl res --vf N [--events]
//
// Every command takes --events --cmd-eqn E to post with the 'e' bit, the
// completions arriving in EQ E (created with `vfctl eq create --events`).
// Each command posted prints its status; a non-OK status exits 1.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

func init() {
	register("eq", "create, destroy or query an EQ (create --events maps command completions to it)", runEQ)
	register("cq", "create, destroy or query a CQ", runCQ)
	register("mr", "create, destroy or query a memory region (MPT over MTT-described pages)", runMR)
	register("qp", "create, modify (--to init|rtr|rts|sqd|err|rst), query or destroy a QP", runQP)
	register("res", "walk a whole EQ/CQ/SRQ/MR/QP lifecycle, printing every command's status", runRes)
}

// eqSlot is the span of the VF's window vfctl gives each EQ's ring: rings
// sit at the top of the window, EQ e at window - (e+1)*eqSlot, so that later
// vfctl processes of the VF (whose buffers grow from the bottom) leave them
// alone.
const (
	eqSlot       = 64 << 10
	maxCLILogEQE = 11 // 2048 EQEs fill a slot
)

// resCmd holds the flags every resource command shares.
type resCmd struct {
	fs     *flag.FlagSet
	bar    *string
	vf     *int
	events *bool
	irq    *bool
	irqF   *os.File // with --irq: vector 0's eventfd
	cmdEQN *int
	json   *bool
	cmds   []cmdResult // with --json: every command posted
	a      *vfclient.Attachment
	d      *vfdrv.Driver
}

func newResCmd(name string) *resCmd {
	fs := clidoc.NewFlagSet(name, flag.ContinueOnError)
	c := &resCmd{fs: fs, bar: barFlag(fs)}
	c.vf = vfFlag(fs)
	c.events = fs.Bool("events", false, "post with the 'e' bit: completions by EQE in the EQ of --cmd-eqn")
	c.cmdEQN = fs.Int("cmd-eqn", 0, "EQ receiving command completions with --events")
	c.irq = fs.Bool("irq", false, "with --events: wait for completions on the VF's MSI-X vector 0 (its eventfd from vhcrd's admin socket, vf.irq) instead of polling the EQ")
	c.json = fs.Bool("json", false, "print the result as one JSON object (every command posted and the object's fields)")
	return c
}

// traceTo prints every command the driver completes; a refused one with
// the reason the PF recorded, where its admin socket says.
func traceTo(barSpec string, v *vfclient.VF) func(mlx4.Opcode, mlx4.Status, bool) {
	return func(op mlx4.Opcode, s mlx4.Status, event bool) {
		mode := "poll"
		if event {
			mode = "event"
		}
		var why *adminc.Refusal
		if s != mlx4.OK {
			why = pfReason(barSpec, v, op, s)
		}
		line := fmt.Sprintf("VF %d %-13v %-22s %s", v.Index, op, s.String(), mode)
		if why != nil {
			line += fmt.Sprintf("  reason: %s (%s)", why.Reason, why.Text)
		}
		fmt.Println(line)
	}
}

// cmdResult is one command posted, in --json output.
type cmdResult struct {
	Opcode     string `json:"opcode"`
	Status     string `json:"status"`
	StatusCode uint8  `json:"status_code"`
	Mode       string `json:"mode"`
	Reason     string `json:"reason,omitempty"` // a refused command's, from the PF's admin socket
}

// trace prints every command the driver completes or, with --json,
// collects it.
func (c *resCmd) trace(v *vfclient.VF) func(mlx4.Opcode, mlx4.Status, bool) {
	if !*c.json {
		return traceTo(*c.bar, v)
	}
	return func(op mlx4.Opcode, s mlx4.Status, event bool) {
		mode := "poll"
		if event {
			mode = "event"
		}
		r := cmdResult{Opcode: op.String(), Status: s.Name(), StatusCode: uint8(s), Mode: mode}
		if s != mlx4.OK {
			if why := pfReason(*c.bar, v, op, s); why != nil {
				r.Reason = why.Reason
			}
		}
		c.cmds = append(c.cmds, r)
	}
}

// result ends a command: with --json it prints one object (vf, command,
// commands, the fields given and, on failure, error); either way a failed
// command exits 1 (see done).
func (c *resCmd) result(fields map[string]any, err error) error {
	if !*c.json || c.d == nil {
		return done(err)
	}
	obj := map[string]any{"vf": *c.vf, "command": c.fs.Name(), "commands": c.cmds}
	if c.cmds == nil {
		obj["commands"] = []cmdResult{}
	}
	for k, v := range fields {
		obj[k] = v
	}
	if err != nil {
		obj["error"] = err.Error()
	}
	if jerr := json.NewEncoder(os.Stdout).Encode(obj); jerr != nil && err == nil {
		return jerr
	}
	return done(err)
}

// open attaches, brings the VF up if needed and builds the driver; with
// --events it adopts the completion EQ.
func (c *resCmd) open(ctx context.Context) error {
	a, v, err := openVF(*c.bar, *c.vf, false)
	if err != nil {
		return err
	}
	c.a = a
	if *c.irq {
		if !*c.events {
			return usageErr(errors.New("--irq: only with --events"))
		}
		if c.irqF, err = vfIRQ(*c.bar, *c.vf); err != nil {
			return fmt.Errorf("--irq: %w", err)
		}
	}
	if c.d, err = vfdrv.New(v, vfdrv.Options{BAR: a.VFBARs[v.Index], Trace: c.trace(v), IRQ: c.irqF}); err != nil {
		return err
	}
	if *c.events {
		if _, err := c.d.AdoptEQ(ctx, *c.cmdEQN, true); err != nil {
			return fmt.Errorf("--events: EQ %d: %w", *c.cmdEQN, err)
		}
	}
	return nil
}

func (c *resCmd) close() {
	if c.a != nil {
		c.a.Close()
	}
	if c.irqF != nil {
		c.irqF.Close()
	}
}

// done turns a failed command into exit status 1 (its status is printed
// already) and passes other errors on.
func done(err error) error {
	if errors.Is(err, vfdrv.ErrCommand) {
		return exitError{1}
	}
	return err
}

// action splits "create --vf 0" into the action and the rest; --help lists
// the actions.
func action(cmd string, args []string, allowed ...string) (string, []string, error) {
	if len(args) > 0 && cli.IsHelp(args[0]) {
		h := cli.Help{Usage: fmt.Sprintf("vfctl %s ACTION [flags]     (vfctl %s ACTION --help: its flags)", cmd, cmd),
			About: commands[cmd].summary, SubsName: "actions", Examples: examples[cmd], Exit: exitStatus}
		for _, a := range actions[cmd] {
			h.Subs = append(h.Subs, cli.Sub{Name: a[0], Summary: a[1]})
		}
		h.Write(os.Stdout)
		return "", nil, flag.ErrHelp
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", nil, usageErr(fmt.Errorf("want an action first: %s", strings.Join(allowed, ", ")))
	}
	for _, a := range allowed {
		if args[0] == a {
			return a, args[1:], nil
		}
	}
	return "", nil, usageErr(fmt.Errorf("unknown action %q: want %s", args[0], strings.Join(allowed, ", ")))
}

func runEQ(args []string) error {
	act, args, err := action("eq", args, "create", "destroy", "query")
	if err != nil {
		return err
	}
	c := newResCmd("eq " + act)
	eqn := c.fs.Int("eqn", 1, "EQ number (its ring sits at window - (eqn+1)*64 KiB)")
	logSize := c.fs.Int("log-size", 10, fmt.Sprintf("log2 of the EQE count (0..%d)", maxCLILogEQE))
	mapCmd := c.fs.Bool("map-events", false, "create: map command completions and async events to the EQ")
	c.fs.BoolVar(mapCmd, "map", false, "alias of --map-events")
	if err := parseFlags(c.fs, args); err != nil {
		return err
	}
	// On `eq create`, --events means "this EQ receives completions": map
	// them to it (the create itself goes in poll mode, as every EQ command).
	if act == "create" && *c.events {
		*mapCmd, *c.events = true, false
	}
	ctx := opCtx()
	if err := c.open(ctx); err != nil {
		return done(err)
	}
	defer c.close()
	d := c.d
	switch act {
	case "create":
		if *logSize < 0 || *logSize > maxCLILogEQE {
			return usageErr(fmt.Errorf("--log-size %d: 0..%d", *logSize, maxCLILogEQE))
		}
		iova := c.a.Layout.Window - int64(*eqn+1)*eqSlot
		if *eqn < 0 || *eqn > vfdrv.MaxEQN || iova < c.a.Layout.Window/2 {
			return usageErr(fmt.Errorf("--eqn %d: vfctl places EQ rings in the top half of the %d KiB window, 64 KiB each", *eqn, c.a.Layout.Window>>10))
		}
		q, err := d.CreateEQAt(ctx, *eqn, *logSize, uint64(iova))
		if err != nil {
			return c.result(nil, err)
		}
		if *mapCmd {
			if err := d.MapEQ(ctx, q, 1<<mlx4.EventCmd|vfdrv.AsyncEventMask); err != nil {
				return c.result(map[string]any{"eqn": q.EQN}, err)
			}
		}
		if *c.json {
			return c.result(map[string]any{"eqn": q.EQN, "eqes": 1 << q.LogSize, "iova": q.IOVA, "mtt_base": q.MTT.Base, "mtt_order": q.MTT.Order, "mapped": *mapCmd}, nil)
		}
		fmt.Printf("EQ %d: %d EQEs, ring at IOVA %#x, MTT base %d order %d\n", q.EQN, 1<<q.LogSize, q.IOVA, q.MTT.Base, q.MTT.Order)
		if *mapCmd {
			fmt.Printf("command completions and async events mapped: post with --events --cmd-eqn %d\n", q.EQN)
		}
	case "destroy":
		q, err := d.AdoptEQ(ctx, *eqn, false)
		if err != nil {
			return c.result(map[string]any{"eqn": *eqn}, err)
		}
		return c.result(map[string]any{"eqn": *eqn}, d.DestroyEQ(ctx, q))
	case "query":
		q := &vfdrv.EQ{EQN: *eqn}
		ec, err := d.QueryEQ(ctx, q)
		if err != nil {
			return c.result(map[string]any{"eqn": *eqn}, err)
		}
		if *c.json {
			return c.result(map[string]any{"eqn": *eqn, "log_size": ec.LogSize, "log_page_size": ec.LogPageSize, "mtt_base": ec.MTTBase, "consumer": ec.Consumer, "producer": ec.Producer}, nil)
		}
		fmt.Printf("EQ %d: log_size %d, log_page_size %d, MTT base %d, consumer %d, producer %d\n",
			*eqn, ec.LogSize, ec.LogPageSize, ec.MTTBase, ec.Consumer, ec.Producer)
	}
	return nil
}

func runCQ(args []string) error {
	act, args, err := action("cq", args, "create", "destroy", "query")
	if err != nil {
		return err
	}
	c := newResCmd("cq " + act)
	eqn := c.fs.Int("eqn", 1, "create: the CQ's completion EQ")
	logSize := c.fs.Int("log-size", 7, "create: log2 of the CQE count")
	cqn := c.fs.Uint("cqn", 0, "destroy, query: the CQ")
	if err := parseFlags(c.fs, args); err != nil {
		return err
	}
	ctx := opCtx()
	if err := c.open(ctx); err != nil {
		return done(err)
	}
	defer c.close()
	d := c.d
	switch act {
	case "create":
		cq, err := d.CreateCQ(ctx, *logSize, *eqn)
		if err != nil {
			return c.result(nil, err)
		}
		if *c.json {
			return c.result(map[string]any{"cqn": cq.CQN, "cqes": 1 << cq.LogSize, "eqn": cq.EQN, "mtt_base": cq.MTT.Base, "mtt_order": cq.MTT.Order}, nil)
		}
		fmt.Printf("CQ %d: %d CQEs, EQ %d, MTT base %d order %d\n", cq.CQN, 1<<cq.LogSize, cq.EQN, cq.MTT.Base, cq.MTT.Order)
	case "destroy":
		cq, err := d.AdoptCQ(ctx, uint32(*cqn))
		if err != nil {
			return c.result(map[string]any{"cqn": *cqn}, err)
		}
		return c.result(map[string]any{"cqn": *cqn}, d.DestroyCQ(ctx, cq))
	case "query":
		cc, err := d.QueryCQ(ctx, &vfdrv.CQ{CQN: uint32(*cqn)})
		if err != nil {
			return c.result(map[string]any{"cqn": *cqn}, err)
		}
		if *c.json {
			return c.result(map[string]any{"cqn": *cqn, "log_size": cc.LogSize, "comp_eqn": cc.CompEQN, "mtt_base": cc.MTTBase, "log_page_size": cc.LogPageSize}, nil)
		}
		fmt.Printf("CQ %d: log_size %d, comp_eqn %d, MTT base %d, log_page_size %d\n", *cqn, cc.LogSize, cc.CompEQN, cc.MTTBase, cc.LogPageSize)
	}
	return nil
}

func runMR(args []string) error {
	act, args, err := action("mr", args, "create", "destroy", "query")
	if err != nil {
		return err
	}
	c := newResCmd("mr " + act)
	pages := c.fs.Int("pages", 2, "create: pages of the VF's memory to register")
	pd := c.fs.Uint("pd", 1, "create: protection domain")
	mpt := c.fs.Uint("mpt", 0, "destroy, query: the MPT index")
	if err := parseFlags(c.fs, args); err != nil {
		return err
	}
	ctx := opCtx()
	if err := c.open(ctx); err != nil {
		return done(err)
	}
	defer c.close()
	d := c.d
	switch act {
	case "create":
		mr, err := d.CreateMR(ctx, *pages, mlx4.PERM_LOCAL_READ|mlx4.PERM_LOCAL_WRITE|mlx4.PERM_REMOTE_READ, uint32(*pd))
		if err != nil {
			return c.result(nil, err)
		}
		if *c.json {
			return c.result(map[string]any{"mpt": mr.Index, "key": mr.Key, "iova": mr.IOVA, "pages": mr.Pages, "mtt_base": mr.MTT.Base, "mtt_order": mr.MTT.Order}, nil)
		}
		fmt.Printf("MR: MPT %d, key %#08x, IOVA %#x, %d pages, MTT base %d order %d\n", mr.Index, mr.Key, mr.IOVA, mr.Pages, mr.MTT.Base, mr.MTT.Order)
	case "destroy":
		mr, err := d.AdoptMR(ctx, uint32(*mpt))
		if err != nil {
			return c.result(map[string]any{"mpt": *mpt}, err)
		}
		return c.result(map[string]any{"mpt": *mpt}, d.DestroyMR(ctx, mr))
	case "query":
		m, err := d.QueryMR(ctx, &vfdrv.MR{Index: uint32(*mpt)})
		if err != nil {
			return c.result(map[string]any{"mpt": *mpt}, err)
		}
		if *c.json {
			return c.result(map[string]any{"mpt": *mpt, "key": m.Key, "pd": m.PD, "start": m.Start, "length": m.Length, "mtt_base": m.MTTBase, "mtt_sz": m.MTTSize}, nil)
		}
		fmt.Printf("MPT %d: key %#08x, pd %d, start %#x, length %#x, MTT base %d, mtt_sz %d\n", *mpt, m.Key, m.PD, m.Start, m.Length, m.MTTBase, m.MTTSize)
	}
	return nil
}

var qpTypes = map[string]uint8{"rc": mlx4.QP_ST_RC, "uc": mlx4.QP_ST_UC, "ud": mlx4.QP_ST_UD}

func runQP(args []string) error {
	act, args, err := action("qp", args, "create", "modify", "query", "destroy")
	if err != nil {
		return err
	}
	c := newResCmd("qp " + act)
	scq := c.fs.Uint("cq", 0, "the send CQ (and receive CQ unless --rcq)")
	rcq := c.fs.Int("rcq", -1, "the receive CQ")
	typ := c.fs.String("type", "rc", "service type: rc, uc, ud")
	port := c.fs.Int("port", 1, "the VF's port")
	pkey := c.fs.Uint("pkey-index", 0, "index in the VF's P_Key table")
	qpn := c.fs.Uint("qpn", 0, "modify, query, destroy: the QP")
	mttBase := c.fs.Uint64("mtt", 0, "modify from RST, destroy in RST: the QP's MTT base (qp create prints it)")
	to := c.fs.String("to", "", "modify: target state (init, rtr, rts, sqd, err, rst)")
	rawOp := c.fs.String("op", "", "modify: post this transition opcode as is (e.g. RTR2RTS_QP), legal or not, instead of --to")
	if err := parseFlags(c.fs, args); err != nil {
		return err
	}
	st, ok := qpTypes[*typ]
	if !ok {
		return usageErr(fmt.Errorf("--type %q: rc, uc or ud", *typ))
	}
	cfg := vfdrv.QPConfig{ST: st, SendCQ: uint32(*scq), RecvCQ: uint32(*scq), Port: *port, PKeyIndex: uint8(*pkey), PD: 1, QKey: 0x80010000}
	if *rcq >= 0 {
		cfg.RecvCQ = uint32(*rcq)
	}
	var target mlx4.QPState
	var op mlx4.Opcode
	if act == "modify" && *rawOp != "" {
		var err error
		if op, err = mlx4.ParseOpcode(*rawOp); err != nil {
			return usageErr(fmt.Errorf("--op: %w", err))
		}
	} else if act == "modify" {
		if target, ok = mlx4.ParseQPState(*to); !ok {
			return usageErr(fmt.Errorf("--to %q: init, rtr, rts, sqd, err or rst", *to))
		}
	}
	ctx := opCtx()
	if err := c.open(ctx); err != nil {
		return done(err)
	}
	defer c.close()
	d := c.d
	if act == "create" {
		qp, err := d.CreateQP(ctx, cfg)
		if err != nil {
			return c.result(nil, err)
		}
		if *c.json {
			return c.result(map[string]any{"qpn": qp.QPN, "type": *typ, "state": qp.State.String(), "mtt_base": qp.MTT.Base, "mtt_order": qp.MTT.Order}, nil)
		}
		fmt.Printf("QP %#x (%s): state RST, MTT base %d order %d\nnext: vfctl qp modify --vf %d --qpn %#x --mtt %d --cq %d --to init\n",
			qp.QPN, *typ, qp.MTT.Base, qp.MTT.Order, *c.vf, qp.QPN, qp.MTT.Base, cfg.SendCQ)
		return nil
	}
	qp, err := d.AdoptQP(ctx, uint32(*qpn), cfg, vfdrv.MTT{Base: *mttBase, Order: 0})
	if err != nil {
		return c.result(map[string]any{"qpn": *qpn}, err)
	}
	switch act {
	case "modify":
		return modifyQP(ctx, c, qp, op, target)
	case "query":
		if *c.json {
			return c.result(map[string]any{"qpn": qp.QPN, "state": qp.State.String(), "type": qp.Cfg.ST, "send_cq": qp.Cfg.SendCQ, "recv_cq": qp.Cfg.RecvCQ,
				"use_srq": qp.Cfg.UseSRQ, "srqn": qp.Cfg.SRQN, "mtt_base": qp.MTT.Base}, nil)
		}
		fmt.Printf("QP %#x: state %v, type %d, send CQ %d, recv CQ %d, SRQ %v/%d, MTT base %d\n",
			qp.QPN, qp.State, qp.Cfg.ST, qp.Cfg.SendCQ, qp.Cfg.RecvCQ, qp.Cfg.UseSRQ, qp.Cfg.SRQN, qp.MTT.Base)
	case "destroy":
		return c.result(map[string]any{"qpn": qp.QPN}, d.DestroyQP(ctx, qp))
	}
	return nil
}

// modifyQP posts op on the QP as is, or without op walks it to target with
// the transitions vfdrv.Modify picks, and prints the state it left.
func modifyQP(ctx context.Context, c *resCmd, qp *vfdrv.QP, op mlx4.Opcode, target mlx4.QPState) error {
	d := c.d
	from := qp.State
	if op != 0 {
		s, err := d.Transition(ctx, qp, op, 0)
		if err != nil {
			return err
		}
		if s != mlx4.OK {
			if *c.json {
				return c.result(map[string]any{"qpn": qp.QPN, "from": from.String(), "state": qp.State.String()}, fmt.Errorf("%v: %w: %s", op, vfdrv.ErrCommand, s.Name()))
			}
			return exitError{1}
		}
		if _, err := d.QueryQP(ctx, qp); err == nil {
			if *c.json {
				return c.result(map[string]any{"qpn": qp.QPN, "from": from.String(), "state": qp.State.String()}, nil)
			}
			fmt.Printf("QP %#x: %v → %v\n", qp.QPN, from, qp.State)
		}
		return nil
	}
	if err := d.Modify(ctx, qp, target); err != nil {
		return c.result(map[string]any{"qpn": qp.QPN, "from": from.String(), "state": qp.State.String()}, err)
	}
	if *c.json {
		return c.result(map[string]any{"qpn": qp.QPN, "from": from.String(), "state": qp.State.String()}, nil)
	}
	fmt.Printf("QP %#x: %v → %v\n", qp.QPN, from, qp.State)
	return nil
}

// runRes walks a whole lifecycle in one process.
func runRes(args []string) error {
	c := newResCmd("res")
	eqn := c.fs.Int("eqn", 2, "the async EQ (command completions with --events); its twin eqn+1 is the CQs' completion EQ")
	logSize := c.fs.Int("log-size", 8, "log2 of the EQE count")
	if err := parseFlags(c.fs, args); err != nil {
		return err
	}
	events := *c.events
	*c.events = false // the EQ is made here, not adopted
	ctx := opCtx()
	if err := c.open(ctx); err != nil {
		return done(err)
	}
	defer c.close()
	start := time.Now()
	n, err := lifecycleOnce(ctx, c.d, *eqn, *logSize, events, !*c.json)
	if *c.json {
		return c.result(map[string]any{"commands_posted": n, "inbox": c.d.Stats.Inbox, "by_eqe": c.d.Stats.Events,
			"elapsed_ns": time.Since(start).Nanoseconds(), "done": err == nil}, err)
	}
	if err != nil {
		return done(err)
	}
	fmt.Printf("VF %d: lifecycle done: %d commands (%d with an inbox, %d by EQE) in %v\n",
		*c.vf, n, c.d.Stats.Inbox, c.d.Stats.Events, time.Since(start).Round(time.Microsecond))
	return nil
}

// lifecycleOnce creates the EQs (events: the first one receives command
// completions), a CQ, an SRQ, an MR and a QP, walks the QP through
// RST→INIT→RTR→RTS→RTS→SQD→SQD→RTS→ERR→RST, queries along the way and
// destroys everything. It returns the commands posted.
func lifecycleOnce(ctx context.Context, d *vfdrv.Driver, eqn, logSize int, events, verbose bool) (uint64, error) {
	say := func(format string, a ...any) {
		if verbose {
			fmt.Printf("  "+format+"\n", a...)
		}
	}
	var err error
	if events {
		_, err = d.EnableEvents(ctx, eqn, logSize)
	} else {
		var q *vfdrv.EQ
		q, err = d.CreateEQ(ctx, eqn, logSize)
		defer func() {
			if q != nil {
				_ = d.DestroyEQ(ctx, q)
			}
		}()
	}
	if err != nil {
		return d.Stats.Commands, err
	}
	say("EQ %d up (events %v)", eqn, events)
	comp, err := d.CreateEQ(ctx, eqn+1, 6)
	if err != nil {
		return d.Stats.Commands, err
	}
	cq, err := d.CreateCQ(ctx, 7, comp.EQN)
	if err != nil {
		return d.Stats.Commands, err
	}
	say("CQ %d on EQ %d", cq.CQN, comp.EQN)
	srq, err := d.CreateSRQ(ctx, 4, 1)
	if err != nil {
		return d.Stats.Commands, err
	}
	say("SRQ %d", srq.SRQN)
	mr, err := d.CreateMR(ctx, 2, mlx4.PERM_LOCAL_READ|mlx4.PERM_LOCAL_WRITE, 1)
	if err != nil {
		return d.Stats.Commands, err
	}
	say("MR: MPT %d key %#x", mr.Index, mr.Key)
	qp, err := d.CreateQP(ctx, vfdrv.QPConfig{ST: mlx4.QP_ST_RC, SendCQ: cq.CQN, RecvCQ: cq.CQN, PD: 1, RemoteQPN: 0x48, DestLID: 6})
	if err != nil {
		return d.Stats.Commands, err
	}
	say("QP %#x", qp.QPN)
	for _, to := range []mlx4.QPState{mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS, mlx4.QP_STATE_RTS, mlx4.QP_STATE_SQD, mlx4.QP_STATE_SQD, mlx4.QP_STATE_RTS, mlx4.QP_STATE_ERR, mlx4.QP_STATE_RST} {
		from := qp.State
		if err := d.Modify(ctx, qp, to); err != nil {
			return d.Stats.Commands, err
		}
		if to != mlx4.QP_STATE_RST {
			qc, err := d.QueryQP(ctx, qp)
			if err != nil {
				return d.Stats.Commands, err
			}
			say("QP %#x %v → %v (QUERY_QP: %v)", qp.QPN, from, to, qc.State)
		}
	}
	for _, f := range []func() error{
		func() error { return d.DestroyQP(ctx, qp) },
		func() error { return d.DestroyMR(ctx, mr) },
		func() error { return d.DestroySRQ(ctx, srq) },
		func() error { return d.DestroyCQ(ctx, cq) },
		func() error { return d.DestroyEQ(ctx, comp) },
	} {
		if err := f(); err != nil {
			return d.Stats.Commands, err
		}
	}
	if events {
		if err := d.DisableEvents(ctx); err != nil {
			return d.Stats.Commands, err
		}
	}
	say("all destroyed")
	return d.Stats.Commands, nil
}
