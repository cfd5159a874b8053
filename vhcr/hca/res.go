package hca

// Resource allocation executors and the firmware's object tables.
//
//	opcode     op_modifier (mlx4.AllocMode)
//	ALLOC_RES  0 RESERVE, 1 RESERVE_AND_MAP, 2 MAP_ICM
//	FREE_RES   same
//
// in_modifier[7:0] is the resource type (mlx4.Resource, restrack.Type), for
// MAC/VLAN in_modifier[15:8] the VF's port. Results go to out_param's low
// 32 bits (the high half is kept, as mlx4's set_param_l does).

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// ALLOC_RES / FREE_RES op_modifiers (enum mlx4_alloc_mode).
const (
	resOpReserve       = uint8(mlx4.RES_OP_RESERVE)
	resOpReserveAndMap = uint8(mlx4.RES_OP_RESERVE_AND_MAP)
	resOpMapICM        = uint8(mlx4.RES_OP_MAP_ICM)
)

// Sizes of the model's firmware tables.
const (
	macTableSize   = mlx4.MLX4_MAX_MAC_NUM
	vlanTableSize  = mlx4.MLX4_MAX_VLAN_NUM
	numEventTypes  = mlx4.MLX4_EVENT_TYPES_NUM
	maxAttachPerQP = 64 // multicast attachments one QP may hold
	maxEQLogSize   = 16 // 64 Ki EQEs: at most 512 ring pages per EQ
	qpnMask        = mlx4.QPNTrackerMask
)

// firmware is the state a ConnectX firmware keeps per object, next to the
// tracker's ownership records. Its persistent part is plain values of the
// types in state.go, which Image copies out and Load copies in; every other
// field is transient and says why (TestStateCoversTheFirmware keeps the two
// lists complete).
type firmware struct {
	// Persistent: the tables of State, each under its State field's name.
	mtt  map[uint64][]uint64 // MTT allocation base → entries (lazily sized 2^order)
	qps  map[uint32]*qpObj
	cqs  map[uint32]*cqObj
	srqs map[uint32]*srqObj
	mpts map[uint64]*mptObj // tracker id (index & mask)
	eqs  map[uint64]*eqObj  // restrack.EQID(vf, eqn)

	ports []PortState // per physical port
	vfs   []vfFW

	counterPort map[uint64]int        // counter index → physical port it counts (handleCounter)
	mcg         map[uint32][][16]byte // QPN → multicast groups attached (QP_ATTACH), across 2RST
	nextRegID   uint64                // flow-steering rule ids, unique across VFs

	// Transient: the PF's wiring, replay mode, derived lists and counters.
	doorbell func(vf, eqn int) (uint32, bool)           // EQ doorbell reader, or nil
	irq      Interrupts                                 // MSI-X delivery (irq.go), or nil: none
	watch    []*eqObj                                   // EQs not armed with EQEs pending (irq.go)
	posted   func(vf, eqn int, eqe *[mlx4.EQESize]byte) // EQE observer, or nil
	pos      func(vf, eqn int, prod uint32, live bool)  // EQ producer positions (image.go), or nil
	quiet    bool                                       // replaying: no VF memory written, no EQE, no positions (image.go)
	// adminChanges counts the operator's changes of firmware state (SetVF)
	adminChanges uint64
	dmfs         bool // device-managed flow steering (fs.go), from the configuration
}

// vfFW is per-function firmware state: the persistent VFState and the
// VF's event counters.
type vfFW struct {
	VFState
	stats EventStats
	eng   EngineStats // work-request engine counters (sq.go)
}

// EventStats are one VF's event counters (read by metrics at scrape time).
type EventStats struct {
	EQEs      atomic.Uint64 // EQEs written into the VF's EQs
	Overruns  atomic.Uint64 // EQEs dropped because the EQ was full
	NoEQ      atomic.Uint64 // events dropped because no EQ was mapped
	Completes atomic.Uint64 // command-completion EQEs written
	// Interrupts (irq.go): MSI-X vectors raised; EQEs written into an EQ
	// that was not armed (no interrupt until the VF re-arms); raises
	// refused, a vector at or above the VF's count (the VF's error) or
	// its eventfds gone.
	Interrupts atomic.Uint64
	Unarmed    atomic.Uint64
	IRQErrors  atomic.Uint64
}

