//go:build !crashpoints

package crashpoint

// Enabled reports whether the binary was built with -tags crashpoints.
const Enabled = false

// Hit does nothing without the crashpoints build tag.
func Hit(string) {}
