package vmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
)

// Two things of the fault matrix beyond `vhcrd fault add --nth`: a rule
// whose occurrence its seed picks (--prob P --seed S), with the occurrence
// it fired at read back from the run and compared with the seed's draws
// and with another run of the same rule (replay); and rules armed by the
// configuration's faults section when vhcrd starts.

// spec is r as the rule vhcrd fault add sends (and a configuration's
// faults section holds).
func (r faultRule) spec() (faultinj.Spec, error) {
	vf := guestVF
	s := faultinj.Spec{Kind: r.Kind, VF: &vf, Op: r.Op, Comm: r.Comm, Every: r.Every}
	switch {
	case r.ProbSeeded != "":
		f := strings.Fields(r.ProbSeeded)
		if len(f) != 2 {
			return s, fmt.Errorf("ProbSeeded %q: want \"P S\"", r.ProbSeeded)
		}
		var err error
		if s.Prob, err = strconv.ParseFloat(f[0], 64); err != nil {
			return s, fmt.Errorf("ProbSeeded %q: %w", r.ProbSeeded, err)
		}
		if s.Seed, err = strconv.ParseUint(f[1], 0, 64); err != nil {
			return s, fmt.Errorf("ProbSeeded %q: %w", r.ProbSeeded, err)
		}
	case r.Nth > 0:
		s.Nth = uint64(r.Nth)
	}
	for _, kv := range r.Args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return s, fmt.Errorf("argument %q: want K=V", kv)
		}
		if s.Args == nil {
			s.Args = map[string]string{}
		}
		s.Args[k] = v
	}
	return s, nil
}

// seededDraws are the occurrences (1-based, of the first n that match it)
// at which rule r fires: the rule compiled and matched n times, as the PF's
// selector does (faultinj.Set: one draw of the rule's SplitMix64 per
// matching occurrence).
func seededDraws(r faultRule, n uint64) ([]uint64, error) {
	sp, err := r.spec()
	if err != nil {
		return nil, err
	}
	set := faultinj.NewSet(guestVF + 1)
	rule, err := set.Add(sp)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for i := uint64(1); i <= n; i++ {
		if set.Match(rule.Point, guestVF, rule.Key, true) == rule {
			out = append(out, i)
		}
	}
	return out, nil
}

// seededFire is what a run shows of a seeded rule: where it fired, read
// from vhcrd (fault list's counts, the trace's fault records and the
// commands they fired at).
type seededFire struct {
	rule  faultRule
	id    int      // the rule's id on the vhcrd
	seen  uint64   // matching occurrences when the case ended
	hits  uint64   // faults fired
	fired []uint64 // the occurrences it fired at, from the trace
	first string   // the command of the first: opcode, MAD attribute and attr_mod
	err   string   // why the occurrences could not be read back ("" if they were)
}

// String is the note of the table and the test log.
func (f seededFire) String() string {
	sp := strings.TrimPrefix(strings.Join(f.rule.args(), " "), "--kind ")
	if f.err != "" {
		return fmt.Sprintf("seeded rule %d (%s): %s", f.id, sp, f.err)
	}
	return fmt.Sprintf("seeded rule %d (%s): first fault at occurrence %d, %s; fired at %s of %d seen (%d hits), as the seed draws",
		f.id, sp, f.fired[0], f.first, joinUints(f.fired), f.seen, f.hits)
}

func joinUints(l []uint64) string {
	s := make([]string, len(l))
	for i, n := range l {
		s[i] = strconv.FormatUint(n, 10)
	}
	return strings.Join(s, ", ")
}

// traceWait bounds how long recordSeeded waits for the tracer (a separate
// `vhcrd trace` process writing the ring's records to a file) to have
// written the records up to the end of the case.
const traceWait = 10 * time.Second

