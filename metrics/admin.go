package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// AdminActions are the operator's changes through the admin socket, the
// values of vhcrd_admin_changes_total's action label (a closed set).
var AdminActions = [...]string{
	"vf_mac", "vf_vlan", "vf_spoof_check", "vf_trust", "vf_link_state", "vf_rate",
	"vf_flr", "port_up", "port_down", "fault_add", "fault_clear",
}

// Results of an admin change, the values of the result label: done, or
// refused (a setting mlx4 refuses, a VF or port that does not exist, a
// poller that is not serving).
const (
	AdminDone    = 0
	AdminRefused = 1
)

var adminResults = [...]string{"done", "refused"}

// AdminCounter counts the admin socket's changes by action and result. It
// is a prometheus.Collector; Inc is safe from any goroutine.
type AdminCounter struct {
	n    [len(AdminActions)][len(adminResults)]atomic.Uint64
	desc *prometheus.Desc
}

// NewAdminCounter returns a zeroed counter.
func NewAdminCounter() *AdminCounter {
	return &AdminCounter{desc: prometheus.NewDesc("vhcrd_admin_changes_total",
		"Operator changes requested on the admin socket, by action and result.", []string{"action", "result"}, nil)}
}

// Inc counts one change of action (one of AdminActions; another name is
// not counted) with result AdminDone or AdminRefused.
func (a *AdminCounter) Inc(action string, result int) {
	for i, n := range AdminActions {
		if n == action && result >= 0 && result < len(adminResults) {
			a.n[i][result].Add(1)
			return
		}
	}
}

// Value returns the count of action with result.
func (a *AdminCounter) Value(action string, result int) uint64 {
	for i, n := range AdminActions {
		if n == action {
			return a.n[i][result].Load()
		}
	}
	return 0
}

// Describe implements prometheus.Collector.
func (a *AdminCounter) Describe(ch chan<- *prometheus.Desc) { ch <- a.desc }

// Collect implements prometheus.Collector: the nonzero counts.
func (a *AdminCounter) Collect(ch chan<- prometheus.Metric) {
	for i, act := range AdminActions {
		for r, res := range adminResults {
			if v := a.n[i][r].Load(); v != 0 {
				ch <- prometheus.MustNewConstMetric(a.desc, prometheus.CounterValue, float64(v), act, res)
			}
		}
	}
}
