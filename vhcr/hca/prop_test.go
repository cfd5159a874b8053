package hca

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestPropertyIsolation runs random command streams from several VFs,
// aimed as often at other VFs' object numbers as at their own, and checks
// after every command that
//   - a command naming another VF's object (as its target or inside its
//     context) failed;
//   - no other VF's objects, states, references, contexts, quota usage or
//     event map changed;
//
// and, after ResetFunction(vf) at random points, that every count of that
// VF is zero while the others are untouched.
func TestPropertyIsolation(t *testing.T) {
	steps := 600
	if testing.Short() {
		steps = 150
	}
	for seed := uint64(1); seed <= 4; seed++ {
		propRun(t, seed, steps)
	}
}

type propState struct {
	t     *testing.T
	r     *rig
	rnd   *rand.Rand
	vfs   []*vf
	ids   [restrack.NumTypes][]uint32 // every number ever handed out, any VF
	mtts  map[uint32]int              // MTT base → order
	rules []uint64                    // flow-steering rule ids ever returned
}

func propRun(t *testing.T, seed uint64, steps int) {
	const nvf = 3
	r := newRig(t, nvf, func(c *config.Config) {
		c.Ports[1].LinkLayer = "eth"
		c.Ports[1].LID = 0
	})
	r.h.SetDeviceManagedSteering(true)
	p := &propState{t: t, r: r, rnd: rand.New(rand.NewPCG(seed, 7)), mtts: map[uint32]int{}}
	for i := range nvf {
		v := r.vf(i)
		v.setupEQ(1, 6)
		p.vfs = append(p.vfs, v)
	}
	for step := range steps {
		vi := p.rnd.IntN(nvf)
		before := make([]string, nvf)
		for i := range nvf {
			before[i] = fingerprint(r.h, i)
		}
		if p.rnd.IntN(60) == 0 {
			r.h.ResetFunction(vi)
			if c := r.h.Counts(vi); c != ([restrack.NumTypes]int{}) {
				t.Fatalf("seed %d step %d: VF %d counts after reset %v", seed, step, vi, c)
			}
			for _, ty := range []restrack.Type{restrack.QP, restrack.CQ, restrack.SRQ, restrack.MPT, restrack.MTT, restrack.Counter, restrack.XRCD} {
				if n := r.h.Res.Allocated(vi, ty, 0); n != 0 {
					t.Fatalf("seed %d step %d: VF %d still charged %d %v", seed, step, vi, n, ty)
				}
			}
			v := r.vf(vi)
			v.page = p.vfs[vi].page // keep handing out fresh pages
			v.setupEQ(1, 6)
			p.vfs[vi] = v
			before[vi] = fingerprint(r.h, vi)
		} else {
			op, s, foreign := p.step(p.vfs[vi])
			if foreign && s == mlx4.OK {
				t.Fatalf("seed %d step %d: VF %d %v on another VF's object succeeded", seed, step, vi, op)
			}
		}
		for i := range nvf {
			if i != vi && fingerprint(r.h, i) != before[i] {
				t.Fatalf("seed %d step %d: VF %d's command changed VF %d:\n%s\n%s", seed, step, vi, i, before[i], fingerprint(r.h, i))
			}
		}
	}
}

// pick returns a number of type ty: usually one some VF got, sometimes a
// random one; and whether it belongs to a VF other than v.
func (p *propState) pick(v *vf, ty restrack.Type) (uint32, bool) {
	var own []uint32
	p.r.h.Res.Walk(v.n, func(o *restrack.Object) {
		if o.Type == ty {
			if ty == restrack.MPT {
				own = append(own, uint32(o.Index))
			} else {
				own = append(own, uint32(o.ID))
			}
		}
	})
	var n uint32
	switch k := p.rnd.IntN(20); {
	case k < 12 && len(own) > 0:
		n = own[p.rnd.IntN(len(own))]
	case k < 19 && len(p.ids[ty]) > 0:
		n = p.ids[ty][p.rnd.IntN(len(p.ids[ty]))]
	default:
		n = p.rnd.Uint32N(1 << 14)
	}
	id := uint64(n)
	if ty == restrack.MPT {
		id = p.r.h.Res.MPTID(n)
	}
	owner, err := p.r.h.Res.Owner(ty, id)
	return n, err == nil && owner != v.n
}

// ownIn picks one of v's objects of type ty in state st.
func (p *propState) ownIn(v *vf, ty restrack.Type, st restrack.State) (uint32, bool) {
	var c []uint32
	p.r.h.Res.Walk(v.n, func(o *restrack.Object) {
		if o.Type == ty && o.State == st {
			if ty == restrack.MPT {
				c = append(c, uint32(o.Index))
			} else {
				c = append(c, uint32(o.ID))
			}
		}
	})
	if len(c) == 0 {
		return 0, false
	}
	return c[p.rnd.IntN(len(c))], true
}

