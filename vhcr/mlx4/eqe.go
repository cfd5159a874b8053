package mlx4

import (
	"encoding/binary"
	"fmt"
)

// EQE layout: include/linux/mlx4/device.h struct mlx4_eqe (32 bytes; with
// 64-byte EQEs the legacy 32 bytes are the second half of each slot).
const (
	EQESize                = 32
	EQEType                = 0x01 // MLX4_EVENT_TYPE_*
	EQESubtype             = 0x03
	EQEData                = 0x04 // event-specific data, 24 bytes
	EQECmdToken            = 0x06 // CMD: BE16 token
	EQECmdStatus           = 0x0f // CMD: status byte (vhcrd's early way; mlx4 leaves it 0)
	EQECmdOutParam         = 0x10 // CMD: BE64 immediate output
	EQEPortChangePort      = 0x0c // PORT_CHANGE: BE32 event.port_change.port, the port in 31:28
	EQEPortChangePortShift = 28
	EQECQErrSyndrome       = 0x0f // CQ_ERROR: event.cq_err.syndrome (CQN at EQEData)
	EQESlaveID             = 0x1c
	EQEOwner               = 0x1f // bit 7: ownership, flips on each pass over the ring
	EQEOwnerHW             = 0x80
)

// Event types (enum mlx4_event, MLX4_EVENT_TYPE_*).
const (
	EventComp            = 0x00
	EventPathMig         = 0x01
	EventCommEst         = 0x02
	EventSQDrained       = 0x03
	EventCQError         = 0x04
	EventWQCatasError    = 0x05
	EventEECCatasError   = 0x06
	EventPathMigFailed   = 0x07
	EventLocalCatasError = 0x08
	EventPortChange      = 0x09
	EventCmd             = 0x0a
	EventECCDetect       = 0x0e
	EventEQOverflow      = 0x0f
	EventWQInvalReq      = 0x10
	EventWQAccessError   = 0x11
	EventSRQCatasError   = 0x12
	EventSRQLastWQE      = 0x13 // MLX4_EVENT_TYPE_SRQ_QP_LAST_WQE
	EventSRQLimit        = 0x14
	EventCommChannel     = 0x18
	EventVEPUpdate       = 0x19
	EventOpRequired      = 0x1a
	EventFatalWarning    = 0x1b
	EventFLR             = 0x1c // MLX4_EVENT_TYPE_FLR_EVENT
	EventPortMngChg      = 0x1d // MLX4_EVENT_TYPE_PORT_MNG_CHG_EVENT
	EventRecoverableErr  = 0x3e // MLX4_EVENT_TYPE_RECOVERABLE_ERROR_EVENT
	EventNone            = 0xff
)

// eventNames are the kernel's names of the event types, without
// MLX4_EVENT_TYPE_.
var eventNames = map[uint8]string{
	EventComp: "COMP", EventPathMig: "PATH_MIG", EventCommEst: "COMM_EST", EventSQDrained: "SQ_DRAINED",
	EventCQError: "CQ_ERROR", EventWQCatasError: "WQ_CATAS_ERROR", EventEECCatasError: "EEC_CATAS_ERROR",
	EventPathMigFailed: "PATH_MIG_FAILED", EventLocalCatasError: "LOCAL_CATAS_ERROR",
	EventPortChange: "PORT_CHANGE", EventCmd: "CMD", EventECCDetect: "ECC_DETECT",
	EventEQOverflow: "EQ_OVERFLOW", EventWQInvalReq: "WQ_INVAL_REQ_ERROR",
	EventWQAccessError: "WQ_ACCESS_ERROR", EventSRQCatasError: "SRQ_CATAS_ERROR",
	EventSRQLastWQE: "SRQ_QP_LAST_WQE", EventSRQLimit: "SRQ_LIMIT", EventCommChannel: "COMM_CHANNEL",
	EventVEPUpdate: "VEP_UPDATE", EventOpRequired: "OP_REQUIRED", EventFatalWarning: "FATAL_WARNING",
	EventFLR: "FLR_EVENT", EventPortMngChg: "PORT_MNG_CHG_EVENT",
	EventRecoverableErr: "RECOVERABLE_ERROR_EVENT", EventNone: "NONE",
}

// EventName is the kernel's name of event type t without MLX4_EVENT_TYPE_
// ("PORT_CHANGE"), or "" for a type mlx4 does not define.
func EventName(t uint8) string { return eventNames[t] }

// PORT_MNG_CHG: its subtypes (MLX4_DEV_PMC_SUBTYPE_*), where
// event.port_mgmt_change (packed) puts the port and port_info's
// changed_attr, and changed_attr's bits (MLX4_EQ_PORT_INFO_*_MASK), from
// include/linux/mlx4/device.h.
const (
	DEV_PMC_SUBTYPE_GUID_INFO  = 0x14
	DEV_PMC_SUBTYPE_PORT_INFO  = 0x15
	DEV_PMC_SUBTYPE_PKEY_TABLE = 0x16

	EQEPortMngChgPort        = 0x07 // u8 port, after reserved[3]
	EQEPortMngChgChangedAttr = 0x0c // BE32 params.port_info.changed_attr, after mstr_sm_lid and port_lid

	EQ_PORT_INFO_MSTR_SM_LID_CHANGE_MASK = 1 << 0
	EQ_PORT_INFO_GID_PFX_CHANGE_MASK     = 1 << 1
	EQ_PORT_INFO_LID_CHANGE_MASK         = 1 << 2
	EQ_PORT_INFO_CLIENT_REREG_MASK       = 1 << 3
	EQ_PORT_INFO_MSTR_SM_SL_CHANGE_MASK  = 1 << 4
)

