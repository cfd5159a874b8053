package trace

import (
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzRecord unpacks arbitrary slot words: Pack is Unpack's inverse, every
// record names and formats without panicking, and the JSON of a record of a
// defined kind decodes back to its entry.
func FuzzRecord(f *testing.F) {
	r := testRing(64)
	script(r)
	recs := make([]Record, 64)
	n, _ := r.NewReaderFromStart().Read(recs)
	for i := range recs[:n] {
		w := recs[i].Pack()
		var b [64]byte
		for j, x := range w {
			binary.LittleEndian.PutUint64(b[8*j:], x)
		}
		f.Add(b[:])
	}
	clk := r.Clock()
	f.Fuzz(func(t *testing.T, data []byte) {
		var b [64]byte
		copy(b[:], data)
		var w Words
		for j := range w {
			w[j] = binary.LittleEndian.Uint64(b[8*j:])
		}
		rec := Unpack(&w)
		if rec.Pack() != w {
			t.Fatalf("Pack(Unpack(%x)) = %x", w, rec.Pack())
		}
		e := clk.EntryOf(&rec)
		if l := AppendText(nil, &e); len(l) == 0 || l[len(l)-1] != '\n' || strings.Count(string(l), "\n") != 1 {
			t.Fatalf("text %q", l)
		}
		line := AppendJSON(nil, &e)
		if !json.Valid(line) {
			t.Fatalf("invalid JSON %s", line)
		}
		if !rec.Kind.Valid() {
			return
		}
		got, err := ParseJSON(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("%s:\n got %+v\nwant %+v", line, got, e)
		}
	})
}

// FuzzParseJSON decodes arbitrary lines as a client would: no panic, and
// an entry it accepts encodes to a line it decodes to the same entry.
func FuzzParseJSON(f *testing.F) {
	f.Add([]byte(`{"seq":7,"time":"2026-12-01T03:21:19.123457289Z","kind":"post","vf":3,"comm":"VHCR_POST","toggle":0,"opcode":"QUERY_FUNC_CAP","op_mod":1,"in_mod":2,"in_param":"0x0","out_param":"0x5000","e_bit":false,"token":65535,"status":"OK","reason":"none","latency_ns":1200}`))
	f.Add([]byte(`{"kind":"lost","lost":12}`))
	f.Add([]byte(`{"seq":1,"time":"2026-12-01T03:21:19Z","kind":"flr","vf":4,"phase":"begin"}`))
	f.Add([]byte(`{"seq":2,"time":"2026-12-01T03:21:19Z","kind":"fault","vf":1,"fault":"delay","rule":3,"point":"comm","comm":"RESET"}`))
	f.Add([]byte(`{"kind":"comm","comm":"\u00e9\"\\","time":"9999-12-31T23:00:00-05:00"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseJSON(line)
		if err != nil {
			return
		}
		out := AppendJSON(nil, &e)
		got, err := ParseJSON(out)
		if err != nil {
			t.Fatalf("%s re-encoded as %s: %v", line, out, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("%s:\n got %+v\nwant %+v", out, got, e)
		}
		_ = AppendText(nil, &e)
	})
}

// FuzzParseRequest decodes arbitrary request lines as the server does: no
// panic, and an accepted request survives the client's encoding.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"vf":3,"opcode":"QUERY_FUNC_CAP","json":true}`))
	f.Add([]byte(`{"opcode":"0x31","from_start":true}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		q, err := ParseRequest(line)
		if err != nil {
			return
		}
		o, err := q.Options()
		if err != nil {
			t.Fatalf("accepted %s, then: %v", line, err)
		}
		b, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		q2, err := ParseRequest(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if o2, _ := q2.Options(); o2 != o {
			t.Fatalf("%s: %+v, then %+v", b, o, o2)
		}
	})
}
