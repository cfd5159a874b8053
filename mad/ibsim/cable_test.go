package ibsim_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/ibsim"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

// TestFabricCable: a fabric cabled at start (the daemon's data path routes
// through it without an ibsim server) is swept then; a server that listens
// later on the same engine takes it as it is (the SM's changes kept), and
// one on another engine, or a second Cable, is refused.
func TestFabricCable(t *testing.T) {
	cfg := madtest.Node()
	cfg.Ports[0].LID, cfg.Ports[1].LID = 5, 6
	e, sw := engineAndSwitch(t, cfg)
	f := &ibsim.Fabric{Switch: sw, Cables: map[uint8]uint8{1: 3, 2: 5}, LID: 1}
	if err := f.Cable(e, 1); err != nil {
		t.Fatal(err)
	}
	if sw.Forward(5) != 3 || sw.Forward(6) != 5 || !sw.PortActive(3) {
		t.Fatalf("after Cable: LFT 5→%d 6→%d, port 3 Active %v", sw.Forward(5), sw.Forward(6), sw.PortActive(3))
	}
	if err := f.Cable(e, 1); err == nil {
		t.Fatal("a second Cable accepted")
	}
	// What an SM changed between the start and the server stays.
	b := make([]byte, 64)
	for i := range b {
		b[i] = 0xFF
	}
	b[6] = 7
	if _, res := sw.ProcessSMP(3, madtest.SMP(mad.MethodSet, mad.AttrLinearFwdTable, 0, 0, b)); res&mad.Reply == 0 {
		t.Fatal("LFT Set not answered")
	}
	name := fmt.Sprintf("vhcrdtest%d-%d", os.Getpid(), seq.Add(1))
	s, err := ibsim.Listen(name, e, ibsim.Options{Fabric: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if sw.Forward(6) != 7 || !sw.PortActive(3) {
		t.Fatalf("Listen re-swept the cabled fabric: LFT 6→%d, port 3 Active %v", sw.Forward(6), sw.PortActive(3))
	}
	e2, _ := mad.New(cfg, mad.Options{})
	if _, err := ibsim.Listen(name+"b", e2, ibsim.Options{Fabric: f}); err == nil {
		t.Fatal("a fabric cabled to one engine served for another")
	}
}
