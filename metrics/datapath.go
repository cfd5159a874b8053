package metrics

import (
	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vhcrd/vhcrd/vhcr/hca"
)

// DataPathCollector exports the data path's counters: the work-request
// engine's (hca.EngineStats), the CQ layer's (hca.DataPathStats), both per
// VF, and the data-path log's (hca.DataPathLogStats), per PF. They are
// atomics the poller increments; a scrape loads them without stopping it.
// A VF's series appear once its counter is nonzero.
type DataPathCollector struct {
	h *hca.HCA

	wqes, errCQEs, cqes, cqeDropped, overruns, cqAccess *prometheus.Desc
	arms, compEvents, compLost, doorbells, foreign      *prometheus.Desc
	dropped, catas, rnr, transport, log                 *prometheus.Desc
	tunMADs, tunDrops, aliasGUIDs, cmIDs, ethSent       *prometheus.Desc
	ethRecv, ethUplink                                  *prometheus.Desc
}

// The results of vhcrd_alias_guid_records_total.
var AliasGUIDResults = []string{"sent", "ok", "failed"}

// The directions of vhcrd_mad_tunnel_mads_total.
var TunnelDirections = []string{"out", "in"}

// The reasons of vhcrd_packets_dropped_total.
var PacketDropReasons = []string{"ud_undeliverable", "uc_responder", "pkey", "qkey"}

// The verdicts of vhcrd_eth_sent_frames_total (eswitch.Verdict's labels).
var EthVerdicts = eswitch.Verdicts()

// The (direction, verdict) pairs of vhcrd_eth_uplink_frames_total, in the
// order of UplinkValues.
var UplinkLabels = [][2]string{{"out", "sent"}, {"out", "queue_full"},
	{"in", "delivered"}, {"in", "no_vf"}, {"in", "runt"}, {"in", "oversize"}, {"in", "queue_full"}}

// UplinkValues are a port's uplink counters in the order of UplinkLabels.
func UplinkValues(s *hca.UplinkStats) [7]uint64 {
	return [7]uint64{s.Out.Load(), s.OutQueueFull.Load(), s.In.Load(), s.InNoVF.Load(), s.InRunt.Load(), s.InOversize.Load(), s.InQueueFull.Load()}
}

// The events of vhcrd_datapath_log_total.
var DataPathLogEvents = []string{"steps", "redone", "atomic_intents", "atomics_replayed", "no_slot", "applied"}

