package config

import (
	"bytes"
	"testing"
)

// FuzzParse: arbitrary bytes are a configuration or an error; an accepted
// configuration resolves every VF without panicking.
func FuzzParse(f *testing.F) {
	f.Add(Example())
	f.Add([]byte(`{"ports":[]}`))
	f.Add(withFaults(`[{"kind":"status","vf":1,"op":"QUERY_FUNC_CAP","nth":2,"args":{"status":"BAD_PARAM"}},{"kind":"pf_offline","args":{"us":"5s"}}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Parse(bytes.NewReader(in))
		if err != nil {
			return
		}
		for vf := 0; vf < 4; vf++ {
			fn := c.Function(vf)
			for port, m := range fn.PKeyMap {
				for _, phys := range m {
					if phys < 0 || phys >= len(c.Ports[port-1].PKeys) {
						t.Fatalf("VF %d port %d maps to physical index %d", vf, port, phys)
					}
				}
			}
		}
	})
}
