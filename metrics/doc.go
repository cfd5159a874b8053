// Package metrics exports vhcrd's counters to Prometheus. Collectors read,
// at scrape time, the counters that the poller owns (master.Stats, copied
// by the poller between two scans) and the VFs' channel state (one request
// to the poller per scrape), and build const metrics from them: nothing
// here runs per command, and the hot loop never calls client_golang. The
// data path's counters (DataPathCollector: WQEs, CQEs, drops by reason,
// doorbells, the state file's data-path log) are atomics the engine
// increments and a scrape loads, per VF, without stopping the poller.
//
// Cardinality is bounded by design. Label values come from closed sets: vf
// (bounded by the layout's VF count, at most 126), opcode (the command
// table's 66 names and "unknown"), status (14 mlx4 statuses and "other"),
// class (6 command classes), reason (closed enums). No family crosses vf
// with opcode: commands are counted per VF by status
// (vhcrd_vf_commands_total) and per opcode by status for all VFs together
// (vhcrd_opcode_commands_total); what a misbehaving VF did wrong is in
// vhcrd_command_refusals_total{vf,reason}, vhcrd_comm_resets_total
// {vf,reason} and vhcrd_dma_faults_total{vf}. Enumerated state is a state
// set, as node_exporter exports one: every state with 0 or 1, 1 for the
// current one (vhcrd_vf_channel_state, 7 states per VF;
// vhcrd_vf_completion_mode, 3 modes per VF; vhcrd_pf_state, 3 states), so
// that a change of state is a value changing, not a series vanishing. Interrupts are counted per VF, not per vector
// (a VF has up to 2048): vhcrd_interrupts_total{vf}, _unarmed_total and
// vhcrd_interrupt_errors_total. Families lists every family with its bound; with 126
// VFs the worst case is 16498 series per PF (the Go and process collectors'
// fixed set aside), against about 177k when commands were counted by vf,
// opcode and status together. Counters that are zero are not emitted (but
// for the per-VF fault counters that alerts take increase() of: DMA faults,
// resyncs, dropped commands), so a quiet PF exports far fewer.
package metrics
