package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// BenchmarkSend64StateFile is a 64-byte signalled RC SEND between two VFs through
// the engine (receive WQE posted, WQE executed, both CQEs written, the
// CQ's consumer index moved), without the data path's log and with it
// (the state file's region: the step record, the positions).
func BenchmarkSend64StateFile(b *testing.B) {
	for _, withLog := range []bool{false, true} {
		name := "no-state-file"
		if withLog {
			name = "state-file"
		}
		b.Run(name, func(b *testing.B) {
			d := newDPRig(b, 3, nil)
			if withLog {
				d.h.AttachDataPathLog(make([]byte, pfstate.DPSize), func(string) {})
			}
			p := &rcPair{d: d, a: d.setup(0), b: d.setup(1)}
			p.ka, p.ma = p.a.mr(vaA, 2, permAll, p.a.pd)
			p.kb, p.mb = p.b.mr(vaB, 2, permAll, p.b.pd)
			o := qpOpts{st: mlx4.QP_ST_RC, access: remoteAll}
			p.qa, p.qb = p.a.qp(o), p.b.qp(o)
			pair(p.qa, p.qb)
			qa, qb := p.qa, p.qb
			w := send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64))
			wb := make([]byte, 1<<qa.sqShift)
			var r mlx4.RecvWQE
			r.NSGE = copy(r.SGE[:], []mlx4.Gather{sge(p.kb, vaB, 64)})
			rb := make([]byte, 1<<qb.rqShift)
			if _, err := mlx4.EncodeRecvWQE(rb, &r, false); err != nil {
				b.Fatal(err)
			}
			var db, ci [4]byte
			obj := qa.obj()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				qb.write(qb.rqOff+uint64(uint32(i)&(qb.rqCnt-1))<<qb.rqShift, rb)
				binary.BigEndian.PutUint32(db[:], uint32(i+1)&0xffff)
				_ = qb.t.w.CopyOut(qb.db, db[:])
				w.Ctrl.Owner = uint32(i)&qa.sqCnt != 0
				n, _ := mlx4.EncodeSendWQE(wb, w, nil)
				off := qa.sqOff + uint64(uint32(i)&(qa.sqCnt-1))<<qa.sqShift
				qa.write(off+4, wb[4:n])
				qa.write(off, wb[:4])
				if d.h.runSQ(obj, 1) != 1 {
					b.Fatal("WQE not run")
				}
				binary.BigEndian.PutUint32(ci[:], uint32(i+1))
				_ = p.a.w.CopyOut(p.a.cqRec+mlx4.CQDBRecSetCI, ci[:])
				_ = p.b.w.CopyOut(p.b.cqRec+mlx4.CQDBRecSetCI, ci[:])
			}
		})
	}
}
