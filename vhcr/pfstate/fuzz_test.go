package pfstate_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// FuzzChannelRecord: the channel record's decoder on any four words, VF,
// generation and slot count never panics, and a slot it calls intact is
// one the encoder writes: the same words, checked under gen or gen+1.
func FuzzChannelRecord(f *testing.F) {
	r := pfstate.Record{LastCmd: 6, Active: true, VHCR: 0x123456789abcd000}
	w0, hi, lo := r.Words(5, pfstate.SlotsPerVF)
	f.Add(w0, pfstate.RecordCheck(w0, hi, lo, 3, 7), hi, lo, uint8(3), uint32(7), true)
	h0, _, _ := r.Words(0, 1)
	f.Add(h0, pfstate.RecordCheck(h0, hi, lo, 3, 8), hi, lo, uint8(3), uint32(7), false)
	f.Add(uint32(0), uint32(0), uint32(0), uint32(0), uint8(0), uint32(0), false)
	f.Fuzz(func(t *testing.T, w0, check, hi, lo uint32, vf uint8, gen uint32, state bool) {
		slots := 1
		if state {
			slots = pfstate.SlotsPerVF
		}
		r, seq, cause := pfstate.DecodeRecord(w0, check, hi, lo, int(vf), gen, slots)
		if cause != "" {
			return
		}
		e0, ehi, elo := r.Words(seq, slots)
		if e0 != w0 || ehi != hi || elo != lo {
			t.Fatalf("intact slot %#x %#x %#x re-encodes as %#x %#x %#x", w0, hi, lo, e0, ehi, elo)
		}
		if check != pfstate.RecordCheck(w0, hi, lo, int(vf), gen) && check != pfstate.RecordCheck(w0, hi, lo, int(vf), gen+1) {
			t.Fatal("intact slot without its check")
		}
		if !state && seq != 0 {
			t.Fatalf("a header slot with sequence %d", seq)
		}
	})
}
