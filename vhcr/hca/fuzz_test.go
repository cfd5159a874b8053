package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// FuzzQPContext runs an arbitrary modify-QP mailbox through RST2INIT and
// INIT2RTR on a VF that owns a CQ, an SRQ and an MTT, next to a VF with the
// same kinds of objects: nothing panics, and the other VF never changes.
func FuzzQPContext(f *testing.F) {
	qpContextSeeds(f)
	f.Fuzz(func(t *testing.T, ctx []byte, fixRefs bool) { fuzzQPContext(t, ctx, fixRefs, nil) })
}

// FuzzQPContextVport is FuzzQPContext on an Ethernet port 1 with both VFs
// in VST with spoof check (VF 0 on VLAN 100, VF 1 priority tagged): the
// rewrites never panic, and VF 0's QP commands leave VF 1's objects and
// vport registrations alone.
func FuzzQPContextVport(f *testing.F) {
	qpContextSeeds(f)
	on := true
	f.Fuzz(func(t *testing.T, ctx []byte, fixRefs bool) {
		fuzzQPContext(t, ctx, fixRefs, func(c *config.Config) {
			c.Ports[0].LinkLayer = "eth"
			c.VFs.Overrides = map[string]config.VF{
				"0": {VST: &config.VST{VLAN: 100, QoS: 3}, SpoofCheck: &on},
				"1": {VST: &config.VST{VLAN: 0, QoS: 1}, SpoofCheck: &on},
			}
		})
	})
}

func qpContextSeeds(f *testing.F) {
	f.Add(qpc{st: mlx4.QP_ST_RC, vfPort: 1, sqLog: 3, rqLog: 3}.bytes(), false)
	f.Add(qpc{st: mlx4.QP_ST_UD, vfPort: 2, pkey: 1, optpar: mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH, useSRQ: true, sqLog: 15, rqLog: 15}.bytes(), true)
	f.Add(qpc{st: mlx4.QP_ST_MLX, rateLimit: 1}.bytes(), true)
	f.Add(qpc{st: mlx4.QP_ST_UD, vfPort: 1, optpar: mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH, sqLog: 3, rqLog: 3}.bytes(), true)
}

func fuzzQPContext(t *testing.T, ctx []byte, fixRefs bool, edit func(*config.Config)) {
	r := newRig(t, 2, edit)
	for vf := range 2 {
		if err := r.h.ActivateVF(vf); err != nil {
			t.Fatal(err)
		}
	}
	vport1 := r.h.fw.vfs[1].Vport
	a, b := r.vf(0), r.vf(1)
	a.setupEQ(1, 4)
	b.setupEQ(1, 4)
	acq, bcq := a.createCQ(), b.createCQ()
	asrq := a.createSRQ()
	b.createSRQ()
	qpn, q := a.newQP(acq)
	in := q.bytes()
	copy(in, ctx)
	if fixRefs { // make the references plausible so the deeper checks run
		binary.BigEndian.PutUint32(in[mlx4.QPMailboxContext+mlx4.QPCCQNSend:], acq)
		binary.BigEndian.PutUint32(in[mlx4.QPMailboxContext+mlx4.QPCCQNRecv:], bcq*uint32(in[0]&1)+acq*uint32(1-in[0]&1))
		binary.BigEndian.PutUint32(in[mlx4.QPMailboxContext+mlx4.QPCSRQN:], binary.BigEndian.Uint32(in[mlx4.QPMailboxContext+mlx4.QPCSRQN:])&(1<<24)|asrq)
		binary.BigEndian.PutUint32(in[mlx4.QPMailboxContext+mlx4.QPCMTTBaseAddrL:], q.mtt*mlx4.MTTEntrySize)
	}
	before := fingerprint(r.h, 1)
	for _, op := range []mlx4.Opcode{mlx4.RST2INIT_QP, mlx4.INIT2RTR_QP, mlx4.RTR2RTS_QP} {
		c := a.cmd(op, 0, qpn, 0, in, false)
		var s mlx4.Status
		switch op {
		case mlx4.RST2INIT_QP:
			s = a.run(c)
		case mlx4.INIT2RTR_QP:
			s = a.run(c)
		default:
			s = a.run(c)
		}
		if s != mlx4.OK {
			break
		}
	}
	if fingerprint(r.h, 1) != before {
		t.Fatal("VF 0's QP commands changed VF 1")
	}
	if o, _ := r.h.Res.Peek(1, restrack.CQ, uint64(bcq)); o.Refs != 0 {
		t.Fatal("VF 1's CQ referenced by VF 0's QP")
	}
	r.h.ResetFunction(0)
	if r.h.Counts(0) != ([restrack.NumTypes]int{}) {
		t.Fatal("reset left objects")
	}
	if r.h.fw.vfs[1].Vport != vport1 {
		t.Fatal("VF 0's commands or reset changed VF 1's vport")
	}
	for i, op := range vport1 {
		if op.VLANIdx >= 0 && r.h.fw.ports[i].VLAN[op.VLANIdx].Refs == 0 || op.MACIdx >= 0 && r.h.fw.ports[i].MAC[op.MACIdx].Refs == 0 {
			t.Fatal("VF 0's reset unregistered VF 1's VST VLAN or MAC")
		}
	}
}

// FuzzEQContext creates an EQ from an arbitrary context and MTT entry, then
// posts more EQEs than the ring holds: nothing panics, nothing is written
// outside the VF's window (the window checks would fail PostEQE), and no
// more EQEs are written than the ring holds.
func FuzzEQContext(f *testing.F) {
	f.Add(eqContext(2, 0), uint64(0x10000), uint8(0))
	f.Add(eqContext(7, 0), uint64(0x10001), uint8(1))
	f.Add(eqContext(19, 0), uint64(testWindow-0x1000), uint8(3))
	f.Fuzz(func(t *testing.T, ctx []byte, page uint64, order uint8) {
		r := newRig(t, 2, nil)
		v := r.vf(0)
		pages := make([]uint64, 1<<(order%4))
		for i := range pages {
			pages[i] = page + uint64(i)*0x1000
		}
		mtt := v.mtt(int(order%4), pages...)
		in := make([]byte, mlx4.EQContextSize)
		copy(in, ctx)
		binary.BigEndian.PutUint32(in[mlx4.EQCMTTBaseAddrL:], mtt*mlx4.MTTEntrySize)
		in[mlx4.EQCMTTBaseAddrH] = 0
		c := v.cmd(mlx4.SW2HW_EQ, 0, 1, 0, in, false)
		if v.run(c) != mlx4.OK {
			if r.h.Counts(0)[restrack.EQ] != 0 {
				t.Fatal("failed SW2HW_EQ left an EQ")
			}
			return
		}
		v.must(v.run(v.cmd(mlx4.MAP_EQ, 1<<mlx4.EventCmd, 1, 0, nil, false)), "MAP_EQ")
		eq := r.h.fw.eqs[restrack.EQID(0, 1)]
		e := CompletionEQE(1, mlx4.OK, 2)
		for i := 0; i < int(min(eq.Nent, 64))+2; i++ {
			err := r.h.PostEQE(0, mlx4.EventCmd, &e)
			if err != nil && err != ErrOverrun {
				t.Fatalf("EQE %d: %v", i, err)
			}
		}
		if n := r.h.Stats(0).EQEs.Load(); n > uint64(eq.Nent) {
			t.Fatalf("%d EQEs written into a %d-entry EQ nobody consumed", n, eq.Nent)
		}
	})
}
