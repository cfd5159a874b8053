package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestSetPortState: an operator's link change reaches QUERY_PORT, the MAD
// engine's PortInfo, and the VFs with the port and the auto link policy as a
// PORT_CHANGE EQE with the port number in the VF's own numbering.
func TestSetPortState(t *testing.T) {
	r := newRig(t, 2, nil)
	e, err := mad.New(MADNode(r.h.Cfg), mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.h.AttachMAD(e); err != nil {
		t.Fatal(err)
	}
	v := r.vf(0)
	v.setupEQ(1, 6)
	ring := uint64(0x10000) // setupEQ's first page
	n, err := r.h.SetPortState(2, "down")
	if err != nil || n != 1 {
		t.Fatalf("SetPortState: %d VFs notified, %v; want 1 (VF 1 mapped no EQ: counted, not delivered)", n, err)
	}
	if got := r.h.Stats(1).NoEQ.Load(); got != 1 {
		t.Errorf("VF 1's unmapped events: %d, want 1", got)
	}
	eqe := v.readEQE(ring, 0)
	if eqe[mlx4.EQEType] != mlx4.EventPortChange || eqe[mlx4.EQESubtype] != 1 || eqe[0x0c]>>4 != 2 {
		t.Fatalf("EQE % x: want PORT_CHANGE, subtype 1 (down), VF port 2 in bits 31:28 of 0x0c", eqe[:16])
	}
	c := v.cmd(mlx4.QUERY_PORT, 0, 2, 0, nil, true)
	wantS(t, "QUERY_PORT", v.run(c), mlx4.OK)
	if c.Outbox[0]&0x80 != 0 {
		t.Errorf("QUERY_PORT of a down port says link up (%#x)", c.Outbox[0])
	}
	if pi, _ := e.PortInfo(2); pi.PortState != mad.PortDown || pi.PortPhysicalState != mad.PhysPolling {
		t.Errorf("engine port 2: state %d phys %d", pi.PortState, pi.PortPhysicalState)
	}
	if _, err := r.h.SetPortState(2, "active"); err != nil {
		t.Fatal(err)
	}
	if eqe := v.readEQE(ring, 1); eqe[mlx4.EQESubtype] != 4 {
		t.Errorf("second EQE subtype %d, want 4 (active)", eqe[mlx4.EQESubtype])
	}
	if _, err := r.h.SetPortState(3, "down"); err == nil {
		t.Error("port 3 accepted")
	}
	if _, err := r.h.SetPortState(1, "sideways"); err == nil {
		t.Error("state sideways accepted")
	}
}