// recordSeeded reads back where each seeded rule of the case fired. It
// runs when the case has ended, before the rules are cleared. The fault
// list gives the rule's seen and hits; the trace gives the fault records
// of the rule (each just before the command it fired at) and the matching
// commands after the first. Counting back from seen (the trace's last
// matching command is the rule's seen-th occurrence, if the driver posts
// no more) places each fault at its occurrence, which must be where the
// seed draws: a driver still posting, a tracer that lost records or one
// that is behind leave a mismatch, said as such, never a number.
func (r *faultRun) recordSeeded(c faultCase, res *faultResult) {
	for i, ar := range res.armed {
		if ar.rule.ProbSeeded == "" {
			continue
		}
		f := seededFire{rule: ar.rule, id: ar.id}
		f.read(r)
		res.seeded = append(res.seeded, f)
		res.read = append(res.read, f.String())
		r.t.Logf("%s: rule %d of the case: %s", c.Name, i+1, f)
	}
}

func (f *seededFire) read(r *faultRun) {
	st, err := r.faultStatus(f.id)
	if err != nil {
		f.err = err.Error()
		return
	}
	want, err := seededDraws(f.rule, st.Seen)
	if err != nil {
		f.err = err.Error()
		return
	}
	for deadline := time.Now().Add(traceWait); ; {
		f.seen, f.hits = st.Seen, st.Hits
		f.fired, f.first, err = firedFromTrace(r.e.vhcrd.trace, f.id, f.rule.Op, st.Seen)
		if err == nil && slices.Equal(f.fired, want) && uint64(len(want)) == st.Hits {
			break
		}
		if time.Now().After(deadline) {
			switch {
			case err != nil:
				f.err = err.Error()
			default:
				f.err = fmt.Sprintf("the trace places its faults at occurrences %s of %d seen (%d hits), the seed draws %s", joinUints(f.fired), st.Seen, st.Hits, joinUints(want))
			}
			return
		}
		time.Sleep(100 * time.Millisecond) // polling another process's output file
		if st, err = r.faultStatus(f.id); err != nil {
			f.err = err.Error()
			return
		}
		if want, err = seededDraws(f.rule, st.Seen); err != nil {
			f.err = err.Error()
			return
		}
	}
	// The driver must have stopped: a count that moved on while the trace
	// was read would make the numbers above a coincidence.
	if again, err := r.faultStatus(f.id); err != nil || again.Seen != st.Seen {
		f.err = fmt.Sprintf("the driver was still posting (seen %d, then %v %v): the occurrences are not read back", st.Seen, again.Seen, err)
	}
}

// faultStatus is rule id as `vhcrd fault list --json` shows it.
func (r *faultRun) faultStatus(id int) (faultinj.RuleStatus, error) {
	out, err := r.vhcrdFault("list", "--json")
	if err != nil {
		return faultinj.RuleStatus{}, fmt.Errorf("vhcrd fault list: %v: %s", err, out)
	}
	var rs []faultinj.RuleStatus
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		return faultinj.RuleStatus{}, fmt.Errorf("vhcrd fault list --json: %v", err)
	}
	for _, st := range rs {
		if st.ID == id {
			return st, nil
		}
	}
	return faultinj.RuleStatus{}, fmt.Errorf("vhcrd fault list has no rule %d", id)
}

// firedFromTrace reads the trace file (JSON lines, one VF's) for the
// fault records of rule id and the commands of opcode op (the rule's)
// from its first fault on: the last of those is occurrence seen, so the
// j-th of the a counted is occurrence seen-a+j, and each fault is the
// occurrence of the command after it. first describes the command of the
// first fault.
func firedFromTrace(path string, id int, op string, seen uint64) (fired []uint64, first string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	var idx []uint64 // the faults' commands, as indexes among the commands from the first fault on
	var n uint64     // commands of op from the first fault on
	pending, started := false, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		e, perr := trace.ParseJSON(bytes.TrimSpace(sc.Bytes()))
		if perr != nil {
			continue // a partial last line
		}
		switch {
		case e.Kind == "fault" && int(e.Rule) == id:
			if pending {
				return nil, "", fmt.Errorf("the trace has two faults of rule %d before a command", id)
			}
			pending, started = true, true
		case started && e.Kind == trace.KindLost:
			return nil, "", fmt.Errorf("the trace lost %d records after rule %d's first fault", e.Lost, id)
		case started && e.Kind == "post" && e.Opcode == op:
			n++
			if pending {
				idx = append(idx, n)
				pending = false
				if len(idx) == 1 {
					first = e.Opcode
					if e.MADAttr != "" {
						first += fmt.Sprintf(" %s %s attr_mod %d", e.MADMethod, e.MADAttr, e.MADAttrMod)
					}
				}
			}
		}
	}
	if !started {
		return nil, "", fmt.Errorf("the trace has no fault of rule %d", id)
	}
	if pending || n > seen {
		return nil, "", fmt.Errorf("the trace is not yet at the end of the case (%d %s from the first fault, %d seen)", n, op, seen)
	}
	for _, j := range idx {
		fired = append(fired, seen-n+j)
	}
	return fired, first, nil
}

