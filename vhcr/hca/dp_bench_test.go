package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// dpLoop is one message per step between two QPs of two VFs, posted and
// consumed without allocating: the WQEs are encoded once per slot and
// pass, the receive WQE once, and the CQs' consumer indexes advanced in
// their doorbell records.
type dpLoop struct {
	p      *rcPair
	sq     [2][8][]byte // [pass][slot] the send WQE
	rq     []byte
	word   [4]byte
	n      uint32
	recv   bool
	aQP    *qpObj
	budget int
}

func newDPLoop(tb testing.TB, w *mlx4.SendWQE, recv bool) *dpLoop {
	p := newRCPair(tb, permAll, qpOpts{rnrRetry: 7})
	l := &dpLoop{p: p, recv: recv, aQP: p.qa.obj(), budget: 16}
	for pass := range 2 {
		for slot := range 8 {
			w.Ctrl.Owner = pass == 1
			b := make([]byte, 1<<p.qa.sqShift)
			n, err := mlx4.EncodeSendWQE(b, w, nil)
			if err != nil {
				tb.Fatal(err)
			}
			l.sq[pass][slot] = b[:n]
		}
	}
	var r mlx4.RecvWQE
	r.NSGE = 1
	r.SGE[0] = sge(p.kb, vaB, 64)
	l.rq = make([]byte, 1<<p.qb.rqShift)
	if _, err := mlx4.EncodeRecvWQE(l.rq, &r, false); err != nil {
		tb.Fatal(err)
	}
	return l
}

// step posts one WQE (and one receive WQE), runs A's send queue and
// consumes the CQEs.
func (l *dpLoop) step(tb testing.TB) {
	p := l.p
	a, b := p.a.w, p.b.w
	i := l.n
	if l.recv {
		_ = b.CopyOut(p.qb.buf+p.qb.rqOff+uint64(i&7)<<p.qb.rqShift, l.rq)
		binary.BigEndian.PutUint32(l.word[:], (i+1)&0xffff)
		_ = b.CopyOut(p.qb.db, l.word[:])
	}
	_ = a.CopyOut(p.qa.buf+p.qa.sqOff+uint64(i&7)<<p.qa.sqShift, l.sq[i>>3&1][i&7])
	if n := p.d.h.runSQ(l.aQP, l.budget); n != 1 {
		tb.Fatalf("step %d: %d WQEs", i, n)
	}
	l.n++
	binary.BigEndian.PutUint32(l.word[:], l.n&0xffffff)
	_ = a.CopyOut(p.a.cqRec+mlx4.CQDBRecSetCI, l.word[:])
	if l.recv {
		_ = b.CopyOut(p.b.cqRec+mlx4.CQDBRecSetCI, l.word[:])
	}
}

func sendLoop(tb testing.TB) *dpLoop {
	l := newDPLoop(tb, send(mlx4.OPCODE_SEND), true)
	// The gather entry needs A's key: re-encode with it.
	w := send(mlx4.OPCODE_SEND, sge(l.p.ka, vaA, 64))
	l.reencode(tb, w)
	return l
}

func writeLoop(tb testing.TB, n uint32) *dpLoop {
	l := newDPLoop(tb, send(mlx4.OPCODE_RDMA_WRITE), false)
	// A region large enough: 16 pages each side.
	ka, _ := l.p.a.mr(0x100000000, 16, permAll, l.p.a.pd)
	kb, _ := l.p.b.mr(0x200000000, 16, permAll, l.p.b.pd)
	w := send(mlx4.OPCODE_RDMA_WRITE, sge(ka, 0x100000000, n))
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: 0x200000000, RKey: kb}
	l.reencode(tb, w)
	return l
}

func (l *dpLoop) reencode(tb testing.TB, w *mlx4.SendWQE) {
	for pass := range 2 {
		for slot := range 8 {
			w.Ctrl.Owner = pass == 1
			b := make([]byte, 1<<l.p.qa.sqShift)
			n, err := mlx4.EncodeSendWQE(b, w, nil)
			if err != nil {
				tb.Fatal(err)
			}
			l.sq[pass][slot] = b[:n]
		}
	}
}

// TestDataPathAllocs: executing a SEND (receive side included) and an
// RDMA_WRITE, their CQEs written, allocates nothing once warm.
func TestDataPathAllocs(t *testing.T) {
	for name, l := range map[string]*dpLoop{"SEND 64": sendLoop(t), "RDMA_WRITE 64K": writeLoop(t, 64<<10)} {
		l.step(t) // warm-up: the engine's scratch
		if n := testing.AllocsPerRun(200, func() { l.step(t) }); n != 0 {
			t.Errorf("%s: %v allocations per WQE", name, n)
		}
	}
}

