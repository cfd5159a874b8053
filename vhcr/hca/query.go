package hca

// Query executors: NOP, QUERY_FW, QUERY_DEV_CAP, QUERY_FUNC_CAP, QUERY_PORT,
// QUERY_ADAPTER. Offsets are those of mlx4 fw.c (QUERY_*_OFFSET); the VF
// view is what the mlx4 *_wrapper functions make of the native answer.

import (
	"encoding/binary"
	"math/bits"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// NOP does nothing and succeeds.
func (h *HCA) NOP(c *mlx4.Cmd) mlx4.Status { return mlx4.OK }

// QUERY_FW outbox offsets (fw.c).
const (
	queryFWVerOffset   = 0x00
	queryFWPPFIDOffset = 0x09
	invalidSlaveID     = 0xff // MLX4_INVALID_SLAVE_ID
)

// QUERY_FW answers the VF view: the firmware version in bytes 2..7, the PPF
// id set to 0xff, everything else zero (mlx4_QUERY_FW_wrapper).
func (h *HCA) QUERY_FW(c *mlx4.Cmd) mlx4.Status {
	maj, min, sub := h.Cfg.Device.FW()
	// FW_VER (BE64): major in bits 47:32, subminor in 31:16, minor in 15:0;
	// mlx4_QUERY_FW swaps minor and subminor back.
	v := uint64(maj)<<32 | uint64(sub)<<16 | uint64(min)
	binary.BigEndian.PutUint64(c.Outbox[queryFWVerOffset:], v)
	c.Outbox[0], c.Outbox[1] = 0, 0
	c.Outbox[queryFWPPFIDOffset] = invalidSlaveID
	return mlx4.OK
}

// QUERY_DEV_CAP outbox offsets (fw.c).
const (
	devCapMaxSRQSz      = 0x10
	devCapMaxQPSz       = 0x11
	devCapRsvdQP        = 0x12
	devCapMaxQP         = 0x13
	devCapRsvdSRQ       = 0x14
	devCapMaxSRQ        = 0x15
	devCapMaxCQSz       = 0x19
	devCapRsvdCQ        = 0x1a
	devCapMaxCQ         = 0x1b
	devCapMaxMPT        = 0x1d
	devCapRsvdEQ        = 0x1e
	devCapMaxEQ         = 0x1f
	devCapRsvdMTT       = 0x20
	devCapMaxMRWSz      = 0x21
	devCapRsvdMRW       = 0x22
	devCapMaxMTTSeg     = 0x23
	devCapMaxAV         = 0x27
	devCapMaxReqQP      = 0x29
	devCapMaxResQP      = 0x2b
	devCapMaxRDMA       = 0x2f
	devCapAckDelay      = 0x35
	devCapMTUWidth      = 0x36
	devCapVLPort        = 0x37
	devCapMaxMsgSz      = 0x38
	devCapMaxGID        = 0x3b
	devCapMaxPKey       = 0x3f
	devCapExtFlags      = 0x40
	devCapFlags         = 0x44
	devCapRsvdUAR       = 0x48
	devCapUARSz         = 0x49
	devCapPageSz        = 0x4b
	devCapBF            = 0x4c
	devCapMaxSGSQ       = 0x51
	devCapMaxDescSzSQ   = 0x52
	devCapMaxSGRQ       = 0x55
	devCapMaxDescSzRQ   = 0x56
	devCapMaxQPMCG      = 0x61
	devCapRsvdMCG       = 0x62
	devCapMaxMCG        = 0x63
	devCapRsvdPD        = 0x64
	devCapMaxPD         = 0x65
	devCapRsvdXRC       = 0x66
	devCapMaxXRC        = 0x67
	devCapMaxCounters   = 0x68
	devCapRDMARCEntrySz = 0x80
	devCapQPCEntrySz    = 0x82
	devCapAuxEntrySz    = 0x84
	devCapAltcEntrySz   = 0x86
	devCapEQCEntrySz    = 0x88
	devCapCQCEntrySz    = 0x8a
	devCapSRQEntrySz    = 0x8c
	devCapCMPTEntrySz   = 0x8e
	devCapMTTEntrySz    = 0x90
	devCapDMPTEntrySz   = 0x92
	devCapRsvdLKey      = 0x98
	devCapMaxICMSz      = 0xa0
)

// Device capability flags (MLX4_DEV_CAP_FLAG_*, low word and the high word
// that QUERY_DEV_CAP carries at EXT_FLAGS).
const (
	capRC          = 1 << 0
	capUC          = 1 << 1
	capUD          = 1 << 2
	capXRC         = 1 << 3
	capSRQ         = 1 << 6
	capIPoIBCsum   = 1 << 7
	capBadPKeyCntr = 1 << 8
	capBadQKeyCntr = 1 << 9
	capAPM         = 1 << 17
	capAtomic      = 1 << 18
	capUDAVPort    = 1 << 20
	capUDMcast     = 1 << 21
	extCounters    = 1 << (48 - 32)
	extPortMngChg  = 1 << (59 - 32) // forced on by mlx4_QUERY_DEV_CAP_wrapper
)

func log2(n int) uint8 {
	if n <= 1 {
		return 0
	}
	return uint8(bits.Len(uint(n - 1)))
}

// mtuCode is the IB MTU enumeration (1 = 256 .. 5 = 4096).
func mtuCode(mtu int) uint8 { return log2(mtu) - 7 }

// QUERY_DEV_CAP answers the device capabilities as a VF sees them: the
// wrapper's rules applied (port-management-change events on, BlueFlame off,
// the VF's port count).
func (h *HCA) QUERY_DEV_CAP(c *mlx4.Cmd) mlx4.Status {
	r := &h.Cfg.Resources
	o := c.Outbox[:]
	o[devCapMaxSRQSz] = 16
	o[devCapMaxQPSz] = 14
	o[devCapRsvdQP] = log2(r.ReservedQPs) & 0xf
	o[devCapMaxQP] = r.LogQPs & 0x1f
	o[devCapRsvdSRQ] = (log2(r.ReservedSRQs) & 0xf) << 4
	o[devCapMaxSRQ] = r.LogSRQs & 0x1f
	o[devCapMaxCQSz] = 22
	o[devCapRsvdCQ] = log2(r.ReservedCQs) & 0xf
	o[devCapMaxCQ] = r.LogCQs & 0x1f
	o[devCapMaxMPT] = r.LogMPTs & 0x3f
	o[devCapRsvdEQ] = log2(r.ReservedEQs) & 0xf
	o[devCapMaxEQ] = r.LogEQs & 0xf
	o[devCapRsvdMTT] = (log2(r.ReservedMTTs) & 0xf) << 4
	o[devCapMaxMRWSz] = 32
	o[devCapRsvdMRW] = log2(r.ReservedMRWs) & 0xf
	o[devCapMaxMTTSeg] = r.LogMTTs - 3
	o[devCapMaxAV] = 20
	o[devCapMaxReqQP] = 4
	o[devCapMaxResQP] = 4
	o[devCapMaxRDMA] = 16
	o[devCapAckDelay] = 15
	ports := len(h.Funcs[c.VF].Ports)
	o[devCapMTUWidth] = mtuCode(h.Cfg.Ports[0].MTU)<<4 | 0x3 // 1X|4X
	o[devCapVLPort] = 0x80 | uint8(ports)&0xf                // max VL 8, VF's port count
	o[devCapMaxMsgSz] = 31
	o[devCapMaxGID] = log2(h.Cfg.Ports[0].GIDTableLen)
	o[devCapMaxPKey] = log2(len(h.Cfg.Ports[0].PKeys))
	binary.BigEndian.PutUint32(o[devCapExtFlags:], extCounters|extPortMngChg)
	binary.BigEndian.PutUint32(o[devCapFlags:], capRC|capUC|capUD|capXRC|capSRQ|capIPoIBCsum|
		capBadPKeyCntr|capBadQKeyCntr|capAPM|capAtomic|capUDAVPort|capUDMcast)
	o[devCapRsvdUAR] = 1 << 4
	o[devCapUARSz] = 3 // 8 MiB of UARs: 1 << (3 + 20)
	o[devCapPageSz] = 12
	o[devCapBF] = 0 // BlueFlame disabled for VFs
	o[devCapMaxSGSQ] = 32
	binary.BigEndian.PutUint16(o[devCapMaxDescSzSQ:], 1008)
	o[devCapMaxSGRQ] = 32
	binary.BigEndian.PutUint16(o[devCapMaxDescSzRQ:], 512)
	o[devCapMaxQPMCG] = 3
	o[devCapRsvdMCG] = 0
	o[devCapMaxMCG] = 13
	o[devCapRsvdPD] = 1 << 4
	o[devCapMaxPD] = 17
	o[devCapRsvdXRC] = 0
	o[devCapMaxXRC] = 16
	binary.BigEndian.PutUint32(o[devCapMaxCounters:], uint32(r.Counters))
	for off, sz := range map[int]uint16{
		devCapRDMARCEntrySz: 32, devCapQPCEntrySz: 256, devCapAuxEntrySz: 64,
		devCapAltcEntrySz: 64, devCapEQCEntrySz: 64, devCapCQCEntrySz: 64,
		devCapSRQEntrySz: 32, devCapCMPTEntrySz: 64, devCapMTTEntrySz: 8, devCapDMPTEntrySz: 64,
	} {
		binary.BigEndian.PutUint16(o[off:], sz)
	}
	binary.BigEndian.PutUint32(o[devCapRsvdLKey:], 0x100)
	binary.BigEndian.PutUint64(o[devCapMaxICMSz:], 1<<40)
	return mlx4.OK
}

// QUERY_FUNC_CAP outbox offsets (fw.c).
const (
	funcCapFlags        = 0x0
	funcCapNumPorts     = 0x1
	funcCapPFBhvr       = 0x4
	funcCapFMR          = 0x8
	funcCapQPQuotaDep   = 0x10
	funcCapCQQuotaDep   = 0x14
	funcCapSRQQuotaDep  = 0x18
	funcCapMPTQuotaDep  = 0x20
	funcCapMTTQuotaDep  = 0x24
	funcCapMCGQuotaDep  = 0x28
	funcCapMaxEQ        = 0x2c
	funcCapReservedEQ   = 0x30
	funcCapResdLKey     = 0x48
	funcCapQPQuota      = 0x50
	funcCapCQQuota      = 0x54
	funcCapSRQQuota     = 0x58
	funcCapMPTQuota     = 0x60
	funcCapMTTQuota     = 0x64
	funcCapMCGQuota     = 0x68
	funcCapExtraFlags   = 0x6c
	funcCapPhysPort     = 0x3
	funcCapFlags0       = 0x8
	funcCapFlags1       = 0xc
	funcCapQP0Tunnel    = 0x10
	funcCapQP0Proxy     = 0x14
	funcCapQP1Tunnel    = 0x18
	funcCapQP1Proxy     = 0x1c
	funcCapPhysPortID   = 0x28
	funcCapFlagRDMA     = 0x40
	funcCapFlagETH      = 0x80
	funcCapFlagQuotas   = 0x10
	funcCapFlagResdLKey = 0x08
	funcCapFlagValidMB  = 0x04
	funcCapFlags1NIC    = 0x10
	nonPow2EQs          = 1 << 31 // QUERY_FUNC_CAP_SUPPORTS_NON_POWER_OF_2_NUM_EQS
	vstQinQ             = 1 << 30
)

// Special QP bases of the model (mlx4 phys_caps.base_sqpn and the proxy and
// tunnel ranges derived from it: 8 QPs per function).
const (
	BaseSQPN       = 0x40
	BaseProxySQPN  = BaseSQPN + 8
	BaseTunnelSQPN = BaseProxySQPN + 8*128
)

// QUERY_FUNC_CAP answers op_modifier 0 (general: flags, ports, quotas, EQs,
// reserved lkey) and 1 (per port, in_modifier = the VF's port: physical port,
// proxy and tunnel QPs). Other op_modifiers are BAD_PARAM (-EINVAL), as is a
// port the VF does not have.
func (h *HCA) QUERY_FUNC_CAP(c *mlx4.Cmd) mlx4.Status {
	o := c.Outbox[:]
	slave := uint32(c.VF + 1)
	switch c.OpMod {
	case 1:
		phys := h.PhysPort(c.VF, c.InMod)
		if phys == 0 {
			return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonPort)
		}
		o[funcCapPhysPort] = uint8(phys)
		o[funcCapFlags1] = funcCapFlags1NIC
		o[funcCapFlags0] = 0
		tunnel := BaseTunnelSQPN + 8*slave + uint32(phys) - 1
		proxy := BaseProxySQPN + 8*slave + uint32(phys) - 1
		binary.BigEndian.PutUint32(o[funcCapQP0Tunnel:], tunnel)
		binary.BigEndian.PutUint32(o[funcCapQP1Tunnel:], tunnel+2)
		binary.BigEndian.PutUint32(o[funcCapQP0Proxy:], proxy)
		binary.BigEndian.PutUint32(o[funcCapQP1Proxy:], proxy+2)
		binary.BigEndian.PutUint64(o[funcCapPhysPortID:], h.Cfg.Ports[phys-1].PortGUIDValue())
		return mlx4.OK
	case 0:
	default:
		return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonOpModifier)
	}
	r := &h.Cfg.Resources
	o[funcCapFlags] = funcCapFlagETH | funcCapFlagRDMA | funcCapFlagQuotas | funcCapFlagValidMB | funcCapFlagResdLKey
	o[funcCapNumPorts] = uint8(len(h.Funcs[c.VF].Ports))
	put := func(off int, v int) { binary.BigEndian.PutUint32(o[off:], uint32(v)) }
	put(funcCapPFBhvr, 0)
	put(funcCapFMR, 0)
	put(funcCapQPQuota, h.Quota(c.VF, "qp"))
	put(funcCapQPQuotaDep, 1<<r.LogQPs)
	put(funcCapSRQQuota, h.Quota(c.VF, "srq"))
	put(funcCapSRQQuotaDep, 1<<r.LogSRQs)
	put(funcCapCQQuota, h.Quota(c.VF, "cq"))
	put(funcCapCQQuotaDep, 1<<r.LogCQs)
	eqs := 1 << r.LogEQs
	put(funcCapMaxEQ, eqs) // a power of two either way
	put(funcCapReservedEQ, r.ReservedEQs)
	put(funcCapMPTQuota, h.Quota(c.VF, "mpt"))
	put(funcCapMPTQuotaDep, 1<<r.LogMPTs)
	put(funcCapMTTQuota, h.Quota(c.VF, "mtt"))
	put(funcCapMTTQuotaDep, 1<<r.LogMTTs)
	put(funcCapMCGQuota, 1<<13)
	put(funcCapMCGQuotaDep, 1<<13)
	binary.BigEndian.PutUint32(o[funcCapExtraFlags:], 1<<31|1<<30)
	put(funcCapResdLKey, 0x100+int(slave<<8&0xff00))
	return mlx4.OK
}

