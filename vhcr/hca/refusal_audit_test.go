package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// auditCase is one refusal of the audit against Linux's PF (6.1): the VF
// input, the mlx4 function whose answer the model follows, the status a VF
// sees behind Linux's PF and why. run builds the state on a fresh rig and
// returns the command, which the test runs through Exec, the PF's entry.
// Rows marked "model:" are checks Linux does not make; they carry the
// status of Linux's nearest analogous check.
type auditCase struct {
	name  string
	linux string
	want  mlx4.Status
	why   string
	cfg   func(*config.Config)
	run   func(t *testing.T, r *rig) *Cmd
}

// qpC is a modify-QP command with context q (nil: no inbox).
func qpC(v *vf, op mlx4.Opcode, qpn uint32, q *qpc) *Cmd {
	var in []byte
	if q != nil {
		in = q.bytes()
	}
	return v.cmd(op, 0, qpn, 0, in, op == mlx4.QUERY_QP)
}

func allocC(v *vf, ty restrack.Type, op uint8, in uint64) *Cmd {
	return v.cmd(mlx4.ALLOC_RES, in, uint32(ty), op, nil, false)
}

func freeC(v *vf, ty restrack.Type, op uint8, in uint64) *Cmd {
	return v.cmd(mlx4.FREE_RES, in, uint32(ty), op, nil, false)
}

// qpInRTS takes a new RC QP of v to RTS.
func qpInRTS(t *testing.T, v *vf) (uint32, qpc) {
	_, qpn, q := setupQP(t, v)
	v.must(v.qpCmd(mlx4.INIT2RTR_QP, qpn, &q), "INIT2RTR")
	v.must(v.qpCmd(mlx4.RTR2RTS_QP, qpn, &q), "RTR2RTS")
	return qpn, q
}

// newMPT reserves an MPT and maps its ICM.
func newMPT(v *vf) uint32 {
	idx := v.mustAlloc(restrack.MPT, resOpReserve, 0)
	v.mustAlloc(restrack.MPT, resOpMapICM, uint64(idx))
	return idx
}

func registerMAC(v *vf, mac uint64, vport uint32) uint8 {
	c := v.cmd(mlx4.ALLOC_RES, mac, uint32(restrack.MAC)|vport<<8, resOpReserveAndMap, nil, false)
	v.must(v.run(c), "ALLOC_RES MAC")
	return uint8(c.OutParam)
}

func quotas(name string, q, g int) func(*config.Config) {
	return func(c *config.Config) {
		c.VFs.Default.Quotas = map[string]config.Quota{name: {Quota: intp(q), Guaranteed: intp(g)}}
	}
}

func onePortVF0(c *config.Config) { c.VFs.Overrides = map[string]config.VF{"0": {Ports: []int{1}}} }
func ethPort1(c *config.Config)   { c.Ports[0].LinkLayer = "eth" }

