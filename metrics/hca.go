package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/master"
)

// HCACollector exports the software HCA's state: resources in use per VF and
// type (read on the poller, which owns the HCA, between two scans), event
// queue counters, and the MAD engine's counters.
type HCACollector struct {
	pf  *master.PF
	h   *hca.HCA
	mad *mad.Engine

	resources, eqes, overruns, noEQ                      *prometheus.Desc
	interrupts, unarmed, irqErrors                       *prometheus.Desc
	mads, traps, trapRepeats, suppressed, keyViol, vfMAD *prometheus.Desc
}

// NewHCACollector exports h (served by pf) and its MAD engine e (may be nil).
func NewHCACollector(pf *master.PF, h *hca.HCA, e *mad.Engine) *HCACollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("vhcrd_"+name, help, labels, nil)
	}
	return &HCACollector{pf: pf, h: h, mad: e,
		resources:   d("resources", "Objects a VF holds in the resource tracker, by type.", "vf", "type"),
		eqes:        d("eqes_total", "EQEs written into a VF's event queues.", "vf"),
		overruns:    d("eq_overruns_total", "EQEs dropped because the VF's event queue was full.", "vf"),
		noEQ:        d("events_unmapped_total", "Events dropped because the VF mapped no EQ for their type.", "vf"),
		interrupts:  d("interrupts_total", "MSI-X interrupts raised to a VF (an EQE into an armed EQ, or a re-arm with EQEs pending).", "vf"),
		unarmed:     d("interrupts_unarmed_total", "EQEs written into a VF's EQ that was not armed: no interrupt until the VF re-arms it.", "vf"),
		irqErrors:   d("interrupt_errors_total", "Interrupts not raised: a vector at or above the VF's count (the VF's error) or its eventfds gone.", "vf"),
		mads:        d("mads_total", "MADs the engine processed, by management class, method and result.", "class", "method", "result"),
		traps:       d("traps_sent_total", "Traps sent (first transmissions), by trap number.", "trap"),
		trapRepeats: d("trap_repeats_total", "Trap retransmissions (no TrapRepress yet), by trap number.", "trap"),
		suppressed:  d("traps_suppressed_total", "Traps not sent, by reason (no work completion or GRH to build them from, rate limit, ...).", "reason"),
		keyViol:     d("key_violations_total", "M_Key, P_Key, Q_Key and B_Key violations.", "key"),
		vfMAD:       d("vf_mad_ifc_total", "MAD_IFC commands from VFs, by outcome of the VF policy.", "outcome"),
	}
}

// Describe implements prometheus.Collector.
func (c *HCACollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.resources, c.eqes, c.overruns, c.noEQ, c.interrupts, c.unarmed, c.irqErrors, c.mads, c.traps, c.trapRepeats, c.suppressed, c.keyViol, c.vfMAD} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *HCACollector) Collect(ch chan<- prometheus.Metric) {
	n := c.h.NumVFs
	counts := make([][restrack.NumTypes]int, n)
	if err := c.pf.Do(func() {
		for vf := range counts {
			counts[vf] = c.h.Counts(vf)
		}
	}); err == nil {
		for vf := range counts {
			for ty, v := range counts[vf] {
				t := restrack.Type(ty)
				if t == restrack.NPortID {
					continue
				}
				ch <- prometheus.MustNewConstMetric(c.resources, prometheus.GaugeValue, float64(v), strconv.Itoa(vf), t.String())
			}
		}
	}
	for vf := 0; vf < n; vf++ {
		st := c.h.Stats(vf)
		l := strconv.Itoa(vf)
		for _, x := range []struct {
			d *prometheus.Desc
			v uint64
		}{{c.eqes, st.EQEs.Load()}, {c.overruns, st.Overruns.Load()}, {c.noEQ, st.NoEQ.Load()},
			{c.interrupts, st.Interrupts.Load()}, {c.unarmed, st.Unarmed.Load()}, {c.irqErrors, st.IRQErrors.Load()}} {
			if x.v != 0 {
				ch <- prometheus.MustNewConstMetric(x.d, prometheus.CounterValue, float64(x.v), l)
			}
		}
	}
	if c.mad == nil {
		return
	}
	s := c.mad.Snapshot()
	for i := range s.MADs {
		for j := range s.MADs[i] {
			for k, v := range s.MADs[i][j] {
				if v != 0 {
					ch <- prometheus.MustNewConstMetric(c.mads, prometheus.CounterValue, float64(v),
						mad.ClassLabels[i], mad.MethodLabels[j], mad.ResultLabels[k])
				}
			}
		}
	}
	for i, v := range s.TrapsSent {
		ch <- prometheus.MustNewConstMetric(c.traps, prometheus.CounterValue, float64(v), mad.TrapLabels[i])
		ch <- prometheus.MustNewConstMetric(c.trapRepeats, prometheus.CounterValue, float64(s.TrapRepeats[i]), mad.TrapLabels[i])
	}
	for i, v := range s.TrapsSuppressed {
		ch <- prometheus.MustNewConstMetric(c.suppressed, prometheus.CounterValue, float64(v), mad.SuppressLabels[i])
	}
	for i, v := range s.KeyViolations {
		ch <- prometheus.MustNewConstMetric(c.keyViol, prometheus.CounterValue, float64(v), mad.KeyLabels[i])
	}
	ch <- prometheus.MustNewConstMetric(c.vfMAD, prometheus.CounterValue, float64(s.VFParavirt), "paravirtualised")
	ch <- prometheus.MustNewConstMetric(c.vfMAD, prometheus.CounterValue, float64(s.VFRefused), "refused")
	ch <- prometheus.MustNewConstMetric(c.vfMAD, prometheus.CounterValue, float64(s.BadInbox), "bad_inbox")
}
