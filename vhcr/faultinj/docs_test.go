package faultinj_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/faults.md's catalogue from faultinj.CatalogueMarkdown")

const (
	docsPath  = "../../docs/faults.md"
	docsBegin = "<!-- catalogue: generated from faultinj.CatalogueMarkdown by go test ./vhcr/faultinj -update-docs -->\n"
	docsEnd   = "<!-- end of the generated catalogue -->\n"
)

// TestDocsCatalogue: docs/faults.md's catalogue is CatalogueMarkdown's,
// byte for byte (-update-docs rewrites it).
func TestDocsCatalogue(t *testing.T) {
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, docsBegin), strings.Index(s, docsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no generated catalogue between %q and %q", docsPath, docsBegin, docsEnd)
	}
	want := faultinj.CatalogueMarkdown()
	if got := s[i+len(docsBegin) : j]; got == want {
		return
	}
	if !*updateDocs {
		t.Fatalf("%s's catalogue is not faultinj.CatalogueMarkdown(): go test ./vhcr/faultinj -run TestDocsCatalogue -update-docs", docsPath)
	}
	if err := os.WriteFile(docsPath, []byte(s[:i+len(docsBegin)]+want+s[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
}