// The live objects: each embeds its persistent state (state.go) and joins
// it to its tracker object, which Load joins afresh.

type qpObj struct {
	QPState
	tr  *restrack.Object
	wq  *wq   // work queues (wq.go), from RST2INIT to 2RST
	dps int32 // its entry in the data path's log + 1, 0 none (dplog.go)
}

type cqObj struct {
	CQState
	tr   *restrack.Object
	ring *cqRing // the ring in the VF's memory (cqring.go)
	dps  int32   // its entry in the data path's log + 1, 0 none (dplog.go)
}

type srqObj struct {
	SRQState
	tr  *restrack.Object
	q   *srqWQ // the ring (rq.go), built on first use
	dps int32  // its entry in the data path's log + 1, 0 none (dplog.go)
}

type mptObj struct {
	MPTState
	tr      *restrack.Object
	dec     mlx4.MPT // Entry decoded (mem.go) when decoded is set
	decoded bool     // cleared by SW2HW_MPT
}

type eqObj struct {
	EQState
	tr  *restrack.Object
	win *dma.Window // the VF's DMA window, which the ring pages are in

	dbLast uint32 // doorbell word last applied (a write is a change of it)

	intr    uint8 // MSI-X vector of the EQ context
	always  bool  // EQ_STATE_ALWAYS_ARMED: every EQE raises
	watched bool  // in firmware.watch
}

// initResources builds the tracker and the firmware tables from the
// configuration. Called by New.
func (h *HCA) initResources() error {
	r := &h.Cfg.Resources
	var rc restrack.Config
	rc.NumVFs, rc.NumPorts = h.NumVFs, len(h.Cfg.Ports)
	set := func(t restrack.Type, total, rsv int) { rc.Total[t], rc.Reserved[t] = total, rsv }
	// QP numbers below the special QP area (base, proxy and tunnel QPs of
	// every function) are never handed out.
	set(restrack.QP, 1<<r.LogQPs, min(max(r.ReservedQPs, BaseTunnelSQPN+8*mlx4.MLX4_MFUNC_MAX), 1<<r.LogQPs-1))
	rc.Instances[restrack.QP] = 1<<r.LogQPs - r.ReservedQPs - 8*(h.NumVFs+1)*2
	set(restrack.CQ, 1<<r.LogCQs, r.ReservedCQs)
	set(restrack.SRQ, 1<<r.LogSRQs, r.ReservedSRQs)
	set(restrack.MPT, 1<<r.LogMPTs, r.ReservedMRWs)
	set(restrack.MTT, 1<<r.LogMTTs, r.ReservedMTTs)
	set(restrack.Counter, r.Counters, 0)
	set(restrack.XRCD, 1<<16, 1)
	rc.MACsPerPort, rc.VLANsPerPort = r.MACsPerPort, r.VLANsPerPort
	// A VF's EQ numbers are below QUERY_FUNC_CAP's max EQ (1 << log_eqs).
	rc.EQsPerVF = min(1024, 1<<r.LogEQs)
	names := map[string]restrack.Type{"qp": restrack.QP, "cq": restrack.CQ, "srq": restrack.SRQ,
		"mpt": restrack.MPT, "mtt": restrack.MTT, "mac": restrack.MAC, "vlan": restrack.VLAN,
		"counter": restrack.Counter}
	for vf := range h.Funcs {
		for name, q := range h.Funcs[vf].Quotas {
			t, ok := names[name]
			if !ok {
				continue
			}
			o := restrack.Override{VF: vf, Type: t, Quota: -1, Guaranteed: -1}
			if q.Quota != nil {
				o.Quota = *q.Quota
			}
			if q.Guaranteed != nil {
				o.Guaranteed = *q.Guaranteed
			}
			rc.Overrides = append(rc.Overrides, o)
		}
	}
	tr, err := restrack.New(rc)
	if err != nil {
		return fmt.Errorf("hca: %w", err)
	}
	h.Res = tr
	h.fw = &firmware{
		counterPort: map[uint64]int{},
		mtt:         map[uint64][]uint64{}, qps: map[uint32]*qpObj{}, cqs: map[uint32]*cqObj{},
		srqs: map[uint32]*srqObj{}, mpts: map[uint64]*mptObj{}, eqs: map[uint64]*eqObj{},
		ports: make([]PortState, len(h.Cfg.Ports)), vfs: make([]vfFW, h.NumVFs), mcg: map[uint32][][16]byte{},
	}
	for vf := range h.fw.vfs {
		h.fw.vfs[vf].clearEvents()
	}
	return nil
}

