package vmtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/vhcrd/vhcrd/vhcr/master/trace"
)

// The guest's vhcrd writes its command trace as JSON lines
// (serve --trace /dev/ttyS1 --trace-json) to the VM's second serial port,
// which QEMU writes to a file in the test's temp dir. When a run fails, the
// test prints the first refused or failed command of that trace with its
// neighbours (FirstFailure), so that the CI log says which command went
// wrong.

// Failed reports whether e is a command the PF refused or failed (a
// VHCR_POST with a status other than OK) or a reset of a VF's channel for
// a protocol violation (any reset but the VF's own RESET, an FLR or the
// VF's reset request).
func Failed(e *trace.Entry) bool {
	switch e.Kind {
	case "post":
		return e.Status != "OK"
	case "reset":
		switch e.ResetReason {
		case "vf_reset", "flr", "reset_request":
			return false
		}
		return true
	}
	return false
}

// FirstFailure reads a trace in JSON lines from r and writes to w, in the
// text form, the first entry that Failed and that expected does not accept
// (expected may be nil), with up to around entries before and after it.
// Lines that are not trace entries (a serial port's noise) are skipped and
// counted. Without such an entry it writes the last entries instead and
// says so. It reports whether it found one.
func FirstFailure(w io.Writer, r io.Reader, expected func(*trace.Entry) bool, around int) (bool, error) {
	var entries []trace.Entry
	skipped := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		e, err := trace.ParseJSON(line)
		if err != nil {
			skipped++
			continue
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("vmtest: reading the trace: %w", err)
	}
	first := -1
	for i := range entries {
		if Failed(&entries[i]) && (expected == nil || !expected(&entries[i])) {
			first = i
			break
		}
	}
	var b []byte
	from, to := max(0, len(entries)-2*around-1), len(entries)
	if first >= 0 {
		from, to = max(0, first-around), min(len(entries), first+around+1)
		b = fmt.Appendf(b, "first refused or failed command in the guest's trace (record %d of %d):\n", first+1, len(entries))
	} else {
		b = fmt.Appendf(b, "no refused or failed command in the guest's trace (%d records); its last %d:\n", len(entries), to-from)
	}
	for i := from; i < to; i++ {
		mark := "   "
		if i == first {
			mark = ">> "
		}
		b = append(b, mark...)
		b = trace.AppendText(b, &entries[i])
	}
	if skipped > 0 {
		b = fmt.Appendf(b, "(%d lines of the trace file were not trace entries)\n", skipped)
	}
	_, err := w.Write(b)
	return first >= 0, err
}

// traceSummary is FirstFailure into a string, for the test log.
func traceSummary(r io.Reader, expected func(*trace.Entry) bool) string {
	var sb strings.Builder
	if _, err := FirstFailure(&sb, r, expected, 5); err != nil {
		return err.Error()
	}
	return sb.String()
}
