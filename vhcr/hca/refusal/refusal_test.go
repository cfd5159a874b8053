package refusal

import (
	"strings"
	"testing"
)

// TestEveryReasonNamed: every reason has a metric label (lower-case, unique,
// not the fallback) and a text; values past the set fall back.
func TestEveryReasonNamed(t *testing.T) {
	seen := map[string]Reason{}
	for r := Reason(0); int(r) < NumReasons; r++ {
		n := r.String()
		if n == "unknown" || n == "" || n != strings.ToLower(n) {
			t.Errorf("reason %d: label %q", r, n)
		}
		if o, dup := seen[n]; dup {
			t.Errorf("reasons %d and %d share the label %q", o, r, n)
		}
		seen[n] = r
		if txt := r.Text(); strings.HasPrefix(txt, "reason ") {
			t.Errorf("reason %d (%s) has no text", r, n)
		}
	}
	if r := Reason(NumReasons); r.String() != "unknown" || r.Text() != "reason 24" {
		t.Errorf("reason %d: %q, %q", r, r.String(), r.Text())
	}
}