func (v *vfFW) clearEvents() {
	for i := range v.EventEQ {
		v.EventEQ[i] = -1
	}
}

// Stats returns VF vf's event counters.
func (h *HCA) Stats(vf int) *EventStats {
	if vf < 0 || vf >= len(h.fw.vfs) {
		return nil
	}
	return &h.fw.vfs[vf].stats
}

func lo32(v uint64) uint32 { return uint32(v) }
func hi32(v uint64) uint32 { return uint32(v >> 32) }

func setOutLo(c *Cmd, v uint32) { c.OutParam = c.OutParam&^0xffffffff | uint64(v) }

// ALLOC_RES allocates a resource for the VF (mlx4_ALLOC_RES_wrapper, §2.4).
// Statuses: unknown type or mode → BAD_PARAM; quota → INTERNAL_ERR
// (MAC/VLAN: BAD_PARAM), checked before the count, alignment or order;
// a port the VF lacks → BAD_PARAM; no free number, or a count, alignment or
// order the allocator cannot serve → EXCEED_LIM (counters: INTERNAL_ERR,
// -ENOSPC); MAP_ICM of another VF's QP/MPT → BAD_OP, of an unknown one →
// INTERNAL_ERR, in the wrong state → BAD_PARAM.
func (h *HCA) ALLOC_RES(c *Cmd) mlx4.Status {
	if ops := resOpsFor(c); ops != nil {
		return ops.alloc(h, c)
	}
	return c.Refuse(mlx4.BAD_PARAM, refusal.InModifier)
}

// resOps is ALLOC_RES's and FREE_RES's dispatch by resource type
// (in_modifier[7:0]), resource_tracker.c's *_alloc_res and *_free_res; a
// type without a row (NPORT_ID, FS_RULE, EQ, unknown) is BAD_PARAM. Each
// handler checks its op_modifier (an unsupported one is BAD_PARAM).
var resOps = [restrack.NumTypes]struct {
	alloc, free func(h *HCA, c *Cmd) mlx4.Status
}{
	restrack.QP:      {(*HCA).qpAllocRes, (*HCA).qpFreeRes},
	restrack.MTT:     {(*HCA).mttAllocRes, (*HCA).mttFreeRes},
	restrack.MPT:     {(*HCA).mptAllocRes, (*HCA).mptFreeRes},
	restrack.CQ:      {(*HCA).cqSRQAllocRes, (*HCA).cqSRQFreeRes},
	restrack.SRQ:     {(*HCA).cqSRQAllocRes, (*HCA).cqSRQFreeRes},
	restrack.Counter: {(*HCA).counterXRCDAllocRes, (*HCA).counterFreeRes},
	restrack.XRCD:    {(*HCA).counterXRCDAllocRes, (*HCA).xrcdFreeRes},
	restrack.MAC:     {(*HCA).macAllocRes, (*HCA).macVLANFreeRes},
	restrack.VLAN:    {(*HCA).vlanAllocRes, (*HCA).macVLANFreeRes},
}

// resOpsFor is the row of the command's resource type, nil if none.
func resOpsFor(c *Cmd) *struct {
	alloc, free func(h *HCA, c *Cmd) mlx4.Status
} {
	if ty := c.InMod & mlx4.ResTypeMask; ty < restrack.NumTypes && resOps[ty].alloc != nil {
		return &resOps[ty]
	}
	return nil
}

func badOpMod(c *Cmd) mlx4.Status { return c.Refuse(mlx4.BAD_PARAM, refusal.OpModifier) }

