package hca

import (
	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Cmd is one command as an executor sees it: decoded from the PF's private
// shadow of the vHCR (DecodeVHCR), with the shadow inbox already copied in
// and checked against its cmd_info[] row (Exec). Executors read only Cmd and
// the shadows, never the VF's memory, except through Mem for data the
// command itself addresses (EQ rings, MTT-described buffers), each access
// checked by the window.
type Cmd struct {
	VF       int    // 0-based VF index (mlx4 slave = VF+1)
	InParam  uint64 // immediate input (inbox commands: the masked inbox address)
	OutParam uint64 // immediate output, in and out (Imm commands)
	InMod    uint32
	Op       mlx4.Opcode
	OpMod    uint8
	EBit     bool
	Token    uint16

	Inbox  *[mlx4.MailboxSize]byte // shadow inbox; nil if the opcode has none
	Outbox *[mlx4.MailboxSize]byte // zeroed outbox; nil if the opcode has none
	Mem    *dma.Window             // the VF's DMA window

	// Reason says why a command was refused (for metrics); executors set it
	// with the status they return.
	Reason refusal.Reason
}

// Refuse sets the reason and returns the status, for one-line refusals:
// return c.Refuse(mlx4.BAD_PARAM, refusal.Port).
func (c *Cmd) Refuse(s mlx4.Status, r refusal.Reason) mlx4.Status { c.Reason = r; return s }

// refuse sets the reason and returns the status that restrack.Status maps
// the tracker's error err to, for one-line refusals: return c.refuse(err).
func (c *Cmd) refuse(err error) mlx4.Status { return c.Refuse(restrack.Status(err)) }

// DecodeVHCR sets c's vHCR fields from the four words of a vHCR image
// (mlx4.VHCRWords), through mlx4.DecodeVHCR, the one decoder of the vHCR,
// the one the master calls for every VHCR_POST. It inlines, so the words
// stay in registers.
func (c *Cmd) DecodeVHCR(w0, w1, w2, w3 uint64) {
	c.InParam, c.InMod, c.OutParam, c.Token, c.EBit, c.OpMod, c.Op = mlx4.DecodeVHCR(w0, w1, w2, w3)
}