// PORT_CHANGE's subtypes (MLX4_PORT_CHANGE_SUBTYPE_*, enum in
// include/linux/mlx4/device.h): the port went down or became active.
const (
	PORT_CHANGE_SUBTYPE_DOWN   = 1
	PORT_CHANGE_SUBTYPE_ACTIVE = 4
)

// ObjectMask selects the 24-bit object number of an object event
// (event.qp.qpn, event.srq.srqn, event.cq_err.cqn, event.comp.cqn: mlx4_eq_int
// masks each with 0xffffff) and of a command's in_modifier naming a CQ or an
// SRQ. QPNMask is the same width for QPs.
const ObjectMask = 0xffffff

// EQE is a decoded struct mlx4_eqe: the header, the event union's members
// for the entry's type, and the bytes it was decoded from.
type EQE struct {
	Type    uint8 // type: MLX4_EVENT_TYPE_*
	Subtype uint8 // subtype
	SlaveID uint8 // slave_id: the PF writes VF+1
	Owner   bool  // owner bit 7: flips on each pass over the ring

	// event.cmd (type CMD): token, status and out_param (vhcrd's early way
	// has the last two carry the result; mlx4 leaves them zero). For
	// CQ_ERROR, Status is event.cq_err.syndrome.
	Token    uint16
	Status   uint8
	OutParam uint64

	// Object events: event.qp.qpn, event.srq.srqn, event.cq_err.cqn or
	// event.comp.cqn (BE32 at 0x04, the low 24 bits).
	Object uint32

	// Port is event.port_change.port's bits 31:28 (PORT_CHANGE) or
	// event.port_mgmt_change.port (PORT_MNG_CHG).
	Port int
	// ChangedAttr is event.port_mgmt_change.params.port_info.changed_attr
	// (PORT_MNG_CHG, subtype PORT_INFO): MLX4_EQ_PORT_INFO_*_MASK bits.
	ChangedAttr uint32

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
	e.Type = b[EQEType]
	e.Subtype = b[EQESubtype]
	e.SlaveID = b[EQESlaveID]
	e.Owner = b[EQEOwner]&EQEOwnerHW != 0
	switch e.Type {
	case EventCmd:
		e.Token = binary.BigEndian.Uint16(b[EQECmdToken:])
		e.Status = b[EQECmdStatus]
		e.OutParam = binary.BigEndian.Uint64(b[EQECmdOutParam:])
	case EventPortChange:
		e.Port = int(binary.BigEndian.Uint32(b[EQEPortChangePort:]) >> EQEPortChangePortShift)
	case EventPortMngChg:
		e.Port = int(b[EQEPortMngChgPort])
		if e.Subtype == DEV_PMC_SUBTYPE_PORT_INFO {
			e.ChangedAttr = binary.BigEndian.Uint32(b[EQEPortMngChgChangedAttr:])
		}
	case EventCQError:
		e.Object = binary.BigEndian.Uint32(b[EQEData:]) & ObjectMask
		e.Status = b[EQECQErrSyndrome]
	default:
		e.Object = binary.BigEndian.Uint32(b[EQEData:]) & ObjectMask
	}
	return e, nil
}

// EncodeEQE is DecodeEQE's inverse for the fields of e's type; every other
// byte is zero, the owner bit is set from e.Owner. The PF builds every
// event it posts with it (CompletionEQE is its CMD case, by hand for the
// post path).
func EncodeEQE(e EQE) [EQESize]byte {
	var b [EQESize]byte
	b[EQEType] = e.Type
	b[EQESubtype] = e.Subtype
	b[EQESlaveID] = e.SlaveID
	switch e.Type {
	case EventCmd:
		binary.BigEndian.PutUint16(b[EQECmdToken:], e.Token)
		b[EQECmdStatus] = e.Status
		binary.BigEndian.PutUint64(b[EQECmdOutParam:], e.OutParam)
	case EventPortChange:
		binary.BigEndian.PutUint32(b[EQEPortChangePort:], uint32(e.Port&0xf)<<EQEPortChangePortShift)
	case EventPortMngChg:
		b[EQEPortMngChgPort] = byte(e.Port)
		if e.Subtype == DEV_PMC_SUBTYPE_PORT_INFO {
			binary.BigEndian.PutUint32(b[EQEPortMngChgChangedAttr:], e.ChangedAttr)
		}
	case EventCQError:
		binary.BigEndian.PutUint32(b[EQEData:], e.Object&ObjectMask)
		b[EQECQErrSyndrome] = e.Status
	default:
		binary.BigEndian.PutUint32(b[EQEData:], e.Object&ObjectMask)
	}
	if e.Owner {
		b[EQEOwner] = EQEOwnerHW
	}
	return b
}

// CompletionEQE fills e with a command-completion EQE (type 0x0a): the VF's
// token, the status and the immediate output. Unlike mlx4, which leaves
// status and out_param zero and has the VF read them from the vHCR, vhcrd's
// early way has the EQE carry them.
func CompletionEQE(e *[EQESize]byte, token uint16, status Status, outParam uint64) {
	*e = [EQESize]byte{}
	e[EQEType] = EventCmd
	binary.BigEndian.PutUint16(e[EQECmdToken:], token)
	e[EQECmdStatus] = byte(status)
	binary.BigEndian.PutUint64(e[EQECmdOutParam:], outParam)
}
