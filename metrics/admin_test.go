package metrics_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/metrics"
)

// Changes are counted by action and result; a name outside the closed set
// adds no series.
func TestAdminCounter(t *testing.T) {
	a := metrics.NewAdminCounter()
	a.Inc("vf_vlan", metrics.AdminDone)
	a.Inc("vf_trust", metrics.AdminRefused)
	a.Inc("vf_trust", metrics.AdminRefused)
	a.Inc("made_up", metrics.AdminDone)
	s := gather(t, a)
	f := s["vhcrd_admin_changes_total"]
	if f == nil || f.series != 2 || a.Value("vf_trust", metrics.AdminRefused) != 2 || a.Value("vf_vlan", metrics.AdminDone) != 1 {
		t.Fatalf("scrape %+v", f)
	}
}
