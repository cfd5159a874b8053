package vfdrv

import (
	"fmt"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// EQE offsets: the ABI is in package mlx4; event types are mlx4.Event*.
const (
	eqeType     = mlx4.EQEType
	eqeSubtype  = mlx4.EQESubtype
	eqeData     = mlx4.EQEData
	eqeToken    = mlx4.EQECmdToken
	eqeStatus   = mlx4.EQECmdStatus
	eqeOutParam = mlx4.EQECmdOutParam
	eqeSlaveID  = mlx4.EQESlaveID
	eqeOwner    = mlx4.EQEOwner
	eqeOwnerHW  = mlx4.EQEOwnerHW
)

// AsyncEventMask is the event types a VF maps to its async EQ besides
// command completions: QP, SRQ and CQ errors and port changes
// (MLX4_ASYNC_EVENT_MASK's per-object part).
const AsyncEventMask = 1<<mlx4.EventPathMig | 1<<mlx4.EventCommEst | 1<<mlx4.EventSQDrained | 1<<mlx4.EventCQError |
	1<<mlx4.EventWQCatasError | 1<<mlx4.EventPathMigFailed | 1<<mlx4.EventPortChange | 1<<mlx4.EventWQInvalReq |
	1<<mlx4.EventWQAccessError | 1<<mlx4.EventSRQCatasError | 1<<mlx4.EventSRQLastWQE | 1<<mlx4.EventSRQLimit

// EQE is a decoded event queue entry.
type EQE struct {
	Type    uint8
	Subtype uint8
	SlaveID uint8 // the PF writes VF+1
	Owner   bool  // bit 7 of byte 0x1f

	// Command completion (type 0x0a): the token the VF wrote in the vHCR,
	// the status and the immediate out_param (the seed's rule; mlx4 leaves
	// the last two zero).
	Token    uint16
	Status   uint8
	OutParam uint64

	// Object events: QPN, CQN or SRQN (BE32 at 0x04, low 24 bits); CQ_ERROR's
	// syndrome is Status. PORT_CHANGE: Port from bits 31:28 of the BE32 at
	// 0x0c.
	Object uint32
	Port   int

	Raw [EQESize]byte
}

// DecodeEQE decodes a 32-byte EQE. It never fails on content: every bit
// pattern decodes; only a short buffer is an error.
func DecodeEQE(b []byte) (EQE, error) {
	if len(b) < EQESize {
		return EQE{}, fmt.Errorf("%w: EQE of %d bytes", ErrShort, len(b))
	}
	var e EQE
	copy(e.Raw[:], b[:EQESize])
	e.Type = b[eqeType]
	e.Subtype = b[eqeSubtype]
	e.SlaveID = b[eqeSlaveID]
	e.Owner = b[eqeOwner]&eqeOwnerHW != 0
	switch e.Type {
	case mlx4.EventCmd:
		e.Token = get16(b, eqeToken)
		e.Status = b[eqeStatus]
		e.OutParam = get64(b, eqeOutParam)
	case mlx4.EventPortChange:
		e.Port = int(get32(b, 0x0c) >> 28)
	case mlx4.EventCQError:
		e.Object = get32(b, eqeData) & 0xffffff
		e.Status = b[eqeStatus]
	default:
		e.Object = get32(b, eqeData) & 0xffffff
	}
	return e, nil
}

// EncodeEQE is the inverse of DecodeEQE for the fields of e's type (tests,
// fakes). The owner bit is set from e.Owner.
func EncodeEQE(e EQE) [EQESize]byte {
	var b [EQESize]byte
	b[eqeType] = e.Type
	b[eqeSubtype] = e.Subtype
	b[eqeSlaveID] = e.SlaveID
	switch e.Type {
	case mlx4.EventCmd:
		put16(b[:], eqeToken, e.Token)
		b[eqeStatus] = e.Status
		put64(b[:], eqeOutParam, e.OutParam)
	case mlx4.EventPortChange:
		put32(b[:], 0x0c, uint32(e.Port&0xf)<<28)
	case mlx4.EventCQError:
		put32(b[:], eqeData, e.Object&0xffffff)
		b[eqeStatus] = e.Status
	default:
		put32(b[:], eqeData, e.Object&0xffffff)
	}
	if e.Owner {
		b[eqeOwner] = eqeOwnerHW
	}
	return b
}

// ring is an EQ ring in the VF's memory as the consumer sees it.
type ring struct {
	mem  []byte // nent*32 bytes of the VF's DMA memory
	nent uint32 // power of two
	cons uint32 // consumer index, 24 bits
}

// reset hands every entry to hardware (owner bit set) and zeroes the
// consumer index, as mlx4_create_eq initialises its pages.
func (r *ring) reset() {
	for i := eqeOwner; i < len(r.mem); i += EQESize {
		r.mem[i] = eqeOwnerHW
	}
	r.cons = 0
}

// next returns the next software-owned EQE and advances the consumer
// index (mlx4's next_eqe_sw: the entry is ours when its owner bit equals
// the pass bit cons & nent).
func (r *ring) next() (EQE, bool) {
	off := int(r.cons&(r.nent-1)) * EQESize
	slot := r.mem[off : off+EQESize]
	sw := loadOwner(slot)&eqeOwnerHW != 0
	if sw != (r.cons&r.nent != 0) {
		return EQE{}, false
	}
	var raw [EQESize]byte
	loadEQE(&raw, slot) // after the owner byte: the PF writes it last
	e, _ := DecodeEQE(raw[:])
	r.cons = (r.cons + 1) & eqCIMask
	return e, true
}
