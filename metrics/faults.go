package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/master"
)

// FaultCollector exports the faults a PF injected (package faultinj), by
// kind: vhcrd_faults_injected_total{kind}, every kind of the catalogue,
// zeros too (an alert's increase() sees the first fault).
type FaultCollector struct {
	pf   *master.PF
	desc *prometheus.Desc
}

// NewFaultCollector returns the collector of pf's injected faults.
func NewFaultCollector(pf *master.PF) *FaultCollector {
	return &FaultCollector{pf: pf, desc: prometheus.NewDesc("vhcrd_faults_injected_total",
		"Faults the PF injected into its VFs on an operator's rule (vhcrd fault add, the configuration's faults), by kind.", []string{"kind"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *FaultCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *FaultCollector) Collect(ch chan<- prometheus.Metric) {
	var n [faultinj.NumKinds]uint64
	if err := c.pf.FaultsInjected(&n); err != nil {
		return // the poller is stuck: nothing rather than a stale count
	}
	for _, k := range faultinj.Kinds() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n[k]), k.String())
	}
}
