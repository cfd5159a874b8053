package master_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// dpEnd is one VF's end of an RC connection made with vfdrv's verbs.
type dpEnd struct {
	d  *vfdrv.Driver
	cq *vfdrv.VCQ
	mr *vfdrv.MR
	qp *vfdrv.VQP
}

func newDPEnd(t *testing.T, r *mastertest.Rig, vf int) *dpEnd {
	t.Helper()
	ctx := context.Background()
	d, err := vfdrv.New(r.InitVF(t, vf), vfdrv.Options{BAR: r.VFBARs[vf]})
	if err != nil {
		t.Fatal(err)
	}
	eq, err := d.CreateEQ(ctx, 4, 7)
	if err != nil {
		t.Fatal(err)
	}
	e := &dpEnd{d: d}
	if e.cq, err = d.CreateVerbsCQ(ctx, 256, eq.EQN); err != nil {
		t.Fatal(err)
	}
	perm := uint32(mlx4.PERM_LOCAL_READ | mlx4.PERM_LOCAL_WRITE | mlx4.PERM_REMOTE_WRITE | mlx4.PERM_REMOTE_READ | mlx4.PERM_ATOMIC)
	if e.mr, err = d.CreateMR(ctx, 4, perm, 1); err != nil {
		t.Fatal(err)
	}
	cfg := vfdrv.QPConfig{ST: mlx4.QP_ST_RC, SendCQ: e.cq.CQN, RecvCQ: e.cq.CQN, PD: 1, DestLID: 5,
		Access: mlx4.QP_BIT_RRE | mlx4.QP_BIT_RWE | mlx4.QP_BIT_RAE}
	if e.qp, err = d.CreateVerbsQP(ctx, cfg, vfdrv.QPCaps{MaxSendWR: 16, MaxRecvWR: 256, MaxSendSGE: 1, MaxRecvSGE: 1}, false); err != nil {
		t.Fatal(err)
	}
	return e
}

func connectDP(t *testing.T, a, b *dpEnd) {
	t.Helper()
	a.qp.Cfg.RemoteQPN, b.qp.Cfg.RemoteQPN = b.qp.QPN, a.qp.QPN
	for _, e := range []*dpEnd{a, b} {
		if err := e.d.ModifyPath(context.Background(), e.qp.QP, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS); err != nil {
			t.Fatal(err)
		}
	}
}

// dpLedger counts what the VFs see: every WR posted with its id, every
// completion by WR id.
type dpLedger struct {
	cqes map[uint64]int
}

func (l *dpLedger) poll(t *testing.T, e *dpEnd) int {
	t.Helper()
	var wc [16]vfdrv.WC
	total := 0
	for {
		n := e.cq.Poll(wc[:])
		for _, w := range wc[:n] {
			if w.Status != vfdrv.WCSuccess {
				t.Fatalf("WC %+v", w)
			}
			l.cqes[w.WRID]++
		}
		total += n
		if n == 0 {
			return total
		}
	}
}

// TestDataPathKillPF: a PF serving RC traffic between two VFs (vfdrv's
// verbs: SEND with data patterns, RDMA WRITE, FETCH_ADD on a counter) is
// killed in the middle of a scan at each data-path point, restarted on the
// same regions and state file, and served again: every WQE executed once
// (the receive buffers and the written bytes hold their patterns, the
// counter equals the number of adds, each add returned a distinct
// original), every CQE delivered once per WR id, none missing.
func TestDataPathKillPF(t *testing.T) {
	for _, point := range []string{crashpoint.DPIntent, crashpoint.DPEffects, crashpoint.DPCQE, crashpoint.DPCommitTorn} {
		for _, nth := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s:%d", point, nth), func(t *testing.T) { dpKillRound(t, point, nth) })
		}
	}
}

