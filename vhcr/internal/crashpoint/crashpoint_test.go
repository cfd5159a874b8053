package crashpoint

import "testing"

func TestNamesDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range Names {
		if n == "" || seen[n] {
			t.Fatalf("point name %q empty or repeated", n)
		}
		seen[n] = true
	}
	if len(Names) != 9 {
		t.Fatalf("%d points, want 9", len(Names))
	}
}

// With the tag off, Hit is a no-op whatever the environment says.
func TestHitOffDoesNothing(t *testing.T) {
	if Enabled {
		t.Skip("built with -tags crashpoints")
	}
	t.Setenv(EnvVar, PostAccepted)
	Hit(PostAccepted)
}