// Quota is VF vf's quota of a resource type ("qp", "cq", "srq", "mpt", "mtt",
// "mac", "vlan", "counter"): the configured override, else the §2.3 default
// quota = num_instances/2 + guaranteed, guaranteed = num_instances/(2*(VFs+1)).
func (h *HCA) Quota(vf int, typ string) int {
	if q, ok := h.Funcs[vf].Quotas[typ]; ok && q.Quota != nil {
		return *q.Quota
	}
	n := h.instances(typ)
	switch typ {
	case "mac":
		return h.Cfg.Resources.MACsPerPort
	case "vlan":
		return 64
	case "counter":
		return h.Cfg.Resources.Counters
	}
	return n/2 + h.Guaranteed(vf, typ)
}

// Guaranteed is VF vf's guaranteed amount of a resource type (§2.3).
func (h *HCA) Guaranteed(vf int, typ string) int {
	if q, ok := h.Funcs[vf].Quotas[typ]; ok && q.Guaranteed != nil {
		return *q.Guaranteed
	}
	switch typ {
	case "mac":
		return 2
	case "vlan":
		return 0
	case "counter":
		return len(h.Funcs[vf].Ports)
	}
	return h.instances(typ) / (2 * (h.NumVFs + 1))
}

func (h *HCA) instances(typ string) int {
	r := &h.Cfg.Resources
	switch typ {
	case "qp":
		return 1<<r.LogQPs - r.ReservedQPs - 8*(h.NumVFs+1)*2
	case "cq":
		return 1<<r.LogCQs - r.ReservedCQs
	case "srq":
		return 1<<r.LogSRQs - r.ReservedSRQs
	case "mpt":
		return 1<<r.LogMPTs - r.ReservedMRWs
	case "mtt":
		return 1<<r.LogMTTs - r.ReservedMTTs
	case "mac":
		return r.MACsPerPort
	case "vlan":
		return r.VLANsPerPort
	case "counter":
		return r.Counters
	}
	return 0
}

