package restrack

import (
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Type is a resource type; its values are mlx4's wire values
// (mlx4.Resource: ALLOC_RES/FREE_RES in_modifier[7:0], enum mlx4_resource).
type Type uint8

const (
	QP      = Type(mlx4.RES_QP)
	CQ      = Type(mlx4.RES_CQ)
	SRQ     = Type(mlx4.RES_SRQ)
	XRCD    = Type(mlx4.RES_XRCD)
	MPT     = Type(mlx4.RES_MPT)
	MTT     = Type(mlx4.RES_MTT)
	MAC     = Type(mlx4.RES_MAC)
	VLAN    = Type(mlx4.RES_VLAN)
	NPortID = Type(mlx4.RES_NPORT_ID) // not allocatable
	Counter = Type(mlx4.RES_COUNTER)
	FSRule  = Type(mlx4.RES_FS_RULE)
	EQ      = Type(mlx4.RES_EQ)

	// NumTypes sizes per-type arrays (indexed by Type).
	NumTypes = mlx4.NUM_OF_RESOURCE_TYPE
)

var typeNames = [NumTypes]string{"qp", "cq", "srq", "xrcd", "mpt", "mtt", "mac", "vlan", "nport_id", "counter", "fs_rule", "eq"}

func (t Type) String() string {
	if int(t) < NumTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("type%d", uint8(t))
}

// Types lists the tracked types in DeleteAll order (§2.8).
var Types = [...]Type{VLAN, MAC, FSRule, QP, SRQ, CQ, MPT, EQ, MTT, Counter, XRCD}

// State is an object's tracker state. Values follow resource_tracker.c; the
// meaning of 2..4 depends on the type.
type State uint8

const (
	Busy State = 1 // RES_ANY_BUSY: an operation holds the object

	// QP and MPT
	Reserved State = 2
	Mapped   State = 3
	QPHW     State = 4 // RES_QP_HW, RES_MPT_HW

	// CQ, SRQ, MTT, counter, XRCD, FS rule, MAC, VLAN
	Allocated State = 2
	HW        State = 3 // RES_CQ_HW, RES_SRQ_HW, RES_EQ_HW

	// EQ: Reserved (2) then HW (3).
)

// InHW reports whether state s of type t is the hardware-owned state.
func InHW(t Type, s State) bool {
	switch t {
	case QP, MPT:
		return s == QPHW
	case CQ, SRQ, EQ:
		return s == HW
	}
	return false
}

// HWState is the hardware-owned state of t (0 for types without one).
func HWState(t Type) State {
	switch t {
	case QP, MPT:
		return QPHW
	case CQ, SRQ, EQ:
		return HW
	}
	return 0
}

// Sentinel errors. Every error of the tracker wraps exactly one of them
// (MAC/VLAN quota errors wrap both ErrQuota and ErrInvalid).
var (
	ErrNotFound = errors.New("restrack: no such object")                   // -ENOENT/-ENONET → 0x01
	ErrNotOwner = errors.New("restrack: object owned by another function") // -EPERM → 0x02
	ErrBadState = errors.New("restrack: object in the wrong state")        // -EINVAL → 0x03
	ErrBusy     = errors.New("restrack: object busy or referenced")        // -EBUSY → 0x06
	ErrQuota    = errors.New("restrack: quota exceeded")                   // -EDQUOT → 0x01
	ErrExists   = errors.New("restrack: object already tracked")           // -EEXIST → 0x01
	ErrInvalid  = errors.New("restrack: invalid argument")                 // -EINVAL → 0x03
	ErrRange    = errors.New("restrack: range not owned or out of bounds") // check_mtt_range -EPERM → 0x02
	ErrNoSpace  = errors.New("restrack: no free number")                   // -ENOMEM → 0x08
	ErrNoFunc   = errors.New("restrack: no such function")                 // -EINVAL → 0x03
	// ErrNotRemovable: FREE_RES of an object that is not in its removable
	// state (a CQ in HW, an MPT still mapped): mlx4's remove_*_ok -EPERM → 0x02.
	ErrNotRemovable = errors.New("restrack: object not in a removable state")
)

// Status maps a tracker error to the status and refusal reason the VF sees,
// following mlx4's errno_to_status (§1.11, §2.2): not found → INTERNAL_ERR,
// wrong owner → BAD_OP, bad state → BAD_PARAM, busy → RESOURCE_BUSY, quota →
// INTERNAL_ERR (MAC/VLAN quota → BAD_PARAM as mlx4), exists → INTERNAL_ERR,
// invalid → BAD_PARAM, MTT range → BAD_OP, no free number → EXCEED_LIM. nil →
// OK. Unknown errors → INTERNAL_ERR.
func Status(err error) (mlx4.Status, refusal.Reason) {
	switch {
	case err == nil:
		return mlx4.OK, refusal.None
	case errors.Is(err, ErrQuota):
		if errors.Is(err, ErrInvalid) {
			return mlx4.BAD_PARAM, refusal.Quota
		}
		return mlx4.INTERNAL_ERR, refusal.Quota
	case errors.Is(err, ErrNotFound):
		return mlx4.INTERNAL_ERR, refusal.NotFound
	case errors.Is(err, ErrNotOwner):
		return mlx4.BAD_OP, refusal.NotOwner
	case errors.Is(err, ErrBadState):
		return mlx4.BAD_PARAM, refusal.BadState
	case errors.Is(err, ErrNotRemovable):
		return mlx4.BAD_OP, refusal.BadState
	case errors.Is(err, ErrBusy):
		return mlx4.RESOURCE_BUSY, refusal.Busy
	case errors.Is(err, ErrExists):
		return mlx4.INTERNAL_ERR, refusal.Range
	case errors.Is(err, ErrRange):
		return mlx4.BAD_OP, refusal.Range
	case errors.Is(err, ErrNoSpace):
		return mlx4.EXCEED_LIM, refusal.Quota
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrNoFunc):
		return mlx4.BAD_PARAM, refusal.Context
	}
	return mlx4.INTERNAL_ERR, refusal.None
}
