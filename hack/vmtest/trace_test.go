package vmtest

import (
	"os"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master/trace"
)

// testdata/guest-trace.jsonl is the trace of a vhcrd run as the VM tier
// receives it from the guest's serial port (CRLF line ends): VFs 0 and 1
// brought up, QUERY_FUNC_CAP and QUERY_FW, the opcode 0x7ff the tier posts
// on purpose (BAD_PARAM), NOPs, then a MAD_DEMUX refused BAD_OP.

// TestFirstFailure: the printout shows the first unexpected refusal, marked,
// with its neighbours, names and no times missing.
func TestFirstFailure(t *testing.T) {
	f, err := os.Open("testdata/guest-trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sb strings.Builder
	found, err := FirstFailure(&sb, f, expectedRefusal, 2)
	if err != nil || !found {
		t.Fatalf("found %v, %v", found, err)
	}
	lines := strings.Split(strings.TrimSuffix(sb.String(), "\n"), "\n")
	want := []string{
		"first refused or failed command in the guest's trace (record 19 of 22):",
		"    vf0 POST  NOP op_mod=0 in_mod=0x0 in=0x0 out=0x0 tok=0xffff poll  OK",
		"    vf0 POST  NOP op_mod=0 in_mod=0x0 in=0x0 out=0x0 tok=0xffff poll  OK",
		">>  vf1 POST  MAD_DEMUX op_mod=0 in_mod=0x0 in=0x0 out=0x0 tok=0xffff poll  BAD_OP reason=privileged",
		"    vf1 POST  NOP op_mod=0 in_mod=0x0 in=0x0 out=0x0 tok=0xffff poll  OK  1.1µs",
		"    vf1 POST  NOP op_mod=0 in_mod=0x0 in=0x0 out=0x0 tok=0xffff poll  OK",
	}
	if len(lines) != len(want) {
		t.Fatalf("printout:\n%s", sb.String())
	}
	for i, l := range lines {
		if i > 0 {
			// "MM  15:04:05.000000000 vf…": drop the time.
			l = l[:3] + l[3+len("04:14:29.980850425"):]
		}
		if l != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, l, want[i])
		}
	}
	if !strings.Contains(sb.String(), "04:14:29.980850425 vf1 POST  MAD_DEMUX") {
		t.Errorf("the refused command's time is missing:\n%s", sb.String())
	}
}

// TestFirstFailureUnexpectedOnly: without the tier's expectation the first
// refusal is the 0x7ff; a trace with no failure gets its last records and
// says so; noise lines are counted, not fatal.
func TestFirstFailureUnexpectedOnly(t *testing.T) {
	b, err := os.ReadFile("testdata/guest-trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if found, err := FirstFailure(&sb, strings.NewReader(string(b)), nil, 0); err != nil || !found ||
		!strings.Contains(sb.String(), ">> ") || !strings.Contains(sb.String(), "POST  0x7ff op_mod=0") || strings.Count(sb.String(), "\n") != 2 {
		t.Fatalf("found %v, %v:\n%s", found, err, sb.String())
	}
	ok := strings.Join(strings.Split(string(b), "\n")[:6], "\n") + "\nboot noise\n"
	sb.Reset()
	found, err := FirstFailure(&sb, strings.NewReader(ok), nil, 1)
	if err != nil || found || !strings.HasPrefix(sb.String(), "no refused or failed command in the guest's trace (6 records); its last 3:") ||
		!strings.Contains(sb.String(), "(1 lines of the trace file were not trace entries)") {
		t.Fatalf("found %v, %v:\n%s", found, err, sb.String())
	}
}

// TestFailed: which entries count as failures.
func TestFailed(t *testing.T) {
	for _, tc := range []struct {
		e    trace.Entry
		fail bool
	}{
		{trace.Entry{Kind: "post", Status: "OK"}, false},
		{trace.Entry{Kind: "post", Status: "BAD_RESOURCE"}, true},
		{trace.Entry{Kind: "reset", ResetReason: "vf_reset"}, false},
		{trace.Entry{Kind: "reset", ResetReason: "flr"}, false},
		{trace.Entry{Kind: "reset", ResetReason: "toggle"}, true},
		{trace.Entry{Kind: "comm", Comm: "VHCR_EN"}, false},
	} {
		if got := Failed(&tc.e); got != tc.fail {
			t.Errorf("%+v: Failed %v", tc.e, got)
		}
	}
}
