package vfclient_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// Serving reads PF_STATE: only SERVING is a PF; the error of the others
// names the state and PF_GEN.
func TestAttachmentServing(t *testing.T) {
	l, err := wire.NewLayout(2, 64<<10, true, 0x40000, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := bar.NewMem("bar", l.ControlSize())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(m); err != nil {
		t.Fatal(err)
	}
	a, err := vfclient.Attach(m)
	if err != nil {
		t.Fatal(err)
	}
	for st, want := range map[uint32]string{wire.PFStateInit: "starting", wire.PFStateStopped: "stopped", 7: "unknown"} {
		if err := m.Store32(wire.HdrPFState, st); err != nil {
			t.Fatal(err)
		}
		if err := m.Store32(wire.HdrPFGen, 3); err != nil {
			t.Fatal(err)
		}
		err := a.Serving()
		if !errors.Is(err, vfclient.ErrNoPF) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "PF_GEN 3") {
			t.Errorf("PF_STATE %d: %v", st, err)
		}
	}
	if err := m.Store32(wire.HdrPFStopped, 1800000000); err != nil {
		t.Fatal(err)
	}
	if err := m.Store32(wire.HdrPFState, wire.PFStateStopped); err != nil {
		t.Fatal(err)
	}
	if err := a.Serving(); err == nil || !strings.Contains(err.Error(), "since 2027-01-15T08:00:00Z (PF_STOPPED)") {
		t.Errorf("stopped with PF_STOPPED: %v", err)
	}
	if err := m.Store32(wire.HdrPFState, wire.PFStateServing); err != nil {
		t.Fatal(err)
	}
	if err := a.Serving(); err != nil {
		t.Fatalf("serving: %v", err)
	}
}