func (p *propState) note(ty restrack.Type, n uint32) { p.ids[ty] = append(p.ids[ty], n) }

func (p *propState) step(v *vf) (mlx4.Opcode, mlx4.Status, bool) {
	h := p.r.h
	run := v.run
	k := p.rnd.IntN(25)
	if k >= 21 {
		k = 0 // allocate more often than anything else
	}
	switch k {
	case 19: // flow-steering rule on anyone's QP (multicast: no MAC needed)
		qpn, f := p.pick(v, restrack.QP)
		rule := fsRule(1, qpn, mlx4.NET_TRANS_RULE_ID_ETH, 0x01005e000001)
		c := v.cmd(mlx4.QP_FLOW_STEERING_ATTACH, 0, uint32(len(rule)/4), 0, rule, false)
		s := run(c)
		if s == mlx4.OK {
			p.rules = append(p.rules, c.OutParam)
		}
		return mlx4.QP_FLOW_STEERING_ATTACH, s, f
	case 20:
		if len(p.rules) == 0 {
			return mlx4.NOP, mlx4.OK, false
		}
		id := p.rules[p.rnd.IntN(len(p.rules))]
		owner, err := h.Res.Owner(restrack.FSRule, id)
		c := v.cmd(mlx4.QP_FLOW_STEERING_DETACH, id, 0, 0, nil, false)
		return mlx4.QP_FLOW_STEERING_DETACH, run(c), err == nil && owner != v.n
	case 16: // a valid QP bring-up from the VF's own objects, when it has them
		qpn, ok1 := p.ownIn(v, restrack.QP, restrack.Mapped)
		cq, ok2 := p.ownIn(v, restrack.CQ, restrack.HW)
		mtt, ok3 := p.ownIn(v, restrack.MTT, restrack.Allocated)
		if !ok1 || !ok2 || !ok3 {
			return mlx4.NOP, mlx4.OK, false
		}
		q := qpc{st: mlx4.QP_ST_RC, scq: cq, rcq: cq, mtt: mtt, sqLog: 3, rqLog: 3}
		s := v.qpCmd(mlx4.RST2INIT_QP, qpn, &q)
		if s == mlx4.OK && p.rnd.IntN(2) == 0 {
			q.optpar = mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH
			v.qpCmd(mlx4.INIT2RTR_QP, qpn, &q)
			v.qpCmd(mlx4.RTR2RTS_QP, qpn, &q)
		}
		return mlx4.RST2INIT_QP, s, false
	case 17: // a valid SW2HW_CQ from own objects
		cq, ok1 := p.ownIn(v, restrack.CQ, restrack.Allocated)
		mtt, ok2 := p.ownIn(v, restrack.MTT, restrack.Allocated)
		if !ok1 || !ok2 {
			return mlx4.NOP, mlx4.OK, false
		}
		return mlx4.SW2HW_CQ, run(v.cmd(mlx4.SW2HW_CQ, 0, cq, 0, cqContext(7, 1, mtt), false)), false
	case 18: // map an own reserved QP or MPT
		ty := []restrack.Type{restrack.QP, restrack.MPT}[p.rnd.IntN(2)]
		n, ok := p.ownIn(v, ty, restrack.Reserved)
		if !ok {
			return mlx4.NOP, mlx4.OK, false
		}
		_, s := v.alloc(ty, resOpMapICM, uint64(n))
		return mlx4.ALLOC_RES, s, false
	case 0: // allocate something
		tys := []struct {
			ty restrack.Type
			op uint8
			in uint64
		}{
			{restrack.QP, resOpReserve, 1}, {restrack.CQ, resOpReserveAndMap, 0}, {restrack.SRQ, resOpReserveAndMap, 0},
			{restrack.MPT, resOpReserve, 0}, {restrack.MTT, resOpReserveAndMap, uint64(p.rnd.IntN(3))},
			{restrack.Counter, resOpReserve, 0}, {restrack.XRCD, resOpReserve, 0},
		}
		x := tys[p.rnd.IntN(len(tys))]
		n, s := v.alloc(x.ty, x.op, x.in)
		if s == mlx4.OK {
			p.note(x.ty, n)
			if x.ty == restrack.MTT {
				p.mtts[n] = int(x.in)
				ents := make([]uint64, 1<<x.in)
				for i := range ents {
					ents[i] = v.newPage()
				}
				v.must(v.writeMTT(uint64(n), ents), "WRITE_MTT")
			}
		}
		return mlx4.ALLOC_RES, s, false
	case 1: // map ICM of a QP or MPT
		ty := []restrack.Type{restrack.QP, restrack.MPT}[p.rnd.IntN(2)]
		n, foreign := p.pick(v, ty)
		_, s := v.alloc(ty, resOpMapICM, uint64(n))
		return mlx4.ALLOC_RES, s, foreign
	case 2: // free something
		ty := []restrack.Type{restrack.QP, restrack.CQ, restrack.SRQ, restrack.MPT, restrack.MTT, restrack.Counter, restrack.XRCD}[p.rnd.IntN(7)]
		n, foreign := p.pick(v, ty)
		in, op := uint64(n), uint8(resOpReserve)
		switch ty {
		case restrack.QP:
			in |= 1 << 32
			if p.rnd.IntN(2) == 0 {
				op = resOpMapICM
			}
		case restrack.CQ, restrack.SRQ:
			op = resOpReserveAndMap
		case restrack.MTT:
			op = resOpReserveAndMap
			in |= uint64(p.mtts[n]) << 32
		case restrack.MPT:
			if p.rnd.IntN(2) == 0 {
				op = resOpMapICM
			}
		}
		if ty == restrack.Counter && int(n) == h.Cfg.Resources.Counters-1 {
			foreign = false // the sink counter is nobody's
		}
		return mlx4.FREE_RES, v.free(ty, op, in), foreign
	case 3: // SW2HW_CQ
		cq, f1 := p.pick(v, restrack.CQ)
		mtt, f2 := p.pick(v, restrack.MTT)
		c := v.cmd(mlx4.SW2HW_CQ, 0, cq, 0, cqContext(7, 1, mtt), false)
		return mlx4.SW2HW_CQ, run(c), f1 || f2
	case 4: // HW2SW_CQ / QUERY_CQ / MODIFY_CQ
		cq, f := p.pick(v, restrack.CQ)
		switch p.rnd.IntN(3) {
		case 0:
			return mlx4.HW2SW_CQ, run(v.cmd(mlx4.HW2SW_CQ, 0, cq, 0, nil, false)), f
		case 1:
			return mlx4.QUERY_CQ, run(v.cmd(mlx4.QUERY_CQ, 0, cq, 0, nil, true)), f
		}
		mtt, f2 := p.pick(v, restrack.MTT)
		c := v.cmd(mlx4.MODIFY_CQ, 0, cq, 0, cqContext(7, 1, mtt), false)
		s := run(c)
		// MODIFY_CQ of an own CQ not in HW answers OK without looking at the context.
		if o, err := h.Res.Peek(v.n, restrack.CQ, uint64(cq)); err == nil && o.State != restrack.HW {
			f2 = false
		}
		return mlx4.MODIFY_CQ, s, f || f2
	case 5, 6: // RST2INIT with CQs, SRQ and MTT that may be anyone's
		qpn, f0 := p.pick(v, restrack.QP)
		scq, f1 := p.pick(v, restrack.CQ)
		rcq, f2 := p.pick(v, restrack.CQ)
		mtt, f3 := p.pick(v, restrack.MTT)
		q := qpc{st: mlx4.QP_ST_RC, scq: scq, rcq: rcq, mtt: mtt, sqLog: 3, rqLog: 3, pkey: uint8(p.rnd.IntN(3))}
		f4 := false
		if p.rnd.IntN(3) == 0 {
			q.useSRQ = true
			q.srq, f4 = p.pick(v, restrack.SRQ)
		}
		return mlx4.RST2INIT_QP, v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), f0 || f1 || f2 || f3 || f4
	case 7: // other QP commands
		qpn, f := p.pick(v, restrack.QP)
		ops := []mlx4.Opcode{mlx4.INIT2INIT_QP, mlx4.INIT2RTR_QP, mlx4.RTR2RTS_QP, mlx4.RTS2RTS_QP, mlx4.SQERR2RTS_QP,
			mlx4.TWO_ERR_QP, mlx4.RTS2SQD_QP, mlx4.SQD2SQD_QP, mlx4.SQD2RTS_QP, mlx4.TWO_RST_QP, mlx4.QUERY_QP,
			mlx4.SUSPEND_QP, mlx4.UNSUSPEND_QP}
		op := ops[p.rnd.IntN(len(ops))]
		var q *qpc
		if in, _ := mlx4.CmdInfo(op); in.HasInbox { // optpar + QP context
			q = &qpc{st: mlx4.QP_ST_RC, vfPort: 1 + p.rnd.IntN(2), optpar: mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH}
		}
		return op, v.qpCmd(op, qpn, q), f
	case 8: // SW2HW_MPT over anyone's MTT
		idx, f1 := p.pick(v, restrack.MPT)
		mtt, f2 := p.pick(v, restrack.MTT)
		size := uint32(1 << p.mtts[mtt])
		c := v.cmd(mlx4.SW2HW_MPT, 0, idx, 0, mptEntry(mlx4.MPT_FLAG_REGION, 0, mtt, size), false)
		return mlx4.SW2HW_MPT, run(c), f1 || f2
	case 9: // HW2SW_MPT / QUERY_MPT
		idx, f := p.pick(v, restrack.MPT)
		if p.rnd.IntN(2) == 0 {
			return mlx4.HW2SW_MPT, run(v.cmd(mlx4.HW2SW_MPT, 0, idx, 0, nil, false)), f
		}
		return mlx4.QUERY_MPT, run(v.cmd(mlx4.QUERY_MPT, 0, idx, 0, nil, true)), f
	case 10: // WRITE_MTT / READ_MTT anywhere
		mtt, f := p.pick(v, restrack.MTT)
		if p.rnd.IntN(2) == 0 {
			return mlx4.READ_MTT, run(v.cmd(mlx4.READ_MTT, uint64(mtt), 1, 0, nil, true)), f
		}
		in := make([]byte, 24)
		binary.BigEndian.PutUint64(in, uint64(mtt))
		binary.BigEndian.PutUint64(in[16:], 0x5000)
		return mlx4.WRITE_MTT, run(v.cmd(mlx4.WRITE_MTT, 0, 1, 0, in, false)), f
	case 11: // SRQ
		srq, f1 := p.pick(v, restrack.SRQ)
		switch p.rnd.IntN(4) {
		case 0:
			mtt, f2 := p.pick(v, restrack.MTT)
			c := v.cmd(mlx4.SW2HW_SRQ, 0, srq, 0, srqContext(srq, mtt), false)
			return mlx4.SW2HW_SRQ, run(c), f1 || f2
		case 1:
			return mlx4.HW2SW_SRQ, run(v.cmd(mlx4.HW2SW_SRQ, 0, srq, 0, nil, false)), f1
		case 2:
			return mlx4.ARM_SRQ, run(v.cmd(mlx4.ARM_SRQ, 9, srq, 0, nil, false)), f1
		}
		return mlx4.QUERY_SRQ, run(v.cmd(mlx4.QUERY_SRQ, 0, srq, 0, nil, true)), f1
	case 12: // QP_ATTACH / UPDATE_QP / PROMISC
		qpn, f := p.pick(v, restrack.QP)
		gid := make([]byte, 16)
		gid[15] = byte(p.rnd.IntN(4))
		switch p.rnd.IntN(3) {
		case 0:
			c := v.cmd(mlx4.QP_ATTACH, 0, qpn, uint8(p.rnd.IntN(2)), gid, false)
			return mlx4.QP_ATTACH, run(c), f
		case 1:
			in := make([]byte, 512)
			binary.BigEndian.PutUint64(in[mlx4.UpdQPPrimaryAddrPathMask:], updPathMaskMACIndex)
			return mlx4.UPDATE_QP, run(v.cmd(mlx4.UPDATE_QP, 0, qpn, 0, in, false)), f
		}
		c := v.cmd(mlx4.PROMISC, uint64(qpn)|1<<62, 1, 1, nil, false)
		return mlx4.PROMISC, run(c), f
	case 13: // counters
		cnt, f := p.pick(v, restrack.Counter)
		return mlx4.QUERY_IF_STAT, run(v.cmd(mlx4.QUERY_IF_STAT, 0, cnt, 0, nil, true)), f
	case 14: // EQs: per-function numbers, nobody else's by construction
		eqn := uint32(2 + p.rnd.IntN(3)) // EQ 1 (completions) stays
		switch p.rnd.IntN(3) {
		case 0:
			return mlx4.SW2HW_EQ, v.createEQ(int(eqn), 3), false
		case 1:
			return mlx4.HW2SW_EQ, run(v.cmd(mlx4.HW2SW_EQ, 0, eqn, 0, nil, false)), false
		}
		return mlx4.MAP_EQ, run(v.cmd(mlx4.MAP_EQ, 1<<mlx4.EventCmd, eqn, 0, nil, false)), false
	default: // MAC / VLAN
		ty := []restrack.Type{restrack.MAC, restrack.VLAN}[p.rnd.IntN(2)]
		val := uint64(p.rnd.IntN(4) + 2)
		c := v.cmd(mlx4.ALLOC_RES, val, uint32(ty)|uint32(1+p.rnd.IntN(2))<<8, resOpReserveAndMap, nil, false)
		if p.rnd.IntN(2) == 0 {
			c.Op = mlx4.FREE_RES
		}
		return c.Op, run(c), false
	}
}
