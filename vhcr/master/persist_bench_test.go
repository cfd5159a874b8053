package master_test

import (
	"encoding/binary"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// benchVF posts commands for VF 1 of a rig driven scan by scan: vHCR at
// IOVA 0, inbox at 0x1000, outbox at 0x2000, ring and queue pages above.
type benchVF struct {
	r stepRig
	b testing.TB
	// pf is the time spent in the PF's scans (the VF's side, writing the
	// vHCR and mailboxes and reading results, is left out of it)
	pf *time.Duration
}

const (
	benchInbox  = 0x1000
	benchOutbox = 0x2000
)

func (v benchVF) post(h mlx4.VHCR, in []byte) uint64 {
	e := v.r.PF.Table().Lookup(h.Op)
	if in != nil {
		var page [mlx4.MailboxSize]byte
		copy(page[:], in)
		if _, err := v.r.DMA.WriteAt(page[:], v.r.VHCRAddr(1)+benchInbox); err != nil {
			v.b.Fatal(err)
		}
		h.InParam = benchInbox
	}
	if e != nil && e.HasOutbox {
		h.OutParam = benchOutbox
	}
	h.Token = mlx4.PollToken
	v.r.SetVHCR(v.b, 1, h)
	v.r.Write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	t0 := time.Now()
	v.r.PF.Scan()
	*v.pf += time.Since(t0)
	img := v.r.VHCR(v.b, 1)
	if s := mlx4.Status(img[mlx4.OffStatus]); s != mlx4.OK || !v.r.Acked(1) {
		v.b.Fatalf("%v: %v", h.Op, s)
	}
	return binary.BigEndian.Uint64(img[mlx4.OffOutParam:])
}

func (v benchVF) mtt(page uint64) uint32 {
	m := uint32(v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.MTT), OpMod: 1}, nil))
	in := make([]byte, 24)
	binary.BigEndian.PutUint64(in, uint64(m))
	binary.BigEndian.PutUint64(in[16:], page|1)
	v.post(mlx4.VHCR{Op: mlx4.WRITE_MTT, InMod: 1}, in)
	return m
}

func (v benchVF) freeMTT(m uint32) {
	v.post(mlx4.VHCR{Op: mlx4.FREE_RES, InMod: uint32(restrack.MTT), OpMod: 1, InParam: uint64(m)}, nil)
}

func (v benchVF) cqCycle(eqn int) {
	cqn := uint32(v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1}, nil))
	m := v.mtt(0x9000)
	ctx := make([]byte, mlx4.CQContextSize)
	mlx4.CQContext{LogSize: 6, CompEQN: uint8(eqn), MTTBase: uint64(m)}.Encode(ctx)
	v.post(mlx4.VHCR{Op: mlx4.SW2HW_CQ, InMod: cqn}, ctx)
	v.post(mlx4.VHCR{Op: mlx4.HW2SW_CQ, InMod: cqn}, nil)
	v.freeMTT(m)
	v.post(mlx4.VHCR{Op: mlx4.FREE_RES, InMod: uint32(restrack.CQ), OpMod: 1, InParam: uint64(cqn)}, nil)
}

func (v benchVF) qpCycle(cqn uint32) {
	qpn := uint32(v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.QP), OpMod: 0, InParam: 1<<32 | 1}, nil))
	v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.QP), OpMod: 2, InParam: uint64(qpn)}, nil)
	m := v.mtt(0xa000)
	in := make([]byte, mlx4.QPMailboxSize)
	mlx4.QPMailbox{Ctx: mlx4.QPContext{ST: mlx4.QP_ST_RC, LogSQSize: 3, LogSQStride: 2, LogRQSize: 3, LogRQStride: 2,
		Pri:     mlx4.QPPath{Port: 1, CounterIndex: uint8(config.Default().Resources.Counters - 1)},
		CQNSend: cqn, CQNRecv: cqn, MTTBase: uint64(m), UsrPage: 128}}.Encode(in)
	v.post(mlx4.VHCR{Op: mlx4.RST2INIT_QP, InMod: qpn}, in)
	v.post(mlx4.VHCR{Op: mlx4.TWO_RST_QP, InMod: qpn}, nil)
	v.post(mlx4.VHCR{Op: mlx4.FREE_RES, InMod: uint32(restrack.QP), OpMod: 2, InParam: uint64(qpn)}, nil)
	v.freeMTT(m)
	v.post(mlx4.VHCR{Op: mlx4.FREE_RES, InMod: uint32(restrack.QP), OpMod: 0, InParam: 1<<32 | uint64(qpn)}, nil)
}