// NewDataPathCollector exports h's data path.
func NewDataPathCollector(h *hca.HCA) *DataPathCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("vhcrd_"+name, help, labels, nil)
	}
	return &DataPathCollector{h: h,
		wqes:       d("wqes_total", "Send WQEs the engine executed, errors and flushes included.", "vf"),
		errCQEs:    d("error_cqes_total", "Error CQEs written (a syndrome other than success), flushes included.", "vf"),
		cqes:       d("cqes_total", "CQEs written into a VF's CQs.", "vf"),
		cqeDropped: d("cqes_dropped_total", "CQEs not written: the CQ full, in error or gone.", "vf"),
		overruns:   d("cq_overruns_total", "CQs that overran (a CQ error event with the overrun syndrome).", "vf"),
		cqAccess:   d("cq_access_errors_total", "CQs failed by an access violation: the doorbell record or a ring page outside the VF's window.", "vf"),
		arms:       d("cq_arms_total", "CQ arms taken from the doorbell records.", "vf"),
		compEvents: d("completion_events_total", "Completion EQEs posted, once per CQ arm.", "vf"),
		compLost:   d("completion_events_lost_total", "Completion events lost: the CQ's EQ is gone.", "vf"),
		doorbells:  d("send_doorbells_total", "Send doorbell words seen changed (the same QP rung again leaves its word as it was; its WQEs are found by their owner bit).", "vf"),
		foreign:    d("foreign_doorbells_total", "Send doorbells naming a QP that is not the VF's on that UAR page (ignored).", "vf"),
		dropped:    d("packets_dropped_total", "Packets dropped on the fabric or at the responder, by reason: ud_undeliverable (port down, unknown DLID or QP, no receive WQE), uc_responder (bad rkey or access), pkey, qkey.", "vf", "reason"),
		catas:      d("wq_catastrophic_errors_total", "Local work queue catastrophic errors (the async event to the VF's EQ).", "vf"),
		rnr:        d("rnr_retries_total", "RNR NAKs retried (the responder had no receive WQE), each after the responder's RNR timer.", "vf"),
		transport:  d("transport_retries_total", "RC packets retransmitted after the local ACK timeout (the packet was lost: DLID unreachable, a port not Active, a P_Key mismatch, no QP there).", "vf"),
		tunMADs:    d("mad_tunnel_mads_total", "MADs through the PF's SR-IOV tunnel, by VF: out, from its proxy QP0/QP1 to the wire (after mlx4_ib_multiplex_mad's checks); in, delivered to its proxy QPs.", "vf", "direction"),
		ethSent:    d("eth_sent_frames_total", "Raw Ethernet frames the VF's QPs sent on an Ethernet port, by what the port's switch did (eswitch.Verdict): forward, link_down, runt, oversize, tagged, prio_tagged, untagged (vlan_control's blocks: a VST VF's own tag), spoof (spoof check), vlan (a forced VLAN the table lacks).", "vf", "verdict"),
		ethRecv:    d("eth_received_frames_total", "Raw Ethernet frames the port's switch steered to the VF's QPs (by destination MAC: the QP_ATTACH of its L2 addresses), by what their ingress did (the verdicts of vhcrd_eth_sent_frames_total; untagged, prio_tagged, vlan: a VST VF's VLAN enforced) and no_wqe (passed, no receive WQE posted: dropped).", "vf", "verdict"),
		ethUplink:  d("eth_uplink_frames_total", "Frames through an Ethernet port's uplink (ports[].uplink), by direction and what became of them: out sent (the switch sent it out of the port: no VF of the port has its unicast destination, or a broadcast or multicast), out queue_full (a TAP's queue full: lost); in delivered (from the host, steered to at least one QP of the port), no_vf (a unicast no VF has), runt, oversize (past the port's 1518 bytes), queue_full (the ingress queue full).", "port", "direction", "verdict"),
		tunDrops:   d("mad_tunnel_drops_total", "MADs the tunnel dropped, by reason (hca.TunnelDropLabels): src_qp, length, tid, smi, class, port, pkey, unrouted, slave, proxy, queue, cm.", "reason"),
		cmIDs:      d("mad_tunnel_cm_ids_total", "Comm IDs the PF gave the VFs' connections (mlx4_ib's CM paravirtualisation, cm.c): one per connection a VF's REQ, REP, MRA or SIDR REQ started."),
		aliasGUIDs: d("alias_guid_records_total", "GUIDInfoRecord Sets the PF sent the SA to register the VFs' alias GUIDs (alias_GUID.c), and the SA's answers: ok, failed (a status).", "result"),
		log:        d("datapath_log_total", "The data-path log in the state file: step records committed, steps a restarted PF redid, atomic intents written, atomics replayed with their recorded original, objects without a position entry, entries applied at a restart.", "event"),
	}
}

func (c *DataPathCollector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.wqes, c.errCQEs, c.cqes, c.cqeDropped, c.overruns, c.cqAccess,
		c.arms, c.compEvents, c.compLost, c.doorbells, c.foreign, c.dropped, c.catas, c.rnr, c.transport, c.log,
		c.tunMADs, c.tunDrops, c.cmIDs, c.aliasGUIDs, c.ethSent, c.ethRecv, c.ethUplink}
}

// Describe implements prometheus.Collector.
func (c *DataPathCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs() {
		ch <- d
	}
}

type dpValue struct {
	d     *prometheus.Desc
	v     uint64
	label string // the second label's value, if the family has one
}

