package mad

import "strconv"

// Names of management classes, methods and attribute IDs as the kernel
// spells them without their prefixes (include/rdma/ib_mad.h IB_MGMT_CLASS_*
// and IB_MGMT_METHOD_*, ib_sa.h IB_SA_METHOD_* and IB_SA_ATTR_*, ib_smi.h
// IB_SMP_ATTR_*, ib_pma.h IB_PMA_*), for people reading a trace. A value
// without a name is written in hexadecimal ("0x2a").

var classNames = map[uint8]string{
	ClassSubnLID: "SUBN_LID_ROUTED", ClassSubnDirected: "SUBN_DIRECTED_ROUTE", ClassSubnAdm: "SUBN_ADM",
	ClassPerfMgt: "PERF_MGMT", ClassBM: "BM", 0x06: "DEVICE_MGMT", 0x07: "CM", 0x08: "SNMP",
	0x10: "DEVICE_ADM", 0x12: "BIS", 0x21: "CONG_MGMT",
}

// ClassName names management class c ("SUBN_LID_ROUTED").
func ClassName(c uint8) string {
	if n, ok := classNames[c]; ok {
		return n
	}
	return hexName(uint64(c))
}

var methodNames = map[uint8]string{
	MethodGet: "GET", MethodSet: "SET", MethodGetResp: "GET_RESP", MethodSend: "SEND", MethodTrap: "TRAP",
	MethodReport: "REPORT", MethodReport | MethodResp: "REPORT_RESP", MethodTrapRepress: "TRAP_REPRESS",
	0x12: "GET_TABLE", 0x92: "GET_TABLE_RESP", 0x13: "GET_TRACE_TBL", 0x14: "GET_MULTI",
	0x94: "GET_MULTI_RESP", 0x15: "DELETE", 0x95: "DELETE_RESP",
}

// MethodName names method m, response bit included ("GET_RESP").
func MethodName(m uint8) string {
	if n, ok := methodNames[m]; ok {
		return n
	}
	return hexName(uint64(m))
}

var (
	smpAttrNames = map[uint16]string{
		AttrNotice: "NOTICE", AttrNodeDescription: "NODE_DESC", AttrNodeInfo: "NODE_INFO",
		AttrSwitchInfo: "SWITCH_INFO", AttrGUIDInfo: "GUID_INFO", AttrPortInfo: "PORT_INFO",
		AttrPKeyTable: "PKEY_TABLE", AttrSLtoVLTable: "SL_TO_VL_TABLE", AttrVLArbTable: "VL_ARB_TABLE",
		AttrLinearFwdTable: "LINEAR_FORWARD_TABLE", 0x001A: "RANDOM_FORWARD_TABLE",
		AttrMulticastFwdTable: "MCAST_FORWARD_TABLE", AttrSMInfo: "SM_INFO", 0x0030: "VENDOR_DIAG",
		0x0031:              "LED_INFO",
		AttrMLNXExtPortInfo: "EXTENDED_PORT_INFO", // mlx4_ib's MLX4_ATTR_EXTENDED_PORT_INFO
	}
	saAttrNames = map[uint16]string{
		AttrClassPortInfo: "CLASS_PORT_INFO", 0x0002: "NOTICE", 0x0003: "INFORM_INFO", 0x0011: "NODE_REC",
		0x0012: "PORT_INFO_REC", 0x0030: "GUID_INFO_REC", 0x0031: "SERVICE_REC", 0x0035: "PATH_REC",
		0x0038: "MC_MEMBER_REC",
	}
	pmaAttrNames = map[uint16]string{
		AttrClassPortInfo: "CLASS_PORT_INFO", 0x0010: "PORT_SAMPLES_CONTROL", 0x0011: "PORT_SAMPLES_RESULT",
		AttrPortCounters: "PORT_COUNTERS", AttrPortCountersExtended: "PORT_COUNTERS_EXT",
		0x001E: "PORT_SAMPLES_RESULT_EXT",
	}
	bmAttrNames = map[uint16]string{
		AttrClassPortInfo: "CLASS_PORT_INFO", AttrNotice: "NOTICE", AttrBKeyInfo: "BKEY_INFO",
	}
)

// AttrName names attribute ID id of class c ("PORT_INFO"; the same number
// means different attributes in different classes).
func AttrName(c uint8, id uint16) string {
	var t map[uint16]string
	switch c {
	case ClassSubnLID, ClassSubnDirected:
		t = smpAttrNames
	case ClassSubnAdm:
		t = saAttrNames
	case ClassPerfMgt:
		t = pmaAttrNames
	case ClassBM:
		t = bmAttrNames
	}
	if n, ok := t[id]; ok {
		return n
	}
	if id == AttrClassPortInfo && c != ClassSubnLID && c != ClassSubnDirected {
		return "CLASS_PORT_INFO" // every GS class (IB_MGMT_CLASSPORTINFO_ATTR_ID)
	}
	return hexName(uint64(id))
}

func hexName(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }
