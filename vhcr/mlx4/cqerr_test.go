package mlx4

import "testing"

// TestCQErrSyndromes: the literal values of the CQ error event syndromes.
func TestCQErrSyndromes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{{"overrun", CQErrOverrun, 0x01}, {"access violation", CQErrAccessViolation, 0x02}} {
		if c.got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