// BenchmarkSend64 is one 64-byte SEND between QPs of two VFs per op: the
// receive WQE taken, the data scattered, both CQEs written.
func BenchmarkSend64(b *testing.B) {
	l := sendLoop(b)
	b.ReportAllocs()
	b.SetBytes(64)
	b.ResetTimer()
	for range b.N {
		l.step(b)
	}
}

// BenchmarkRDMAWrite64K is one 64 KiB RDMA_WRITE per op, through both
// regions' MTTs (16 pages each side).
func BenchmarkRDMAWrite64K(b *testing.B) {
	l := writeLoop(b, 64<<10)
	b.ReportAllocs()
	b.SetBytes(64 << 10)
	b.ResetTimer()
	for range b.N {
		l.step(b)
	}
}

// fuzzRing is the fuzz input's layout: A's send queue (8 slots of 128
// bytes), B's receive queue (8 of 64), B's receive doorbell record.
const (
	fuzzSQ   = 8 * 128
	fuzzRQ   = 8 * 64
	fuzzSize = fuzzSQ + fuzzRQ + 4
)

// fuzzPair is a connected RC pair with a bystander VF, the rings of the
// input written raw into A's send queue and B's receive queue.
func fuzzPair(t testing.TB, data []byte) (*rcPair, *tvf) {
	p := newRCPair(t, permAll, qpOpts{rnrRetry: 3})
	by := p.d.setup(2)
	in := make([]byte, fuzzSize)
	copy(in, data)
	p.qa.write(p.qa.sqOff, in[:fuzzSQ])
	p.qb.write(p.qb.rqOff, in[fuzzSQ:fuzzSQ+fuzzRQ])
	if err := p.b.w.CopyOut(p.qb.db, in[fuzzSQ+fuzzRQ:]); err != nil {
		t.Fatal(err)
	}
	return p, by
}

// FuzzRunSQ feeds arbitrary send and receive queue contents to the engine:
// no panic, at most the budget of WQEs per call, and nothing written into
// a bystander VF's memory.
func FuzzRunSQ(f *testing.F) {
	// Seeds: the rings of real traffic (their keys are the rig's, which is
	// built the same way for every input).
	seed := func(post func(p *rcPair)) []byte {
		p, _ := fuzzPair(f, nil)
		post(p)
		b := make([]byte, fuzzSize)
		_ = p.a.w.CopyIn(b[:fuzzSQ], p.qa.buf+p.qa.sqOff)
		_ = p.b.w.CopyIn(b[fuzzSQ:fuzzSQ+fuzzRQ], p.qb.buf+p.qb.rqOff)
		_ = p.b.w.CopyIn(b[fuzzSQ+fuzzRQ:], p.qb.db)
		return b
	}
	f.Add(seed(func(p *rcPair) {
		p.qb.recv(sge(p.kb, vaB, 64))
		p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64)), nil)
		w := send(mlx4.OPCODE_RDMA_WRITE, sge(p.ka, vaA, 100))
		w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB + 10, RKey: p.kb}
		p.qa.post(w, nil)
		w = send(mlx4.OPCODE_ATOMIC_FA, sge(p.ka, vaA, 8))
		w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB + 64, RKey: p.kb}
		w.HasAtomic = true
		p.qa.post(w, nil)
	}))
	f.Add(seed(func(p *rcPair) {
		for range 8 {
			p.qa.post(send(mlx4.OPCODE_NOP), nil)
		}
	}))
	f.Add(seed(func(p *rcPair) { // no receive WQE: RNR NAKs, retried (retry.go)
		p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64)), nil)
		p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64)), nil)
	}))
	f.Add(make([]byte, fuzzSize))
	f.Add(bytes255(fuzzSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, by := fuzzPair(t, data)
		before := snapshot(t, by.w)
		const budget = 12
		for range 3 {
			for _, q := range []*tqp{p.qa, p.qb} {
				if n := q.run(budget); n < 0 || n > budget {
					t.Fatalf("runSQ did %d WQEs for a budget of %d", n, budget)
				}
				p.d.h.sqPending(q.obj())
			}
			p.d.elapse() // a WQE waiting for an RC retry runs it next round (retry.go)
		}
		if !bytesEqual(snapshot(t, by.w), before) {
			t.Fatal("a bystander VF's memory changed")
		}
	})
}

func bytes255(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xff
	}
	return b
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }
