package vmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/u-root/u-root/pkg/cpio"

	"github.com/vhcrd/vhcrd/hack/testenv"
)

// The matrix's data-path cases (faults_dp.go): the rule is armed at the
// pingpong point, just before the guest runs ibv_rc_pingpong with both
// ends on its VF, and the reaction is the pingpong's, read from its ends'
// lines, with the driver's lines of the run. For these cases the classes
// mean:
//
//   - unaffected: both ends exited 0 (and no driver line);
//   - followed: both ends exited 0 and the driver logged the event;
//   - error returned: every end exited by itself, one or both with an
//     error (rc_pingpong's "Failed status %s (%d) for wr_id %d", exit 1):
//     the device's error completion reached the caller;
//   - hung: an end was still waiting at the guest's bound (faultPingpongLimit)
//     and was killed: a caller waiting for good for a completion the device
//     lost, or for a peer that exited on its error; rdma-core's pingpongs
//     have no timeout of their own. It is that caller's hang, not the
//     driver's: the killed end's objects go through uverbs' cleanup and the
//     case's unbind and clean bind/unbind still run (a case whose clean
//     round fails says so, and costs a reboot, as any case);
//   - oops/BUG and a silent console (the host's hung) as for every case.

const (
	// faultPingpongIters is the round trips of the data-path point's
	// pingpong: a few, as the first completions are the ones the rules
	// hit; without a fault it ends in well under a second of TCG.
	faultPingpongIters = 10
	// faultPingpongLimit bounds it in the guest: the processes' start,
	// the TCP exchange of addresses and the round trips take a few
	// seconds under TCG on a loaded host; past it an end is hung.
	faultPingpongLimit = 8 * time.Second
)

// pingpong is the data-path point's pingpong of a case of that point.
func (c faultCase) pingpong() *FaultPingpong {
	if c.Point != PointPingpong {
		return nil
	}
	return &FaultPingpong{
		Pingpong: Pingpong{Name: "rc", Tool: "ibv_rc_pingpong", Args: []string{"-d", "mlx4_0", "-i", "1"}},
		Iters:    faultPingpongIters,
		LimitMS:  int(faultPingpongLimit / time.Millisecond),
	}
}

// caseSteps are faultSteps with, for a case of the pingpong point, the
// step whose wait arms its rules just before the pingpong.
func caseSteps(c faultCase) []struct{ step, point string } {
	if c.Point != PointPingpong {
		return faultSteps
	}
	var out []struct{ step, point string }
	for _, s := range faultSteps {
		out = append(out, s)
		if s.step == "bound" {
			out = append(out, struct{ step, point string }{"pingpong", PointPingpong})
		}
	}
	return out
}