// BenchmarkPersistCost measures, in one run, what the PF state file costs
// the PF per command: the same sequences on a PF without a state file (a)
// and with one (b), alternated over 7 rounds, the PF driven scan by scan on
// this goroutine; the figure is the time spent in the PF's scans (its work
// per command, checkpoints included, with two clock readings around each
// scan; without the test's own writing of vHCRs and mailboxes or a VF
// process's scheduling). It prints the medians per command and b/a (issue 11:
// NOP ≤ 1.2; resource commands ≤ 1.3). CQ: ALLOC_RES CQ, ALLOC_RES MTT,
// WRITE_MTT, SW2HW_CQ, HW2SW_CQ, FREE_RES MTT, FREE_RES CQ; QP: ALLOC_RES
// QP (reserve, map ICM), ALLOC_RES MTT, WRITE_MTT, RST2INIT_QP, 2RST_QP,
// FREE_RES (ICM, MTT, QP).
func BenchmarkPersistCost(b *testing.B) {
	type rig struct {
		v   benchVF
		eqn int
		cqn uint32
	}
	setup := func(state bool) *rig {
		v := benchVFWithEQ(b, state)
		cqn := uint32(v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1}, nil))
		cm := v.mtt(0xb000)
		cctx := make([]byte, mlx4.CQContextSize)
		mlx4.CQContext{LogSize: 6, CompEQN: 1, MTTBase: uint64(cm)}.Encode(cctx)
		v.post(mlx4.VHCR{Op: mlx4.SW2HW_CQ, InMod: cqn}, cctx)
		return &rig{v: v, eqn: 1, cqn: cqn}
	}
	for _, c := range []struct {
		name string
		cmds int
		op   func(r *rig)
	}{
		{"NOP", 1, func(r *rig) { r.v.post(mlx4.VHCR{Op: mlx4.NOP}, nil) }},
		{"CQ-create-destroy", 7, func(r *rig) { r.v.cqCycle(r.eqn) }},
		{"QP-create-modify-destroy", 9, func(r *rig) { r.v.qpCycle(r.cqn) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			rigs := [2]*rig{setup(false), setup(true)}
			const rounds = 7
			var per [2][]float64
			b.ResetTimer()
			for round := range rounds {
				for j := range rigs {
					k := j ^ round&1 // alternate which goes first
					*rigs[k].v.pf = 0
					for range b.N {
						c.op(rigs[k])
					}
					per[k] = append(per[k], float64(rigs[k].v.pf.Nanoseconds())/float64(b.N*c.cmds))
				}
			}
			b.StopTimer()
			a, p := median(per[0]), median(per[1])
			b.ReportMetric(a, "ns/cmd-off")
			b.ReportMetric(p, "ns/cmd-on")
			b.ReportMetric(p/a, "on/off")
			if b.N > 1 {
				fmt.Printf("persist cost %s: without state file %.0f ns/cmd, with %.0f ns/cmd, b/a %.2f (medians of %d rounds of %d)\n", c.name, a, p, p/a, rounds, b.N)
			}
		})
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// BenchmarkCheckpoint is the time one checkpoint takes (the poller's pause
// when the journal is half full) with 1,000 CQs in hardware state and
// their MTTs: the figure to weigh against the journal's size.
func BenchmarkCheckpoint(b *testing.B) {
	v := benchVFWithEQ(b, true)
	r := v.r
	for range 1000 {
		cqn := uint32(v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1}, nil))
		cm := v.mtt(0x9000)
		cctx := make([]byte, mlx4.CQContextSize)
		mlx4.CQContext{LogSize: 6, CompEQN: 1, MTTBase: uint64(cm)}.Encode(cctx)
		v.post(mlx4.VHCR{Op: mlx4.SW2HW_CQ, InMod: cqn}, cctx)
	}
	b.ResetTimer()
	for range b.N {
		r.PF.Checkpoint()
	}
}

// benchVFWithEQ is VF 1 of a new step rig (with a state file if state),
// its channel up and EQ 1 in hardware (an MTT at 0x8000, 128 EQEs).
func benchVFWithEQ(b *testing.B, state bool) benchVF {
	r := newStepRigWith(b, 2, mastertest.Options{State: state})
	r.up(b, 1)
	v := benchVF{r, b, new(time.Duration)}
	m := v.mtt(0x8000)
	ctx := make([]byte, mlx4.EQContextSize)
	mlx4.EQContext{LogSize: 7, MTTBase: uint64(m)}.Encode(ctx)
	v.post(mlx4.VHCR{Op: mlx4.SW2HW_EQ, InMod: 1}, ctx)
	return v
}
