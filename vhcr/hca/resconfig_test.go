package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
)

func TestEdgeConfigs(t *testing.T) {
	for _, e := range []func(*config.Config){
		func(c *config.Config) { c.Resources.LogQPs = 4; c.Resources.ReservedQPs = 0 },
		func(c *config.Config) {
			c.Resources.Counters = 2
			c.Resources.MACsPerPort = 2
			c.Resources.VLANsPerPort = 1
		},
		func(c *config.Config) { c.Resources.LogMTTs = 26; c.Resources.LogCQs = 24; c.Resources.LogMPTs = 24 },
	} {
		cfg := config.Default()
		e(cfg)
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 126} {
			if _, err := New(cfg, n); err != nil {
				t.Errorf("%d VFs: %v", n, err)
			}
		}
	}
}
