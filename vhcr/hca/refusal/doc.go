// Package refusal names why the PF refused a command: the closed set of
// reasons an executor, the tracker (restrack.Status) or the PF's admission
// sets beside the status it returns, counted per VF and reason
// (vhcrd_command_refusals_total) and recorded in the trace. The reasons are
// vhcrd's, not mlx4's: the VF sees only the status.
//
// The package imports nothing, so that the tracker below the HCA and the
// trace and metrics above it share one set.
package refusal
