package crashtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// The data-path ledger: two VFs connected by RC QPs (vfdrv's verbs) move
// data through a vhcrd process that is killed with SIGKILL at random
// moments and at each data-path point, restarted on the same files, and
// goes on. Per batch VF 0 posts 5 SENDs of a data pattern (VF 1's
// receive WQEs), 5 RDMA WRITEs of another and 5 FETCH_ADDs of 1 on VF 1's
// counter; the ledger checks after every batch: every WR id completed once
// (a second completion is a duplicate, none within the wait a loss), the
// bytes in place, the counter equal to the adds posted, every add's
// original distinct.

const dpBatch = 5

// the data-path points (vhcr/internal/crashpoint's names)
var dpPoints = []string{"dp-intent", "dp-effects", "dp-cqe", "dp-commit-torn"}

type dpSide struct {
	d  *vfdrv.Driver
	cq *vfdrv.VCQ
	mr *vfdrv.MR
	qp *vfdrv.VQP
}

func dpSideOf(t *testing.T, a *vfclient.Attachment, vf int) *dpSide {
	t.Helper()
	v, err := a.VF(vf)
	if err != nil {
		t.Fatal(err)
	}
	v.Timeouts = vfclient.Timeouts{Sync: crashSync, Offline: crashComm, Comm: crashComm, Post: crashPost}
	vb, err := a.VFBAR(vf)
	if err != nil {
		t.Fatal(err)
	}
	s := &dpSide{}
	if s.d, err = vfdrv.New(v, vfdrv.Options{BAR: vb}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.d.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	eq, err := s.d.CreateEQ(ctx, 4, 7)
	if err != nil {
		t.Fatal(err)
	}
	if s.cq, err = s.d.CreateVerbsCQ(ctx, 256, eq.EQN); err != nil {
		t.Fatal(err)
	}
	perm := uint32(mlx4.PERM_LOCAL_READ | mlx4.PERM_LOCAL_WRITE | mlx4.PERM_REMOTE_WRITE | mlx4.PERM_REMOTE_READ | mlx4.PERM_ATOMIC)
	if s.mr, err = s.d.CreateMR(ctx, 4, perm, 1); err != nil {
		t.Fatal(err)
	}
	cfg := vfdrv.QPConfig{ST: mlx4.QP_ST_RC, SendCQ: s.cq.CQN, RecvCQ: s.cq.CQN, PD: 1, DestLID: 5,
		Access: mlx4.QP_BIT_RRE | mlx4.QP_BIT_RWE | mlx4.QP_BIT_RAE}
	if s.qp, err = s.d.CreateVerbsQP(ctx, cfg, vfdrv.QPCaps{MaxSendWR: 16, MaxRecvWR: 256, MaxSendSGE: 1, MaxRecvSGE: 1}, false); err != nil {
		t.Fatal(err)
	}
	return s
}

// dpTally is the data-path ledger's totals.
type dpTally struct {
	wqes, bytes, sent, received, cqes, lost, dup, bad int
	adds                                              uint64
}

type dpRun struct {
	t      *testing.T
	a, b   *dpSide
	tot    dpTally
	batch  int
	seen   map[uint64]bool // fetch-add originals
	failed bool
}

func (r *dpRun) errorf(format string, args ...any) {
	r.t.Errorf(format, args...)
	r.failed = true
}

// oneBatch posts a batch and waits (up to wait) for its completions,
// checking them and the memory.
func (r *dpRun) oneBatch(wait time.Duration) {
	a, b := r.a, r.b
	k := r.batch
	r.batch++
	var recvs []vfdrv.RecvWR
	var wrs []vfdrv.SendWR
	slot := uint64(k%8) * dpBatch
	for i := range uint64(dpBatch) {
		id := uint64(k)*100 + i
		recvs = append(recvs, vfdrv.RecvWR{WRID: id + 50, SGE: []vfdrv.SGE{{Addr: b.mr.IOVA + (slot+i)%40*100, Length: 100, LKey: b.mr.Key}}})
		msg := bytes.Repeat([]byte{byte(k*7 + int(i))}, 100)
		_ = a.d.Write(a.mr.IOVA+i*100, msg)
		wmsg := bytes.Repeat([]byte{byte(k*11 + int(i) + 1)}, 100)
		_ = a.d.Write(a.mr.IOVA+1024+i*100, wmsg)
		wrs = append(wrs,
			vfdrv.SendWR{WRID: id, Opcode: mlx4.OPCODE_SEND, Signaled: true, SGE: []vfdrv.SGE{{Addr: a.mr.IOVA + i*100, Length: 100, LKey: a.mr.Key}}},
			vfdrv.SendWR{WRID: id + 10, Opcode: mlx4.OPCODE_RDMA_WRITE, Signaled: true, SGE: []vfdrv.SGE{{Addr: a.mr.IOVA + 1024 + i*100, Length: 100, LKey: a.mr.Key}},
				RemoteAddr: b.mr.IOVA + 4096 + i*100, RKey: b.mr.Key},
			vfdrv.SendWR{WRID: id + 20, Opcode: mlx4.OPCODE_ATOMIC_FA, Signaled: true, SGE: []vfdrv.SGE{{Addr: a.mr.IOVA + 8192 + i*8, Length: 8, LKey: a.mr.Key}},
				RemoteAddr: b.mr.IOVA + 3*4096, RKey: b.mr.Key, CompareAdd: 1})
	}
	if _, err := b.qp.PostRecv(recvs); err != nil {
		r.errorf("batch %d: PostRecv: %v", k, err)
		return
	}
	if _, err := a.qp.PostSend(wrs); err != nil {
		r.errorf("batch %d: PostSend: %v", k, err)
		return
	}
	got := map[uint64]int{}
	want := 4 * dpBatch
	var wc [16]vfdrv.WC
	deadline := time.Now().Add(wait)
	n := 0
	for n < want && time.Now().Before(deadline) {
		progress := false
		for _, s := range []*dpSide{a, b} {
			c := s.cq.Poll(wc[:])
			for _, w := range wc[:c] {
				if w.Status != vfdrv.WCSuccess {
					r.errorf("batch %d: WR %d completed %v", k, w.WRID, w.Status)
					r.tot.bad++
				}
				got[w.WRID]++
			}
			n += c
			progress = progress || c > 0
		}
		if !progress {
			runtime.Gosched()
		}
	}
	r.tot.cqes += n
	for i := range uint64(dpBatch) {
		id := uint64(k)*100 + i
		for _, x := range []uint64{id, id + 10, id + 20, id + 50} {
			switch c := got[x]; {
			case c == 0:
				r.tot.lost++
				r.errorf("batch %d: WR %d never completed", k, x)
			case c > 1:
				r.tot.dup += c - 1
				r.errorf("batch %d: WR %d completed %d times", k, x, c)
			}
		}
		buf := make([]byte, 100)
		if err := b.d.Read(b.mr.IOVA+(slot+i)%40*100, buf); err != nil || !bytes.Equal(buf, bytes.Repeat([]byte{byte(k*7 + int(i))}, 100)) {
			r.tot.bad++
			r.errorf("batch %d: SEND %d: the receive buffer holds %x", k, i, buf[:4])
		}
		if err := b.d.Read(b.mr.IOVA+4096+i*100, buf); err != nil || !bytes.Equal(buf, bytes.Repeat([]byte{byte(k*11 + int(i) + 1)}, 100)) {
			r.tot.bad++
			r.errorf("batch %d: RDMA_WRITE %d: B holds %x", k, i, buf[:4])
		}
		var w [8]byte
		_ = a.d.Read(a.mr.IOVA+8192+i*8, w[:])
		if o := binary.BigEndian.Uint64(w[:]); r.seen[o] || o >= r.tot.adds+dpBatch {
			r.tot.dup++
			r.errorf("batch %d: fetch-add %d returned %d (seen, or beyond the adds)", k, i, o)
		} else {
			r.seen[o] = true
		}
	}
	r.tot.adds += dpBatch
	var w [8]byte
	_ = b.d.Read(b.mr.IOVA+3*4096, w[:])
	if v := binary.BigEndian.Uint64(w[:]); v != r.tot.adds {
		r.tot.bad++
		r.errorf("batch %d: counter %d after %d fetch-adds", k, v, r.tot.adds)
	}
	r.tot.wqes += 3 * dpBatch
	r.tot.sent += dpBatch
	r.tot.received += got[uint64(k)*100+50] + got[uint64(k)*100+51] + got[uint64(k)*100+52] + got[uint64(k)*100+53] + got[uint64(k)*100+54]
	r.tot.bytes += 2 * dpBatch * 100
}

// TestCrashDataPath is the crash tier's data-path ledger.
func TestCrashDataPath(t *testing.T) {
	if !hasHook {
		t.Fatal("vhcrd was built without the crashpoint hook")
	}
	seed := uint64(envInt("VHCRD_CRASH_SEED", int(time.Now().UnixNano()%1e9)))
	rng := rand.New(rand.NewPCG(seed, 2))
	dir := mastertest.TempDir(t, "vhcrd-crash-dp")
	d, _ := startDaemon(t, dir, "")
	if d.metrics == "" {
		t.Fatalf("vhcrd killed before it served:\n%s", d.logText())
	}
	a, err := vfclient.AttachFile(filepath.Join(dir, "bar"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.stop(t); a.Close() })
	r := &dpRun{t: t, a: dpSideOf(t, a, 0), b: dpSideOf(t, a, 1), seen: map[uint64]bool{}}
	r.a.qp.Cfg.RemoteQPN, r.b.qp.Cfg.RemoteQPN = r.b.qp.QPN, r.a.qp.QPN
	for _, s := range []*dpSide{r.a, r.b} {
		if err := s.d.ModifyPath(context.Background(), s.qp.QP, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS); err != nil {
			t.Fatal(err)
		}
	}
	r.oneBatch(10 * time.Second)
	kills := 0
	restart := func(point string) {
		d, _ = startDaemon(t, dir, point)
	}
	// Random kills: a batch in flight while the process dies.
	for range envInt("VHCRD_CRASH_DP_KILLS", 6) {
		delay := time.Duration(rng.IntN(3000)) * time.Microsecond
		done := make(chan struct{})
		go func() { r.oneBatch(30 * time.Second); close(done) }()
		time.Sleep(delay) // the kill's moment, not a synchronisation
		d.kill()
		kills++
		restart("")
		<-done
	}
	// One kill at each data-path point (its Nth hit, N seeded): the
	// running PF is stopped between batches, one with the point selected
	// serves the next batch into the point.
	for _, p := range dpPoints {
		d.kill()
		kills++
		restart(fmt.Sprintf("%s:%d", p, 1+rng.IntN(dpBatch))) // every point passes at least dpBatch times a batch
		done := make(chan struct{})
		go func() { r.oneBatch(30 * time.Second); close(done) }()
		select {
		case <-d.exited:
		case <-time.After(20 * time.Second):
			r.errorf("point %s never reached", p)
			d.kill()
		}
		restart("")
		<-done
	}
	for range 2 {
		r.oneBatch(10 * time.Second)
	}
	fmt.Fprintf(os.Stdout, "crash tier, data path: seed %d, kills %d, WQEs %d, bytes %d checked, messages sent %d received %d, CQEs %d, lost %d, duplicated %d, bad %d, fetch-adds %d = counter\n",
		seed, kills, r.tot.wqes, r.tot.bytes, r.tot.sent, r.tot.received, r.tot.cqes, r.tot.lost, r.tot.dup, r.tot.bad, r.tot.adds)
}