// faultsUserspace is the rdma-core userspace's records for a guest that
// runs cases of the pingpong point (as the verbs guest's, setupVerbs),
// nil if none of cases is.
func faultsUserspace(t *testing.T, e *mlx4Env, cases []faultCase) []cpio.Record {
	t.Helper()
	need := false
	for _, c := range cases {
		need = need || c.Point == PointPingpong
	}
	if !need {
		return nil
	}
	root := filepath.Join(e.root, ".cache", "vmuser", "root")
	if dir := os.Getenv("VHCRD_VMTEST_USERSPACE"); dir != "" {
		root = dir
	}
	if _, err := os.Stat(filepath.Join(root, "usr/bin/ibv_rc_pingpong")); err != nil {
		testenv.SkipOrFail(t, "fault matrix: the data-path cases need the rdma-core userspace in %s (run hack/fetch-vmuserspace.sh)", root)
	}
	recs, _, err := Userspace(root, VerbsFiles)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// ppOutcome is what a data-path case's pingpong did.
type ppOutcome struct {
	hung, failed bool     // an end killed at the bound; an end that exited with an error
	noted        bool     // the guest's kernel report has a driver line of an event (driverNoteLine)
	evidence     []string // the driver's event lines, the ends' outcomes and their error lines
}

// merge is a with b's lines that a does not have.
func merge(a, b []string) []string {
	for _, s := range b {
		a = appendOnce(a, s)
	}
	return a
}

// pingpongOutcome reads the pingpong's report from a case's lines.
func pingpongOutcome(lines []string) ppOutcome {
	var o ppOutcome
	tool := "vmtest: " + FaultPingpongTool + " "
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, FaultPingpongEnd):
			rest := strings.TrimPrefix(l, FaultPingpongEnd)
			switch {
			case strings.Contains(rest, FaultPingpongHung):
				o.hung = true
				if i := strings.Index(rest, ", last lines:"); i >= 0 {
					rest = rest[:i]
				}
			case !strings.Contains(rest, ": exit 0 in"):
				o.failed = true
			}
			o.evidence = append(o.evidence, "pingpong "+rest)
		case strings.HasPrefix(l, FaultPingpongDmesg):
			// The guest's copy of a kernel record: on the console the
			// record itself may share a line with an end's output.
			if text := strings.TrimPrefix(l, FaultPingpongDmesg); driverNoteLine.MatchString(text) {
				o.noted = true
				o.evidence = appendOnce(o.evidence, strip(text))
			}
		case strings.HasPrefix(l, FaultPingpongDone+"failed"):
			o.failed = true
		case strings.HasPrefix(l, tool):
			// An end's own line: rc_pingpong's error messages (its
			// "Failed status ...", "Couldn't ...").
			rest := strings.TrimPrefix(l, tool)
			if end, text, ok := strings.Cut(rest, "| "); ok && (strings.Contains(text, "Failed") || strings.Contains(text, "Couldn't") || strings.Contains(text, "Completion for unknown")) {
				o.evidence = appendOnce(o.evidence, end+": "+text)
			}
		case strings.HasPrefix(l, "vmtest: fault: pingpong: ") && !strings.HasPrefix(l, FaultPingpongDmesg) && !strings.HasPrefix(l, FaultPingpongDone):
			o.failed = true // not bound, port not ACTIVE, no uverbs device, the server never listened
			o.evidence = append(o.evidence, strings.TrimPrefix(l, "vmtest: fault: "))
		}
	}
	return o
}

// Source references of the data-path expectations (rdma-core's
// libibverbs/examples/rc_pingpong.c and providers/mlx4/cq.c; Linux 6.1).
const (
	whyPingpong  = "rc_pingpong.c: the client posts the first SEND (wr_id 2), the server answers each receive (wr_id 1) with a SEND; an end posts its next SEND only when both its SEND and its RECV completed (ctx->pending), loops while rcnt < iters || scnt < iters, and has no timeout"
	whyWCStatus  = "rc_pingpong.c parse_single_wc: wc.status != IBV_WC_SUCCESS → \"Failed status %s (%d) for wr_id %d\", main returns 1; providers/mlx4/cq.c mlx4_handle_error_cqe maps the syndrome"
	whyFlushPeer = "the error CQE takes the QP to ERR (the device's rule after an error completion); a SEND to a QP that cannot receive is never acknowledged: the sender's retries run out (vhcr/hca sq.go routeNoQP, after retry_cnt 7 retries one ACK timeout of 67 ms apart: retry.go) → IBV_WC_RETRY_EXC_ERR"
)

