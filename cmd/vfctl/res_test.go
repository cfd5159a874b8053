package main

// vfctl's resource commands and the realistic load against a PF over tmpfs
// files, as `vhcrd serve` maps them (the PF runs in this process; vfctl's
// commands attach to the files exactly as from another process).

import (
	"bytes"
	"errors"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
)

// servePF runs a PF for n VFs over fresh files (the rig's, as vhcrd serves
// them) and returns the --bar spec.
func servePF(t *testing.T, n int) (string, *hca.HCA, *master.PF) {
	t.Helper()
	r := mastertest.NewWith(t, n, mastertest.Options{Files: true, Window: 1 << 20})
	r.Start(t)
	return "file:" + r.BARPath, r.HCA, r.PF
}

// capture runs f with stdout captured.
func capture(t *testing.T, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	out := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); out <- b }()
	ferr := f()
	os.Stdout = old
	w.Close()
	return string(<-out), ferr
}

func number(t *testing.T, out, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %q in:\n%s", re, out)
	}
	return m[1]
}

func allZero(t *testing.T, h *hca.HCA, pf *master.PF, vf int) {
	t.Helper()
	var c [restrack.NumTypes]int
	if err := pf.Do(func() { c = h.Counts(vf) }); err != nil {
		t.Fatal(err)
	}
	for ty, n := range c {
		if restrack.Type(ty) == restrack.Counter && n <= 2 {
			continue // the PF's per-port counter from INIT2RTR stays until RESET (handle_counter)
		}
		if n != 0 {
			t.Errorf("VF %d: %d %v left", vf, n, restrack.Type(ty))
		}
	}
}

