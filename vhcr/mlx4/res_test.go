package mlx4

import "testing"

// drivers/net/ethernet/mellanox/mlx4/mlx4.h (Linux 6.1) enum mlx4_resource
// and enum mlx4_alloc_mode, written out: the values and the names
// resource_tracker.c's resource_str prints.
func TestResourceGolden(t *testing.T) {
	for _, c := range []struct {
		got  Resource
		want uint8
		name string
	}{
		{RES_QP, 0, "RES_QP"}, {RES_CQ, 1, "RES_CQ"}, {RES_SRQ, 2, "RES_SRQ"}, {RES_XRCD, 3, "RES_XRCD"},
		{RES_MPT, 4, "RES_MPT"}, {RES_MTT, 5, "RES_MTT"}, {RES_MAC, 6, "RES_MAC"}, {RES_VLAN, 7, "RES_VLAN"},
		{RES_NPORT_ID, 8, "RES_NPORT_ID"}, {RES_COUNTER, 9, "RES_COUNTER"}, {RES_FS_RULE, 10, "RES_FS_RULE"},
		{RES_EQ, 11, "RES_EQ"},
	} {
		if uint8(c.got) != c.want || c.got.String() != c.name {
			t.Errorf("%s: %d %q, mlx4.h has %d", c.name, uint8(c.got), c.got.String(), c.want)
		}
	}
	if NUM_OF_RESOURCE_TYPE != 12 || Resource(12).String() != "RES_12" {
		t.Errorf("MLX4_NUM_OF_RESOURCE_TYPE %d, Resource(12) %q", NUM_OF_RESOURCE_TYPE, Resource(12))
	}
	for _, c := range []struct {
		got  AllocMode
		want uint8
		name string
	}{{RES_OP_RESERVE, 0, "RES_OP_RESERVE"}, {RES_OP_RESERVE_AND_MAP, 1, "RES_OP_RESERVE_AND_MAP"},
		{RES_OP_MAP_ICM, 2, "RES_OP_MAP_ICM"}} {
		if uint8(c.got) != c.want || c.got.String() != c.name {
			t.Errorf("%s: %d %q, mlx4.h has %d", c.name, uint8(c.got), c.got.String(), c.want)
		}
	}
	if AllocMode(3).String() != "RES_OP_3" {
		t.Errorf("AllocMode(3) = %q", AllocMode(3))
	}
	if ResTypeMask != 0xff || ResPortShift != 8 {
		t.Errorf("in_modifier: type mask %#x, port shift %d", ResTypeMask, ResPortShift)
	}
}

// include/linux/mlx4/device.h (Linux 6.1) enum mlx4_event, written out.
func TestEventTypesGolden(t *testing.T) {
	for _, c := range []struct {
		got, want uint8
		name      string
	}{
		{EventComp, 0x00, "COMP"}, {EventPathMig, 0x01, "PATH_MIG"}, {EventCommEst, 0x02, "COMM_EST"},
		{EventSQDrained, 0x03, "SQ_DRAINED"}, {EventSRQLastWQE, 0x13, "SRQ_QP_LAST_WQE"},
		{EventSRQLimit, 0x14, "SRQ_LIMIT"}, {EventCQError, 0x04, "CQ_ERROR"},
		{EventWQCatasError, 0x05, "WQ_CATAS_ERROR"}, {EventEECCatasError, 0x06, "EEC_CATAS_ERROR"},
		{EventPathMigFailed, 0x07, "PATH_MIG_FAILED"}, {EventWQInvalReq, 0x10, "WQ_INVAL_REQ_ERROR"},
		{EventWQAccessError, 0x11, "WQ_ACCESS_ERROR"}, {EventSRQCatasError, 0x12, "SRQ_CATAS_ERROR"},
		{EventLocalCatasError, 0x08, "LOCAL_CATAS_ERROR"}, {EventPortChange, 0x09, "PORT_CHANGE"},
		{EventEQOverflow, 0x0f, "EQ_OVERFLOW"}, {EventECCDetect, 0x0e, "ECC_DETECT"}, {EventCmd, 0x0a, "CMD"},
		{EventVEPUpdate, 0x19, "VEP_UPDATE"}, {EventCommChannel, 0x18, "COMM_CHANNEL"},
		{EventOpRequired, 0x1a, "OP_REQUIRED"}, {EventFatalWarning, 0x1b, "FATAL_WARNING"},
		{EventFLR, 0x1c, "FLR_EVENT"}, {EventPortMngChg, 0x1d, "PORT_MNG_CHG_EVENT"},
		{EventRecoverableErr, 0x3e, "RECOVERABLE_ERROR_EVENT"}, {EventNone, 0xff, "NONE"},
	} {
		if c.got != c.want || EventName(c.got) != c.name {
			t.Errorf("MLX4_EVENT_TYPE_%s: %#02x %q, device.h has %#02x", c.name, c.got, EventName(c.got), c.want)
		}
	}
	if len(eventNames) != 26 || EventName(0x0b) != "" {
		t.Errorf("%d event names (device.h has 26); type 0x0b named %q", len(eventNames), EventName(0x0b))
	}
}

// The commands whose in_modifier[23:0] is a QPN (resource_tracker.c: the
// QP wrappers' vhcr->in_modifier & 0x7fffff, mlx4_QP_ATTACH_wrapper's and
// mlx4_UPDATE_QP_wrapper's & 0xffffff), by literal opcode (cmd.h).
func TestInModIsQPN(t *testing.T) {
	want := map[Opcode]bool{0x19: true, 0x2d: true, 0x1a: true, 0x1b: true, 0x1c: true, 0x1d: true, 0x1e: true,
		0x1f: true, 0x38: true, 0x20: true, 0x21: true, 0x22: true, 0x32: true, 0x33: true, 0x61: true, 0xf0b: true}
	for op := Opcode(0); op < 0x1000; op++ {
		if InModIsQPN(op) != want[op] {
			t.Errorf("%v (%#x): InModIsQPN %v", op, uint16(op), InModIsQPN(op))
		}
	}
	if QPNMask != 0xffffff {
		t.Errorf("QPNMask %#x, QPNs are 24 bits", QPNMask)
	}
}
