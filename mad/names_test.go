package mad

import "testing"

// TestNames: the kernel's names (ib_mad.h, ib_smi.h, ib_pma.h, ib_sa.h)
// for the values a VF's MAD_IFC carries, and hexadecimal for the rest.
func TestNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{ClassName(0x01), "SUBN_LID_ROUTED"}, {ClassName(0x81), "SUBN_DIRECTED_ROUTE"},
		{ClassName(0x03), "SUBN_ADM"}, {ClassName(0x04), "PERF_MGMT"}, {ClassName(0x05), "BM"},
		{ClassName(0x2a), "0x2a"},
		{MethodName(0x01), "GET"}, {MethodName(0x02), "SET"}, {MethodName(0x81), "GET_RESP"},
		{MethodName(0x05), "TRAP"}, {MethodName(0x07), "TRAP_REPRESS"}, {MethodName(0x12), "GET_TABLE"},
		{MethodName(0x7f), "0x7f"},
		{AttrName(0x01, 0x0011), "NODE_INFO"}, {AttrName(0x81, 0x0015), "PORT_INFO"},
		{AttrName(0x01, 0x0016), "PKEY_TABLE"}, {AttrName(0x01, 0x0014), "GUID_INFO"},
		{AttrName(0x01, 0x0010), "NODE_DESC"}, {AttrName(0x01, 0xff90), "EXTENDED_PORT_INFO"},
		{AttrName(0x04, 0x0012), "PORT_COUNTERS"}, {AttrName(0x04, 0x001d), "PORT_COUNTERS_EXT"},
		{AttrName(0x04, 0x0001), "CLASS_PORT_INFO"}, {AttrName(0x05, 0x0010), "BKEY_INFO"},
		{AttrName(0x03, 0x0035), "PATH_REC"}, {AttrName(0x07, 0x0001), "CLASS_PORT_INFO"},
		{AttrName(0x01, 0x0001), "0x1"}, {AttrName(0x2a, 0x0011), "0x11"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