// allocated answers an allocation of n (or its refusal).
func allocated(c *Cmd, n uint32, err error) mlx4.Status {
	if err != nil {
		return c.refuse(err)
	}
	setOutLo(c, n)
	return mlx4.OK
}

// refused answers an operation that returns nothing (or its refusal).
func refused(c *Cmd, err error) mlx4.Status {
	if err != nil {
		return c.refuse(err)
	}
	return mlx4.OK
}

// qpAllocRes reserves a QPN range (RES_OP_RESERVE: count in_param[23:0],
// alignment in_param[63:32]) or maps a QPN's ICM (RES_OP_MAP_ICM), tracking
// a special QP of the VF's proxy range first.
func (h *HCA) qpAllocRes(c *Cmd) mlx4.Status {
	lo := lo32(c.InParam)
	switch c.OpMod {
	case resOpReserve:
		count, align := int(lo&mlx4.AllocResQPCountMask), int(hi32(c.InParam))
		base, err := h.Res.ReserveQPs(c.VF, count, align)
		return allocated(c, uint32(base), err)
	case resOpMapICM:
		qpn := lo & qpnMask
		if h.validReservedQP(c.VF, qpn) {
			// add_res_range: mapping a special QP twice is -EEXIST.
			if err := h.Res.TrackSpecial(c.VF, uint64(qpn)); err != nil {
				return c.refuse(err)
			}
		}
		return refused(c, h.Res.MapICM(c.VF, restrack.QP, uint64(qpn)))
	}
	return badOpMod(c)
}

func (h *HCA) mttAllocRes(c *Cmd) mlx4.Status {
	if c.OpMod != resOpReserveAndMap {
		return badOpMod(c)
	}
	base, err := h.Res.AllocMTT(c.VF, int(lo32(c.InParam)))
	return allocated(c, uint32(base), err)
}

func (h *HCA) mptAllocRes(c *Cmd) mlx4.Status {
	switch c.OpMod {
	case resOpReserve:
		idx, err := h.Res.Alloc(c.VF, restrack.MPT)
		return allocated(c, uint32(idx), err)
	case resOpMapICM:
		return refused(c, h.Res.MapICM(c.VF, restrack.MPT, h.Res.MPTID(lo32(c.InParam))))
	}
	return badOpMod(c)
}

func (h *HCA) cqSRQAllocRes(c *Cmd) mlx4.Status {
	if c.OpMod != resOpReserveAndMap {
		return badOpMod(c)
	}
	n, err := h.Res.Alloc(c.VF, restrack.Type(c.InMod&mlx4.ResTypeMask))
	return allocated(c, uint32(n), err)
}

func (h *HCA) counterXRCDAllocRes(c *Cmd) mlx4.Status {
	if c.OpMod != resOpReserve {
		return badOpMod(c)
	}
	ty := restrack.Type(c.InMod & mlx4.ResTypeMask)
	n, err := h.Res.Alloc(c.VF, ty)
	if ty == restrack.Counter && errors.Is(err, restrack.ErrNoSpace) {
		// __mlx4_counter_alloc's -ENOSPC: INTERNAL_ERR
		return c.Refuse(mlx4.INTERNAL_ERR, refusal.Quota)
	}
	return allocated(c, uint32(n), err)
}

func (h *HCA) macAllocRes(c *Cmd) mlx4.Status {
	if c.OpMod != resOpReserveAndMap {
		return badOpMod(c)
	}
	return h.allocMAC(c)
}

func (h *HCA) vlanAllocRes(c *Cmd) mlx4.Status {
	if c.OpMod != resOpReserveAndMap {
		return badOpMod(c)
	}
	return h.allocVLAN(c)
}

// validReservedQP: a special QPN the VF may map (mlx4 valid_reserved): its
// own proxy range BaseProxySQPN + 8*slave .. +7.
func (h *HCA) validReservedQP(vf int, qpn uint32) bool {
	base := uint32(BaseProxySQPN + 8*(vf+1))
	return qpn >= base && qpn < base+8
}