// faultReplays checks each case that replays another against it: the
// same first fault (occurrence and command), the same occurrences where
// both runs saw them, and the same reaction.
func faultReplays(t *testing.T, results []faultResult) {
	by := map[string]faultResult{}
	for _, r := range results {
		by[r.c.Name] = r
	}
	for _, r := range results {
		if r.c.Replays == "" {
			continue
		}
		o, ok := by[r.c.Replays]
		if !ok {
			t.Logf("%s: replays %s, which this run did not run", r.c.Name, r.c.Replays)
			continue
		}
		if why := replayDiffers(o, r); why != "" {
			t.Errorf("%s: not a replay of %s: %s", r.c.Name, o.c.Name, why)
			continue
		}
		for i, f := range r.seeded {
			t.Logf("%s replays %s: its seeded rule %d fired first at occurrence %d (%s) in both, at %s and at %s; both %s", r.c.Name, o.c.Name, i+1, f.fired[0], f.first, joinUints(o.seeded[i].fired), joinUints(f.fired), r.class)
		}
	}
}

// replayDiffers says how b's run differs from a's ("" if it replays it).
func replayDiffers(a, b faultResult) string {
	if len(a.seeded) == 0 || len(a.seeded) != len(b.seeded) {
		return fmt.Sprintf("%d and %d seeded rules read back", len(a.seeded), len(b.seeded))
	}
	for i := range a.seeded {
		fa, fb := a.seeded[i], b.seeded[i]
		switch {
		case fa.err != "" || fb.err != "":
			return fmt.Sprintf("rule %d not read back: %q, %q", i+1, fa.err, fb.err)
		case fa.fired[0] != fb.fired[0] || fa.first != fb.first:
			return fmt.Sprintf("rule %d fired first at occurrence %d (%s), then at %d (%s)", i+1, fa.fired[0], fa.first, fb.fired[0], fb.first)
		}
		common := min(fa.seen, fb.seen)
		pa := slices.DeleteFunc(slices.Clone(fa.fired), func(n uint64) bool { return n > common })
		pb := slices.DeleteFunc(slices.Clone(fb.fired), func(n uint64) bool { return n > common })
		if !slices.Equal(pa, pb) {
			return fmt.Sprintf("rule %d fired at %s, then at %s, within the %d occurrences both saw", i+1, joinUints(pa), joinUints(pb), common)
		}
	}
	if a.class != b.class {
		return fmt.Sprintf("reaction %s, then %s", a.class, b.class)
	}
	if !slices.Equal(a.evidence, b.evidence) {
		return fmt.Sprintf("the driver's lines %q, then %q", a.evidence, b.evidence)
	}
	return ""
}

// faultConfig is vhcrd's embedded default configuration with c's rules
// as its faults section.
func faultConfig(c faultCase) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(config.Example(), &doc); err != nil {
		return nil, err
	}
	var specs []faultinj.Spec
	for _, r := range c.Rules {
		sp, err := r.spec()
		if err != nil {
			return nil, err
		}
		specs = append(specs, sp)
	}
	raw, err := json.Marshal(specs)
	if err != nil {
		return nil, err
	}
	doc["faults"] = raw
	return json.MarshalIndent(doc, "", "  ")
}

