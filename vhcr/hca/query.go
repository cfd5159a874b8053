package hca

// Query executors: NOP, QUERY_FW, QUERY_DEV_CAP, QUERY_FUNC_CAP, QUERY_PORT,
// QUERY_ADAPTER. Offsets are those of mlx4 fw.c (QUERY_*_OFFSET); the VF
// view is what the mlx4 *_wrapper functions make of the native answer.

import (
	"encoding/binary"
	"math/bits"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// NOP does nothing and succeeds.
func (h *HCA) NOP(c *Cmd) mlx4.Status { return mlx4.OK }

// QUERY_FW answers the VF view: the firmware version in bytes 2..7, the PPF
// id set to 0xff, everything else zero (mlx4_QUERY_FW_wrapper).
func (h *HCA) QUERY_FW(c *Cmd) mlx4.Status {
	maj, min, sub := h.Cfg.Device.FW()
	// FW_VER (BE64): major in bits 47:32, subminor in 31:16, minor in 15:0;
	// mlx4_QUERY_FW swaps minor and subminor back.
	v := uint64(maj)<<32 | uint64(sub)<<16 | uint64(min)
	binary.BigEndian.PutUint64(c.Outbox[mlx4.QUERY_FW_VER_OFFSET:], v)
	c.Outbox[0], c.Outbox[1] = 0, 0
	c.Outbox[mlx4.QUERY_FW_PPF_ID] = mlx4.INVALID_SLAVE_ID
	return mlx4.OK
}

func log2(n int) uint8 {
	if n <= 1 {
		return 0
	}
	return uint8(bits.Len(uint(n - 1)))
}

// mtuCode is the IB MTU enumeration (1 = 256 .. 5 = 4096).
func mtuCode(mtu int) uint8 { return log2(mtu) - 7 }

// mtuBytes is mtuCode's inverse: the size of an IB MTU code, 0 for a value
// outside 1..5 (a QP context that left it unset).
func mtuBytes(code uint8) uint64 {
	if code < 1 || code > 5 {
		return 0
	}
	return 128 << code
}

// The model's own values in the QUERY_* outboxes (not mlx4 facts: what
// this software HCA chose to be).
const (
	modelMaxVL        = 8              // VL0-7
	modelReservedLKey = 0x100          // QUERY_DEV_CAP reserved_lkey
	modelMACBase      = 0x02c903000000 // 02:c9:03: Mellanox's OUI 00:02:c9 with the locally administered bit; a VF's MAC adds (port, VF+1)
)

// QUERY_DEV_CAP answers the device capabilities as a VF sees them: the
// wrapper's rules applied (port-management-change events on, BlueFlame off,
// the VF's port count).
func (h *HCA) QUERY_DEV_CAP(c *Cmd) mlx4.Status {
	r := &h.Cfg.Resources
	o := c.Outbox[:]
	// ConnectX-3 firmware's limits, as a VF behind Linux's PF reads them
	// (TestVFDeviceAttributesAsConnectX3): 2^14 WQEs per SRQ (max_srq_wr
	// 16383), 2^7 outstanding RDMA reads and atomics per QP as requester
	// (max_qp_init_rd_atom 128), a 512-byte minimum page (page_size_cap
	// 0xfffffe00).
	o[mlx4.QUERY_DEV_CAP_MAX_SRQ_SZ_OFFSET] = 14
	o[mlx4.QUERY_DEV_CAP_MAX_QP_SZ_OFFSET] = 14
	o[mlx4.QUERY_DEV_CAP_RSVD_QP_OFFSET] = log2(r.ReservedQPs) & mlx4.QUERY_DEV_CAP_RSVD_QP_MASK
	o[mlx4.QUERY_DEV_CAP_MAX_QP_OFFSET] = r.LogQPs & mlx4.QUERY_DEV_CAP_MAX_QP_MASK
	o[mlx4.QUERY_DEV_CAP_RSVD_SRQ_OFFSET] = log2(r.ReservedSRQs) << mlx4.QUERY_DEV_CAP_RSVD_SRQ_SHIFT
	o[mlx4.QUERY_DEV_CAP_MAX_SRQ_OFFSET] = r.LogSRQs & mlx4.QUERY_DEV_CAP_MAX_SRQ_MASK
	o[mlx4.QUERY_DEV_CAP_MAX_CQ_SZ_OFFSET] = 22
	o[mlx4.QUERY_DEV_CAP_RSVD_CQ_OFFSET] = log2(r.ReservedCQs) & mlx4.QUERY_DEV_CAP_RSVD_CQ_MASK
	o[mlx4.QUERY_DEV_CAP_MAX_CQ_OFFSET] = r.LogCQs & mlx4.QUERY_DEV_CAP_MAX_CQ_MASK
	o[mlx4.QUERY_DEV_CAP_MAX_MPT_OFFSET] = r.LogMPTs & mlx4.QUERY_DEV_CAP_MAX_MPT_MASK
	o[mlx4.QUERY_DEV_CAP_RSVD_EQ_OFFSET] = log2(r.ReservedEQs) & mlx4.QUERY_DEV_CAP_RSVD_EQ_MASK
	o[mlx4.QUERY_DEV_CAP_MAX_EQ_OFFSET] = r.LogEQs & mlx4.QUERY_DEV_CAP_MAX_EQ_MASK
	o[mlx4.QUERY_DEV_CAP_RSVD_MTT_OFFSET] = log2(r.ReservedMTTs) << mlx4.QUERY_DEV_CAP_RSVD_MTT_SHIFT
	o[mlx4.QUERY_DEV_CAP_MAX_MRW_SZ_OFFSET] = 32
	o[mlx4.QUERY_DEV_CAP_RSVD_MRW_OFFSET] = log2(r.ReservedMRWs) & mlx4.QUERY_DEV_CAP_RSVD_MRW_MASK
	o[mlx4.QUERY_DEV_CAP_MAX_MTT_SEG_OFFSET] = r.LogMTTs - 3
	o[mlx4.QUERY_DEV_CAP_MAX_AV_OFFSET] = 20
	o[mlx4.QUERY_DEV_CAP_MAX_REQ_QP_OFFSET] = 7
	o[mlx4.QUERY_DEV_CAP_MAX_RES_QP_OFFSET] = 4
	o[mlx4.QUERY_DEV_CAP_MAX_RDMA_OFFSET] = 16
	o[mlx4.QUERY_DEV_CAP_ACK_DELAY_OFFSET] = 15
	ports := len(h.Funcs[c.VF].Ports)
	o[mlx4.QUERY_DEV_CAP_MTU_WIDTH_OFFSET] = mtuCode(h.Cfg.Ports[0].MTU)<<mlx4.QUERY_DEV_CAP_IB_MTU_SHIFT | mad.LinkWidth1X | mad.LinkWidth4X
	o[mlx4.QUERY_DEV_CAP_VL_PORT_OFFSET] = modelMaxVL<<mlx4.QUERY_DEV_CAP_MAX_VL_SHIFT | uint8(ports)&mlx4.QUERY_DEV_CAP_NUM_PORTS_MASK // the VF's port count
	o[mlx4.QUERY_DEV_CAP_MAX_MSG_SZ_OFFSET] = 31
	o[mlx4.QUERY_DEV_CAP_MAX_GID_OFFSET] = log2(h.Cfg.Ports[0].GIDTableLen)
	o[mlx4.QUERY_DEV_CAP_MAX_PKEY_OFFSET] = log2(len(h.Cfg.Ports[0].PKeys))
	const flags = mlx4.DEV_CAP_FLAG_RC | mlx4.DEV_CAP_FLAG_UC | mlx4.DEV_CAP_FLAG_UD | mlx4.DEV_CAP_FLAG_XRC |
		mlx4.DEV_CAP_FLAG_SRQ | mlx4.DEV_CAP_FLAG_IPOIB_CSUM | mlx4.DEV_CAP_FLAG_BAD_PKEY_CNTR |
		mlx4.DEV_CAP_FLAG_BAD_QKEY_CNTR | mlx4.DEV_CAP_FLAG_APM | mlx4.DEV_CAP_FLAG_ATOMIC |
		mlx4.DEV_CAP_FLAG_UD_AV_PORT | mlx4.DEV_CAP_FLAG_UD_MCAST | mlx4.DEV_CAP_FLAG_IBOE | mlx4.DEV_CAP_FLAG_COUNTERS |
		mlx4.DEV_CAP_FLAG_PORT_MNG_CHG_EV
	f := uint64(flags)
	binary.BigEndian.PutUint32(o[mlx4.QUERY_DEV_CAP_EXT_FLAGS_OFFSET:], uint32(f>>32))
	binary.BigEndian.PutUint32(o[mlx4.QUERY_DEV_CAP_FLAGS_OFFSET:], uint32(f))
	o[mlx4.QUERY_DEV_CAP_RSVD_UAR_OFFSET] = 1 << mlx4.QUERY_DEV_CAP_RSVD_UAR_SHIFT // one reserved UAR
	o[mlx4.QUERY_DEV_CAP_UAR_SZ_OFFSET] = mlx4.DevCapUARSize                       // UARSize of UARs: every VF BAR region's size
	o[mlx4.QUERY_DEV_CAP_PAGE_SZ_OFFSET] = 9
	o[mlx4.QUERY_DEV_CAP_BF_OFFSET] = 0 // BlueFlame disabled for VFs
	o[mlx4.QUERY_DEV_CAP_MAX_SG_SQ_OFFSET] = 32
	binary.BigEndian.PutUint16(o[mlx4.QUERY_DEV_CAP_MAX_DESC_SZ_SQ_OFFSET:], 1008)
	o[mlx4.QUERY_DEV_CAP_MAX_SG_RQ_OFFSET] = 32
	binary.BigEndian.PutUint16(o[mlx4.QUERY_DEV_CAP_MAX_DESC_SZ_RQ_OFFSET:], 512)
	o[mlx4.QUERY_DEV_CAP_MAX_QP_MCG_OFFSET] = 3
	o[mlx4.QUERY_DEV_CAP_RSVD_MCG_OFFSET] = 0
	o[mlx4.QUERY_DEV_CAP_MAX_MCG_OFFSET] = 13
	o[mlx4.QUERY_DEV_CAP_RSVD_PD_OFFSET] = 1 << mlx4.QUERY_DEV_CAP_RSVD_PD_SHIFT // one reserved PD
	o[mlx4.QUERY_DEV_CAP_MAX_PD_OFFSET] = 17
	o[mlx4.QUERY_DEV_CAP_RSVD_XRC_OFFSET] = 0
	o[mlx4.QUERY_DEV_CAP_MAX_XRC_OFFSET] = 16
	binary.BigEndian.PutUint32(o[mlx4.QUERY_DEV_CAP_MAX_COUNTERS_OFFSET:], uint32(r.Counters))
	for off, sz := range map[int]uint16{
		mlx4.QUERY_DEV_CAP_RDMARC_ENTRY_SZ_OFFSET: 32, mlx4.QUERY_DEV_CAP_QPC_ENTRY_SZ_OFFSET: 256, mlx4.QUERY_DEV_CAP_AUX_ENTRY_SZ_OFFSET: 64,
		mlx4.QUERY_DEV_CAP_ALTC_ENTRY_SZ_OFFSET: 64, mlx4.QUERY_DEV_CAP_EQC_ENTRY_SZ_OFFSET: 64, mlx4.QUERY_DEV_CAP_CQC_ENTRY_SZ_OFFSET: 64,
		mlx4.QUERY_DEV_CAP_SRQ_ENTRY_SZ_OFFSET: 32, mlx4.QUERY_DEV_CAP_C_MPT_ENTRY_SZ_OFFSET: 64, mlx4.QUERY_DEV_CAP_MTT_ENTRY_SZ_OFFSET: 8, mlx4.QUERY_DEV_CAP_D_MPT_ENTRY_SZ_OFFSET: 64,
	} {
		binary.BigEndian.PutUint16(o[off:], sz)
	}
	binary.BigEndian.PutUint32(o[mlx4.QUERY_DEV_CAP_RSVD_LKEY_OFFSET:], modelReservedLKey)
	binary.BigEndian.PutUint64(o[mlx4.QUERY_DEV_CAP_MAX_ICM_SZ_OFFSET:], 1<<40)
	return mlx4.OK
}

// Special QP bases of the model (mlx4 phys_caps.base_sqpn and the proxy and
// tunnel ranges derived from it: 8 QPs per function).
const (
	BaseSQPN       = 0x40
	BaseProxySQPN  = BaseSQPN + 8
	BaseTunnelSQPN = BaseProxySQPN + 8*mlx4.MLX4_MFUNC_MAX
)

// QUERY_FUNC_CAP answers op_modifier 0 (general: flags, ports, quotas, EQs,
// reserved lkey) and 1 (per port, in_modifier = the VF's port: physical port,
// proxy and tunnel QPs). Other op_modifiers are BAD_PARAM (-EINVAL), as is a
// port the VF does not have.
func (h *HCA) QUERY_FUNC_CAP(c *Cmd) mlx4.Status {
	o := c.Outbox[:]
	slave := uint32(c.VF + 1)
	switch c.OpMod {
	case 1:
		phys := h.PhysPort(c.VF, c.InMod)
		if phys == 0 {
			return c.Refuse(mlx4.BAD_PARAM, refusal.Port)
		}
		o[mlx4.QUERY_FUNC_CAP_PHYS_PORT_OFFSET] = uint8(phys)
		o[mlx4.QUERY_FUNC_CAP_FLAGS1_OFFSET] = mlx4.QUERY_FUNC_CAP_FLAGS1_NIC_INFO
		o[mlx4.QUERY_FUNC_CAP_FLAGS0_OFFSET] = 0
		tunnel := BaseTunnelSQPN + 8*slave + uint32(phys) - 1
		proxy := BaseProxySQPN + 8*slave + uint32(phys) - 1
		if h.Funcs[c.VF].SMI {
			// mlx4_vf_smi_enabled: the VF owns its QP0, whose proxy's
			// Q_Key (mlx4_get_parav_qkey) its build_sriov_qp0_header puts
			// in the DETH.
			o[mlx4.QUERY_FUNC_CAP_FLAGS1_OFFSET] |= mlx4.QUERY_FUNC_CAP_VF_ENABLE_QP0
			binary.BigEndian.PutUint32(o[mlx4.QUERY_FUNC_CAP_PRIV_VF_QKEY_OFFSET:], mlx4.RESERVED_QKEY_BASE+proxy-BaseProxySQPN)
		}
		binary.BigEndian.PutUint32(o[mlx4.QUERY_FUNC_CAP_QP0_TUNNEL:], tunnel)
		binary.BigEndian.PutUint32(o[mlx4.QUERY_FUNC_CAP_QP1_TUNNEL:], tunnel+2)
		binary.BigEndian.PutUint32(o[mlx4.QUERY_FUNC_CAP_QP0_PROXY:], proxy)
		binary.BigEndian.PutUint32(o[mlx4.QUERY_FUNC_CAP_QP1_PROXY:], proxy+2)
		binary.BigEndian.PutUint64(o[mlx4.QUERY_FUNC_CAP_PHYS_PORT_ID:], h.Cfg.Ports[phys-1].PortGUIDValue())
		return mlx4.OK
	case 0:
	default:
		return c.Refuse(mlx4.BAD_PARAM, refusal.OpModifier)
	}
	r := &h.Cfg.Resources
	o[mlx4.QUERY_FUNC_CAP_FLAGS_OFFSET] = mlx4.QUERY_FUNC_CAP_FLAG_ETH | mlx4.QUERY_FUNC_CAP_FLAG_RDMA | mlx4.QUERY_FUNC_CAP_FLAG_QUOTAS | mlx4.QUERY_FUNC_CAP_FLAG_VALID_MAILBOX | mlx4.QUERY_FUNC_CAP_FLAG_RESD_LKEY
	o[mlx4.QUERY_FUNC_CAP_NUM_PORTS_OFFSET] = uint8(len(h.Funcs[c.VF].Ports))
	put := func(off int, v int) { binary.BigEndian.PutUint32(o[off:], uint32(v)) }
	put(mlx4.QUERY_FUNC_CAP_PF_BHVR_OFFSET, 0)
	put(mlx4.QUERY_FUNC_CAP_FMR_OFFSET, 0)
	put(mlx4.QUERY_FUNC_CAP_QP_QUOTA_OFFSET, h.Quota(c.VF, "qp"))
	put(mlx4.QUERY_FUNC_CAP_QP_QUOTA_OFFSET_DEP, 1<<r.LogQPs)
	put(mlx4.QUERY_FUNC_CAP_SRQ_QUOTA_OFFSET, h.Quota(c.VF, "srq"))
	put(mlx4.QUERY_FUNC_CAP_SRQ_QUOTA_OFFSET_DEP, 1<<r.LogSRQs)
	put(mlx4.QUERY_FUNC_CAP_CQ_QUOTA_OFFSET, h.Quota(c.VF, "cq"))
	put(mlx4.QUERY_FUNC_CAP_CQ_QUOTA_OFFSET_DEP, 1<<r.LogCQs)
	eqs := 1 << r.LogEQs
	put(mlx4.QUERY_FUNC_CAP_MAX_EQ_OFFSET, eqs) // a power of two either way
	put(mlx4.QUERY_FUNC_CAP_RESERVED_EQ_OFFSET, r.ReservedEQs)
	put(mlx4.QUERY_FUNC_CAP_MPT_QUOTA_OFFSET, h.Quota(c.VF, "mpt"))
	put(mlx4.QUERY_FUNC_CAP_MPT_QUOTA_OFFSET_DEP, 1<<r.LogMPTs)
	put(mlx4.QUERY_FUNC_CAP_MTT_QUOTA_OFFSET, h.Quota(c.VF, "mtt"))
	put(mlx4.QUERY_FUNC_CAP_MTT_QUOTA_OFFSET_DEP, 1<<r.LogMTTs)
	put(mlx4.QUERY_FUNC_CAP_MCG_QUOTA_OFFSET, 1<<13)
	put(mlx4.QUERY_FUNC_CAP_MCG_QUOTA_OFFSET_DEP, 1<<13)
	binary.BigEndian.PutUint32(o[mlx4.QUERY_FUNC_CAP_EXTRA_FLAGS_OFFSET:],
		mlx4.QUERY_FUNC_CAP_EXTRA_FLAGS_BF_QP_ALLOC_FLAG|mlx4.QUERY_FUNC_CAP_EXTRA_FLAGS_A0_QP_ALLOC_FLAG)
	put(mlx4.QUERY_FUNC_CAP_QP_RESD_LKEY_OFFSET, modelReservedLKey+int(slave<<8&0xff00)) // reserved_lkey + ((slave << 8) & 0xFF00)
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

// QUERY_PORT answers the general port query for the VF's port in_modifier
// (mlx4_QUERY_PORT_wrapper: op_modifier must be 0 and in_modifier fit 8 bits;
// the link-up bit follows the VF's link policy; the GID table length is 1 on
// IB and the P_Key table length is the VF's virtual table).
func (h *HCA) QUERY_PORT(c *Cmd) mlx4.Status {
	if c.OpMod != 0 {
		return c.Refuse(mlx4.BAD_PARAM, refusal.OpModifier)
	}
	if c.InMod&^mlx4.PortInModMask != 0 {
		return c.Refuse(mlx4.BAD_PARAM, refusal.InModifier)
	}
	phys := h.PhysPort(c.VF, c.InMod)
	if phys == 0 {
		return c.Refuse(mlx4.BAD_PARAM, refusal.Port)
	}
	p := &h.Cfg.Ports[phys-1]
	fn := &h.Funcs[c.VF]
	o := c.Outbox[:]
	typ := uint8(mlx4.PORT_TYPE_IB)
	if p.LinkLayer == "eth" {
		typ = mlx4.PORT_TYPE_ETH
	}
	up := h.VFLinkUp(c.VF, phys)
	// The wrapper's: no link sensing (the firmware's byte under
	// VF_PORT_NO_LINK_SENSE_MASK, which the model leaves clear), the port's
	// current type, the VF's link.
	t := typ & mlx4.PORT_TYPE_MASK
	if up {
		t |= mlx4.PORT_LINK_UP_MASK
	}
	o[mlx4.QUERY_PORT_SUPPORTED_TYPE_OFFSET] = t
	o[mlx4.QUERY_PORT_MTU_OFFSET] = mtuCode(p.MTU)
	binary.BigEndian.PutUint16(o[mlx4.QUERY_PORT_ETH_MTU_OFFSET:], PortEthMTU)
	o[mlx4.QUERY_PORT_WIDTH_OFFSET] = mad.LinkWidth1X | mad.LinkWidth4X
	o[mlx4.QUERY_PORT_MAX_GID_PKEY_OFFSET] = log2(p.GIDTableLen)<<4 | log2(len(p.PKeys))
	o[mlx4.QUERY_PORT_MAX_MACVLAN_OFFSET] = log2(h.Cfg.Resources.VLANsPerPort)<<4 | log2(h.Cfg.Resources.MACsPerPort)
	o[mlx4.QUERY_PORT_MAX_VL_OFFSET] = modelMaxVL
	binary.BigEndian.PutUint16(o[mlx4.QUERY_PORT_CUR_MAX_PKEY_OFFSET:], uint16(len(fn.PKeyMap[phys])))
	binary.BigEndian.PutUint16(o[mlx4.QUERY_PORT_CUR_MAX_GID_OFFSET:], uint16(h.numGIDs(c.VF, phys)))
	binary.BigEndian.PutUint64(o[mlx4.QUERY_PORT_MAC_OFFSET:], h.VFMAC(c.VF, phys))
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
// the operator's MAC made operational at the VF's last activation
// (vfadmin.go), else locally administered, unique per (VF, port).
func (h *HCA) VFMAC(vf, phys int) uint64 {
	if m := h.fw.vfs[vf].Vport[phys-1].MAC; m != 0 {
		return m
	}
	return defaultMAC(vf, phys)
}

// defaultMAC is the MAC the model gives VF vf on physical port phys where
// the operator set none: locally administered, unique per (VF, port).
func defaultMAC(vf, phys int) uint64 { return modelMACBase | uint64(phys)<<16 | uint64(vf+1) }

// QUERY_ADAPTER answers the INTA pin and the board id in the VSD, each
// 4-byte word byte-swapped as the firmware does (get_board_id).
func (h *HCA) QUERY_ADAPTER(c *Cmd) mlx4.Status {
	o := c.Outbox[:]
	o[mlx4.QUERY_ADAPTER_INTA_PIN_OFFSET] = 0
	var id [mlx4.BOARD_ID_LEN]byte
	copy(id[:], h.Cfg.Device.BoardID)
	base := mlx4.QUERY_ADAPTER_VSD_OFFSET + mlx4.VSD_OFFSET_MLX_BOARD_ID
	for i := 0; i < 4; i++ {
		w := binary.LittleEndian.Uint32(id[4*i:])
		binary.BigEndian.PutUint32(o[base+4*i:], w)
	}
	return mlx4.OK
}