// Collect implements prometheus.Collector.
func (c *DataPathCollector) Collect(ch chan<- prometheus.Metric) {
	var vals [18]dpValue
	for vf := 0; vf < c.h.NumVFs; vf++ {
		e, s := c.h.EngineStats(vf), c.h.DPStats(vf)
		if e == nil || s == nil {
			continue
		}
		l := strconv.Itoa(vf)
		for _, x := range append(vals[:0],
			dpValue{c.wqes, e.WQEs.Load(), ""}, dpValue{c.errCQEs, e.ErrorCQEs.Load(), ""},
			dpValue{c.cqes, s.CQEs.Load(), ""}, dpValue{c.cqeDropped, s.CQEDropped.Load(), ""},
			dpValue{c.overruns, s.CQOverruns.Load(), ""}, dpValue{c.cqAccess, s.CQAccess.Load(), ""},
			dpValue{c.arms, s.CQArms.Load(), ""}, dpValue{c.compEvents, s.CompEvents.Load(), ""},
			dpValue{c.compLost, s.CompNoEQ.Load(), ""}, dpValue{c.doorbells, s.Doorbells.Load(), ""},
			dpValue{c.foreign, s.ForeignDoorbells.Load(), ""},
			dpValue{c.dropped, e.UDDropped.Load(), PacketDropReasons[0]}, dpValue{c.dropped, e.UCDropped.Load(), PacketDropReasons[1]},
			dpValue{c.dropped, e.PKeyViol.Load(), PacketDropReasons[2]}, dpValue{c.dropped, e.QKeyViol.Load(), PacketDropReasons[3]},
			dpValue{c.catas, e.Catas.Load(), ""},
			dpValue{c.tunMADs, e.TunnelOut.Load(), TunnelDirections[0]}, dpValue{c.tunMADs, e.TunnelIn.Load(), TunnelDirections[1]}) {
			c.emit(ch, x, l)
		}
		for _, v := range EthVerdicts {
			if n := e.EthTx.Get(v); n != 0 {
				ch <- prometheus.MustNewConstMetric(c.ethSent, prometheus.CounterValue, float64(n), l, v.String())
			}
			if n := e.EthRx.Get(v); n != 0 {
				ch <- prometheus.MustNewConstMetric(c.ethRecv, prometheus.CounterValue, float64(n), l, v.String())
			}
		}
		if n := e.EthRxNoWQE.Load(); n != 0 {
			ch <- prometheus.MustNewConstMetric(c.ethRecv, prometheus.CounterValue, float64(n), l, "no_wqe")
		}
		if r := e.RNRRetries.Load(); r != 0 {
			ch <- prometheus.MustNewConstMetric(c.rnr, prometheus.CounterValue, float64(r), l)
		}
		if r := e.TransportRetries.Load(); r != 0 {
			ch <- prometheus.MustNewConstMetric(c.transport, prometheus.CounterValue, float64(r), l)
		}
	}
	for phys := 1; c.h.UplinkStats(phys) != nil; phys++ {
		for i, v := range UplinkValues(c.h.UplinkStats(phys)) {
			if v != 0 {
				ch <- prometheus.MustNewConstMetric(c.ethUplink, prometheus.CounterValue, float64(v), strconv.Itoa(phys), UplinkLabels[i][0], UplinkLabels[i][1])
			}
		}
	}
	ts := c.h.TunnelStats()
	for r := range hca.NumTunnelDrops {
		if v := ts.Drops[r].Load(); v != 0 {
			ch <- prometheus.MustNewConstMetric(c.tunDrops, prometheus.CounterValue, float64(v), hca.TunnelDropLabels[r])
		}
	}
	if v := ts.CMIDs.Load(); v != 0 {
		ch <- prometheus.MustNewConstMetric(c.cmIDs, prometheus.CounterValue, float64(v))
	}
	as := c.h.AliasGUIDStats()
	for i, v := range []uint64{as.Sent.Load(), as.OK.Load(), as.Failed.Load()} {
		if v != 0 {
			ch <- prometheus.MustNewConstMetric(c.aliasGUIDs, prometheus.CounterValue, float64(v), AliasGUIDResults[i])
		}
	}
	lg := c.h.DataPathLogStats()
	if lg == nil {
		return
	}
	for i, v := range []uint64{lg.Steps.Load(), lg.Redone.Load(), lg.Atomics.Load(), lg.Replayed.Load(), lg.NoSlot.Load(), lg.Applied.Load()} {
		ch <- prometheus.MustNewConstMetric(c.log, prometheus.CounterValue, float64(v), DataPathLogEvents[i])
	}
}

func (c *DataPathCollector) emit(ch chan<- prometheus.Metric, x dpValue, vf string) {
	if x.v == 0 {
		return
	}
	if x.label != "" {
		ch <- prometheus.MustNewConstMetric(x.d, prometheus.CounterValue, float64(x.v), vf, x.label)
		return
	}
	ch <- prometheus.MustNewConstMetric(x.d, prometheus.CounterValue, float64(x.v), vf)
}