// dataPathCases are the matrix's cases of the pingpong point.
var dataPathCases = []faultCase{
	{Name: "pingpong-baseline", Point: PointPingpong, Expect: classUnaffected,
		Why: "no fault: the pingpong of the data-path point runs its 10 round trips and both ends exit 0"},
	{Name: "cqe-error-send", Point: PointPingpong, CI: true,
		Rules:  []faultRule{{Kind: "cqe_error", Op: "SEND", Args: []string{"syndrome=REMOTE_ACCESS_ERR"}}},
		Expect: classError, Why: whyPingpong + "; the client's first SEND completes with MLX4_CQE_SYNDROME_REMOTE_ACCESS_ERR → IBV_WC_REM_ACCESS_ERR: client \"Failed status remote access error (10) for wr_id 2\"; " + whyFlushPeer + ": the server's answer \"Failed status transport retry counter exceeded (12) for wr_id 2\"; both exit 1"},
	{Name: "cqe-error-recv", Point: PointPingpong,
		Rules:  []faultRule{{Kind: "cqe_error", Op: "RECV", Args: []string{"syndrome=LOCAL_PROT_ERR"}}},
		Expect: classHung, Why: whyPingpong + "; the server's first receive completes with MLX4_CQE_SYNDROME_LOCAL_PROT_ERR → IBV_WC_LOC_PROT_ERR: server \"Failed status local protection error (4) for wr_id 1\", exit 1; the client's SEND was acknowledged (the message was delivered) and nothing of it is outstanding: it waits in ibv_poll_cq for the answer for good (hung, that caller)"},
	{Name: "cqe-drop", Point: PointPingpong,
		Rules:  []faultRule{{Kind: "cqe_drop", Op: "SEND"}},
		Expect: classHung, Why: whyPingpong + "; the client's first SEND completion is never written: mlx4_poll_cq never returns it, ctx->pending keeps PINGPONG_SEND_WRID, the client never posts its second SEND; the server answered the first and waits for the second: both wait for good"},
	{Name: "cqe-dup", Point: PointPingpong,
		Rules:  []faultRule{{Kind: "cqe_dup", Op: "SEND"}},
		Expect: classHung, Why: whyPingpong + "; providers/mlx4/cq.c mlx4_poll_one takes the copy as a second completion of the SEND (the same wr_id, scnt 2), and its `wq->tail += (uint16_t)(wqe_index - (uint16_t)wq->tail)` with an index behind the tail adds 65535 to the 32-bit tail (mlx4.h `unsigned tail`): head - tail wraps, qp.c wq_overflow finds the SQ full, and the client's next ibv_post_send (at the first answer) fails with ENOMEM: \"Couldn't post send\", exit 1; the server answered and waits for the next message for good (hung, that caller)"},
	{Name: "out-param-alloc-res", Point: PointPingpong,
		Rules:  []faultRule{{Kind: "out_param", Op: "ALLOC_RES", Every: true, Args: []string{"value=1"}}},
		Expect: classError, Why: "rc_pingpong.c pp_init_ctx registers its buffer (ibv_reg_mr) before the out-of-band exchange, in each end: mlx4_ib mr.c → mlx4_core mr.c mlx4_mr_alloc → mlx4_mpt_reserve, whose ALLOC_RES (RES_MPT, RES_OP_RESERVE) immediate is the index: 1, not the VF's; mlx4_mpt_alloc_icm's ALLOC_RES (RES_MPT, RES_OP_MAP_ICM, 1) is refused by the PF (an MPT the VF does not hold: mlx4_ALLOC_RES_wrapper's mpt_alloc_res → INTERNAL_ERR here) → -EIO, mlx4_mr_alloc fails and frees its MTT range, whose reserve had answered 1 too: mr.c mlx4_free_mtt_range's FREE_RES is refused, \"Failed to free mtt range at:1\"; \"Couldn't register MR\", pp_init_ctx returns NULL and the server exits 1 by itself before it listens (the guest starts the client only once the server listens: no client)"},
	{Name: "cq-overrun", Point: PointPingpong, CI: true,
		Rules:  []faultRule{{Kind: "cq_overrun", Op: "RECV"}},
		Expect: classHung, Why: "eq.c mlx4_eq_int MLX4_EVENT_TYPE_CQ_ERROR: \"CQ overrun on CQN %06x\" → cq.c mlx4_cq_event → mlx4_ib cq.c mlx4_ib_cq_event → IB_EVENT_CQ_ERR to uverbs' ib_uverbs_cq_event_handler (an async event rc_pingpong never reads); the server's CQ takes no CQE: " + whyPingpong + ", so the server waits for its first receive and the client for the answer, both for good"},
}