// QUERY_PORT outbox offsets (fw.c).
const (
	queryPortSupportedType = 0x00
	queryPortMTU           = 0x01
	queryPortETHMTU        = 0x02
	queryPortWidth         = 0x06
	queryPortMaxGIDPKey    = 0x07
	queryPortMaxMACVLAN    = 0x0a
	queryPortMaxVL         = 0x0b
	queryPortCurMaxPKey    = 0x0c
	queryPortCurMaxGID     = 0x0e
	queryPortMAC           = 0x10
	portLinkUp             = 0x80
	portNoLinkSenseMask    = 0xe0
	portTypeIB             = 1
	portTypeETH            = 2
)

// QUERY_PORT answers the general port query for the VF's port in_modifier
// (mlx4_QUERY_PORT_wrapper: op_modifier must be 0 and in_modifier fit 8 bits;
// the link-up bit follows the VF's link policy; the GID table length is 1 on
// IB and the P_Key table length is the VF's virtual table).
func (h *HCA) QUERY_PORT(c *mlx4.Cmd) mlx4.Status {
	if c.OpMod != 0 {
		return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonOpModifier)
	}
	if c.InMod&^0xff != 0 {
		return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonInModifier)
	}
	phys := h.PhysPort(c.VF, c.InMod)
	if phys == 0 {
		return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonPort)
	}
	p := &h.Cfg.Ports[phys-1]
	fn := &h.Funcs[c.VF]
	o := c.Outbox[:]
	typ := uint8(portTypeIB)
	if p.LinkLayer == "eth" {
		typ = portTypeETH
	}
	up := h.VFLinkUp(c.VF, phys)
	t := (typ | 0x3<<2) & portNoLinkSenseMask // supported types, no link sensing
	t |= typ
	if up {
		t |= portLinkUp
	}
	o[queryPortSupportedType] = t
	o[queryPortMTU] = mtuCode(p.MTU)
	binary.BigEndian.PutUint16(o[queryPortETHMTU:], 1500)
	o[queryPortWidth] = 0x3
	o[queryPortMaxGIDPKey] = log2(p.GIDTableLen)<<4 | log2(len(p.PKeys))
	o[queryPortMaxMACVLAN] = log2(h.Cfg.Resources.VLANsPerPort)<<4 | log2(h.Cfg.Resources.MACsPerPort)
	o[queryPortMaxVL] = 8
	binary.BigEndian.PutUint16(o[queryPortCurMaxPKey:], uint16(len(fn.PKeyMap[phys])))
	gids := uint16(1)
	if p.LinkLayer == "eth" {
		gids = uint16(p.GIDTableLen / (h.NumVFs + 1))
	}
	binary.BigEndian.PutUint16(o[queryPortCurMaxGID:], gids)
	binary.BigEndian.PutUint64(o[queryPortMAC:], h.VFMAC(c.VF, phys))
	return mlx4.OK
}

