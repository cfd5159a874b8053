package metrics

import (
	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/master"
)

// Family is one metric family of vhcrd's collectors and the most series it
// can have for one PF.
type Family struct {
	Name   string
	Series int    // worst case: every label value nonzero at once
	Bound  string // what bounds it
}

// Families returns every family that PFCollector, HCACollector,
// DataPathCollector, AdminCounter and FaultCollector export
// for a PF with numVFs VFs, with its worst case. A histogram's series are
// its buckets (+Inf included), _sum and _count. The Go and process
// collectors come on top (a fixed set, independent of VFs).
func Families(numVFs int) []Family {
	ops := master.NewTable().NumOps()  // the table's rows and "unknown"
	status := master.NumStatusSlots    // the slot statuses and "other"
	refusals := refusal.NumReasons - 1 // every reason but "none"
	hist := len(master.LatencyBounds) + 1 + 2
	return []Family{
		{"vhcrd_vf_commands_total", numVFs * status, "vf × status"},
		{"vhcrd_opcode_commands_total", ops * status, "opcode × status (no vf)"},
		{"vhcrd_command_refusals_total", numVFs * refusals, "vf × refusal reason"},
		{"vhcrd_comm_resets_total", numVFs * len(master.ResetReasons()), "vf × reset reason"},
		{"vhcrd_dma_faults_total", numVFs, "vf"},
		{"vhcrd_channel_resyncs_total", numVFs, "vf"},
		{"vhcrd_flr_dropped_commands_total", numVFs, "vf"},
		{"vhcrd_vf_channel_state", numVFs * len(master.ChannelStates), "vf × channel state (a state set: every state, 0 or 1)"},
		{"vhcrd_vf_active", numVFs, "vf"},
		{"vhcrd_vf_completion_mode", numVFs * len(CompletionModes), "vf × completion mode (a state set)"},
		{"vhcrd_pf_state", len(PFStates), "PF state (a state set)"},
		{"vhcrd_command_duration_seconds", int(master.NumClasses) * hist, "command class × (buckets, sum, count)"},
		{"vhcrd_poller_runs_total", 1, "none"},
		{"vhcrd_poller_busy_runs_total", 1, "none"},
		{"vhcrd_poller_sleeps_total", 1, "none"},
		{"vhcrd_completion_eqes_total", 1, "none"},
		{"vhcrd_commands_completed_total", 1, "none"},
		{"vhcrd_build_info", 1, "none"},
		{"vhcrd_vfs", 1, "none"},
		{"vhcrd_resources", numVFs * (restrack.NumTypes - 1), "vf × resource type (port ids aside)"},
		{"vhcrd_eqes_total", numVFs, "vf"},
		{"vhcrd_eq_overruns_total", numVFs, "vf"},
		{"vhcrd_events_unmapped_total", numVFs, "vf"},
		{"vhcrd_interrupts_total", numVFs, "vf"},
		{"vhcrd_interrupts_unarmed_total", numVFs, "vf"},
		{"vhcrd_interrupt_errors_total", numVFs, "vf"},
		{"vhcrd_mads_total", mad.NumClassLabels * mad.NumMethodLabels * mad.NumResultLabels, "MAD class × method × result"},
		{"vhcrd_traps_sent_total", mad.NumTrapLabels, "trap number"},
		{"vhcrd_trap_repeats_total", mad.NumTrapLabels, "trap number"},
		{"vhcrd_traps_suppressed_total", mad.NumSuppressLabels, "reason"},
		{"vhcrd_key_violations_total", mad.NumKeyLabels, "key"},
		{"vhcrd_vf_mad_ifc_total", 3, "outcome"},
		{"vhcrd_wqes_total", numVFs, "vf (DataPathCollector)"},
		{"vhcrd_error_cqes_total", numVFs, "vf"},
		{"vhcrd_cqes_total", numVFs, "vf"},
		{"vhcrd_cqes_dropped_total", numVFs, "vf"},
		{"vhcrd_cq_overruns_total", numVFs, "vf"},
		{"vhcrd_cq_access_errors_total", numVFs, "vf"},
		{"vhcrd_cq_arms_total", numVFs, "vf"},
		{"vhcrd_completion_events_total", numVFs, "vf"},
		{"vhcrd_completion_events_lost_total", numVFs, "vf"},
		{"vhcrd_send_doorbells_total", numVFs, "vf"},
		{"vhcrd_foreign_doorbells_total", numVFs, "vf"},
		{"vhcrd_packets_dropped_total", numVFs * len(PacketDropReasons), "vf × drop reason"},
		{"vhcrd_eth_sent_frames_total", numVFs * len(EthVerdicts), "vf × switch verdict"},
		{"vhcrd_eth_received_frames_total", numVFs * (len(EthVerdicts) + 1), "vf × switch verdict or no_wqe"},
		{"vhcrd_eth_uplink_frames_total", 2 * len(UplinkLabels), "port × direction and verdict"},
		{"vhcrd_mad_tunnel_mads_total", numVFs * len(TunnelDirections), "vf × direction"},
		{"vhcrd_mad_tunnel_drops_total", int(hca.NumTunnelDrops), "drop reason"},
		{"vhcrd_mad_tunnel_cm_ids_total", 1, "none"},
		{"vhcrd_alias_guid_records_total", len(AliasGUIDResults), "result"},
		{"vhcrd_wq_catastrophic_errors_total", numVFs, "vf"},
		{"vhcrd_rnr_retries_total", numVFs, "vf"},
		{"vhcrd_transport_retries_total", numVFs, "vf"},
		{"vhcrd_datapath_log_total", len(DataPathLogEvents), "log event"},
		{"vhcrd_admin_changes_total", len(AdminActions) * len(adminResults), "admin action × result (AdminCounter)"},
		{"vhcrd_faults_injected_total", int(faultinj.NumKinds) - 1, "fault kind (FaultCollector)"},
	}
}

// WorstCase is the sum of Families(numVFs): the most vhcrd_* series one PF
// can export.
func WorstCase(numVFs int) int {
	n := 0
	for _, f := range Families(numVFs) {
		n += f.Series
	}
	return n
}
