package main

// --json on every vfctl command that reports state: one JSON object on
// stdout, snake_case keys, the same exit statuses as the text form.

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/hca"
)

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkKeys fails unless every key of v (recursively) is snake_case.
func checkKeys(t *testing.T, v any, path string) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !snakeKey.MatchString(k) && !regexp.MustCompile(`^\d+$`).MatchString(k) {
				t.Errorf("%s: key %q is not snake_case", path, k)
			}
			checkKeys(t, e, path+"."+k)
		}
	case []any:
		for i, e := range x {
			checkKeys(t, e, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// runJSON runs f with --json and returns its one object and its exit error.
func runJSON(t *testing.T, f func([]string) error, args ...string) (map[string]any, error) {
	t.Helper()
	out, err := capture(t, func() error { return f(append(args, "--json")) })
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("%v --json: want one line, got:\n%s", args, out)
	}
	var m map[string]any
	if jerr := json.Unmarshal([]byte(out), &m); jerr != nil {
		t.Fatalf("%v --json: %v (err %v)\n%s", args, jerr, err, out)
	}
	checkKeys(t, m, strings.Join(args[:min(len(args), 2)], " "))
	return m, err
}

func num(t *testing.T, m map[string]any, k string) string {
	t.Helper()
	v, ok := m[k].(float64)
	if !ok {
		t.Fatalf("no number %q in %v", k, m)
	}
	return fmt.Sprint(uint64(v))
}

// lastStatus is the status of the last command a resource command posted.
func lastStatus(t *testing.T, m map[string]any) string {
	t.Helper()
	cs, _ := m["commands"].([]any)
	if len(cs) == 0 {
		t.Fatalf("no commands in %v", m)
	}
	return cs[len(cs)-1].(map[string]any)["status"].(string)
}

func TestJSON(t *testing.T) {
	spec, h, pf := servePF(t, 2)
	b := []string{"--bar", spec, "--vf", "1"}
	ok := func(f func([]string) error, args ...string) map[string]any {
		t.Helper()
		m, err := runJSON(t, f, append(args, b...)...)
		if err != nil {
			t.Fatalf("%v: %v %v", args, err, m)
		}
		if m["vf"] != float64(1) {
			t.Fatalf("%v: vf %v", args, m["vf"])
		}
		return m
	}
	m := ok(runEQ, "create", "--eqn", "1", "--log-size", "8", "--events")
	if m["eqn"] != float64(1) || m["eqes"] != float64(256) || m["mapped"] != true || lastStatus(t, m) != "OK" {
		t.Fatalf("eq create: %v", m)
	}
	if m := ok(runEQ, "query", "--eqn", "1"); m["log_size"] != float64(8) {
		t.Fatalf("eq query: %v", m)
	}
	ev := []string{"--events", "--cmd-eqn", "1"}
	m = ok(runCQ, append([]string{"create", "--eqn", "1"}, ev...)...)
	cqn := num(t, m, "cqn")
	if cs := m["commands"].([]any); cs[len(cs)-1].(map[string]any)["mode"] != "event" {
		t.Fatalf("cq create --events: %v", m)
	}
	if m := ok(runCQ, "query", "--cqn", cqn); m["comp_eqn"] != float64(1) {
		t.Fatalf("cq query: %v", m)
	}
	m = ok(runMR, "create", "--pages", "3")
	mpt := num(t, m, "mpt")
	// mtt_sz 0 as mlx4_mr_enable writes it: the region's entries are its
	// three pages from mtt_base.
	if m := ok(runMR, "query", "--mpt", mpt); m["mtt_sz"] != float64(0) || m["length"] != float64(3*4096) {
		t.Fatalf("mr query: %v", m)
	}
	m = ok(runQP, "create", "--cq", cqn)
	qpn, mtt := num(t, m, "qpn"), num(t, m, "mtt_base")
	if m["state"] != "RST" {
		t.Fatalf("qp create: %v", m)
	}
	if m := ok(runQP, "modify", "--qpn", qpn, "--mtt", mtt, "--cq", cqn, "--to", "init"); m["state"] != "INIT" || m["from"] != "RST" {
		t.Fatalf("qp modify: %v", m)
	}
	if m := ok(runQP, "query", "--qpn", qpn); m["state"] != "INIT" || num(t, m, "send_cq") != cqn {
		t.Fatalf("qp query: %v", m)
	}
	// A refused command: the object carries the status and error, exit 1.
	var ee exitError
	m, err := runJSON(t, runCQ, append([]string{"destroy", "--cqn", cqn}, b...)...)
	if !errors.As(err, &ee) || ee.code != 1 || lastStatus(t, m) != "RESOURCE_BUSY" || m["error"] == nil {
		t.Fatalf("cq destroy of a CQ in use: %v %v", err, m)
	}
	m, err = runJSON(t, runQP, append([]string{"modify", "--qpn", qpn, "--op", "RTS2SQD_QP"}, b...)...)
	if !errors.As(err, &ee) || ee.code != 1 || lastStatus(t, m) != "BAD_PARAM" {
		t.Fatalf("illegal transition: %v %v", err, m)
	}
	ok(runQP, "destroy", "--qpn", qpn)
	ok(runMR, "destroy", "--mpt", mpt)
	ok(runCQ, "destroy", "--cqn", cqn)
	ok(runEQ, "destroy", "--eqn", "1")
	allZero(t, h, pf, 1)

	m = ok(runRes)
	if m["done"] != true || m["commands_posted"].(float64) < 20 || len(m["commands"].([]any)) == 0 {
		t.Fatalf("res: %v", m)
	}
	allZero(t, h, pf, 1)

	m = ok(runPTYS, "--port", "2")
	p, _ := m["ptys"].(map[string]any)
	if m["status"] != "OK" || p["local_port"] != float64(2) || p["ib_width_oper"] != "4X" || p["ib_speed_oper"] != "QDR" {
		t.Fatalf("ptys: %v", m)
	}
	m, err = runJSON(t, runPTYS, append([]string{"--port", "3"}, b...)...)
	if !errors.As(err, &ee) || m["reg_status"] != float64(7) || m["ptys"] != nil {
		t.Fatalf("ptys on a port the VF lacks: %v %v", err, m)
	}

	// Without a MAD engine MAD_IFC is refused: the status, exit 1.
	m, err = runJSON(t, runMAD, append([]string{"get", "nodeinfo"}, b...)...)
	if !errors.As(err, &ee) || ee.code != 1 || m["status"] != "INTERNAL_ERR" || m["mad"] != nil {
		t.Fatalf("mad without an engine: %v %v", err, m)
	}
	e, err := mad.New(hca.MADNode(h.Cfg), mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if derr := pf.Do(func() { err = h.AttachMAD(e) }); derr != nil || err != nil {
		t.Fatal(derr, err)
	}
	m = ok(runMAD, "get", "nodeinfo")
	mf, _ := m["mad"].(map[string]any)
	ni, _ := mf["node_info"].(map[string]any)
	if m["status"] != "OK" || mf["mad_status"] != float64(0) || ni == nil || ni["num_ports"] == nil {
		t.Fatalf("mad get nodeinfo: %v", m)
	}
	m = ok(runMAD, "get", "pkeys")
	if keys, _ := m["mad"].(map[string]any)["p_keys"].(map[string]any); len(keys) == 0 {
		t.Fatalf("mad get pkeys: %v", m)
	}
}

// TestUsageErrorsInProcess: a flag value no command could take is a usage
// error (exit 2), found before anything is posted.
func TestUsageErrorsInProcess(t *testing.T) {
	spec, _, _ := servePF(t, 1)
	b := []string{"--bar", spec, "--vf", "0"}
	for _, c := range []struct {
		run  func([]string) error
		args []string
	}{
		{runMAD, []string{"get", "nosuchattr"}},
		{runMAD, []string{"frob"}},
		{runMAD, []string{"bm-get", "--bkey", "xyz"}},
		{runPTYS, []string{"--proto", "fc"}},
		{runQP, []string{"create", "--type", "xrc"}},
		{runQP, []string{"modify", "--qpn", "1", "--to", "up"}},
		{runQP, []string{"modify", "--qpn", "1", "--op", "NO_SUCH_OP"}},
		{runCmd, []string{"QUERY_FW", "QUERY_FW"}},
		{runCmd, []string{"QUERY_FW", "--op-mod", "99"}},
		{runEQ, []string{"frob"}},
		{runInit, []string{"--bar", spec, "--json"}}, // no --vf
	} {
		args := c.args
		if args[0] != "--bar" {
			args = append(append([]string(nil), args...), b...)
		}
		out, err := capture(t, func() error { return c.run(args) })
		var ue usageError
		if !errors.As(err, &ue) || out != "" {
			t.Errorf("%v: %v (want a usage error), stdout %q", c.args, err, out)
		}
	}
}