// withConfig is e with a vhcrd of its own (a directory, regions, sockets)
// started with c's configuration (faultConfig): the rules armed at its
// start. stop ends that vhcrd.
func (e *mlx4Env) withConfig(t *testing.T, c faultCase) (env *mlx4Env, lines []string) {
	t.Helper()
	b, err := faultConfig(c)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "vhcrd.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("%s: the configuration: %v", c.Name, err)
	}
	for i, sp := range cfg.Faults {
		js, _ := json.Marshal(sp)
		lines = append(lines, fmt.Sprintf("faults[%d]: %s", i, js))
	}
	t.Logf("%s: vhcrd serve --config %s with %s", c.Name, path, strings.Join(lines, ", "))
	env = new(mlx4Env)
	*env = *e
	env.vhcrd = startVhcrdGuests(t, e.vhcrd.bin, dir, nil, false, "--config", path)
	return env, lines
}

// configArmed checks that the case's rules were armed by the
// configuration: fault list has them, none added over the admin socket.
func (r *faultRun) configArmed(c faultCase, res *faultResult) {
	out, err := r.vhcrdFault("list")
	if err != nil {
		r.t.Fatalf("%s: vhcrd fault list: %v: %s", c.Name, err, out)
	}
	adds := r.e.vhcrd.metrics(r.t).sum("vhcrd_admin_changes_total", map[string]string{"action": "fault_add"})
	r.t.Logf("%s: armed at start (fault_add over the admin socket: %v):\n%s", c.Name, adds, out)
	if lines := strings.Split(out, "\n"); len(lines) != len(c.Rules)+1 || adds != 0 {
		r.t.Fatalf("%s: %d rules in the configuration, vhcrd fault list:\n%s\n(%v added over the admin socket)", c.Name, len(c.Rules), out, adds)
	}
}

// configFired notes the hits of the configuration's rules (before they
// are cleared).
func (r *faultRun) configFired(c faultCase, res *faultResult) {
	out, err := r.vhcrdFault("list", "--json")
	var rs []faultinj.RuleStatus
	if err == nil {
		err = json.Unmarshal([]byte(out), &rs)
	}
	if err != nil {
		res.read = append(res.read, fmt.Sprintf("vhcrd fault list: %v", err))
		return
	}
	for _, st := range rs {
		res.read = append(res.read, fmt.Sprintf("configuration rule %d: %d hits, %d seen", st.ID, st.Hits, st.Seen))
	}
}

// stop ends a vhcrd of withConfig (SIGTERM; its cleanup then has nothing
// to stop).
func (v *vhcrdProc) stop(t *testing.T) {
	t.Helper()
	if v.cmd == nil {
		v.stopTracer()
		return
	}
	err := v.terminate()
	v.cmd = nil
	if err != nil {
		t.Errorf("vhcrd serve: %v\n%s", err, v.logText())
	}
}

// TestSeededFaultCases pins the seeded cases' draws (a change of the
// PRNG, of the rule or of when the PF draws moves the finding to another
// command: the case's comment and docs/faults.md say where it fires) and
// checks that replays replay a case with the same rules.
func TestSeededFaultCases(t *testing.T) {
	byName := map[string]faultCase{}
	for _, c := range faultCases {
		byName[c.Name] = c
	}
	c, ok := byName["flags-no-ack-seeded"]
	if !ok {
		t.Fatal("no case flags-no-ack-seeded")
	}
	got, err := seededDraws(c.Rules[1], 40)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{6, 18}; !slices.Equal(got, want) {
		t.Fatalf("--prob 0.1 --seed 25 fires at %v of the first 40 occurrences, want %v", got, want)
	}
	for _, c := range faultCases {
		if c.Replays == "" {
			continue
		}
		o, ok := byName[c.Replays]
		if !ok {
			t.Errorf("%s replays %s: no such case", c.Name, c.Replays)
			continue
		}
		if !slices.EqualFunc(c.Rules, o.Rules, func(a, b faultRule) bool {
			return slices.Equal(a.args(), b.args()) && a.At == b.At
		}) || c.Point != o.Point || c.Expect != o.Expect || c.FlagsAtRest != o.FlagsAtRest {
			t.Errorf("%s replays %s with other rules, point or expectation", c.Name, c.Replays)
		}
		seeded := false
		for _, r := range c.Rules {
			seeded = seeded || r.ProbSeeded != ""
		}
		if !seeded {
			t.Errorf("%s replays %s without a seeded rule", c.Name, c.Replays)
		}
	}
}