// cqeSyndromes are the error CQE's syndromes (cq.h MLX4_CQE_SYNDROME_*,
// and one number no driver names) with the ibv_wc status libmlx4's
// mlx4_handle_error_cqe makes of each, as ibv_wc_status_str and the enum
// print it in rc_pingpong's "Failed status %s (%d)".
var cqeSyndromes = []struct{ name, status string }{
	{"LOCAL_LENGTH_ERR", "local length error (1)"},
	{"LOCAL_QP_OP_ERR", "local QP operation error (2)"},
	{"LOCAL_PROT_ERR", "local protection error (4)"},
	{"WR_FLUSH_ERR", "Work Request Flushed Error (5)"},
	{"MW_BIND_ERR", "memory management operation error (6)"},
	{"BAD_RESP_ERR", "bad response error (7)"},
	{"LOCAL_ACCESS_ERR", "local access error (8)"},
	{"REMOTE_INVAL_REQ_ERR", "remote invalid request error (9)"},
	{"REMOTE_ACCESS_ERR", "remote access error (10)"},
	{"REMOTE_OP_ERR", "remote operation error (11)"},
	{"TRANSPORT_RETRY_EXC_ERR", "transport retry counter exceeded (12)"},
	{"RNR_RETRY_EXC_ERR", "RNR retry counter exceeded (13)"},
	{"REMOTE_ABORTED_ERR", "aborted error (16)"},
	{"0x30", "general error (21)"},
}

// dataPathLines are lines a data-path case's run must have (the client's
// or server's own, as the classifier quotes them), beyond its class.
var dataPathLines = map[string][]string{
	"cqe-error-send":      {"client: Failed status remote access error (10) for wr_id 2", "server: Failed status transport retry counter exceeded (12) for wr_id 2"},
	"cqe-error-recv":      {"server: Failed status local protection error (4) for wr_id 1"},
	"cqe-dup":             {"client: Couldn't post send"},
	"cq-overrun":          {"CQ overrun on CQN "},
	"out-param-alloc-res": {"server: Couldn't register MR", "Failed to free mtt range at:1"},
}

func init() {
	for _, sy := range cqeSyndromes {
		if sy.name == "REMOTE_ACCESS_ERR" {
			continue // cqe-error-send
		}
		name := "cqe-error-send-" + sy.name
		dataPathCases = append(dataPathCases, faultCase{Name: name, Point: PointPingpong,
			Rules:  []faultRule{{Kind: "cqe_error", Op: "SEND", Args: []string{"syndrome=" + sy.name}}},
			Expect: classError, Why: "as cqe-error-send: " + whyWCStatus + ": client \"Failed status " + sy.status + " for wr_id 2\"; the server's answer meets the client's QP in ERR: \"Failed status transport retry counter exceeded (12)\""})
		dataPathLines[name] = []string{"client: Failed status " + sy.status + " for wr_id 2"}
	}
	faultCases = append(faultCases, dataPathCases...)
}

// checkDataPathLines fails a data-path case whose run lacks one of its
// dataPathLines.
func checkDataPathLines(t *testing.T, results []faultResult) {
	t.Helper()
	for _, res := range results {
		for _, want := range dataPathLines[res.c.Name] {
			found := false
			for _, ev := range res.evidence {
				found = found || strings.HasPrefix(ev, want)
			}
			if !found {
				t.Errorf("%s: no %q among the driver's lines %q", res.c.Name, want, res.evidence)
			}
		}
	}
}