// resPort is mlx4_slave_convert_port of a MAC/VLAN request's port:
// in_modifier[15:8], or where that is 0 and useOut allows (MAC, and VLAN's
// ALLOC_RES), out_param's whole low word as mlx4's get_param_l reads it. It
// returns 0 if the VF has no such port, and whether the port came from
// out_param (the old API).
func (h *HCA) resPort(c *Cmd, useOut bool) (phys int, old bool) {
	vport := c.InMod >> mlx4.ResPortShift & mlx4.PortInModMask
	if vport == 0 && useOut {
		vport, old = lo32(c.OutParam), true
	}
	return h.PhysPort(c.VF, vport), old
}

func (h *HCA) allocMAC(c *Cmd) mlx4.Status {
	phys, _ := h.resPort(c, true)
	if phys == 0 {
		return c.Refuse(mlx4.BAD_PARAM, refusal.Port)
	}
	mac := c.InParam & mlx4.MLX4_MAC_MASK
	tab := &h.fw.ports[phys-1].MAC
	idx := register(tab[:], mac)
	if idx < 0 {
		return c.Refuse(mlx4.INTERNAL_ERR, refusal.Quota) // table full: -ENOSPC
	}
	if _, err := h.Res.AddMAC(c.VF, restrack.MAC, phys, mac, idx); err != nil {
		unregister(tab[:], idx)
		return c.refuse(err)
	}
	setOutLo(c, uint32(idx))
	return mlx4.OK
}

// allocVLAN is vlan_alloc_res: a port (in_modifier or, old API, out_param)
// the VF has, else BAD_PARAM; the old API is then a no-op success.
func (h *HCA) allocVLAN(c *Cmd) mlx4.Status {
	phys, old := h.resPort(c, true)
	if phys == 0 {
		return c.Refuse(mlx4.BAD_PARAM, refusal.Port)
	}
	if old {
		h.fw.vfs[c.VF].OldVLAN = true
		return mlx4.OK // old VLAN API: a no-op success, as mlx4
	}
	vlan := uint64(lo32(c.InParam) & mlx4.MLX4_VLAN_MASK)
	tab := &h.fw.ports[phys-1].VLAN
	idx := register(tab[:], vlan)
	if idx < 0 {
		return c.Refuse(mlx4.INTERNAL_ERR, refusal.Quota)
	}
	if _, err := h.Res.AddMAC(c.VF, restrack.VLAN, phys, vlan, idx); err != nil {
		unregister(tab[:], idx)
		return c.refuse(err)
	}
	setOutLo(c, uint32(idx))
	return mlx4.OK
}

// register finds or adds value in a port table and takes a reference.
func register(tab []TableEntry, value uint64) int {
	free := -1
	for i := range tab {
		if tab[i].Refs > 0 && tab[i].Value == value {
			tab[i].Refs++
			return i
		}
		if free < 0 && tab[i].Refs == 0 {
			free = i
		}
	}
	if free >= 0 {
		tab[free] = TableEntry{Value: value, Refs: 1}
	}
	return free
}

func unregister(tab []TableEntry, idx int) {
	if idx >= 0 && idx < len(tab) && tab[idx].Refs > 0 {
		tab[idx].Refs--
	}
}

// FREE_RES releases a resource (mlx4_FREE_RES_wrapper, §2.4). Statuses:
// unknown object → INTERNAL_ERR; another VF's → BAD_OP; an object not in
// its removable state (a CQ or SRQ in HW, a QP or MPT still mapped) → BAD_OP
// as mlx4's -EPERM; busy or referenced → RESOURCE_BUSY; wrong MTT order →
// BAD_PARAM.
func (h *HCA) FREE_RES(c *Cmd) mlx4.Status {
	if ops := resOpsFor(c); ops != nil {
		return ops.free(h, c)
	}
	return c.Refuse(mlx4.BAD_PARAM, refusal.InModifier)
}

