package vfdrv

import (
	"encoding/binary"
	"fmt"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// AsyncEventMask is the event types a VF maps to its async EQ besides
// command completions: QP, SRQ and CQ errors, port changes and port
// management changes (MLX4_ASYNC_EVENT_MASK's per-object part, and
// PORT_MNG_CHG as mlx4 adds it when QUERY_DEV_CAP advertises
// PORT_MNG_CHG_EV, which the model does).
const AsyncEventMask = 1<<mlx4.EventPathMig | 1<<mlx4.EventCommEst | 1<<mlx4.EventSQDrained | 1<<mlx4.EventCQError |
	1<<mlx4.EventWQCatasError | 1<<mlx4.EventPathMigFailed | 1<<mlx4.EventPortChange | 1<<mlx4.EventWQInvalReq |
	1<<mlx4.EventWQAccessError | 1<<mlx4.EventSRQCatasError | 1<<mlx4.EventSRQLastWQE | 1<<mlx4.EventSRQLimit |
	1<<mlx4.EventPortMngChg

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

	Raw [mlx4.EQESize]byte
}

// DecodeEQE decodes a 32-byte EQE. It never fails on content: every bit
// pattern decodes; only a short buffer is an error.
func DecodeEQE(b []byte) (EQE, error) {
	if len(b) < mlx4.EQESize {
		return EQE{}, fmt.Errorf("%w: EQE of %d bytes", mlx4.ErrShort, len(b))
	}
	var e EQE
	copy(e.Raw[:], b[:mlx4.EQESize])
	e.Type = b[mlx4.EQEType]
	e.Subtype = b[mlx4.EQESubtype]
	e.SlaveID = b[mlx4.EQESlaveID]
	e.Owner = b[mlx4.EQEOwner]&mlx4.EQEOwnerHW != 0
	switch e.Type {
	case mlx4.EventCmd:
		e.Token = binary.BigEndian.Uint16(b[mlx4.EQECmdToken:])
		e.Status = b[mlx4.EQECmdStatus]
		e.OutParam = binary.BigEndian.Uint64(b[mlx4.EQECmdOutParam:])
	case mlx4.EventPortChange:
		e.Port = int(binary.BigEndian.Uint32(b[mlx4.EQEPortChangePort:]) >> 28)
	case mlx4.EventCQError:
		e.Object = binary.BigEndian.Uint32(b[mlx4.EQEData:]) & 0xffffff
		e.Status = b[mlx4.EQECQErrSyndrome]
	default:
		e.Object = binary.BigEndian.Uint32(b[mlx4.EQEData:]) & 0xffffff
	}
	return e, nil
}

// EncodeEQE is the inverse of DecodeEQE for the fields of e's type (tests,
// fakes). The owner bit is set from e.Owner.
func EncodeEQE(e EQE) [mlx4.EQESize]byte {
	var b [mlx4.EQESize]byte
	b[mlx4.EQEType] = e.Type
	b[mlx4.EQESubtype] = e.Subtype
	b[mlx4.EQESlaveID] = e.SlaveID
	switch e.Type {
	case mlx4.EventCmd:
		binary.BigEndian.PutUint16(b[mlx4.EQECmdToken:], e.Token)
		b[mlx4.EQECmdStatus] = e.Status
		binary.BigEndian.PutUint64(b[mlx4.EQECmdOutParam:], e.OutParam)
	case mlx4.EventPortChange:
		binary.BigEndian.PutUint32(b[mlx4.EQEPortChangePort:], uint32(e.Port&0xf)<<28)
	case mlx4.EventCQError:
		binary.BigEndian.PutUint32(b[mlx4.EQEData:], e.Object&0xffffff)
		b[mlx4.EQECQErrSyndrome] = e.Status
	default:
		binary.BigEndian.PutUint32(b[mlx4.EQEData:], e.Object&0xffffff)
	}
	if e.Owner {
		b[mlx4.EQEOwner] = mlx4.EQEOwnerHW
	}
	return b
}

// ring is an EQ ring in the VF's memory as the consumer sees it.
type ring struct {
	mem  []byte // nent*32 bytes of the VF's DMA memory
	nent uint32 // power of two
	cons uint32 // consumer index, 24 bits
}

// reset zeroes the ring and the consumer index, as mlx4_create_eq
// allocates its pages: the PF's SW2HW_EQ makes every entry hardware-owned,
// as firmware does.
func (r *ring) reset() {
	clear(r.mem)
	r.cons = 0
}

// next returns the next software-owned EQE and advances the consumer
// index (mlx4's next_eqe_sw: the entry is ours when its owner bit equals
// the pass bit cons & nent).
func (r *ring) next() (EQE, bool) {
	off := int(r.cons&(r.nent-1)) * mlx4.EQESize
	slot := r.mem[off : off+mlx4.EQESize]
	sw := loadOwner(slot)&mlx4.EQEOwnerHW != 0
	if sw != (r.cons&r.nent != 0) {
		return EQE{}, false
	}
	var raw [mlx4.EQESize]byte
	loadEQE(&raw, slot) // after the owner byte: the PF writes it last
	e, _ := DecodeEQE(raw[:])
	r.cons = (r.cons + 1) & mlx4.EQIndexMask
	return e, true
}