func attachMAD(t *testing.T, r *rig) {
	e, err := mad.New(MADNode(r.h.Cfg), mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.h.AttachMAD(e); err != nil {
		t.Fatal(err)
	}
}

func madC(v *vf, m *mad.MAD, opMod uint8, port uint32) *Cmd {
	return v.cmd(mlx4.MAD_IFC, 0, port, opMod, m[:], true)
}

func mcgGID() []byte {
	g := make([]byte, 16)
	g[0] = 0xff
	return g
}

const rt = "resource_tracker.c "

var auditCases = []auditCase{
	// ALLOC_RES
	{"ALLOC_RES QP RESERVE of 0xffffff QPs", rt + "qp_alloc_res / mlx4_grant_resource", mlx4.INTERNAL_ERR,
		"the quota is granted before the range is reserved: -EDQUOT", nil,
		func(t *testing.T, r *rig) *Cmd {
			return allocC(r.vf(0), restrack.QP, resOpReserve, 0xffffff)
		}},
	{"ALLOC_RES QP RESERVE aligned 3", rt + "qp_alloc_res / __mlx4_qp_reserve_range", mlx4.EXCEED_LIM,
		"granted, then the allocator cannot serve the alignment: -ENOMEM", nil,
		func(t *testing.T, r *rig) *Cmd {
			return allocC(r.vf(0), restrack.QP, resOpReserve, 3<<32|2)
		}},
	{"ALLOC_RES QP RESERVE of 0 QPs", rt + "qp_alloc_res / __mlx4_qp_reserve_range", mlx4.EXCEED_LIM,
		"model: mlx4 answers OK and reserves nothing; the model refuses as the allocator's -ENOMEM", nil,
		func(t *testing.T, r *rig) *Cmd { return allocC(r.vf(0), restrack.QP, resOpReserve, 0) }},
	{"ALLOC_RES MTT order 25", rt + "mtt_alloc_res / mlx4_grant_resource", mlx4.INTERNAL_ERR,
		"2^25 entries exceed the quota before the order is looked at: -EDQUOT", nil,
		func(t *testing.T, r *rig) *Cmd {
			return allocC(r.vf(0), restrack.MTT, resOpReserveAndMap, 25)
		}},
	{"ALLOC_RES MTT order 40", rt + "mtt_alloc_res / __mlx4_alloc_mtt_range", mlx4.EXCEED_LIM,
		"1 << 40 is undefined in mlx4's int; the buddy allocator fails: -ENOMEM", nil,
		func(t *testing.T, r *rig) *Cmd {
			return allocC(r.vf(0), restrack.MTT, resOpReserveAndMap, 40)
		}},
	{"ALLOC_RES MTT with op RESERVE", rt + "mtt_alloc_res", mlx4.BAD_PARAM, "only RESERVE_AND_MAP: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd { return allocC(r.vf(0), restrack.MTT, resOpReserve, 0) }},
	{"ALLOC_RES of type EQ", rt + "mlx4_ALLOC_RES_wrapper", mlx4.BAD_PARAM, "default case: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd { return allocC(r.vf(0), restrack.EQ, resOpReserve, 0) }},
	{"ALLOC_RES CQ with op RESERVE", rt + "cq_alloc_res", mlx4.BAD_PARAM, "only RESERVE_AND_MAP: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd { return allocC(r.vf(0), restrack.CQ, resOpReserve, 0) }},
	{"ALLOC_RES counter with op RESERVE_AND_MAP", rt + "counter_alloc_res", mlx4.BAD_PARAM, "only RESERVE: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			return allocC(r.vf(0), restrack.Counter, resOpReserveAndMap, 0)
		}},
	{"ALLOC_RES CQ beyond the quota", rt + "cq_alloc_res / mlx4_grant_resource", mlx4.INTERNAL_ERR, "-EDQUOT",
		quotas("cq", 1, 0),
		func(t *testing.T, r *rig) *Cmd {
			r.vf(0).mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
			return allocC(r.vf(0), restrack.CQ, resOpReserveAndMap, 0)
		}},
	{"ALLOC_RES MAC beyond the quota", rt + "mac_add_to_slave", mlx4.BAD_PARAM,
		"a failed grant is returned as -EINVAL", quotas("mac", 1, 0),
		func(t *testing.T, r *rig) *Cmd {
			registerMAC(r.vf(0), 0x0002c9000001, 1)
			c := allocC(r.vf(0), restrack.MAC, resOpReserveAndMap, 0x0002c9000002)
			c.InMod |= 1 << 8
			return c
		}},
	{"ALLOC_RES MAC on VF port 3", rt + "mac_alloc_res / mlx4_slave_convert_port", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			c := allocC(r.vf(0), restrack.MAC, resOpReserveAndMap, 0x0002c9000001)
			c.InMod |= 3 << 8
			return c
		}},
	{"ALLOC_RES MAC old API, out_param 0x101", rt + "mac_alloc_res (get_param_l)", mlx4.BAD_PARAM,
		"the whole low word is the port: 257 is no port", nil,
		func(t *testing.T, r *rig) *Cmd {
			c := allocC(r.vf(0), restrack.MAC, resOpReserveAndMap, 0x0002c9000001)
			c.OutParam = 0x101
			return c
		}},
	{"ALLOC_RES VLAN without any port", rt + "vlan_alloc_res", mlx4.BAD_PARAM, "!port: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			return allocC(r.vf(0), restrack.VLAN, resOpReserveAndMap, 5)
		}},
	{"ALLOC_RES VLAN old API (port in out_param)", rt + "vlan_alloc_res", mlx4.OK, "a no-op success", nil,
		func(t *testing.T, r *rig) *Cmd {
			c := allocC(r.vf(0), restrack.VLAN, resOpReserveAndMap, 5)
			c.OutParam = 1
			return c
		}},
	{"ALLOC_RES QP MAP_ICM of another VF's QP", rt + "qp_res_start_move_to", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			qpn := r.vf(1).mustAlloc(restrack.QP, resOpReserve, 1)
			return allocC(r.vf(0), restrack.QP, resOpMapICM, uint64(qpn))
		}},
	{"ALLOC_RES QP MAP_ICM of an unknown QP", rt + "qp_res_start_move_to", mlx4.INTERNAL_ERR, "-ENOENT", nil,
		func(t *testing.T, r *rig) *Cmd { return allocC(r.vf(0), restrack.QP, resOpMapICM, 0x3fff) }},
	{"ALLOC_RES QP MAP_ICM twice", rt + "qp_res_start_move_to", mlx4.BAD_PARAM, "MAPPED → MAPPED: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			qpn := v.mustAlloc(restrack.QP, resOpReserve, 1)
			v.mustAlloc(restrack.QP, resOpMapICM, uint64(qpn))
			return allocC(v, restrack.QP, resOpMapICM, uint64(qpn))
		}},
	{"ALLOC_RES QP MAP_ICM of a special QP mapped twice", rt + "qp_alloc_res / add_res_range", mlx4.INTERNAL_ERR,
		"valid_reserved: tracked again: -EEXIST", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.mustAlloc(restrack.QP, resOpMapICM, BaseProxySQPN+8)
			return allocC(v, restrack.QP, resOpMapICM, BaseProxySQPN+8)
		}},
	{"ALLOC_RES MPT MAP_ICM twice", rt + "mr_res_start_move_to", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			idx := newMPT(r.vf(0))
			return allocC(r.vf(0), restrack.MPT, resOpMapICM, uint64(idx))
		}},
	{"ALLOC_RES XRCD beyond the model's quota", rt + "xrcdn_alloc_res; mlx4_grant_resource", mlx4.INTERNAL_ERR,
		"model: mlx4 has no XRCD quota; the model's is refused as mlx4's quotas (-EDQUOT)", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			for range 1 << 16 {
				if _, s := v.alloc(restrack.XRCD, resOpReserve, 0); s != mlx4.OK {
					break
				}
			}
			return allocC(v, restrack.XRCD, resOpReserve, 0)
		}},

	// FREE_RES
	{"FREE_RES QP RESERVE of a mapped QP", rt + "rem_res_range / remove_qp_ok", mlx4.BAD_OP, "not RESERVED: -EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			qpn := v.mustAlloc(restrack.QP, resOpReserve, 1)
			v.mustAlloc(restrack.QP, resOpMapICM, uint64(qpn))
			return freeC(v, restrack.QP, resOpReserve, 1<<32|uint64(qpn))
		}},
	{"FREE_RES QP RESERVE of a QP still attached", rt + "rem_res_range / remove_qp_ok", mlx4.RESOURCE_BUSY,
		"mcg_list not empty: -EBUSY", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			qpn := v.mustAlloc(restrack.QP, resOpReserve, 1)
			v.must(v.run(v.cmd(mlx4.QP_ATTACH, 0, qpn, 1, mcgGID(), false)), "attach")
			return freeC(v, restrack.QP, resOpReserve, 1<<32|uint64(qpn))
		}},
	{"FREE_RES QP RESERVE of 0 QPs", rt + "qp_free_res / rem_res_range", mlx4.OK, "an empty range: nothing to refuse", nil,
		func(t *testing.T, r *rig) *Cmd { return freeC(r.vf(0), restrack.QP, resOpReserve, 0x3fff) }},
	{"FREE_RES QP RESERVE past the VF's range", rt + "rem_res_range", mlx4.INTERNAL_ERR,
		"the first number not tracked: -ENOENT", nil,
		func(t *testing.T, r *rig) *Cmd {
			qpn := r.vf(0).mustAlloc(restrack.QP, resOpReserve, 1)
			return freeC(r.vf(0), restrack.QP, resOpReserve, 0x7fffffff<<32|uint64(qpn))
		}},
	{"FREE_RES QP RESERVE of a negative count", rt + "qp_free_res", mlx4.BAD_PARAM,
		"model: mlx4 releases a negative quota; the model refuses as a bad parameter", nil,
		func(t *testing.T, r *rig) *Cmd {
			qpn := r.vf(0).mustAlloc(restrack.QP, resOpReserve, 1)
			return freeC(r.vf(0), restrack.QP, resOpReserve, 0xffffffff<<32|uint64(qpn))
		}},
	{"FREE_RES QP RESERVE of a special QP", rt + "remove_qp_ok", mlx4.BAD_OP,
		"model: mlx4 would release quota never granted; not removable (-EPERM)", nil,
		func(t *testing.T, r *rig) *Cmd {
			r.vf(0).mustAlloc(restrack.QP, resOpMapICM, BaseProxySQPN+8)
			return freeC(r.vf(0), restrack.QP, resOpReserve, 1<<32|(BaseProxySQPN+8))
		}},
	{"FREE_RES QP MAP_ICM of a QP in HW", rt + "qp_res_start_move_to", mlx4.BAD_PARAM, "HW → RESERVED: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			_, qpn, _ := setupQP(t, r.vf(0))
			return freeC(r.vf(0), restrack.QP, resOpMapICM, uint64(qpn))
		}},
	{"FREE_RES MTT of the wrong order", rt + "remove_mtt_ok", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			base := r.vf(0).mtt(2)
			return freeC(r.vf(0), restrack.MTT, resOpReserveAndMap, 3<<32|uint64(base))
		}},
	{"FREE_RES MTT a CQ uses", rt + "remove_mtt_ok", mlx4.RESOURCE_BUSY, "ref_count: -EBUSY", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			cqn := v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
			base := v.mtt(0, v.newPage())
			v.must(v.run(v.cmd(mlx4.SW2HW_CQ, 0, cqn, 0, cqContext(7, 1, base), false)), "SW2HW_CQ")
			return freeC(v, restrack.MTT, resOpReserveAndMap, uint64(base))
		}},
	{"FREE_RES MTT of another VF", rt + "rem_res_range", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			base := r.vf(1).mtt(0)
			return freeC(r.vf(0), restrack.MTT, resOpReserveAndMap, uint64(base))
		}},
	{"FREE_RES CQ in HW", rt + "remove_cq_ok", mlx4.BAD_OP, "not ALLOCATED: -EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			return freeC(v, restrack.CQ, resOpReserveAndMap, uint64(v.createCQ()))
		}},
	{"FREE_RES unknown CQ", rt + "rem_res_range", mlx4.INTERNAL_ERR, "-ENOENT", nil,
		func(t *testing.T, r *rig) *Cmd {
			return freeC(r.vf(0), restrack.CQ, resOpReserveAndMap, 0x3ff)
		}},
	{"FREE_RES MPT still mapped", rt + "mpt_free_res / remove_mpt_ok", mlx4.BAD_OP, "not RESERVED: -EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			return freeC(r.vf(0), restrack.MPT, resOpReserve, uint64(newMPT(r.vf(0))))
		}},
	{"FREE_RES MAC the VF never registered", rt + "mac_free_res / mac_del_from_slave", mlx4.INTERNAL_ERR,
		"model: mlx4 unregisters it anyway (answers OK); the model refuses as get_res's -ENONET", nil,
		func(t *testing.T, r *rig) *Cmd {
			registerMAC(r.vf(1), 0x0002c9000001, 1)
			c := freeC(r.vf(0), restrack.MAC, resOpReserveAndMap, 0x0002c9000001)
			c.InMod |= 1 << 8
			return c
		}},
	{"FREE_RES VLAN with the old API", rt + "vlan_free_res / mlx4_slave_convert_port", mlx4.BAD_PARAM,
		"the port is in_modifier's alone; 0: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			c := freeC(r.vf(0), restrack.VLAN, resOpReserveAndMap, 5)
			c.OutParam = 1
			return c
		}},
	{"FREE_RES VLAN never registered, after the old API", rt + "vlan_free_res", mlx4.OK,
		"old_vlan_api: the free is a no-op success", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			c := allocC(v, restrack.VLAN, resOpReserveAndMap, 5)
			c.OutParam = 1
			v.must(v.run(c), "VLAN old API")
			c = freeC(v, restrack.VLAN, resOpReserveAndMap, 5)
			c.InMod |= 1 << 8
			return c
		}},
	{"FREE_RES VLAN never registered", rt + "vlan_free_res / vlan_del_from_slave", mlx4.INTERNAL_ERR,
		"model: mlx4 unregisters it anyway (answers OK); the model refuses as get_res's -ENONET", nil,
		func(t *testing.T, r *rig) *Cmd {
			c := freeC(r.vf(0), restrack.VLAN, resOpReserveAndMap, 5)
			c.InMod |= 1 << 8
			return c
		}},
	{"FREE_RES counter of another VF", rt + "rem_res_range", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			cnt := r.vf(1).mustAlloc(restrack.Counter, resOpReserve, 0)
			return freeC(r.vf(0), restrack.Counter, resOpReserve, uint64(cnt))
		}},
	{"FREE_RES the sink counter", rt + "counter_free_res", mlx4.OK, "the sink index is a no-op", nil,
		func(t *testing.T, r *rig) *Cmd {
			return freeC(r.vf(0), restrack.Counter, resOpReserve, uint64(r.h.Cfg.Resources.Counters-1))
		}},

	// MTTs and MPTs
	{"WRITE_MTT past the end of the VF's allocation", rt + "mlx4_WRITE_MTT_wrapper / get_containing_mtt", mlx4.BAD_PARAM,
		"no MTT of the VF contains the range: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			base := r.vf(0).mtt(2)
			in := make([]byte, 16+8*3)
			binary.BigEndian.PutUint64(in, uint64(base)+2)
			return r.vf(0).cmd(mlx4.WRITE_MTT, 0, 3, 0, in, false)
		}},
	{"WRITE_MTT into another VF's MTTs", rt + "mlx4_WRITE_MTT_wrapper / get_containing_mtt", mlx4.BAD_PARAM,
		"only the VF's own MTTs are searched: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			base := r.vf(1).mtt(2)
			in := make([]byte, 24)
			binary.BigEndian.PutUint64(in, uint64(base))
			return r.vf(0).cmd(mlx4.WRITE_MTT, 0, 1, 0, in, false)
		}},
	{"WRITE_MTT of 511 entries", rt + "mlx4_WRITE_MTT_wrapper", mlx4.BAD_PARAM,
		"model: mlx4 reads past the mailbox; the model refuses as get_containing_mtt's -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			base := r.vf(0).mtt(10)
			in := make([]byte, 16)
			binary.BigEndian.PutUint64(in, uint64(base))
			return r.vf(0).cmd(mlx4.WRITE_MTT, 0, 511, 0, in, false)
		}},
	{"READ_MTT of another VF's MTTs", "cmd.c cmd_info[] READ_MTT (native)", mlx4.BAD_PARAM,
		"model: native in mlx4; the model reads the VF's own MTTs only, refused as get_containing_mtt", nil,
		func(t *testing.T, r *rig) *Cmd {
			base := r.vf(1).mtt(0)
			return r.vf(0).cmd(mlx4.READ_MTT, uint64(base), 1, 0, nil, true)
		}},
	{"SW2HW_MPT of a memory window", rt + "mlx4_SW2HW_MPT_wrapper", mlx4.BAD_OP, "not a region: -EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			idx := newMPT(v)
			return v.cmd(mlx4.SW2HW_MPT, 0, idx, 0, mptEntry(0, 5, v.mtt(2), 4), false)
		}},
	{"SW2HW_MPT with another function's PD", rt + "mlx4_SW2HW_MPT_wrapper", mlx4.BAD_OP, "PD slave bits: -EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			idx := newMPT(v)
			return v.cmd(mlx4.SW2HW_MPT, 0, idx, 0, mptEntry(mlx4.MPT_FLAG_REGION, 3<<17|5, v.mtt(2), 4), false)
		}},
	{"SW2HW_MPT fast-reg with bind enable", rt + "mlx4_SW2HW_MPT_wrapper", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			idx := newMPT(v)
			e := mptEntry(mlx4.MPT_FLAG_REGION|mlx4.MPT_FLAG_BIND_ENABLE, mlx4.MPT_PD_FLAG_FAST_REG|5, v.mtt(2), 4)
			return v.cmd(mlx4.SW2HW_MPT, 0, idx, 0, e, false)
		}},
	{"SW2HW_MPT over another VF's MTT", rt + "mlx4_SW2HW_MPT_wrapper / get_res", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			idx := newMPT(v)
			return v.cmd(mlx4.SW2HW_MPT, 0, idx, 0, mptEntry(mlx4.MPT_FLAG_REGION, 5, r.vf(1).mtt(2), 4), false)
		}},
	{"SW2HW_MPT beyond its MTT", rt + "check_mtt_range", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			idx := newMPT(v)
			return v.cmd(mlx4.SW2HW_MPT, 0, idx, 0, mptEntry(mlx4.MPT_FLAG_REGION, 5, v.mtt(2), 5), false)
		}},
	{"SW2HW_MPT of 2^31 entries of an unknown MTT", rt + "mlx4_SW2HW_MPT_wrapper / get_res", mlx4.INTERNAL_ERR,
		"the MTT is looked up before its size is checked: -ENONET", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			idx := newMPT(v)
			return v.cmd(mlx4.SW2HW_MPT, 0, idx, 0, mptEntry(mlx4.MPT_FLAG_REGION, 5, v.mtt(2)+1, 1<<31), false)
		}},
	{"SW2HW_MPT of 2^31 entries", rt + "check_mtt_range", mlx4.BAD_OP,
		"model: mlx4's int size is negative and passes; the model's range check fails (-EPERM)", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			idx := newMPT(v)
			return v.cmd(mlx4.SW2HW_MPT, 0, idx, 0, mptEntry(mlx4.MPT_FLAG_REGION, 5, v.mtt(2), 1<<31), false)
		}},
	{"SW2HW_MPT of an MPT not mapped", rt + "mr_res_start_move_to", mlx4.BAD_PARAM, "RESERVED → HW: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			idx := v.mustAlloc(restrack.MPT, resOpReserve, 0)
			return v.cmd(mlx4.SW2HW_MPT, 0, idx, 0, mptEntry(mlx4.MPT_FLAG_REGION, 5, v.mtt(2), 4), false)
		}},
	{"HW2SW_MPT of an MPT in SW", rt + "mr_res_start_move_to", mlx4.BAD_PARAM, "MAPPED → MAPPED: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.HW2SW_MPT, 0, newMPT(r.vf(0)), 0, nil, false)
		}},
	{"HW2SW_MPT of a RESERVED MPT", rt + "mlx4_HW2SW_MPT_wrapper (firmware)", mlx4.INTERNAL_ERR,
		"the tracker allows RESERVED → MAPPED; the firmware's BAD_RES_STATE is -EBADF", nil,
		func(t *testing.T, r *rig) *Cmd {
			idx := r.vf(0).mustAlloc(restrack.MPT, resOpReserve, 0)
			return r.vf(0).cmd(mlx4.HW2SW_MPT, 0, idx, 0, nil, false)
		}},
	{"QUERY_MPT of a RESERVED MPT", rt + "mlx4_QUERY_MPT_wrapper", mlx4.RESOURCE_BUSY, "neither MAPPED nor HW: -EBUSY", nil,
		func(t *testing.T, r *rig) *Cmd {
			idx := r.vf(0).mustAlloc(restrack.MPT, resOpReserve, 0)
			return r.vf(0).cmd(mlx4.QUERY_MPT, 0, idx, 0, nil, true)
		}},

	// CQs and SRQs
	{"SW2HW_CQ of another VF's CQ", rt + "cq_res_start_move_to", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			cqn := r.vf(1).mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
			v := r.vf(0)
			return v.cmd(mlx4.SW2HW_CQ, 0, cqn, 0, cqContext(7, 1, v.mtt(0)), false)
		}},
	{"SW2HW_CQ of a CQ in HW", rt + "cq_res_start_move_to", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			cqn := v.createCQ()
			return v.cmd(mlx4.SW2HW_CQ, 0, cqn, 0, cqContext(7, 1, v.mtt(0)), false)
		}},
	{"SW2HW_CQ over an MTT that is no allocation's base", rt + "mlx4_SW2HW_CQ_wrapper / get_res", mlx4.INTERNAL_ERR,
		"-ENONET", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			cqn := v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
			return v.cmd(mlx4.SW2HW_CQ, 0, cqn, 0, cqContext(7, 1, v.mtt(2)+1), false)
		}},
	{"SW2HW_CQ beyond its MTT", rt + "check_mtt_range", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			cqn := v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
			return v.cmd(mlx4.SW2HW_CQ, 0, cqn, 0, cqContext(10, 1, v.mtt(0)), false)
		}},
	{"SW2HW_CQ with an EQ the VF does not have", rt + "mlx4_SW2HW_CQ_wrapper", mlx4.BAD_PARAM,
		"model: comp_eqn is not checked by mlx4; refused as QUERY_EQ's EQ not in HW (-EINVAL)", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			r.vf(1).setupEQ(1, 4)
			cqn := v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
			return v.cmd(mlx4.SW2HW_CQ, 0, cqn, 0, cqContext(7, 1, v.mtt(0, v.newPage())), false)
		}},
	{"HW2SW_CQ of a CQ a QP uses", rt + "cq_res_start_move_to", mlx4.RESOURCE_BUSY, "ref_count: -EBUSY", nil,
		func(t *testing.T, r *rig) *Cmd {
			cq, _, _ := setupQP(t, r.vf(0))
			return r.vf(0).cmd(mlx4.HW2SW_CQ, 0, cq, 0, nil, false)
		}},
	{"HW2SW_CQ of a CQ not in HW", rt + "cq_res_start_move_to", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			cqn := r.vf(0).mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
			return r.vf(0).cmd(mlx4.HW2SW_CQ, 0, cqn, 0, nil, false)
		}},
	{"QUERY_CQ of a CQ not in HW", rt + "mlx4_QUERY_CQ_wrapper", mlx4.OK, "success without executing", nil,
		func(t *testing.T, r *rig) *Cmd {
			cqn := r.vf(0).mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
			return r.vf(0).cmd(mlx4.QUERY_CQ, 0, cqn, 0, nil, true)
		}},
	{"MODIFY_CQ resize into its own MTT", rt + "handle_resize", mlx4.RESOURCE_BUSY,
		"the CQ's MTT is held busy while the new one is taken: -EBUSY", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			cqn := v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
			base := v.mtt(0, v.newPage())
			v.must(v.run(v.cmd(mlx4.SW2HW_CQ, 0, cqn, 0, cqContext(7, 1, base), false)), "SW2HW_CQ")
			return v.cmd(mlx4.MODIFY_CQ, 0, cqn, 0, cqContext(7, 1, base), false)
		}},
	{"MODIFY_CQ resize beyond the new MTT", rt + "handle_resize / check_mtt_range", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			cqn := v.createCQ()
			return v.cmd(mlx4.MODIFY_CQ, 0, cqn, 0, cqContext(10, 1, v.mtt(0)), false)
		}},
	{"SW2HW_SRQ with in_modifier not the context's SRQN", rt + "mlx4_SW2HW_SRQ_wrapper", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			srqn := v.mustAlloc(restrack.SRQ, resOpReserveAndMap, 0)
			return v.cmd(mlx4.SW2HW_SRQ, 0, srqn, 0, srqContext(srqn+1, v.mtt(0)), false)
		}},
	{"QUERY_SRQ of an SRQ not in HW", rt + "mlx4_QUERY_SRQ_wrapper", mlx4.RESOURCE_BUSY, "-EBUSY", nil,
		func(t *testing.T, r *rig) *Cmd {
			srqn := r.vf(0).mustAlloc(restrack.SRQ, resOpReserveAndMap, 0)
			return r.vf(0).cmd(mlx4.QUERY_SRQ, 0, srqn, 0, nil, true)
		}},
	{"HW2SW_SRQ of another VF's SRQ", rt + "srq_res_start_move_to", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			srqn := r.vf(1).mustAlloc(restrack.SRQ, resOpReserveAndMap, 0)
			return r.vf(0).cmd(mlx4.HW2SW_SRQ, 0, srqn, 0, nil, false)
		}},
	{"ARM_SRQ of an SRQ not in HW", rt + "mlx4_ARM_SRQ_wrapper", mlx4.RESOURCE_BUSY, "-EBUSY", nil,
		func(t *testing.T, r *rig) *Cmd {
			srqn := r.vf(0).mustAlloc(restrack.SRQ, resOpReserveAndMap, 0)
			return r.vf(0).cmd(mlx4.ARM_SRQ, 1, srqn, 0, nil, false)
		}},

	// EQs
	{"SW2HW_EQ of an existing EQN with a bad context", rt + "mlx4_SW2HW_EQ_wrapper / add_res_range", mlx4.INTERNAL_ERR,
		"tracking comes before the firmware sees the context: -EEXIST", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			return v.cmd(mlx4.SW2HW_EQ, 0, 1, 0, eqContext(17, v.mtt(0, v.newPage())), false)
		}},
	{"SW2HW_EQ over another VF's MTT", rt + "mlx4_SW2HW_EQ_wrapper / get_res", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			b := r.vf(1)
			return r.vf(0).cmd(mlx4.SW2HW_EQ, 0, 2, 0, eqContext(4, b.mtt(0, b.newPage())), false)
		}},
	{"SW2HW_EQ of 2^17 entries", rt + "mlx4_SW2HW_EQ_wrapper (firmware)", mlx4.BAD_PARAM,
		"model: the firmware's check of the context, after the wrapper's", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			return v.cmd(mlx4.SW2HW_EQ, 0, 2, 0, eqContext(17, v.mtt(10)), false)
		}},
	{"SW2HW_EQ over MTT entries never written", rt + "mlx4_SW2HW_EQ_wrapper (firmware)", mlx4.BAD_PARAM,
		"model: the ring's pages must be written MTT entries inside the VF's window", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			return v.cmd(mlx4.SW2HW_EQ, 0, 2, 0, eqContext(4, v.mtt(0)), false)
		}},
	{"SW2HW_EQ EQN 1024", rt + "mlx4_SW2HW_EQ_wrapper", mlx4.BAD_PARAM,
		"model: mlx4 does not bound the EQN (res_id slave << 10 | eqn)", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			return v.cmd(mlx4.SW2HW_EQ, 0, 1024, 0, eqContext(4, v.mtt(0, v.newPage())), false)
		}},
	{"HW2SW_EQ of an unknown EQ", rt + "eq_res_start_move_to", mlx4.INTERNAL_ERR, "-ENOENT", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.HW2SW_EQ, 0, 5, 0, nil, false)
		}},
	{"QUERY_EQ of an unknown EQ", rt + "mlx4_QUERY_EQ_wrapper / get_res", mlx4.INTERNAL_ERR, "-ENONET", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.QUERY_EQ, 0, 5, 0, nil, true)
		}},
	{"MAP_EQ to an EQ the VF does not have", "eq.c mlx4_MAP_EQ_wrapper", mlx4.BAD_PARAM,
		"model: mlx4 records any EQN; refused as QUERY_EQ's EQ not in HW (-EINVAL)", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.MAP_EQ, 1, 3, 0, nil, false)
		}},

	// QPs
	{"INIT2RTR of an unknown QP on a port the VF lacks", rt + "mlx4_INIT2RTR_QP_wrapper / adjust_qp_sched_queue",
		mlx4.BAD_PARAM, "the port is converted before the QP is looked up: -EINVAL", onePortVF0,
		func(t *testing.T, r *rig) *Cmd {
			return qpC(r.vf(0), mlx4.INIT2RTR_QP, 0x3fff, &qpc{st: mlx4.QP_ST_RC, vfPort: 2})
		}},
	{"INIT2RTR of a QP in reset", rt + "mlx4_INIT2RTR_QP_wrapper", mlx4.RESOURCE_BUSY, "not in HW: -EBUSY", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			qpn, q := v.newQP(v.createCQ())
			return qpC(v, mlx4.INIT2RTR_QP, qpn, &q)
		}},
	{"INIT2RTR of a QP in reset with a rate limit", rt + "verify_qp_parameters", mlx4.BAD_OP,
		"the context is verified before the QP is looked up: -EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			qpn, q := v.newQP(v.createCQ())
			q.rateLimit = 1
			return qpC(v, mlx4.INIT2RTR_QP, qpn, &q)
		}},
	{"INIT2RTR with a GID index beyond the VF's", rt + "verify_qp_parameters", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			_, qpn, q := setupQP(t, r.vf(0))
			q.optpar, q.mgid = mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH, 1
			return qpC(r.vf(0), mlx4.INIT2RTR_QP, qpn, &q)
		}},
	{"INIT2RTR of an MLX proxy QP without SMI", rt + "verify_qp_parameters", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			cq := v.createCQ()
			qpn := uint32(BaseProxySQPN + 8)
			v.mustAlloc(restrack.QP, resOpMapICM, uint64(qpn))
			q := qpc{st: mlx4.QP_ST_MLX, scq: cq, rcq: cq, mtt: v.mtt(0, v.newPage()), sqLog: 3, rqLog: 3}
			v.must(v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), "RST2INIT")
			return qpC(v, mlx4.INIT2RTR_QP, qpn, &q)
		}},
	{"INIT2RTR of a RoCE UD QP with a MAC index the VF did not register", rt + "roce_verify_mac",
		mlx4.BAD_PARAM, "every Ethernet QP but MLX: -EINVAL", ethPort1,
		func(t *testing.T, r *rig) *Cmd {
			_, qpn, q := setupQP(t, r.vf(0))
			q.st, q.smac = mlx4.QP_ST_UD, 5
			return qpC(r.vf(0), mlx4.INIT2RTR_QP, qpn, &q)
		}},
	{"INIT2RTR with a P_Key index beyond the VF's table", rt + "update_pkey_index", mlx4.BAD_PARAM,
		"model: mlx4 indexes virt2phys_pkey unbounded; refused as the GID index bound (-EINVAL)", nil,
		func(t *testing.T, r *rig) *Cmd {
			_, qpn, q := setupQP(t, r.vf(0))
			q.pkey = 200
			return qpC(r.vf(0), mlx4.INIT2RTR_QP, qpn, &q)
		}},
	{"INIT2RTR with another VF's counter", rt + "handle_existing_counter", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			cnt := r.vf(1).mustAlloc(restrack.Counter, resOpReserve, 0)
			_, qpn, q := setupQP(t, r.vf(0))
			c := qpC(r.vf(0), mlx4.INIT2RTR_QP, qpn, &q)
			c.Inbox[mlx4.QPMailboxPriPath+mlx4.PathCounterIndex] = byte(cnt)
			return c
		}},
	{"INIT2RTR of an RTS QP", "firmware via mlx4_DMA_wrapper", mlx4.BAD_PARAM,
		"BAD_QP_STATE → -EINVAL → BAD_PARAM, after every wrapper check", nil,
		func(t *testing.T, r *rig) *Cmd {
			qpn, q := qpInRTS(t, r.vf(0))
			return qpC(r.vf(0), mlx4.INIT2RTR_QP, qpn, &q)
		}},
	{"INIT2INIT on a port the VF lacks", rt + "mlx4_INIT2INIT_QP_wrapper", mlx4.BAD_PARAM,
		"model: mlx4 converts no port in INIT2INIT; refused as adjust_qp_sched_queue (-EINVAL)", onePortVF0,
		func(t *testing.T, r *rig) *Cmd {
			_, qpn, q := setupQP(t, r.vf(0))
			q.vfPort = 2
			return qpC(r.vf(0), mlx4.INIT2INIT_QP, qpn, &q)
		}},
	{"SQERR2RTS of an INIT QP with a rate limit", "firmware via mlx4_DMA_wrapper", mlx4.BAD_PARAM,
		"mlx4 verifies no SQERR2RTS context: the firmware's BAD_QP_STATE (-EINVAL) comes before the model's rate check", nil,
		func(t *testing.T, r *rig) *Cmd {
			_, qpn, q := setupQP(t, r.vf(0))
			q.rateLimit = 1
			return qpC(r.vf(0), mlx4.SQERR2RTS_QP, qpn, &q)
		}},
	{"INIT2INIT with a rate limit", rt + "mlx4_INIT2INIT_QP_wrapper", mlx4.BAD_OP,
		"model: mlx4 verifies no INIT2INIT context; refused as verify_qp_parameters (-EPERM), after every mlx4 check", nil,
		func(t *testing.T, r *rig) *Cmd {
			_, qpn, q := setupQP(t, r.vf(0))
			q.rateLimit = 1
			return qpC(r.vf(0), mlx4.INIT2INIT_QP, qpn, &q)
		}},
	{"INIT2INIT of a QP in reset on a port the VF lacks", rt + "mlx4_INIT2INIT_QP_wrapper / mlx4_GEN_QP_wrapper",
		mlx4.RESOURCE_BUSY, "mlx4 converts no port in INIT2INIT: the QP not in HW (-EBUSY) wins over the model's port check",
		onePortVF0,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			qpn, q := v.newQP(v.createCQ())
			q.vfPort = 2
			return qpC(v, mlx4.INIT2INIT_QP, qpn, &q)
		}},
	{"INIT2INIT of an RTS QP with a rate limit", "firmware via mlx4_DMA_wrapper", mlx4.BAD_PARAM,
		"BAD_QP_STATE (-EINVAL) before the model's rate check", nil,
		func(t *testing.T, r *rig) *Cmd {
			qpn, q := qpInRTS(t, r.vf(0))
			q.rateLimit = 1
			return qpC(r.vf(0), mlx4.INIT2INIT_QP, qpn, &q)
		}},
	{"RTR2RTS of another VF's QP", rt + "mlx4_GEN_QP_wrapper / get_res", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			_, qpn, q := setupQP(t, r.vf(0))
			return qpC(r.vf(1), mlx4.RTR2RTS_QP, qpn, &q)
		}},
	{"SQERR2RTS of an unknown QP", rt + "mlx4_GEN_QP_wrapper / get_res", mlx4.INTERNAL_ERR, "-ENONET", nil,
		func(t *testing.T, r *rig) *Cmd {
			return qpC(r.vf(0), mlx4.SQERR2RTS_QP, 0x3fff, &qpc{st: mlx4.QP_ST_RC})
		}},
	{"RST2INIT of a QP in HW", rt + "qp_res_start_move_to", mlx4.BAD_PARAM, "HW → HW: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			_, qpn, q := setupQP(t, r.vf(0))
			return qpC(r.vf(0), mlx4.RST2INIT_QP, qpn, &q)
		}},
	{"RST2INIT with another VF's CQ", rt + "mlx4_RST2INIT_QP_wrapper / get_res", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			b := r.vf(1)
			b.setupEQ(1, 4)
			qpn, q := r.vf(0).newQP(b.createCQ())
			return qpC(r.vf(0), mlx4.RST2INIT_QP, qpn, &q)
		}},
	{"RST2INIT with an unknown SRQ", rt + "mlx4_RST2INIT_QP_wrapper / get_res", mlx4.INTERNAL_ERR, "-ENONET", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			qpn, q := v.newQP(v.createCQ())
			q.useSRQ, q.srq = true, 0x3ff
			return qpC(v, mlx4.RST2INIT_QP, qpn, &q)
		}},
	{"RST2INIT beyond its MTT", rt + "check_mtt_range", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			qpn, q := v.newQP(v.createCQ())
			q.sqLog = 10
			return qpC(v, mlx4.RST2INIT_QP, qpn, &q)
		}},
	{"RST2INIT with a CQ not in HW", rt + "mlx4_RST2INIT_QP_wrapper", mlx4.BAD_PARAM,
		"model: mlx4 takes any owned CQ; refused as an object in the wrong state (-EINVAL)", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			qpn, q := v.newQP(v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0))
			return qpC(v, mlx4.RST2INIT_QP, qpn, &q)
		}},
	{"RST2INIT with a rate limit and an unknown CQ", rt + "mlx4_RST2INIT_QP_wrapper / get_res", mlx4.INTERNAL_ERR,
		"RST2INIT verifies no rate limit; the CQ is looked up: -ENONET", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			qpn, q := v.newQP(0x3ff)
			q.rateLimit = 1
			return qpC(v, mlx4.RST2INIT_QP, qpn, &q)
		}},
	{"RST2INIT with a rate limit", rt + "verify_qp_parameters", mlx4.BAD_OP,
		"model: mlx4 verifies RST2INIT's context not at all; refused as the later transitions (-EPERM)", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			v.setupEQ(1, 4)
			qpn, q := v.newQP(v.createCQ())
			q.rateLimit = 1
			return qpC(v, mlx4.RST2INIT_QP, qpn, &q)
		}},
	{"2RST of a QP not in HW", rt + "qp_res_start_move_to", mlx4.BAD_PARAM, "MAPPED → MAPPED: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			qpn, _ := v.newQP(0)
			return qpC(v, mlx4.TWO_RST_QP, qpn, nil)
		}},
	{"QUERY_QP of a QP in reset", rt + "mlx4_GEN_QP_wrapper", mlx4.RESOURCE_BUSY, "-EBUSY", nil,
		func(t *testing.T, r *rig) *Cmd {
			qpn, _ := r.vf(0).newQP(0)
			return qpC(r.vf(0), mlx4.QUERY_QP, qpn, nil)
		}},
	{"UPDATE_QP with a qp_mask", rt + "mlx4_UPDATE_QP_wrapper", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			in := make([]byte, 256)
			in[mlx4.UpdQPQPMask+7] = 1
			return r.vf(0).cmd(mlx4.UPDATE_QP, 0, 0x3fff, 0, in, false)
		}},
	{"UPDATE_QP of the MC loopback check", rt + "mlx4_UPDATE_QP_wrapper", mlx4.INTERNAL_ERR,
		"not supported by the device: -ENOTSUPP", nil,
		func(t *testing.T, r *rig) *Cmd {
			in := make([]byte, 256)
			binary.BigEndian.PutUint64(in[mlx4.UpdQPPrimaryAddrPathMask:], updPathMaskMCLB)
			return r.vf(0).cmd(mlx4.UPDATE_QP, 0, 0x3fff, 0, in, false)
		}},
	{"UPDATE_QP to a MAC index the VF did not register", rt + "mlx4_UPDATE_QP_wrapper / mac_find_smac_ix_in_slave",
		mlx4.INTERNAL_ERR, "-ENOENT", nil,
		func(t *testing.T, r *rig) *Cmd {
			_, qpn, _ := setupQP(t, r.vf(0))
			in := make([]byte, 256)
			binary.BigEndian.PutUint64(in[mlx4.UpdQPPrimaryAddrPathMask:], updPathMaskMACIndex)
			in[mlx4.UpdQPContext+mlx4.QPCPriPath+mlx4.PathGRHMyLMC] = 3
			return r.vf(0).cmd(mlx4.UPDATE_QP, 0, qpn, 0, in, false)
		}},
	{"UPDATE_QP of a QP in reset", rt + "mlx4_UPDATE_QP_wrapper", mlx4.INTERNAL_ERR,
		"model: the QP has no context to update; refused as a source MAC not found (-ENOENT)", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			qpn, _ := v.newQP(0)
			idx := registerMAC(v, 0x0002c9000001, 1)
			in := make([]byte, 256)
			binary.BigEndian.PutUint64(in[mlx4.UpdQPPrimaryAddrPathMask:], updPathMaskMACIndex)
			in[mlx4.UpdQPContext+mlx4.QPCPriPath+mlx4.PathGRHMyLMC] = idx
			return v.cmd(mlx4.UPDATE_QP, 0, qpn, 0, in, false)
		}},
	{"UPDATE_QP of QPN | 1<<23", rt + "mlx4_UPDATE_QP_wrapper / get_res", mlx4.INTERNAL_ERR,
		"in_modifier 23:0 names the QP: -ENONET", nil,
		func(t *testing.T, r *rig) *Cmd {
			_, qpn, _ := setupQP(t, r.vf(0))
			in := make([]byte, 256)
			return r.vf(0).cmd(mlx4.UPDATE_QP, 0, qpn|1<<23, 0, in, false)
		}},
	{"QP_ATTACH of a group the QP is in", rt + "mlx4_QP_ATTACH_wrapper / add_mcg_res", mlx4.INTERNAL_ERR, "-EEXIST", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			qpn := v.mustAlloc(restrack.QP, resOpReserve, 1)
			v.must(v.run(v.cmd(mlx4.QP_ATTACH, 0, qpn, 1, mcgGID(), false)), "attach")
			return v.cmd(mlx4.QP_ATTACH, 0, qpn, 1, mcgGID(), false)
		}},
	{"QP_ATTACH detach of a group the QP is not in", rt + "rem_mcg_res", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			qpn := r.vf(0).mustAlloc(restrack.QP, resOpReserve, 1)
			return r.vf(0).cmd(mlx4.QP_ATTACH, 0, qpn, 0, mcgGID(), false)
		}},
	{"QP_ATTACH of an Ethernet group on VF port 3", rt + "qp_attach / mlx4_slave_convert_port", mlx4.BAD_PARAM,
		"-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			qpn := r.vf(0).mustAlloc(restrack.QP, resOpReserve, 1)
			g := mcgGID()
			g[5] = 3
			return r.vf(0).cmd(mlx4.QP_ATTACH, 0, qpn|mcgProtETH<<28, 1, g, false)
		}},
	{"QP_ATTACH of a 65th group", "mcg.c mlx4_qp_attach_common", mlx4.EXCEED_LIM,
		"model: at most 64 groups per QP, refused as a full MGM (-ENOMEM)", nil,
		func(t *testing.T, r *rig) *Cmd {
			v := r.vf(0)
			qpn := v.mustAlloc(restrack.QP, resOpReserve, 1)
			g := mcgGID()
			for i := range maxAttachPerQP {
				g[15] = byte(i)
				v.must(v.run(v.cmd(mlx4.QP_ATTACH, 0, qpn, 1, g, false)), "attach")
			}
			g[15] = 0xff
			return v.cmd(mlx4.QP_ATTACH, 0, qpn, 1, g, false)
		}},
	{"QP_ATTACH of a QP in reset", rt + "mlx4_QP_ATTACH_wrapper", mlx4.OK, "any owned QP may be attached", nil,
		func(t *testing.T, r *rig) *Cmd {
			qpn, _ := r.vf(0).newQP(0)
			return r.vf(0).cmd(mlx4.QP_ATTACH, 0, qpn, 1, mcgGID(), false)
		}},
	{"QP_ATTACH of another VF's QP", rt + "mlx4_QP_ATTACH_wrapper / get_res", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			qpn := r.vf(1).mustAlloc(restrack.QP, resOpReserve, 1)
			return r.vf(0).cmd(mlx4.QP_ATTACH, 0, qpn, 1, mcgGID(), false)
		}},

	// Ports, filters, counters, steering, registers
	{"INIT_PORT 3", "fw.c mlx4_INIT_PORT_wrapper", mlx4.BAD_PARAM, "mlx4_slave_convert_port: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.INIT_PORT, 0, 3, 0, nil, false)
		}},
	{"QUERY_PORT with op_modifier 1", "fw.c mlx4_QUERY_PORT_wrapper", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.QUERY_PORT, 0, 1, 1, nil, true)
		}},
	{"QUERY_FUNC_CAP of VF port 3", "fw.c mlx4_QUERY_FUNC_CAP_wrapper", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.QUERY_FUNC_CAP, 0, 3, 1, nil, true)
		}},
	{"QUERY_FUNC_CAP with op_modifier 2", "fw.c mlx4_QUERY_FUNC_CAP_wrapper", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.QUERY_FUNC_CAP, 0, 0, 2, nil, true)
		}},
	{"CLOSE_PORT 3", "fw.c mlx4_CLOSE_PORT_wrapper", mlx4.BAD_PARAM, "mlx4_slave_convert_port: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.CLOSE_PORT, 0, 3, 0, nil, false)
		}},
	{"CONFIG_DEV set", rt + "mlx4_CONFIG_DEV_wrapper", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.CONFIG_DEV, 0, 0, 0, nil, true)
		}},
	{"SET_PORT of VF port 3", "port.c mlx4_SET_PORT_wrapper", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.SET_PORT, 0, 3, 0, make([]byte, 64), false)
		}},
	{"SET_VLAN_FLTR of VF port 3", "port.c mlx4_SET_VLAN_FLTR_wrapper", mlx4.BAD_PARAM,
		"model: mlx4 answers OK doing nothing; refused as mlx4_slave_convert_port", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.SET_VLAN_FLTR, 0, 3, 0, make([]byte, 512), false)
		}},
	{"SET_MCAST_FLTR of VF port 3", "mcg.c mlx4_SET_MCAST_FLTR_wrapper", mlx4.BAD_PARAM,
		"model: mlx4 answers OK doing nothing; refused as mlx4_slave_convert_port", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.SET_MCAST_FLTR, 0, 3, 0, nil, false)
		}},
	{"DUMP_ETH_STATS of VF port 3", "port.c mlx4_DUMP_ETH_STATS_wrapper", mlx4.BAD_PARAM,
		"model: mlx4 answers OK doing nothing; refused as mlx4_slave_convert_port", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.DUMP_ETH_STATS, 0, 3, 0, nil, true)
		}},
	{"PROMISC on VF port 3", "mcg.c mlx4_PROMISC_wrapper", mlx4.BAD_PARAM, "-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			return r.vf(0).cmd(mlx4.PROMISC, 3<<62, 1, 1, nil, false)
		}},
	{"PROMISC multicast for another VF's QP", "mcg.c mlx4_PROMISC_wrapper", mlx4.BAD_OP,
		"model: mlx4 does not look at the QP; refused as get_res's -EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			qpn := r.vf(1).mustAlloc(restrack.QP, resOpReserve, 1)
			return r.vf(0).cmd(mlx4.PROMISC, 1<<62|uint64(qpn), 1, 1, nil, false)
		}},
	{"QUERY_IF_STAT of another VF's counter", rt + "mlx4_QUERY_IF_STAT_wrapper / get_res", mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			cnt := r.vf(1).mustAlloc(restrack.Counter, resOpReserve, 0)
			return r.vf(0).cmd(mlx4.QUERY_IF_STAT, 0, cnt, 0, nil, true)
		}},
	{"QP_FLOW_STEERING_ATTACH without device-managed steering", rt + "mlx4_QP_FLOW_STEERING_ATTACH_wrapper",
		mlx4.INTERNAL_ERR, "-EOPNOTSUPP", nil,
		func(t *testing.T, r *rig) *Cmd {
			rule := fsRule(1, 0x3fff, mlx4.NET_TRANS_RULE_ID_IB, 0)
			return r.vf(0).cmd(mlx4.QP_FLOW_STEERING_ATTACH, 0, uint32(len(rule)/4), 0, rule, false)
		}},
	{"QP_FLOW_STEERING_ATTACH of an L3 rule with no MAC on the port", rt + "add_eth_header", mlx4.BAD_PARAM,
		"-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			r.h.SetDeviceManagedSteering(true)
			qpn := r.vf(0).mustAlloc(restrack.QP, resOpReserve, 1)
			rule := fsRule(1, qpn, mlx4.NET_TRANS_RULE_ID_IPV4, 0)
			return r.vf(0).cmd(mlx4.QP_FLOW_STEERING_ATTACH, 0, uint32(len(rule)/4), 0, rule, false)
		}},
	{"QP_FLOW_STEERING_ATTACH of a rule for another VF's MAC", rt + "validate_eth_header_mac", mlx4.BAD_PARAM,
		"-EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			r.h.SetDeviceManagedSteering(true)
			registerMAC(r.vf(1), 0x0002c9000001, 1)
			qpn := r.vf(0).mustAlloc(restrack.QP, resOpReserve, 1)
			rule := fsRule(1, qpn, mlx4.NET_TRANS_RULE_ID_ETH, 0x0002c9000001)
			return r.vf(0).cmd(mlx4.QP_FLOW_STEERING_ATTACH, 0, uint32(len(rule)/4), 0, rule, false)
		}},
	{"QP_FLOW_STEERING_ATTACH of a short rule for an unknown QP", rt + "mlx4_QP_FLOW_STEERING_ATTACH_wrapper / get_res",
		mlx4.INTERNAL_ERR, "the QP is looked up before the headers are read: -ENONET", nil,
		func(t *testing.T, r *rig) *Cmd {
			r.h.SetDeviceManagedSteering(true)
			return r.vf(0).cmd(mlx4.QP_FLOW_STEERING_ATTACH, 0, 1, 0, fsRule(1, 0x3fff, 0, 0), false)
		}},
	{"QP_FLOW_STEERING_ATTACH of a 1025th rule", rt + "mlx4_QP_FLOW_STEERING_ATTACH_wrapper", mlx4.EXCEED_LIM,
		"model: at most 1024 rules per VF, refused as the firmware's full table (-ENOMEM)", nil,
		func(t *testing.T, r *rig) *Cmd {
			r.h.SetDeviceManagedSteering(true)
			v := r.vf(0)
			qpn := v.mustAlloc(restrack.QP, resOpReserve, 1)
			rule := fsRule(1, qpn, mlx4.NET_TRANS_RULE_ID_IB, 0)
			for range maxFSRulesPerVF {
				v.must(v.run(v.cmd(mlx4.QP_FLOW_STEERING_ATTACH, 0, uint32(len(rule)/4), 0, rule, false)), "attach")
			}
			return v.cmd(mlx4.QP_FLOW_STEERING_ATTACH, 0, uint32(len(rule)/4), 0, rule, false)
		}},
	{"QP_FLOW_STEERING_DETACH of another VF's rule", rt + "mlx4_QP_FLOW_STEERING_DETACH_wrapper / get_res",
		mlx4.BAD_OP, "-EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			r.h.SetDeviceManagedSteering(true)
			b := r.vf(1)
			qpn := b.mustAlloc(restrack.QP, resOpReserve, 1)
			rule := fsRule(1, qpn, mlx4.NET_TRANS_RULE_ID_IB, 0)
			c := b.cmd(mlx4.QP_FLOW_STEERING_ATTACH, 0, uint32(len(rule)/4), 0, rule, false)
			b.must(b.run(c), "attach")
			return r.vf(0).cmd(mlx4.QP_FLOW_STEERING_DETACH, c.OutParam, 0, 0, nil, false)
		}},
	{"ACCESS_REG write", "fw.c mlx4_ACCESS_REG_wrapper", mlx4.BAD_OP, "a VF's write: -EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			var in [mlx4.MailboxSize]byte
			mlx4.EncodeAccessRegPTYS(&in, mlx4.ACCESS_REG_WRITE, 1, mlx4.PTYS_IB)
			return r.vf(0).cmd(mlx4.ACCESS_REG, 0, 0, 0, in[:], true)
		}},

	// MAD_IFC
	{"MAD_IFC PerfMgmt Get with op_modifier bit 2 and a malformed GRH", "cmd.c mlx4_MAD_IFC_wrapper", mlx4.BAD_OP,
		"the policy is applied to the MAD header before the extension is read: -EPERM", nil,
		func(t *testing.T, r *rig) *Cmd {
			attachMAD(t, r)
			c := madC(r.vf(0), madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0), mad.MADIFCExtended, 1)
			c.Inbox[0x10D] = 0x80 // GRH present, IP version 0
			return c
		}},
	{"MAD_IFC SubnSet with op_modifier bit 2 and a malformed GRH", "cmd.c mlx4_MAD_IFC_wrapper", mlx4.BAD_OP,
		"-EPERM before the extension", nil,
		func(t *testing.T, r *rig) *Cmd {
			attachMAD(t, r)
			c := madC(r.vf(0), madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, nil), mad.MADIFCExtended, 1)
			c.Inbox[0x10D] = 0x80
			return c
		}},
	{"MAD_IFC SubnSet on VF port 3", "cmd.c mlx4_MAD_IFC_wrapper", mlx4.BAD_OP, "-EPERM before the port", nil,
		func(t *testing.T, r *rig) *Cmd {
			attachMAD(t, r)
			return madC(r.vf(0), madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, nil), mad.MADIFCIgnoreMKey, 3)
		}},
	{"MAD_IFC P_KeyTable Get on VF port 3", "cmd.c mlx4_MAD_IFC_wrapper", mlx4.BAD_PARAM,
		"port < 1 || port > num_ports: -EINVAL", nil,
		func(t *testing.T, r *rig) *Cmd {
			attachMAD(t, r)
			return madC(r.vf(0), madtest.SMP(mad.MethodGet, mad.AttrPKeyTable, 0, 0, nil), mad.MADIFCIgnoreMKey, 3)
		}},
}

// TestRefusalAudit drives every audited refusal through the executor the
// command table dispatches to and checks the status Linux's PF gives the
// same VF input, and that a refusal carries a reason for the counter.
func TestRefusalAudit(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range auditCases {
		if seen[tc.name] || tc.linux == "" || tc.why == "" {
			t.Fatalf("row %q: duplicate or without its Linux function and reason", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 2, tc.cfg)
			c := tc.run(t, r)
			c.Reason = refusal.None
			s := r.h.Exec(c)
			if s != tc.want {
				t.Fatalf("status %v, want %v (%s: %s)", s, tc.want, tc.linux, tc.why)
			}
			if s != mlx4.OK && c.Reason == refusal.None {
				t.Fatalf("refused with %v without a reason", s)
			}
		})
	}
}
