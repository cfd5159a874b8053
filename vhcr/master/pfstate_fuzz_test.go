package master

import (
	"testing"
)

// FuzzJournalRecord: the journal's decoder on any bytes at any sequence
// never panics, never reads past the journal, and accepts only a record
// whose check holds.
func FuzzJournalRecord(f *testing.F) {
	ps := &pstate{b: make([]byte, hdrSize+recHdr+4096), nvf: 4}
	ps.g.journal = [2]int64{hdrSize, recHdr + 4096}
	var w [4]uint64
	w[0], w[3] = 0x1000, 0x31
	ps.intent(recCmd, 2, flagExec, 1<<31, &w, nil)
	ps.commit(0)
	f.Add(append([]byte(nil), ps.b[hdrSize:hdrSize+recHdr]...), uint64(1))
	f.Fuzz(func(t *testing.T, j []byte, seq uint64) {
		rec, ok := readRecord(j, 0, seq, 4)
		if !ok {
			return
		}
		if rec.seq != seq || rec.vf < 0 || rec.vf >= 4 || rec.size > int64(len(j)) {
			t.Fatalf("accepted %+v from %d bytes", rec, len(j))
		}
	})
}

// FuzzResultSlot: the result-slot decoder on any bytes never panics and
// accepts only a slot whose check holds.
func FuzzResultSlot(f *testing.F) {
	ps := &pstate{b: make([]byte, hdrSize+slotSize), nvf: 1}
	ps.g.slots = [2]int64{hdrSize, slotSize}
	ps.writeSlot(0, &slot{seq: 7, toggle: 1 << 31, status: 0, w: [4]uint64{1, 2, 3, 4}, eqn: -1}, nil)
	f.Add(append([]byte(nil), ps.b[hdrSize:]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < slotSize {
			b = append(b, make([]byte, slotSize-len(b))...)
		}
		s, ok := readSlot(b[:slotSize])
		if ok && (s.seq == 0 || len(s.outbox) > 4096) {
			t.Fatalf("accepted %+v", s)
		}
	})
}

// FuzzCheckpoint: the checkpoint decoder on any slot never panics and
// returns a checkpoint only with its check and generation.
func FuzzCheckpoint(f *testing.F) {
	ps := &pstate{b: make([]byte, hdrSize+2*64<<10), nvf: 1}
	ps.g.ckpt = [2]int64{hdrSize, 64 << 10}
	var act uint32
	ps.act = &act
	if err := ps.writeCheckpoint(&Checkpoint{Seq: 3, HCA: nil, Tokens: []uint16{1}}); err != nil {
		f.Fatal(err)
	}
	f.Add(append([]byte(nil), ps.ckptSlot(0)[:256]...), uint32(1))
	f.Fuzz(func(t *testing.T, s []byte, gen uint32) {
		c, err := decodeCheckpoint(s, gen)
		if err == nil && c.HCA == nil {
			t.Fatal("checkpoint without its HCA image accepted")
		}
	})
}
