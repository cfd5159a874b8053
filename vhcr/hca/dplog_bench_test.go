package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// BenchmarkSend64StateFile is a 64-byte signalled RC SEND between two VFs through
// the engine (receive WQE posted, WQE executed, both CQEs written, the
// CQ's consumer index moved), without the data path's log and with it
// (the state file's region: the step record, the positions), one WQE per
// run of the send queue and 8 (the rig's rings; one step for the 8: dplog.go).
func BenchmarkSend64StateFile(b *testing.B) {
	for _, c := range []struct {
		name  string
		log   bool
		batch int
	}{{"no-state-file", false, 1}, {"state-file", true, 1}, {"no-state-file-8", false, 8}, {"state-file-8", true, 8}} {
		b.Run(c.name, func(b *testing.B) { benchSend64(b, c.log, c.batch) })
	}
}

func benchSend64(b *testing.B, withLog bool, batch int) {
	d := newDPRig(b, 3, nil)
	if withLog {
		d.h.AttachDataPathLog(make([]byte, pfstate.DPSize), func(string) {})
	}
	p := rcPairOn(d, permAll, qpOpts{})
	qa, qb := p.qa, p.qb
	w := send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64))
	wb := make([]byte, 1<<qa.sqShift)
	var r mlx4.RecvWQE
	r.NSGE = copy(r.SGE[:], []mlx4.Gather{sge(p.kb, vaB, 64)})
	rb := make([]byte, 1<<qb.rqShift)
	if _, err := mlx4.EncodeRecvWQE(rb, &r, false); err != nil {
		b.Fatal(err)
	}
	if batch > int(qa.sqCnt) || batch > int(qb.rqCnt) {
		b.Fatalf("a batch of %d for rings of %d and %d", batch, qa.sqCnt, qb.rqCnt)
	}
	var db, ci [4]byte
	obj := qa.obj()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		for k := i; k < i+batch; k++ {
			qb.write(qb.rqOff+uint64(uint32(k)&(qb.rqCnt-1))<<qb.rqShift, rb)
			w.Ctrl.Owner = uint32(k)&qa.sqCnt != 0
			n, _ := mlx4.EncodeSendWQE(wb, w, nil)
			off := qa.sqOff + uint64(uint32(k)&(qa.sqCnt-1))<<qa.sqShift
			qa.write(off+4, wb[4:n])
			qa.write(off, wb[:4])
		}
		binary.BigEndian.PutUint32(db[:], uint32(i+batch)&0xffff)
		_ = qb.t.w.CopyOut(qb.db, db[:])
		if d.h.runSQ(obj, batch) != batch {
			b.Fatal("WQEs not run")
		}
		binary.BigEndian.PutUint32(ci[:], uint32(i+batch))
		_ = p.a.w.CopyOut(p.a.cqRec+mlx4.CQDBRecSetCI, ci[:])
		_ = p.b.w.CopyOut(p.b.cqRec+mlx4.CQDBRecSetCI, ci[:])
	}
}

// BenchmarkStepRecord is the step record of a ping-pong's step (the
// receiver's CQE and the sender's, their two CQs before the step, the two
// QPs' positions after), checksum and commit word included: the log's work
// between a SEND's execution and its receive CQE.
func BenchmarkStepRecord(b *testing.B) {
	l := &dpLog{b: make([]byte, pfstate.DPSize), hit: func(string) {}}
	qa, qb := &qpObj{tr: &restrack.Object{ID: 0x48}}, &qpObj{tr: &restrack.Object{ID: 0x49}}
	l.np, l.ncq, l.nqp = 2, 2, 2
	l.pend[0] = dpPendCQE{cqn: 0x81, e: mlx4.CQE{VlanMyQPN: 0x49, ByteCnt: 64, Opcode: mlx4.RECV_OPCODE_SEND}}
	l.pend[1] = dpPendCQE{cqn: 0x80, e: mlx4.CQE{VlanMyQPN: 0x48, ByteCnt: 64, IsSend: true, Opcode: mlx4.OPCODE_SEND}}
	l.cqs[0], l.cqs[1] = dpCQBefore{cqn: 0x81, eqn: 1, eqP: 7}, dpCQBefore{cqn: 0x80, eqn: 1, eqP: 7}
	l.qps[0], l.qps[1] = qa, qb
	b.ReportAllocs()
	for range b.N {
		l.writeStep()
	}
}
