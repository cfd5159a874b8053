package mlx4

import (
	"errors"
	"testing"
)

// Opcode names are accepted in any case, numbers in any base strconv
// knows; anything else is ErrUnknownOpcode.
func TestParseOpcode(t *testing.T) {
	for in, want := range map[string]Opcode{
		"QUERY_FUNC_CAP": QUERY_FUNC_CAP, "query_func_cap": QUERY_FUNC_CAP, "Query_Fw": QUERY_FW,
		"0x24": MAD_IFC, "36": MAD_IFC,
	} {
		if got, err := ParseOpcode(in); err != nil || got != want {
			t.Errorf("ParseOpcode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"bogus", "", "0x1000", "QUERY_FW "} {
		if _, err := ParseOpcode(in); !errors.Is(err, ErrUnknownOpcode) {
			t.Errorf("ParseOpcode(%q): %v, want ErrUnknownOpcode", in, err)
		}
	}
}