// TestFaultRuleSpec: a case's rule sent as flags (vhcrd fault add) and as
// a configuration entry (spec) is the same rule.
func TestFaultRuleSpec(t *testing.T) {
	for _, c := range faultCases {
		for _, r := range c.Rules {
			sp, err := r.spec()
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			if _, err := faultinj.Compile(sp, guestVF+1); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			// Spec.Flags sorts the arguments by name.
			want := r.args()
			n := len(want) - 2*len(r.Args)
			pairs := make([]string, 0, len(r.Args))
			for i := n; i < len(want); i += 2 {
				pairs = append(pairs, want[i+1])
			}
			slices.Sort(pairs)
			want = want[:n]
			for _, kv := range pairs {
				want = append(want, "--arg", kv)
			}
			if got := sp.Flags(); !slices.Equal(got, want) {
				t.Errorf("%s: the spec's flags %q, vhcrd fault add's %q", c.Name, got, want)
			}
		}
	}
}

// TestFaultConfig: the configuration a Config case's vhcrd starts with is
// the embedded default plus the case's rules, and vhcrd's loader takes it.
func TestFaultConfig(t *testing.T) {
	n := 0
	for _, c := range faultCases {
		if !c.Config {
			continue
		}
		n++
		b, err := faultConfig(c)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		cfg, err := config.Parse(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.Name, err, b)
		}
		if len(cfg.Faults) != len(c.Rules) {
			t.Fatalf("%s: %d faults in the configuration, want %d", c.Name, len(cfg.Faults), len(c.Rules))
		}
		for i, r := range c.Rules {
			want, _ := r.spec()
			got, err := faultinj.Compile(cfg.Faults[i], guestVF+1)
			w, _ := faultinj.Compile(want, guestVF+1)
			if err != nil || got.String() != w.String() {
				t.Errorf("%s: faults[%d] is %v (%v), want %v", c.Name, i, got, err, w)
			}
			if r.At != "" && r.At != c.Point {
				t.Errorf("%s: a configuration rule at another point (%s)", c.Name, r.At)
			}
		}
		cfg.Faults = nil
		if !reflect.DeepEqual(cfg, config.Default()) {
			t.Errorf("%s: the configuration differs from the default beyond its faults", c.Name)
		}
	}
	if n == 0 {
		t.Fatal("no case arms its rules through the configuration")
	}
}

