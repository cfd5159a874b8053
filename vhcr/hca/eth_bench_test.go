package hca

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// ethLoop is one frame per step from VF 1's TX ring to VF 0's RX ring of
// an ethRig (VF 1 tags it with VF 0's VST VLAN, VF 0's ingress strips it):
// the send WQEs encoded once per slot and pass, the receive WQE once, the
// CQs' consumer indexes advanced in their doorbell records, nothing
// allocated.
type ethLoop struct {
	r    *ethRig
	rx   *tqp
	sq   [2][8][]byte
	rq   []byte
	word [4]byte
	n    uint32
	txQP *qpObj
}

func newEthLoop(tb testing.TB, size int) *ethLoop {
	r := newEthRig(tb)
	l := &ethLoop{r: r, rx: r.ethRX(0, 0), txQP: r.qps[1].obj()}
	r.vfs[1].fill(r.mem[1], ethFrame(r.d.h.VFMAC(0, 1), r.d.h.VFMAC(1, 1), size))
	w := send(mlx4.OPCODE_SEND, sge(r.keys[1], ethVA, uint32(size)))
	w.Ctrl.InsVLAN, w.Ctrl.VLANTag = mlx4.WQE_CTRL_INS_CVLAN, 100
	q := r.qps[1]
	for pass := range 2 {
		for slot := range 8 {
			w.Ctrl.Owner = pass == 1
			b := make([]byte, 1<<q.sqShift)
			n, err := mlx4.EncodeSendWQE(b, w, nil)
			if err != nil {
				tb.Fatal(err)
			}
			l.sq[pass][slot] = b[:n]
		}
	}
	var rw mlx4.RecvWQE
	rw.NSGE = 1
	rw.SGE[0] = sge(r.keys[0], ethVA+2048, 2048)
	l.rq = make([]byte, 1<<l.rx.rqShift)
	if _, err := mlx4.EncodeRecvWQE(l.rq, &rw, false); err != nil {
		tb.Fatal(err)
	}
	return l
}

// step posts one receive WQE to VF 0 and one frame on VF 1, runs VF 1's
// send queue and consumes both CQEs.
func (l *ethLoop) step(tb testing.TB) {
	r, rx, tx := l.r, l.rx, l.r.qps[1]
	v0, v1 := r.vfs[0].w, r.vfs[1].w
	i := l.n
	_ = v0.CopyOut(rx.buf+rx.rqOff+uint64(i&7)<<rx.rqShift, l.rq)
	binary.BigEndian.PutUint32(l.word[:], (i+1)&0xffff)
	_ = v0.CopyOut(rx.db, l.word[:])
	_ = v1.CopyOut(tx.buf+tx.sqOff+uint64(i&7)<<tx.sqShift, l.sq[i>>3&1][i&7])
	if n := r.d.h.runSQ(l.txQP, 16); n != 1 {
		tb.Fatalf("step %d: %d WQEs", i, n)
	}
	l.n++
	binary.BigEndian.PutUint32(l.word[:], l.n&0xffffff)
	_ = v0.CopyOut(r.vfs[0].cqRec+mlx4.CQDBRecSetCI, l.word[:])
	_ = v1.CopyOut(r.vfs[1].cqRec+mlx4.CQDBRecSetCI, l.word[:])
}

// BenchmarkEthSwitch is one frame through the port's switch between two
// VFs per op (VF 1's send WQE gathered, its tag inserted, steered by
// destination MAC to VF 0's RX ring, VST's tag stripped, the receive WQE
// filled, both CQEs written), 64 and 1500 bytes; frames/s beside a plain
// copy of the same bytes, measured in the same run (memcpy-frames/s and
// their ratio), and allocs/op. 64B-crowded is 64 bytes with 512 other
// MACs attached on the port: the switch's one lookup makes a frame cost
// the QPs attached to its MAC, not every attachment.
func BenchmarkEthSwitch(b *testing.B) {
	for _, c := range []struct {
		name        string
		size, other int
	}{{"64B", 64, 0}, {"1500B", 1500, 0}, {"64B-crowded", 64, 512}} {
		size := c.size
		b.Run(c.name, func(b *testing.B) {
			l := newEthLoop(b, size)
			h := l.r.d.h
			for i := range c.other { // VF 1's RX QP on 512 MACs more
				var g [16]byte
				g[ethGIDPort], g[ethGIDSteer] = 1, 2
				eswitch.PutMAC(g[ethGIDMAC:], 0x02c9ee000000+uint64(i))
				h.fw.mcg[l.r.qps[1].qpn] = append(h.fw.mcg[l.r.qps[1].qpn], g)
			}
			h.ethReindex()
			src, dst := make([]byte, size), make([]byte, size)
			l.step(b) // warm-up: the engine's scratch
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			t0 := time.Now()
			for range b.N {
				l.step(b)
			}
			sw := time.Since(t0)
			b.StopTimer()
			if got := l.r.d.h.EngineStats(0).EthRx.Get(eswitch.Forward); got < uint64(b.N) {
				b.Fatalf("VF 0 received %d of %d frames", got, b.N)
			}
			t0 = time.Now()
			for i := range b.N {
				src[i%size]++
				copy(dst, src)
			}
			cp := time.Since(t0)
			fps, cps := float64(b.N)/sw.Seconds(), float64(b.N)/cp.Seconds()
			b.ReportMetric(fps, "frames/s")
			b.ReportMetric(cps, "memcpy-frames/s")
			b.ReportMetric(fps/cps, "switch/memcpy")
		})
	}
}