// TestClassifyFaultDataPath pins the classes of the data-path cases
// against the guest's pingpong report (rc_pingpong's lines as it prints
// them) and the driver's lines.
func TestClassifyFaultDataPath(t *testing.T) {
	bound := `vmtest: fault: bind: driver "mlx4_core" ib true in 174ms: <nil> (<nil>)`
	steady := "vmtest: fault: steady: 12 reads, 0 errors (<nil>), restart \"\"; ib true (<nil>)"
	clean := "vmtest: fault: clean: ok"
	ok := []string{bound, steady,
		"vmtest: fault: pingpong server| 40960 bytes in 0.05 seconds = 6.55 Mbit/sec",
		FaultPingpongEnd + "server: exit 0 in 1.1s", FaultPingpongEnd + "client: exit 0 in 1s", FaultPingpongDone + "ok", clean}
	failedSend := []string{bound, steady,
		"vmtest: fault: pingpong client| Failed status remote access error (10) for wr_id 2",
		"vmtest: fault: pingpong server| Failed status transport retry counter exceeded (12) for wr_id 2",
		FaultPingpongEnd + "server: exit status 1 in 1.2s", FaultPingpongEnd + "client: exit status 1 in 1s", FaultPingpongDone + "failed", clean}
	oneHung := []string{bound, steady,
		"vmtest: fault: pingpong server| Failed status local protection error (4) for wr_id 1",
		FaultPingpongEnd + "server: exit status 1 in 1.2s",
		FaultPingpongEnd + "client: " + FaultPingpongHung + "8s bound after 8.001s, last lines:   local address:  LID 0x0005",
		FaultPingpongDone + "hung", clean}
	overrun := []string{bound, steady,
		"[   30.1] mlx4_core 0000:00:01.0: CQ overrun on CQN 000085",
		FaultPingpongDmesg + "mlx4_core 0000:00:01.0: CQ overrun on CQN 000085",
		FaultPingpongEnd + "server: " + FaultPingpongHung + "8s bound after 8s, last lines: ",
		FaultPingpongEnd + "client: " + FaultPingpongHung + "8s bound after 8s, last lines: ",
		FaultPingpongDone + "hung", clean}
	for _, c := range []struct {
		name  string
		lines []string
		want  string
		ev    []string
	}{
		{"ok", ok, classUnaffected, []string{"pingpong server: exit 0 in 1.1s", "pingpong client: exit 0 in 1s"}},
		{"failed status", failedSend, classError, []string{"client: Failed status remote access error (10) for wr_id 2",
			"server: Failed status transport retry counter exceeded (12) for wr_id 2", "pingpong server: exit status 1 in 1.2s", "pingpong client: exit status 1 in 1s"}},
		{"one end hung", oneHung, classHung, []string{"server: Failed status local protection error (4) for wr_id 1",
			"pingpong server: exit status 1 in 1.2s", "pingpong client: hung: killed at the 8s bound after 8.001s"}},
		{"overrun, both hung", overrun, classHung, []string{"CQ overrun on CQN 000085",
			"pingpong server: hung: killed at the 8s bound after 8s", "pingpong client: hung: killed at the 8s bound after 8s"}},
		{"not started", []string{bound, steady, "vmtest: fault: pingpong: mlx4_0 port 1: state \"1: DOWN\" lid \"0x0\" after 10s, want ACTIVE with a LID",
			FaultPingpongDone + "failed", clean}, classError, []string{"pingpong: mlx4_0 port 1: state \"1: DOWN\" lid \"0x0\" after 10s, want ACTIVE with a LID"}},
		{"overrun, both ok", []string{bound, steady, "[   30.1] mlx4_core 0000:00:01.0: CQ overrun on CQN 000085",
			FaultPingpongEnd + "server: exit 0 in 1.1s", FaultPingpongEnd + "client: exit 0 in 1s", FaultPingpongDone + "ok", clean}, classFollowed,
			[]string{"CQ overrun on CQN 000085", "pingpong server: exit 0 in 1.1s", "pingpong client: exit 0 in 1s"}},
		{"overrun line glued to a tool's", []string{bound, steady,
			"vmtest: fault: pingpong server|   remote address: LID 0x0005, QPN 0x00084b, PSN 0x84ddf2, GID ::[   28.198009] mlx4_core 0000:00:01.0: CQ overrun on CQN 0000a8",
			FaultPingpongEnd + "server: " + FaultPingpongHung + "8s bound after 8s, last lines: ",
			FaultPingpongEnd + "client: " + FaultPingpongHung + "8s bound after 8s, last lines: ",
			FaultPingpongDmesg + "mlx4_core 0000:00:01.0: CQ overrun on CQN 0000a8", FaultPingpongDone + "hung", clean}, classHung,
			[]string{"pingpong server: hung: killed at the 8s bound after 8s", "pingpong client: hung: killed at the 8s bound after 8s", "CQ overrun on CQN 0000a8"}},
		{"overrun reported only, both ok", []string{bound, steady, FaultPingpongDmesg + "mlx4_core 0000:00:01.0: CQ overrun on CQN 000085",
			FaultPingpongEnd + "server: exit 0 in 1.1s", FaultPingpongEnd + "client: exit 0 in 1s", FaultPingpongDone + "ok", clean}, classFollowed,
			[]string{"CQ overrun on CQN 000085", "pingpong server: exit 0 in 1.1s", "pingpong client: exit 0 in 1s"}},
		{"oops over hung", append(append([]string{}, overrun...), "[   40.0] BUG: kernel NULL pointer dereference, address: 0000000000000008"), classOops, nil},
	} {
		got, ev, notes := classifyFault(PointPingpong, c.lines, false)
		if got != c.want {
			t.Errorf("%s: %s (evidence %q, notes %q), want %s", c.name, got, ev, notes, c.want)
			continue
		}
		if c.ev != nil && strings.Join(ev, " | ") != strings.Join(c.ev, " | ") {
			t.Errorf("%s: evidence %q, want %q", c.name, ev, c.ev)
		}
	}
	// The pingpong's lines do not change a case of another point.
	if got, _, _ := classifyFault(PointSteady, []string{bound, steady, clean}, false); got != classUnaffected {
		t.Errorf("steady baseline: %s", got)
	}
}

