package master_test

import (
	"bytes"
	"encoding/gob"
	"reflect"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestRestartKeepsTheHCAState: a PF restarted from its state file (the
// checkpoint's hca.Image, then the journal's records after it) holds the
// HCA state the killed one held: tracker and firmware tables equal. The EQ
// doorbell fields are left out of the comparison: the restarted PF reads
// every doorbell afresh (hca.HCA.RefreshEQs) by design.
func TestRestartKeepsTheHCAState(t *testing.T) {
	r := newStepRigWith(t, 2, mastertest.Options{State: true})
	r.up(t, 1)
	v := benchVF{r, t, new(time.Duration)}
	eqm := v.mtt(0x8000)
	ectx := make([]byte, mlx4.EQContextSize)
	mlx4.EQContext{LogSize: 7, MTTBase: uint64(eqm)}.Encode(ectx)
	v.post(mlx4.VHCR{Op: mlx4.SW2HW_EQ, InMod: 1}, ectx)
	v.post(mlx4.VHCR{Op: mlx4.MAP_EQ, InParam: 1 << mlx4.EventPortChange, InMod: 1}, nil)
	cq := func() uint32 {
		cqn := uint32(v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1}, nil))
		ctx := make([]byte, mlx4.CQContextSize)
		mlx4.CQContext{LogSize: 6, CompEQN: 1, MTTBase: uint64(v.mtt(0x9000))}.Encode(ctx)
		v.post(mlx4.VHCR{Op: mlx4.SW2HW_CQ, InMod: cqn}, ctx)
		return cqn
	}
	qp := func(cqn uint32) {
		qpn := uint32(v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.QP), OpMod: 0, InParam: 1<<32 | 1}, nil))
		v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.QP), OpMod: 2, InParam: uint64(qpn)}, nil)
		in := make([]byte, mlx4.QPMailboxSize)
		mlx4.QPMailbox{Ctx: mlx4.QPContext{ST: mlx4.QP_ST_RC, LogSQSize: 3, LogSQStride: 2, LogRQSize: 3, LogRQStride: 2,
			Pri:     mlx4.QPPath{Port: 1, CounterIndex: uint8(config.Default().Resources.Counters - 1)},
			CQNSend: cqn, CQNRecv: cqn, MTTBase: uint64(v.mtt(0xa000)), UsrPage: 128}}.Encode(in)
		v.post(mlx4.VHCR{Op: mlx4.RST2INIT_QP, InMod: qpn}, in)
	}
	qp(cq())
	r.PF.Checkpoint()
	qp(cq()) // journaled after the checkpoint: replayed
	before := stateOf(t, r.HCA.Image())
	r.Rebuild(t)
	after := stateOf(t, r.HCA.Image())
	if !reflect.DeepEqual(after.Res, before.Res) {
		t.Error("tracker image differs after the restart")
	}
	a, b := reflect.ValueOf(after.State), reflect.ValueOf(before.State)
	for i := range a.NumField() {
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			t.Errorf("State.%s differs after the restart", a.Type().Field(i).Name)
		}
	}
	if len(before.QPs) != 2 || len(before.CQs) != 2 || len(before.EQs) != 1 {
		t.Fatalf("%d QPs, %d CQs, %d EQs in the model", len(before.QPs), len(before.CQs), len(before.EQs))
	}
}

// stateOf is im as a checkpoint carries it (through gob), without the EQs'
// doorbell samples.
func stateOf(t *testing.T, im *hca.Image) *hca.Image {
	t.Helper()
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(im); err != nil {
		t.Fatal(err)
	}
	var out hca.Image
	if err := gob.NewDecoder(&b).Decode(&out); err != nil {
		t.Fatal(err)
	}
	for id, e := range out.EQs {
		e.Cons, e.Armed, e.DBAtCreate, e.DBStale = 0, false, 0, false
		out.EQs[id] = e
	}
	return &out
}
