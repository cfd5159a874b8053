package metrics

import (
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vhcrd/vhcrd/metrics/buildinfo"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// PFCollector exports one PF's counters.
type PFCollector struct {
	pf     *master.PF
	vfs    []string
	ops    []string
	status []string

	info []string // version, revision, goversion, modified

	vfCommands, opCommands, resets, refusals, dma, resyncs, dropped *prometheus.Desc
	runs, busy, sleeps, eqes, latency, buildInfo, numVFs            *prometheus.Desc
	completed, state, active, completion, pfState                   *prometheus.Desc
}

// CompletionModes are the values of vhcrd_vf_completion_mode's mode label.
var CompletionModes = [...]string{"poll", "event", "event_mlx4"}

// PFStates are the values of vhcrd_pf_state's state label, by PF_STATE.
var PFStates = [...]struct {
	Value uint32
	Name  string
}{{wire.PFStateInit, "starting"}, {wire.PFStateServing, "serving"}, {wire.PFStateStopped, "stopped"}}

// NewPFCollector returns a collector for pf.
func NewPFCollector(pf *master.PF) *PFCollector {
	c := &PFCollector{pf: pf}
	v, rev, mod := buildinfo.Read()
	c.info = []string{v, rev, runtime.Version(), strconv.FormatBool(mod)}
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
	c.vfCommands = d("vf_commands_total", "Commands a VF posted through the vHCR, by completion status.", "vf", "status")
	c.opCommands = d("opcode_commands_total", "Commands posted through the vHCR by all VFs, by opcode and completion status.", "opcode", "status")
	c.resets = d("comm_resets_total", "Comm channel resets of a VF (its resources released), by reason.", "vf", "reason")
	c.refusals = d("command_refusals_total", "Commands refused by validation, by reason.", "vf", "reason")
	c.dma = d("dma_faults_total", "DMA accesses to a VF's window that failed checks (vHCR, inbox, outbox).", "vf")
	c.resyncs = d("channel_resyncs_total", "Times a VF's comm registers were rewritten behind the PF and the PF resynchronised.", "vf")
	c.dropped = d("flr_dropped_commands_total", "Comm commands dropped without acknowledgement during an FLR.", "vf")
	c.runs = d("poller_runs_total", "Scans of all VFs' comm pages by the poller.")
	c.busy = d("poller_busy_runs_total", "Poller scans that found at least one command.")
	c.sleeps = d("poller_sleeps_total", "Times the idle poller blocked (futex doorbell or nanosleep).")
	c.eqes = d("completion_eqes_total", "Command completion EQEs written to VFs' event queues.")
	c.latency = d("command_duration_seconds", "Time from the PF seeing VHCR_POST to the command's completion being written, by command class (one command in "+strconv.Itoa(master.LatencySample)+" is timed).", "class")
	c.completed = d("commands_completed_total", "Commands completed, all VFs and statuses.")
	c.buildInfo = d("build_info", "Build information: module version, VCS revision, Go version, uncommitted changes.", "version", "revision", "goversion", "modified")
	c.numVFs = d("vfs", "VFs served by this PF.")
	c.state = d("vf_channel_state", "The last comm command the PF served for a VF (RESET, VHCR0..2, VHCR_EN, VHCR_POST; FLR while one runs): a state set, every state per VF, 1 for the current one, else 0.", "vf", "state")
	c.active = d("vf_active", "1 while a VF's channel is up (VHCR_EN accepted, no reset since), else 0.", "vf")
	c.completion = d("vf_completion_mode", "How a VF's commands complete: event (it mapped an EQ for command completions; the accept-early EQE), event_mlx4 (the same, its last 'e' command completed as Linux's PF does) or poll: a state set, every mode per VF, 1 for the current one, else 0.", "vf", "mode")
	c.pfState = d("pf_state", "PF_STATE in the region's header: starting (the state file loading, the poller not yet started), serving (the poller serves the VFs) or stopped: a state set, 1 for the current state, else 0.", "state")
	return c
}

// Describe implements prometheus.Collector.
func (c *PFCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.vfCommands, c.opCommands, c.resets, c.refusals, c.dma, c.resyncs, c.dropped,
		c.runs, c.busy, c.sleeps, c.eqes, c.latency, c.buildInfo, c.numVFs, c.completed, c.state, c.active, c.completion, c.pfState} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PFCollector) Collect(ch chan<- prometheus.Metric) {
	// Read from the header, not through the poller: a stuck poller does not
	// hide it.
	pfState := c.pf.PFState()
	for _, st := range PFStates {
		ch <- prometheus.MustNewConstMetric(c.pfState, prometheus.GaugeValue, oneIf(pfState == st.Value), st.Name)
	}
	s := c.pf.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		if v != 0 {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
		}
	}
	for op := range c.ops {
		for slot := range c.status {
			counter(c.opCommands, s.Op(op, slot), c.ops[op], c.status[slot])
		}
	}
	for vf, vfl := range c.vfs {
		for slot := range c.status {
			counter(c.vfCommands, s.VF(vf, slot), vfl, c.status[slot])
		}
		for _, r := range master.ResetReasons() {
			counter(c.resets, s.Reset(vf, r), vfl, r.String())
		}
		for r := refusal.Reason(1); int(r) < refusal.NumReasons; r++ {
			counter(c.refusals, s.Refusal(vf, r), vfl, r.String())
		}
		// Always exported, zeros too: alerts take increase() of them, which
		// misses the first fault of a series that appears at 1.
		ch <- prometheus.MustNewConstMetric(c.dma, prometheus.CounterValue, float64(s.DMA[vf]), vfl)
		ch <- prometheus.MustNewConstMetric(c.resyncs, prometheus.CounterValue, float64(s.Resyncs[vf]), vfl)
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.Dropped[vf]), vfl)
	}
	ch <- prometheus.MustNewConstMetric(c.runs, prometheus.CounterValue, float64(s.Runs))
	ch <- prometheus.MustNewConstMetric(c.busy, prometheus.CounterValue, float64(s.BusyRuns))
	ch <- prometheus.MustNewConstMetric(c.sleeps, prometheus.CounterValue, float64(s.Sleeps))
	ch <- prometheus.MustNewConstMetric(c.eqes, prometheus.CounterValue, float64(s.EQEs))
	for cl := master.Class(0); cl < master.NumClasses; cl++ {
		buckets := make(map[float64]uint64, len(master.LatencyBounds))
		var cum uint64
		for i, b := range master.LatencyBounds {
			cum += s.Latency[cl][i]
			buckets[b] = cum
		}
		cum += s.Latency[cl][len(master.LatencyBounds)]
		ch <- prometheus.MustNewConstHistogram(c.latency, cum, float64(s.LatencyNS[cl])*1e-9, buckets, cl.String())
	}
	ch <- prometheus.MustNewConstMetric(c.completed, prometheus.CounterValue, float64(s.Done))
	ch <- prometheus.MustNewConstMetric(c.buildInfo, prometheus.GaugeValue, 1, c.info...)
	ch <- prometheus.MustNewConstMetric(c.numVFs, prometheus.GaugeValue, float64(len(c.vfs)))
	// Collect may run concurrently (several scrapes): the channel snapshot
	// is per call, which is one small allocation per scrape.
	chans := make([]master.Channel, len(c.vfs))
	if err := c.pf.Channels(chans); err != nil {
		return // the poller is stuck: no state rather than a stale one
	}
	// State sets as node_exporter exports them: every state, 1 or 0, so
	// that a query sees a VF leave a state, not its series vanish.
	for vf, vfl := range c.vfs {
		st := chans[vf]
		for _, s := range master.ChannelStates {
			ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, oneIf(st.State == s), vfl, s.String())
		}
		ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, oneIf(st.Active), vfl)
		mode := CompletionModes[0]
		if st.Events && st.Mlx4 {
			mode = CompletionModes[2]
		} else if st.Events {
			mode = CompletionModes[1]
		}
		for _, m := range CompletionModes {
			ch <- prometheus.MustNewConstMetric(c.completion, prometheus.GaugeValue, oneIf(m == mode), vfl, m)
		}
	}
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