// TestDataPathCaseSteps: a pingpong case waits at "pingpong" between
// "bound" and "steady" and arms its rules there; the other cases keep the
// round's steps.
func TestDataPathCaseSteps(t *testing.T) {
	var got []string
	for _, s := range caseSteps(dataPathCases[1]) {
		got = append(got, s.step+"="+s.point)
	}
	if want := "arm=bind bound=steady pingpong=pingpong steady=unbind unbound= done="; strings.Join(got, " ") != want {
		t.Errorf("steps %q, want %q", strings.Join(got, " "), want)
	}
	if len(caseSteps(faultCases[0])) != len(faultSteps) {
		t.Error("the baseline got the pingpong step")
	}
	for _, c := range dataPathCases {
		if c.pingpong() == nil {
			t.Errorf("%s: no pingpong", c.Name)
		}
		if r := c.rulesAt(PointPingpong); len(r) != len(c.Rules) {
			t.Errorf("%s: %d of %d rules armed at the pingpong", c.Name, len(r), len(c.Rules))
		}
	}
	if faultCases[0].pingpong() != nil {
		t.Error("the baseline has a pingpong")
	}
	names := map[string]bool{}
	for _, c := range faultCases {
		names[c.Name] = true
	}
	for name := range dataPathLines {
		if !names[name] {
			t.Errorf("dataPathLines: no case %s", name)
		}
	}
	var ok []faultResult
	for _, c := range dataPathCases[1:2] {
		ok = append(ok, faultResult{c: c, evidence: dataPathLines[c.Name]})
	}
	checkDataPathLines(t, ok)
}
