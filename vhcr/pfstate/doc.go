// Package pfstate is the byte layout of vhcrd's own persistent formats: the
// PF state file (<bar>.pfstate: header, channel-record slots, last
// sequences, EQ positions, the redo journal's records and the checkpoint
// slots) and the per-VF channel record, which lives in the state file (two
// slots per VF) or, without one, in the control region's header
// (wire.HdrVFState). Every offset, size, magic and bit of these formats is a
// named constant here, pinned by layout_test.go with literal offsets; the
// PF (vhcr/master) writes and reads them, the wire contract (vhcr) reads the
// header's channel record for Attachment.ChannelUp, and nothing else
// restates them.
//
// The package holds no state and imports nothing of vhcrd but the ABI
// (vhcr/mlx4, for the mailbox size): what is written when, and what a
// restarted PF does with it, is the PF's (docs/state-file.md).
package pfstate
