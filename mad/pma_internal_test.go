package mad

import "testing"

// TestPortCountersSaturate checks that the 32-, 16-, 8- and 4-bit views of
// the 64-bit PMA counters saturate instead of wrapping.
func TestPortCountersSaturate(t *testing.T) {
	c := pmaCounters{
		symbolErr: 1 << 20, linkErrRecovery: 300, localLinkIntegrity: 16, bufOverrun: 99,
		vl15Dropped: 70000, xmitData: 1 << 40, rcvPkts: 0xFFFFFFFF, xmitWait: 1 << 33,
	}
	pc := portCounters(&c)
	if pc.SymbolErrorCounter != 0xFFFF || pc.LinkErrorRecoveryCounter != 0xFF || pc.LocalLinkIntegrityErrors != 0xF ||
		pc.ExcessiveBufferOverrunErrors != 0xF || pc.VL15Dropped != 0xFFFF || pc.PortXmitData != 0xFFFFFFFF ||
		pc.PortRcvPkts != 0xFFFFFFFF || pc.PortXmitWait != 0xFFFFFFFF {
		t.Fatalf("%+v", pc)
	}
	clearPortCounters(&c, 1<<12|1<<0, 0)
	if c.xmitData != 0 || c.symbolErr != 0 || c.rcvPkts == 0 || c.xmitWait == 0 {
		t.Fatalf("selective clear %+v", c)
	}
	clearPortCounters(&c, 0, 1)
	if c.xmitWait != 0 {
		t.Fatal("CounterSelect2 did not clear PortXmitWait")
	}
}
