package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// FuzzDataPathLog: a data-path region of any contents (a step record's
// body, counts and after-state, committed or applied, beside an applied
// record before it; the intent, entries; their check and commit words
// made valid, so that the decoders run on the bytes) attached to a live
// HCA with a connected pair: no panic, and the engine runs on afterwards.
func FuzzDataPathLog(f *testing.F) {
	f.Add([]byte{2, 1, 1, 0}, []byte{1, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, []byte{2, 0, 0, 0, 3, 0, 0, 0})
	f.Add(make([]byte, 200), make([]byte, 64))
	f.Fuzz(func(t *testing.T, step, entries []byte) {
		lp := newLogPair(t)
		r := make([]byte, pfstate.DPSize)
		le := binary.LittleEndian
		// record 6, applied, in slot 0: the counts and after-state from
		// the end of the input
		p := r[pfstate.DPStepOff : pfstate.DPStepOff+pfstate.DPStepSize]
		le.PutUint64(p[pfstate.StepSeq:], 6)
		if len(step) >= 4 {
			copy(p[pfstate.StepCounts:pfstate.StepCounts+4], step[len(step)-4:])
			copy(p[pfstate.StepAfter:], step)
		}
		sealStep(p)
		le.PutUint32(p[pfstate.StepCommit:], pfstate.MagicApplied^6)
		// record 7 in slot 1, committed or (the first byte's top bit)
		// applied, its after-state the input again
		b := r[pfstate.DPStepOff+pfstate.DPStepSize : pfstate.DPStepOff+2*pfstate.DPStepSize]
		le.PutUint64(b[pfstate.StepSeq:], 7)
		copy(b[pfstate.StepCounts:], step)
		copy(b[pfstate.StepAfter:], step)
		sealStep(b)
		commit := uint32(pfstate.MagicStep)
		if len(step) > 0 && step[0]&0x80 != 0 {
			commit = pfstate.MagicApplied
		}
		le.PutUint32(b[pfstate.StepCommit:], commit^7)
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

// sealStep writes the check word of record b as the PF does, for the body
// its counts name (if it fits before the after-state; else the check
// stays zero and the record is not whole).
func sealStep(b []byte) {
	le := binary.LittleEndian
	cnt := le.Uint32(b[pfstate.StepCounts:])
	body := pfstate.StepBody + int(cnt&0xff)*pfstate.StepCQESize + int(cnt>>8&0xff)*pfstate.StepCQSize +
		int(cnt>>16&0xff)*pfstate.StepQPSize + int(cnt>>24)*pfstate.StepSRQSize
	if body <= pfstate.StepAfter {
		le.PutUint32(b[pfstate.StepCheck:], pfstate.Checksum(b[pfstate.StepSeq:body]))
	}
}
