package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/ibsim"
	"github.com/vhcrd/vhcrd/mad/madtest"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca"
)

// A VF flooding the SA through the tunnel: the wire takes tunnelQueue MADs
// ahead of its goroutine and drops the rest, counted as the tunnel's
// queue drops; the poller is never blocked. A port the server does not
// serve is declined (the HCA's own agents take it).
func TestTunnelWireBounded(t *testing.T) {
	h, err := hca.New(config.Default(), 1)
	if err != nil {
		t.Fatal(err)
	}
	e, err := mad.New(madtest.Node(), mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tw := newTunnelWire(h, 1)
	srv, err := ibsim.Listen(fmt.Sprintf("vhcrd-tw-%d", os.Getpid()), e, ibsim.Options{Tunnel: tw.receive})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tw.srv = srv // run is not started: nothing drains
	var m hca.WireMAD
	for range tunnelQueue + 10 {
		if !tw.SendMAD(1, &m) {
			t.Fatal("port 1 declined")
		}
	}
	if n := h.TunnelStats().Drops[hca.TunDropQueue].Load(); n != 10 {
		t.Fatalf("queue drops %d, want 10", n)
	}
	if tw.SendMAD(2, &m) {
		t.Fatal("port 2 taken by port 1's server")
	}
}