// TestFiredFromTrace: the faults of a rule are placed at their occurrences
// by counting back from seen over the trace's commands of the rule's
// opcode; a trace that lost records, is behind or does not have the
// rule's faults places none.
func TestFiredFromTrace(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	seq := uint64(0)
	var b []byte
	add := func(e trace.Entry) {
		seq++
		e.Seq, e.Time, e.VF = seq, t0.Add(time.Duration(seq)*time.Millisecond), guestVF
		b = trace.AppendJSON(b, &e)
	}
	mad := func(port uint32) {
		add(trace.Entry{Kind: "post", Opcode: "MAD_IFC", Status: "OK", E: true, MADClass: "SubnGet", MADMethod: "Get", MADAttr: "PortInfo", MADAttrMod: port, Timed: true})
	}
	fault := func(rule uint32) {
		add(trace.Entry{Kind: "fault", Fault: "internal_err", Rule: rule, Point: "post", Opcode: "MAD_IFC"})
	}
	write := func() string {
		p := filepath.Join(t.TempDir(), "trace.jsonl")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Before the rule: an earlier case's fault of rule 4 and its commands.
	fault(4)
	mad(1)
	mad(2)
	// Rule 5: its first fault at its 4th MAD_IFC (port 2), its second at
	// the 8th, and two after; an NOP between is not its opcode.
	mad(1)
	mad(2)
	mad(1)
	fault(5)
	mad(2)
	mad(1)
	add(trace.Entry{Kind: "post", Opcode: "NOP", Status: "OK"})
	mad(2)
	mad(1)
	fault(5)
	mad(2)
	mad(1)
	mad(2)
	p := write()
	fired, first, err := firedFromTrace(p, 5, "MAD_IFC", 10)
	if err != nil || !slices.Equal(fired, []uint64{4, 8}) || first != "MAD_IFC Get PortInfo attr_mod 2" {
		t.Fatalf("fired %v (%q, %v), want [4 8] at MAD_IFC Get PortInfo attr_mod 2", fired, first, err)
	}
	// A trace behind the rule's count: more commands than seen.
	if _, _, err := firedFromTrace(p, 5, "MAD_IFC", 6); err == nil {
		t.Error("7 commands from the first fault with 6 seen: placed")
	}
	if _, _, err := firedFromTrace(p, 6, "MAD_IFC", 10); err == nil {
		t.Error("a rule without faults in the trace: placed")
	}
	// A fault whose command is not in the file yet.
	fault(5)
	if _, _, err := firedFromTrace(write(), 5, "MAD_IFC", 12); err == nil {
		t.Error("a fault without its command: placed")
	}
	// Records lost after the first fault.
	mad(1)
	b = trace.AppendJSON(b, &trace.Entry{Kind: trace.KindLost, Lost: 3})
	if _, _, err := firedFromTrace(write(), 5, "MAD_IFC", 12); err == nil || !strings.Contains(err.Error(), "lost 3") {
		t.Errorf("a trace that lost records: %v", err)
	}
}

// TestReplayDiffers: a replay has the first fault at the same occurrence
// and command, the same occurrences where both runs saw them, and the same
// reaction; the later counts (how long the driver kept posting) may differ.
func TestReplayDiffers(t *testing.T) {
	bug := []string{"kernel BUG at drivers/net/ethernet/mellanox/mlx4/catas.c:191!", "Fail to send reset over the communication channel"}
	res := func(first uint64, cmd string, fired []uint64, seen uint64, class string) faultResult {
		return faultResult{class: class, evidence: bug, seeded: []seededFire{{fired: fired, first: cmd, seen: seen, hits: uint64(len(fired))}}}
	}
	a := res(6, "MAD_IFC Get PortInfo attr_mod 2", []uint64{6, 18}, 30, classOops)
	for _, c := range []struct {
		name string
		b    faultResult
		same bool
	}{
		{"same", res(6, "MAD_IFC Get PortInfo attr_mod 2", []uint64{6, 18}, 30, classOops), true},
		{"the driver posted less", res(6, "MAD_IFC Get PortInfo attr_mod 2", []uint64{6}, 12, classOops), true},
		{"the driver posted more", res(6, "MAD_IFC Get PortInfo attr_mod 2", []uint64{6, 18, 41}, 45, classOops), true},
		{"another command", res(6, "MAD_IFC Get PortInfo attr_mod 1", []uint64{6, 18}, 30, classOops), false},
		{"another occurrence", res(7, "MAD_IFC Get PortInfo attr_mod 2", []uint64{7, 18}, 30, classOops), false},
		{"a later one missing", res(6, "MAD_IFC Get PortInfo attr_mod 2", []uint64{6}, 30, classOops), false},
		{"another reaction", res(6, "MAD_IFC Get PortInfo attr_mod 2", []uint64{6, 18}, 30, classRecovered), false},
		{"not read back", faultResult{class: classOops, evidence: bug, seeded: []seededFire{{err: "the trace has no fault of rule 3"}}}, false},
	} {
		c.b.seeded[0].fired = slices.Clone(c.b.seeded[0].fired)
		if why := replayDiffers(a, c.b); (why == "") != c.same {
			t.Errorf("%s: replayDiffers = %q", c.name, why)
		}
	}
}
