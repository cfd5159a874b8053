package faultinj_test

import (
	"os"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
)

// TestDocsCatalogue: docs/faults.md's catalogue is CatalogueMarkdown's,
// byte for byte (regenerate: go run the snippet in the page's "Adding a
// fault kind").
func TestDocsCatalogue(t *testing.T) {
	b, err := os.ReadFile("../../docs/faults.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), faultinj.CatalogueMarkdown()) {
		t.Fatal("docs/faults.md's catalogue is not faultinj.CatalogueMarkdown(): regenerate it")
	}
}
