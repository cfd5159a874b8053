package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// FuzzDataPathLog: a data-path region of any contents (the step record's
// body and counts, the intent, entries; their check and commit words made
// valid, so that the decoders run on the bytes) attached to a live HCA
// with a connected pair: no panic, and the engine runs on afterwards.
func FuzzDataPathLog(f *testing.F) {
	f.Add([]byte{2, 1, 1, 0}, []byte{1, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, []byte{2, 0, 0, 0, 3, 0, 0, 0})
	f.Add(make([]byte, 200), make([]byte, 64))
	f.Fuzz(func(t *testing.T, step, entries []byte) {
		lp := newLogPair(t)
		r := make([]byte, pfstate.DPSize)
		b := r[pfstate.DPStepOff:pfstate.DPStepSize]
		le := binary.LittleEndian
		le.PutUint64(b[pfstate.StepSeq:], 7)
		n := copy(b[pfstate.StepCounts:], step)
		end := min(pfstate.DPStepSize, pfstate.StepCounts+max(n, 8))
		le.PutUint32(b[pfstate.StepCheck:], pfstate.Checksum(b[pfstate.StepSeq:end]))
		// the counts name a body: its check as the PF writes it
		cnt := le.Uint32(b[pfstate.StepCounts:])
		body := pfstate.StepBody + int(cnt&0xff)*pfstate.StepCQESize + int(cnt>>8&0xff)*pfstate.StepCQSize +
			int(cnt>>16&0xff)*pfstate.StepQPSize + int(cnt>>24)*pfstate.StepSRQSize
		if body <= pfstate.DPStepSize {
			le.PutUint32(b[pfstate.StepCheck:], pfstate.Checksum(b[pfstate.StepSeq:body]))
		}
		le.PutUint32(b[pfstate.StepCommit:], pfstate.MagicStep^7)
		for i := 0; i*pfstate.DPCopySize < len(entries) && i < 64; i++ {
			p := r[pfstate.DPTableOff+i*pfstate.DPCopySize:]
			copy(p[pfstate.EntKey:pfstate.DPCopySize], entries[i*pfstate.DPCopySize:])
			le.PutUint32(p[pfstate.EntCheck:], copyCheck(p[:pfstate.DPCopySize]))
		}
		lp.d.h.AttachDataPathLog(r, func(string) {})
		lp.a.fill(lp.ma, pattern(64, 1))
		lp.qa.post(rdmaWrite(lp.ka, lp.kb, vaA, vaB+2000, 64), nil)
		lp.qa.run(16)
		lp.d.take()
	})
}
