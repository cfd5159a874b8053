package eswitch

import (
	"bytes"
	"testing"
)

// TestAccessPort: the access port of VLAN 100 gives its host the device's
// frames of VLAN 100 untagged (priority dropped) and nothing else, and
// tags the host's frames with VLAN 100, priority 0; a round trip through
// both is the frame it was, but for the priority.
func TestAccessPort(t *testing.T) {
	a := Access{VID: 100}
	plain := make([]byte, 60)
	PutMAC(plain, 0x02c903010001)
	PutMAC(plain[6:], 0x02aabbccdd01)
	plain[12], plain[13] = 0x08, 0x06
	for i := 14; i < len(plain); i++ {
		plain[i] = byte(i)
	}
	tagged := func(tpid, tci uint16) []byte {
		b := append(bytes.Clone(plain[:12]), byte(tpid>>8), byte(tpid), byte(tci>>8), byte(tci))
		return append(b, plain[12:]...)
	}
	out := make([]byte, 128)
	n := a.In(out, plain)
	if !bytes.Equal(out[:n], tagged(TPIDCVLAN, 100)) {
		t.Fatalf("In: % x", out[:n])
	}
	n, ok := a.Out(out, tagged(TPIDCVLAN, TCI(2, false, 100)))
	if !ok || !bytes.Equal(out[:n], plain) {
		t.Fatalf("Out of VLAN 100 priority 2: %v % x", ok, out[:n])
	}
	for name, f := range map[string][]byte{
		"untagged":        plain,
		"VLAN 101":        tagged(TPIDCVLAN, 101),
		"priority-tagged": tagged(TPIDCVLAN, TCI(3, false, 0)),
		"S-VLAN 100":      tagged(TPIDSVLAN, 100),
		"runt":            plain[:10],
	} {
		if _, ok := a.Out(out, f); ok {
			t.Errorf("Out gave the host a frame %s", name)
		}
	}
	if n := a.In(out, plain[:10]); n != 10 {
		t.Errorf("In of a runt: %d bytes", n)
	}
}
