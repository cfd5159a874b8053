package vfdrv

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// AsyncEventMask is the event types a VF maps to its async EQ besides
// command completions: QP, SRQ and CQ errors, port changes and port
// management changes (MLX4_ASYNC_EVENT_MASK's per-object part, and
// PORT_MNG_CHG as mlx4 adds it when QUERY_DEV_CAP advertises
// PORT_MNG_CHG_EV, which the model does).
const AsyncEventMask = 1<<mlx4.EventPathMig | 1<<mlx4.EventCommEst | 1<<mlx4.EventSQDrained | 1<<mlx4.EventCQError |
	1<<mlx4.EventWQCatasError | 1<<mlx4.EventPathMigFailed | 1<<mlx4.EventPortChange | 1<<mlx4.EventWQInvalReq |
	1<<mlx4.EventWQAccessError | 1<<mlx4.EventSRQCatasError | 1<<mlx4.EventSRQLastWQE | 1<<mlx4.EventSRQLimit |
	1<<mlx4.EventPortMngChg

// EQE is a decoded event queue entry (mlx4's codec).
type EQE = mlx4.EQE

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
	e, _ := mlx4.DecodeEQE(raw[:])
	r.cons = (r.cons + 1) & mlx4.EQIndexMask
	return e, true
}
