package master

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// FuzzJournalRecord: the journal's decoder on any bytes at any sequence
// never panics, never reads past the journal, and accepts only a record
// whose check holds, and a result only with its own check.
func FuzzJournalRecord(f *testing.F) {
	for _, s := range journalSeeds(f) {
		f.Add(s, uint64(1))
	}
	f.Fuzz(func(t *testing.T, j []byte, seq uint64) {
		rec, ok := readRecord(j, 0, seq, 4)
		if !ok {
			return
		}
		if rec.seq != seq || rec.vf < 0 || rec.vf >= 4 || rec.size > int64(len(j)) {
			t.Fatalf("accepted %+v from %d bytes", rec, len(j))
		}
		if rec.committed && (rec.res.Seq != seq || len(rec.res.Outbox) > 4096 || len(rec.res.Outbox)%8 != 0) {
			t.Fatalf("accepted the result %+v", rec.res)
		}
	})
}

// journalSeeds are records as the journal writes them, at sequence 1: a
// committed command with an inbox and an immediate output, one with an
// outbox and a completion EQ, and an intent without its result.
func journalSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for k := range 3 {
		ps := &pstate{b: make([]byte, pfstate.HeaderSize+recHdr+4096+resMax), nvf: 4}
		ps.g.Journal = pfstate.Region{Off: pfstate.HeaderSize, Size: int64(len(ps.b)) - pfstate.HeaderSize}
		var w [4]uint64
		w[0], w[3] = 0x1000, 0x31
		ps.intent(recCmd, 2, flagExec|flagInbox|flagEvent, 1<<31, &w, []byte{1, 2, 3, 4, 5, 6, 7, 8})
		switch k {
		case 0:
			ps.commit(&LastResult{Status: 0, Out: 0x1234, EQN: -1, Flags: flagImm}, nil)
		case 1:
			ps.commit(&LastResult{Status: 0, Token: 7, EQN: 3, ProdBefore: 9, Flags: flagOutbox}, []byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0, 1})
		}
		rec, ok := readRecord(ps.b[pfstate.HeaderSize:], 0, 1, 4)
		if !ok || rec.committed != (k < 2) {
			tb.Fatalf("the journal's own record %d does not decode", k)
		}
		seeds = append(seeds, append([]byte(nil), ps.b[pfstate.HeaderSize:pfstate.HeaderSize+recHdr+8+resHdr+16]...))
	}
	return seeds
}

// TestJournalSeeds writes the seed corpus of FuzzJournalRecord (with
// -update-seeds) and checks that it is the journal's current format.
func TestJournalSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzJournalRecord")
	for k, s := range journalSeeds(t) {
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint64(1)\n", s)
		name := filepath.Join(dir, fmt.Sprintf("seed-%d", k))
		if *updateSeeds {
			if err := os.WriteFile(name, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got, err := os.ReadFile(name); err != nil || string(got) != want {
			t.Errorf("%s is not a record of this format (go test -run TestJournalSeeds -update-seeds): %v", name, err)
		}
	}
}

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the seed corpus of FuzzJournalRecord")

// FuzzCheckpoint: the checkpoint decoder on any slot never panics and
// returns a checkpoint only with its check and generation.
func FuzzCheckpoint(f *testing.F) {
	ps := &pstate{b: make([]byte, pfstate.HeaderSize+2*64<<10), nvf: 1}
	ps.g.Ckpt = pfstate.Region{Off: pfstate.HeaderSize, Size: 64 << 10}
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

func TestInboxLen(t *testing.T) {
	var in [4096]byte
	if n := inboxLen(in[:]); n != 0 {
		t.Fatalf("zero inbox: %d", n)
	}
	for _, at := range []int{0, 7, 8, 63, 64, 65, 1000, 4032, 4095} {
		clear(in[:])
		in[at] = 1
		if n, want := inboxLen(in[:]), (at/8+1)*8; n != want {
			t.Errorf("last non-zero byte %d: %d, want %d", at, n, want)
		}
	}
}