// VFLinkUp is the VF's view of a physical port's link: its admin link state,
// or the port's state when that is "auto".
func (h *HCA) VFLinkUp(vf, phys int) bool {
	switch h.Funcs[vf].LinkState {
	case "up":
		return true
	case "down":
		return false
	}
	return h.Cfg.Ports[phys-1].State == "active"
}

// VFMAC is the MAC address the model assigns to VF vf on a physical port:
// locally administered, unique per (VF, port).
func (h *HCA) VFMAC(vf, phys int) uint64 {
	return 0x02c903000000 | uint64(phys)<<16 | uint64(vf+1)
}

// QUERY_ADAPTER outbox offsets (fw.c).
const (
	queryAdapterIntaPin = 0x10
	queryAdapterVSD     = 0x20
	vsdMlxBoardID       = 0xd0
)

// QUERY_ADAPTER answers the INTA pin and the board id in the VSD, each
// 4-byte word byte-swapped as the firmware does (get_board_id).
func (h *HCA) QUERY_ADAPTER(c *mlx4.Cmd) mlx4.Status {
	o := c.Outbox[:]
	o[queryAdapterIntaPin] = 0
	var id [16]byte
	copy(id[:], h.Cfg.Device.BoardID)
	base := queryAdapterVSD + vsdMlxBoardID
	for i := 0; i < 4; i++ {
		w := binary.LittleEndian.Uint32(id[4*i:])
		binary.BigEndian.PutUint32(o[base+4*i:], w)
	}
	return mlx4.OK
}