// qpFreeRes releases a QPN range (RES_OP_RESERVE: base in_param[23:0],
// count in_param[63:32] as mlx4's int) or unmaps a QPN's ICM
// (RES_OP_MAP_ICM), untracking a special QP after.
func (h *HCA) qpFreeRes(c *Cmd) mlx4.Status {
	lo, hi := lo32(c.InParam), hi32(c.InParam)
	switch c.OpMod {
	case resOpReserve:
		return refused(c, h.Res.FreeQPs(c.VF, uint64(lo&qpnMask), int(int32(hi)))) // mlx4's int count
	case resOpMapICM:
		qpn := uint64(lo & qpnMask)
		err := h.Res.UnmapICM(c.VF, restrack.QP, qpn)
		if err == nil {
			err = h.Res.UntrackSpecial(c.VF, qpn)
		}
		return refused(c, err)
	}
	return badOpMod(c)
}

func (h *HCA) mttFreeRes(c *Cmd) mlx4.Status {
	if c.OpMod != resOpReserveAndMap {
		return badOpMod(c)
	}
	lo, hi := lo32(c.InParam), hi32(c.InParam)
	err := h.Res.FreeMTT(c.VF, uint64(lo), int(hi))
	if err == nil {
		delete(h.fw.mtt, uint64(lo))
	}
	return refused(c, err)
}

func (h *HCA) mptFreeRes(c *Cmd) mlx4.Status {
	id := h.Res.MPTID(lo32(c.InParam))
	switch c.OpMod {
	case resOpReserve:
		err := h.Res.Free(c.VF, restrack.MPT, id)
		if err == nil {
			delete(h.fw.mpts, id)
		}
		return refused(c, err)
	case resOpMapICM:
		return refused(c, h.Res.UnmapICM(c.VF, restrack.MPT, id))
	}
	return badOpMod(c)
}

func (h *HCA) cqSRQFreeRes(c *Cmd) mlx4.Status {
	if c.OpMod != resOpReserveAndMap {
		return badOpMod(c)
	}
	return refused(c, h.Res.Free(c.VF, restrack.Type(c.InMod&mlx4.ResTypeMask), uint64(lo32(c.InParam))))
}

func (h *HCA) counterFreeRes(c *Cmd) mlx4.Status {
	if c.OpMod != resOpReserve {
		return badOpMod(c)
	}
	lo := lo32(c.InParam)
	if int(lo) == h.Cfg.Resources.Counters-1 {
		return mlx4.OK // the sink counter: a no-op
	}
	err := h.Res.Free(c.VF, restrack.Counter, uint64(lo))
	if err == nil {
		delete(h.fw.counterPort, uint64(lo))
	}
	return refused(c, err)
}

func (h *HCA) xrcdFreeRes(c *Cmd) mlx4.Status {
	if c.OpMod != resOpReserve {
		return badOpMod(c)
	}
	return refused(c, h.Res.Free(c.VF, restrack.XRCD, uint64(lo32(c.InParam))))
}

// macVLANFreeRes is mac_free_res and vlan_free_res: the entry's reference
// in the tracker, then in the port's table.
func (h *HCA) macVLANFreeRes(c *Cmd) mlx4.Status {
	if c.OpMod != resOpReserveAndMap {
		return badOpMod(c)
	}
	ty := restrack.Type(c.InMod & mlx4.ResTypeMask)
	// mac_free_res takes the port from in_modifier or out_param,
	// vlan_free_res from in_modifier only (0 is no port: BAD_PARAM).
	phys, _ := h.resPort(c, ty == restrack.MAC)
	if phys == 0 {
		return c.Refuse(mlx4.BAD_PARAM, refusal.Port)
	}
	if ty == restrack.VLAN && h.fw.vfs[c.VF].OldVLAN {
		return mlx4.OK // vlan_free_res: a VF of the old API frees nothing
	}
	value, tab := c.InParam&mlx4.MLX4_MAC_MASK, h.fw.ports[phys-1].MAC[:]
	if ty == restrack.VLAN {
		value, tab = uint64(lo32(c.InParam)&mlx4.MLX4_VLAN_MASK), h.fw.ports[phys-1].VLAN[:]
	}
	idx, _, err := h.Res.DelMAC(c.VF, ty, phys, value)
	if err == nil {
		unregister(tab, idx)
	}
	return refused(c, err)
}
