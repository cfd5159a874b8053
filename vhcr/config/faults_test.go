package config

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// withFaults is the example configuration with a faults section.
func withFaults(section string) []byte {
	ex := Example()
	i := bytes.LastIndexByte(ex, '}')
	return append(append(append([]byte{}, ex[:i]...), []byte(`,"faults":`+section)...), ex[i:]...)
}

// TestFaultsSection: the faults section parses into rules; the default
// has none; a rule the catalogue refuses names its entry.
func TestFaultsSection(t *testing.T) {
	if len(Default().Faults) != 0 {
		t.Fatal("the default configuration arms faults")
	}
	c, err := Parse(bytes.NewReader(withFaults(`[{"kind":"status","vf":1,"op":"QUERY_FUNC_CAP","nth":2,"args":{"status":"BAD_PARAM"}},
		{"kind":"delay","comm":"RESET","prob":0.5,"seed":9,"args":{"us":"20ms"}}]`)))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Faults) != 2 || c.Faults[0].Kind != "status" || *c.Faults[0].VF != 1 || c.Faults[1].Seed != 9 || c.Faults[1].Args["us"] != "20ms" {
		t.Fatalf("%+v", c.Faults)
	}
	for _, bad := range []string{
		`[{"kind":"status"},{"kind":"no_such_kind"}]`,
		`[{"kind":"delay"},{"kind":"status","every":true,"nth":3}]`,
		`[{"kind":"status"},{"kind":"status","bogus":1}]`,
	} {
		_, err := Parse(bytes.NewReader(withFaults(bad)))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "faults[1]") && !strings.Contains(err.Error(), "bogus") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
