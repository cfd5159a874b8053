//go:build crashpoints

package crashpoint

import "testing"

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		name string
		n    int
	}{{"", "", 1}, {"post-accepted", "post-accepted", 1}, {"commit-torn:3", "commit-torn", 3}, {"reset-acked:x", "reset-acked", 1}, {"reset-acked:0", "reset-acked", 1}} {
		if name, n := parse(c.in); name != c.name || n != c.n {
			t.Errorf("parse(%q) = %q, %d; want %q, %d", c.in, name, n, c.name, c.n)
		}
	}
}
