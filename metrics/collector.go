package metrics

import (
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Version is set by the build (-ldflags -X).
var Version = "dev"

// PFCollector exports one PF's counters.
type PFCollector struct {
	pf     *master.PF
	vfs    []string
	ops    []string
	status []string

	commands, resets, refusals, dma, resyncs, dropped *prometheus.Desc
	runs, busy, sleeps, eqes, latency, info, numVFs   *prometheus.Desc
	completed                                         *prometheus.Desc
}

// NewPFCollector returns a collector for pf.
func NewPFCollector(pf *master.PF) *PFCollector {
	c := &PFCollector{pf: pf}
	for i := 0; i < pf.Layout().NumVFs; i++ {
		c.vfs = append(c.vfs, strconv.Itoa(i))
	}
	t := pf.Table()
	c.ops = append(c.ops, "unknown")
	for i := 1; i < t.NumOps(); i++ {
		c.ops = append(c.ops, t.OpAt(i).String())
	}
	for _, s := range master.SlotStatuses {
		c.status = append(c.status, s.Name())
	}
	c.status = append(c.status, "other")
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("vhcrd_"+name, help, labels, nil)
	}
	c.commands = d("commands_total", "Commands posted through the vHCR, by VF, opcode and completion status.", "vf", "opcode", "status")
	c.resets = d("comm_resets_total", "Comm channel resets of a VF (its resources released), by reason.", "vf", "reason")
	c.refusals = d("command_refusals_total", "Commands refused by validation, by reason.", "vf", "reason")
	c.dma = d("dma_faults_total", "DMA accesses to a VF's window that failed checks (vHCR, inbox, outbox).", "vf")
	c.resyncs = d("channel_resyncs_total", "Times a VF's comm registers were rewritten behind the PF and the PF resynchronised.", "vf")
	c.dropped = d("flr_dropped_commands_total", "Comm commands dropped without acknowledgement during an FLR.", "vf")
	c.runs = d("poller_runs_total", "Scans of all VFs' comm pages by the poller.")
	c.busy = d("poller_busy_runs_total", "Poller scans that found at least one command.")
	c.sleeps = d("poller_sleeps_total", "Times the idle poller blocked (futex doorbell or nanosleep).")
	c.eqes = d("completion_eqes_total", "Command completion EQEs written to VFs' event queues.")
	c.latency = d("command_duration_seconds", "Time from the PF seeing VHCR_POST to the command's completion being written (one command in 8 is timed).")
	c.completed = d("commands_completed_total", "Commands completed, all VFs and statuses.")
	c.info = d("build_info", "Build information.", "version", "goversion")
	c.numVFs = d("vfs", "VFs served by this PF.")
	return c
}

// Describe implements prometheus.Collector.
func (c *PFCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.commands, c.resets, c.refusals, c.dma, c.resyncs, c.dropped,
		c.runs, c.busy, c.sleeps, c.eqes, c.latency, c.info, c.numVFs, c.completed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PFCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pf.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		if v != 0 {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
		}
	}
	for vf, vfl := range c.vfs {
		for op := range c.ops {
			for slot := range c.status {
				counter(c.commands, s.Command(vf, op, slot), vfl, c.ops[op], c.status[slot])
			}
		}
		for _, r := range master.ResetReasons() {
			counter(c.resets, s.Reset(vf, r), vfl, r.String())
		}
		for r := mlx4.Reason(1); int(r) < mlx4.NumReasons; r++ {
			counter(c.refusals, s.Refusal(vf, r), vfl, r.String())
		}
		counter(c.dma, s.DMA[vf], vfl)
		counter(c.resyncs, s.Resyncs[vf], vfl)
		counter(c.dropped, s.Dropped[vf], vfl)
	}
	ch <- prometheus.MustNewConstMetric(c.runs, prometheus.CounterValue, float64(s.Runs))
	ch <- prometheus.MustNewConstMetric(c.busy, prometheus.CounterValue, float64(s.BusyRuns))
	ch <- prometheus.MustNewConstMetric(c.sleeps, prometheus.CounterValue, float64(s.Sleeps))
	ch <- prometheus.MustNewConstMetric(c.eqes, prometheus.CounterValue, float64(s.EQEs))
	buckets := make(map[float64]uint64, len(master.LatencyBounds))
	var cum uint64
	for i, b := range master.LatencyBounds {
		cum += s.Latency[i]
		buckets[b] = cum
	}
	cum += s.Latency[len(master.LatencyBounds)]
	ch <- prometheus.MustNewConstHistogram(c.latency, cum, float64(s.LatencyNS)*1e-9, buckets)
	ch <- prometheus.MustNewConstMetric(c.completed, prometheus.CounterValue, float64(s.Done))
	ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1, Version, runtime.Version())
	ch <- prometheus.MustNewConstMetric(c.numVFs, prometheus.GaugeValue, float64(len(c.vfs)))
}
