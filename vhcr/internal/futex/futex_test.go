package futex

import "testing"

// TestWaitReturnsWhenTheWordDiffers: FUTEX_WAIT on a word that no longer
// holds the expected value returns at once (EAGAIN), and a wake without
// waiters is harmless.
func TestWaitReturnsWhenTheWordDiffers(t *testing.T) {
	w := uint32(7)
	Wait(&w, 8, 60e9) // would block a minute if the kernel slept on it
	Wake(&w, 1)
	if w != 7 {
		t.Fatalf("word changed to %d", w)
	}
}