func dpKillRound(t *testing.T, point string, nth int) {
	r := newStepRigWith(t, 2, mastertest.Options{State: true, Window: 1 << 20})
	r.Start(t)
	a, b := newDPEnd(t, r.Rig, 0), newDPEnd(t, r.Rig, 1)
	connectDP(t, a, b)
	r.Stop(t)
	const n = 5 // of each kind (15 WQEs: the send queue holds 16)
	led := &dpLedger{cqes: map[uint64]int{}}
	// B's receive buffers: page 0 of its MR, 256 bytes each; A's sources
	// on its page 0; RDMA WRITEs to B's page 1; the counter on B's page 2;
	// the originals to A's page 2.
	var recvs []vfdrv.RecvWR
	for i := range n {
		recvs = append(recvs, vfdrv.RecvWR{WRID: 1000 + uint64(i), SGE: []vfdrv.SGE{{Addr: b.mr.IOVA + uint64(i)*256, Length: 256, LKey: b.mr.Key}}})
	}
	if _, err := b.qp.PostRecv(recvs); err != nil {
		t.Fatal(err)
	}
	var wrs []vfdrv.SendWR
	for i := range n {
		msg := bytes.Repeat([]byte{byte(0x10 + i)}, 200)
		if err := a.d.Write(a.mr.IOVA+uint64(i)*256, msg); err != nil {
			t.Fatal(err)
		}
		src := []vfdrv.SGE{{Addr: a.mr.IOVA + uint64(i)*256, Length: 200, LKey: a.mr.Key}}
		wrs = append(wrs,
			vfdrv.SendWR{WRID: uint64(i), Opcode: mlx4.OPCODE_SEND, SGE: src, Signaled: true},
			vfdrv.SendWR{WRID: 100 + uint64(i), Opcode: mlx4.OPCODE_RDMA_WRITE, SGE: src, Signaled: true, RemoteAddr: b.mr.IOVA + 4096 + uint64(i)*256, RKey: b.mr.Key},
			vfdrv.SendWR{WRID: 200 + uint64(i), Opcode: mlx4.OPCODE_ATOMIC_FA, Signaled: true, SGE: []vfdrv.SGE{{Addr: a.mr.IOVA + 8192 + uint64(i)*8, Length: 8, LKey: a.mr.Key}},
				RemoteAddr: b.mr.IOVA + 3*4096, RKey: b.mr.Key, CompareAdd: 1})
	}
	if _, err := a.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	killed := crashScan(t, r, point, nth)
	if !killed {
		t.Fatalf("no kill at %s:%d", point, nth)
	}
	before := led.poll(t, a) + led.poll(t, b) // what the VFs saw before the restart
	r.Rebuild(t)
	for range 8 {
		r.scan()
	}
	led.poll(t, a)
	led.poll(t, b)
	if r.PF.Stats().DPRedone > 1 {
		t.Errorf("%d steps redone, at most the one the kill interrupted", r.PF.Stats().DPRedone)
	}
	for i := range n {
		for _, id := range []uint64{uint64(i), 100 + uint64(i), 200 + uint64(i), 1000 + uint64(i)} {
			if c := led.cqes[id]; c != 1 {
				t.Errorf("WR %d: %d completions (seen before the restart: %d CQEs)", id, c, before)
			}
		}
		got := make([]byte, 200)
		want := bytes.Repeat([]byte{byte(0x10 + i)}, 200)
		if err := b.d.Read(b.mr.IOVA+uint64(i)*256, got); err != nil || !bytes.Equal(got, want) {
			t.Errorf("SEND %d: B's receive buffer %x", i, got[:8])
		}
		if err := b.d.Read(b.mr.IOVA+4096+uint64(i)*256, got); err != nil || !bytes.Equal(got, want) {
			t.Errorf("RDMA_WRITE %d: B holds %x", i, got[:8])
		}
	}
	var w [8]byte
	if err := b.d.Read(b.mr.IOVA+3*4096, w[:]); err != nil || binary.BigEndian.Uint64(w[:]) != n {
		t.Errorf("counter %d after %d fetch-adds", binary.BigEndian.Uint64(w[:]), n)
	}
	seen := map[uint64]bool{}
	for i := range n {
		if err := a.d.Read(a.mr.IOVA+8192+uint64(i)*8, w[:]); err != nil {
			t.Fatal(err)
		}
		if v := binary.BigEndian.Uint64(w[:]); v >= n || seen[v] {
			t.Errorf("fetch-add %d returned %d (twice, or beyond the adds)", i, v)
		} else {
			seen[v] = true
		}
	}
}
