package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/vhcrd/vhcrd/hack/vmtest"
)

// roce runs EthConfig.Verbs over the Ethernet port (RoCE v1): once
// mlx4_ib's port 1 is ACTIVE (the netdev's carrier) with its default GID
// (fe80:: and the MAC's EUI-64, SET_PORT GID_TABLE through the PF),
// `ibv_devinfo -v` ("roce devinfo"), then each pingpong with the peer
// guest, whose out-of-band TCP runs over the same netdev.
func (g *guest) roce(ec vmtest.EthConfig) error {
	vc := *ec.Verbs
	vc.Net = &vmtest.NetConfig{Addr: ec.Addr, Prefix: ec.Prefix, Peer: ec.Ping}
	if err := waitRoCE(1); err != nil {
		return err
	}
	r := runTool(context.Background(), "ibv_devinfo", "/usr/bin/ibv_devinfo", "-v")
	if r.err != nil {
		return fmt.Errorf("ibv_devinfo -v: %w; last lines: %s", r.err, strings.Join(r.last, " | "))
	}
	wait("roce devinfo")
	limit := time.Duration(vc.TimeLimitMS) * time.Millisecond
	for _, pp := range vc.Pingpongs {
		if err := g.pingpong(pp, vc, limit); err != nil {
			return err
		}
	}
	wait("roce pingpongs")
	return nil
}

// waitRoCE waits for mlx4_0's Ethernet port to be ACTIVE with its GID 0
// set.
func waitRoCE(port int) error {
	dir := filepath.Join(ibClass, "mlx4_0/ports", fmt.Sprint(port))
	end := time.Now().Add(activeTime)
	for {
		st, ll, gid := readFile(dir+"/state"), readFile(dir+"/link_layer"), readFile(dir+"/gids/0")
		if st == "4: ACTIVE" && ll == "Ethernet" && gid != "" && !strings.HasPrefix(gid, "0000:0000:0000:0000") {
			say("mlx4_0 port %d: %s, link_layer %s, gid 0 %s, gid 1 %s", port, st, ll, gid, readFile(dir+"/gids/1"))
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("mlx4_0 port %d: state %q, link_layer %q, gid 0 %q after %v, want an ACTIVE Ethernet port with its GID", port, st, ll, gid, activeTime)
		}
		time.Sleep(50 * time.Millisecond) // the port's state is the driver's, read through sysfs
	}
}
