package mad_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/mad"
)

// TestKeyViolation: a data packet's P_Key or Q_Key violation counts on the
// port and sends trap 257 or 258 with the packet's addressing; a nil WC,
// an unknown port or another trap number does nothing.
func TestKeyViolation(t *testing.T) {
	f := newFixture(t, nil)
	wc := &mad.WC{SLID: 7, SrcQP: 0x1234, SL: 2, QPN: 0x99}
	f.e.KeyViolation(1, mad.TrapBadQKey, 0x5555, wc, nil)
	f.e.KeyViolation(1, mad.TrapBadQKey, 0x5555, nil, nil)
	f.e.KeyViolation(9, mad.TrapBadQKey, 0x5555, wc, nil)
	f.e.KeyViolation(1, 300, 0x5555, wc, nil)
	traps := f.sink.Traps()
	if len(traps) != 1 || traps[0].Number != mad.TrapBadQKey || traps[0].Port != 1 {
		t.Fatalf("traps %+v", traps)
	}
	if pi := f.portInfo(t, 1); pi.QKeyViolations != 1 || pi.PKeyViolations != 0 {
		t.Fatalf("PortInfo Q_Key violations %d, P_Key %d", pi.QKeyViolations, pi.PKeyViolations)
	}
	f.clock.Advance(3600e9)
	f.e.KeyViolation(1, mad.TrapBadPKey, 0x8001, wc, nil)
	if traps := f.sink.Traps(); len(traps) != 1 || traps[0].Number != mad.TrapBadPKey {
		t.Fatalf("P_Key traps %+v", traps)
	}
	if s := f.e.Snapshot(); s.KeyViolations[mad.CKeyP] != 1 || s.KeyViolations[mad.CKeyQ] != 1 {
		t.Fatalf("counters %v", s.KeyViolations)
	}
}