func TestResByHandAcrossProcesses(t *testing.T) {
	spec, h, pf := servePF(t, 2)
	run := func(f func([]string) error, args ...string) string {
		t.Helper()
		out, err := capture(t, func() error { return f(append(args, "--bar", spec, "--vf", "1")) })
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	ev := []string{"--events", "--cmd-eqn", "1"}
	out := run(runEQ, "create", "--eqn", "1", "--log-size", "8", "--events")
	if !regexp.MustCompile(`VF 1 MAP_EQ +OK \(0x00\) +poll`).MatchString(out) {
		t.Fatalf("eq create:\n%s", out)
	}
	cqn := number(t, run(runCQ, append([]string{"create", "--eqn", "1"}, ev...)...), `CQ (\d+):`)
	out = run(runMR, append([]string{"create", "--pages", "3"}, ev...)...)
	mpt := number(t, out, `MPT (\d+),`)
	if !regexp.MustCompile(`SW2HW_MPT +OK \(0x00\) +event`).MatchString(out) {
		t.Fatalf("mr create in event mode:\n%s", out)
	}
	out = run(runQP, append([]string{"create", "--cq", cqn}, ev...)...)
	// QPNs in hexadecimal, as mlx4 and the trace print them, in the
	// output and in the command it suggests.
	qpn, mtt := number(t, out, `QP (0x[0-9a-f]+) \(`), number(t, out, `MTT base (\d+)`)
	if !strings.Contains(out, "--qpn "+qpn+" ") {
		t.Fatalf("qp create suggests another QPN than %s:\n%s", qpn, out)
	}
	out = run(runQP, append([]string{"modify", "--qpn", qpn, "--mtt", mtt, "--cq", cqn, "--to", "init"}, ev...)...)
	if !strings.Contains(out, "QP "+qpn+": RST → INIT") {
		t.Fatalf("qp modify:\n%s", out)
	}
	for _, to := range []string{"rtr", "rts", "sqd", "rts"} {
		run(runQP, append([]string{"modify", "--qpn", qpn, "--to", to}, ev...)...)
	}
	if out := run(runQP, "query", "--qpn", qpn); !regexp.MustCompile(`QP ` + qpn + `: state RTS.*send CQ ` + cqn).MatchString(out) {
		t.Fatalf("qp query:\n%s", out)
	}
	// An illegal transition: the status is printed and vfctl exits 1.
	out, err := capture(t, func() error {
		return runQP([]string{"modify", "--qpn", qpn, "--op", "INIT2RTR_QP", "--bar", spec, "--vf", "1", "--events", "--cmd-eqn", "1"})
	})
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 1 || !regexp.MustCompile(`INIT2RTR_QP +BAD_PARAM \(0x03\) +event`).MatchString(out) {
		t.Fatalf("illegal transition: %v\n%s", err, out)
	}
	// Destroying a CQ a QP uses: RESOURCE_BUSY, exit 1.
	out, err = capture(t, func() error { return runCQ([]string{"destroy", "--cqn", cqn, "--bar", spec, "--vf", "1"}) })
	if !errors.As(err, &ee) || !regexp.MustCompile(`HW2SW_CQ +RESOURCE_BUSY \(0x06\)`).MatchString(out) {
		t.Fatalf("destroying a CQ in use: %v\n%s", err, out)
	}
	run(runQP, append([]string{"destroy", "--qpn", qpn}, ev...)...)
	run(runMR, append([]string{"destroy", "--mpt", mpt}, ev...)...)
	run(runCQ, append([]string{"destroy", "--cqn", cqn}, ev...)...)
	run(runEQ, "destroy", "--eqn", "1")
	allZero(t, h, pf, 1)
}

func TestResLifecycle(t *testing.T) {
	spec, h, pf := servePF(t, 1)
	for _, events := range []bool{false, true} {
		args := []string{"--bar", spec, "--vf", "0"}
		if events {
			args = append(args, "--events")
		}
		out, err := capture(t, func() error { return runRes(args) })
		if err != nil {
			t.Fatalf("res events=%v: %v\n%s", events, err, out)
		}
		if bytes.Contains([]byte(out), []byte("BAD")) || !regexp.MustCompile(`lifecycle done: \d+ commands`).MatchString(out) {
			t.Fatalf("res events=%v:\n%s", events, out)
		}
		if events != regexp.MustCompile(`RST2INIT_QP +OK \(0x00\) +event`).MatchString(out) {
			t.Fatalf("res events=%v: mode of the QP commands:\n%s", events, out)
		}
		allZero(t, h, pf, 0)
	}
}

func TestLoadRealistic(t *testing.T) {
	spec, h, pf := servePF(t, 4)
	for _, extra := range [][]string{nil, {"--events"}} {
		args := append([]string{"--bar", spec, "--vfs", "0-3", "--mix", "realistic", "--duration", "300ms", "--json", "--procs", "0"}, extra...)
		out, err := capture(t, func() error { return runLoad(args) })
		if err != nil {
			t.Fatalf("load %v: %v\n%s", extra, err, out)
		}
		inbox := number(t, out, `"inbox_commands":(\d+)`)
		events := number(t, out, `"event_commands":(\d+)`)
		if n, _ := strconv.Atoi(inbox); n == 0 {
			t.Fatalf("load %v: no inbox commands:\n%s", extra, out)
		}
		if (events != "0") != (extra != nil) || !regexp.MustCompile(`"protocol_errors":0`).MatchString(out) ||
			!regexp.MustCompile(`"statuses":\{"OK":\d+\}`).MatchString(out) {
			t.Fatalf("load %v:\n%s", extra, out)
		}
		for vf := range 4 {
			allZero(t, h, pf, vf)
		}
	}
	if n := h.Stats(0).Overruns.Load(); n != 0 {
		t.Fatalf("%d overruns", n)
	}
}

// TestPTYS: vfctl ptys reads the register through ACCESS_REG; a port the VF
// lacks is the register access status, exit 1.
func TestPTYS(t *testing.T) {
	spec, _, _ := servePF(t, 2)
	out, err := capture(t, func() error { return runPTYS([]string{"--bar", spec, "--vf", "1", "--port", "2"}) })
	if err != nil || !regexp.MustCompile(`local_port 2 proto_mask 0x1\n`).MatchString(out) ||
		!regexp.MustCompile(`ib width cap 1X\|4X admin 1X\|4X oper 4X`).MatchString(out) ||
		!regexp.MustCompile(`ib speed cap SDR\|DDR\|QDR admin SDR\|DDR\|QDR oper QDR`).MatchString(out) {
		t.Fatalf("vfctl ptys: %v\n%s", err, out)
	}
	out, err = capture(t, func() error { return runPTYS([]string{"--bar", spec, "--vf", "1", "--port", "3"}) })
	var ee exitError
	if !errors.As(err, &ee) || !regexp.MustCompile(`register access status 0x7`).MatchString(out) {
		t.Fatalf("vfctl ptys on a port the VF lacks: %v\n%s", err, out)
	}
}
