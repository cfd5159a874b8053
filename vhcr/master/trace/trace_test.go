package trace

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// wantScript is what script writes, as read back.
var wantScript = []Record{
	{Seq: 0, Ticks: 1000, Kind: KindRestart, VF: 3, Aux: 1},
	{Seq: 1, Ticks: 1002, Kind: KindRestart, VF: 4},
	{Seq: 2, Ticks: 1100, Kind: KindComm, VF: 3, Comm: CommReset, Flags: FlagToggle},
	{Seq: 3, Ticks: 1200, Kind: KindComm, VF: 3, Comm: CommVHCR0, Arg: 1},
	{Seq: 4, Ticks: 1300, Kind: KindComm, VF: 3, Comm: CommVHCR1, Flags: FlagToggle, Arg: 2},
	{Seq: 5, Ticks: 1400, Kind: KindComm, VF: 3, Comm: CommVHCR2, Arg: 3},
	{Seq: 6, Ticks: 1500, Kind: KindComm, VF: 3, Comm: CommVHCREn, Flags: FlagToggle, Arg: 0x4000},
	{Seq: 7, Ticks: 2000, Latency: 2400, Kind: KindPost, VF: 3, Comm: CommVHCRPost, Op: mlx4.QUERY_FUNC_CAP,
		OpMod: 1, Arg: 2, OutParam: 0x5000, Token: 0xffff, Flags: FlagTimed},
	{Seq: 8, Ticks: 5000, Latency: 250, Kind: KindPost, VF: 3, Comm: CommVHCRPost, Op: mlx4.NOP, Token: 1,
		Flags: FlagToggle | FlagTimed},
	{Seq: 9, Ticks: 6000, Latency: 300, Kind: KindPost, VF: 4, Comm: CommVHCRPost, Op: mlx4.QUERY_FUNC_CAP,
		OpMod: 7, Token: 2, Flags: FlagToggle | FlagTimed, Status: mlx4.BAD_PARAM, Reason: refusal.OpModifier},
	{Seq: 10, Ticks: 7000, Latency: 6200, Kind: KindPost, VF: 3, Comm: CommVHCRPost, Op: mlx4.SW2HW_MPT, Arg: 7,
		InParam: 0x7f0001000, Token: 0x12, Flags: FlagE | FlagTimed, Status: mlx4.BAD_RESOURCE, Reason: refusal.NotOwner},
	{Seq: 11, Ticks: 13100, Kind: KindEQE, VF: 3, Aux: mlx4.EventCmd, Arg: 2, Token: 0x12},
	{Seq: 12, Ticks: 13150, Kind: KindIRQ, VF: 3, Arg: 2},
	{Seq: 13, Ticks: 14000, Latency: 247000, Kind: KindPost, VF: 3, Comm: CommVHCRPost, Op: 0xabc, Token: 3,
		Flags: FlagToggle | FlagTimed, Status: mlx4.BAD_PARAM, Reason: refusal.UnknownOpcode},
	{Seq: 14, Ticks: 281000, Kind: KindPost, VF: 4, Comm: CommVHCRPost, Op: mlx4.NOP, Token: 4, Flags: FlagE},
	{Seq: 15, Ticks: 301000, Kind: KindReset, VF: 3, Aux: 3},
	{Seq: 16, Ticks: 401000, Kind: KindFLR, VF: 4, Comm: CommFLR, Aux: 1},
	{Seq: 17, Ticks: 2_400_001_000, Kind: KindFLR, VF: 4, Comm: CommFLR},
	{Seq: 18, Ticks: 2_400_002_000, Kind: KindPost, VF: 3, Comm: CommVHCRPost, Op: mlx4.ALLOC_RES, InParam: 8<<32 | 1,
		OutParam: 0x848, Token: 5, Flags: FlagToggle},
	{Seq: 19, Ticks: 2_400_003_000, Kind: KindPost, VF: 3, Comm: CommVHCRPost, Op: mlx4.ALLOC_RES, OpMod: 2,
		InParam: 0x848, Token: 6},
	{Seq: 20, Ticks: 2_400_004_000, Kind: KindPost, VF: 3, Comm: CommVHCRPost, Op: mlx4.ALLOC_RES, OpMod: 1,
		Arg: 0x106, InParam: 0x0002c9000103, Token: 7, Flags: FlagToggle},
	{Seq: 21, Ticks: 2_400_005_000, Kind: KindPost, VF: 3, Comm: CommVHCRPost, Op: mlx4.RST2INIT_QP, Arg: 0x848,
		InParam: 0x1000, Token: 8, Inbox: [2]uint64{0x0003000000000011, 0}},
	{Seq: 22, Ticks: 2_400_006_000, Kind: KindPost, VF: 3, Comm: CommVHCRPost, Op: mlx4.MAD_IFC, OpMod: 1, Arg: 1,
		InParam: 0x2000, OutParam: 0x3000, Token: 9, Flags: FlagToggle,
		Inbox: [2]uint64{0x0101010100000000, 0x0015000000000001}},
	{Seq: 23, Ticks: 2_400_007_000, Kind: KindPost, VF: 3, Comm: CommVHCRPost, Op: mlx4.FREE_RES, InParam: 1<<32 | 0x848,
		Token: 10},
	{Seq: 24, Ticks: 2_400_008_000, Kind: KindPost, VF: 3, Comm: CommVHCRPost, Op: mlx4.FREE_RES, OpMod: 5, Arg: 0x2a,
		Token: 11, Flags: FlagToggle, Status: mlx4.BAD_PARAM, Reason: refusal.OpModifier},
	{Seq: 25, Ticks: 2_400_009_000, Kind: KindEQE, VF: 3, Aux: mlx4.EventPortChange, Arg: 1},
	{Seq: 26, Ticks: 2_400_010_000, Kind: KindEQE, VF: 3, Aux: 0x0b, Arg: 1},
}

func readAll(t *testing.T, rd *Reader) ([]Record, uint64) {
	t.Helper()
	var out []Record
	var lost uint64
	buf := make([]Record, 5) // several Reads
	for {
		n, l := rd.Read(buf)
		lost += l
		if n == 0 {
			return out, lost
		}
		out = append(out, buf[:n]...)
	}
}

func TestScriptReadBack(t *testing.T) {
	r := testRing(64)
	script(r)
	got, lost := readAll(t, r.NewReaderFromStart())
	if lost != 0 {
		t.Errorf("lost %d records", lost)
	}
	if !reflect.DeepEqual(got, wantScript) {
		for i := range max(len(got), len(wantScript)) {
			if i >= len(got) || i >= len(wantScript) || got[i] != wantScript[i] {
				t.Errorf("record %d:\n got %+v\nwant %+v", i, at(got, i), at(wantScript, i))
			}
		}
	}
	if r.Written() != uint64(len(wantScript)) {
		t.Errorf("Written = %d, want %d", r.Written(), len(wantScript))
	}
	// A reader made now sees nothing of the past.
	if n, lost := r.NewReader().Read(make([]Record, 4)); n != 0 || lost != 0 {
		t.Errorf("new reader read %d, lost %d", n, lost)
	}
}

func at(rs []Record, i int) any {
	if i < len(rs) {
		return rs[i]
	}
	return "none"
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", name, got, want)
	}
}

func streamScript(t *testing.T, o Options) []byte {
	t.Helper()
	r := testRing(64)
	script(r)
	var b bytes.Buffer
	if err := Stream(context.Background(), &b, r.NewReaderFromStart(), o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestScriptText(t *testing.T) { golden(t, "script.txt", streamScript(t, Options{Filter: All})) }

func TestScriptJSON(t *testing.T) {
	golden(t, "script.jsonl", streamScript(t, Options{Filter: All, JSON: true}))
}

func TestFilter(t *testing.T) {
	got := streamScript(t, Options{Filter: Filter{VF: 4}})
	want := `03:21:19.123456790 vf4 RESTART fresh
03:21:19.123459289 vf4 POST  QUERY_FUNC_CAP op_mod=7 in_mod=0x0 in=0x0 out=0x0 tok=0x2 poll  BAD_PARAM reason=op_modifier  150ns
03:21:19.123596789 vf4 POST  NOP op_mod=0 in_mod=0x0 in=0x0 out=0x0 tok=0x4 event  OK
03:21:19.123656789 vf4 FLR begin
03:21:20.323456789 vf4 FLR end
`
	if string(got) != want {
		t.Errorf("vf 4:\n%s\nwant\n%s", got, want)
	}
	got = streamScript(t, Options{Filter: Filter{VF: -1, ByOpcode: true, Opcode: mlx4.QUERY_FUNC_CAP}, JSON: true})
	if n := bytes.Count(got, []byte("\n")); n != 2 || bytes.Count(got, []byte(`"opcode":"QUERY_FUNC_CAP"`)) != 2 {
		t.Errorf("QUERY_FUNC_CAP:\n%s", got)
	}
	got = streamScript(t, Options{Filter: Filter{VF: 3, ByOpcode: true, Opcode: mlx4.NOP}})
	if !strings.HasSuffix(string(got), " vf3 POST  NOP op_mod=0 in_mod=0x0 in=0x0 out=0x0 tok=0x1 poll  OK  125ns\n") ||
		bytes.Count(got, []byte("\n")) != 1 {
		t.Errorf("vf 3 NOP:\n%s", got)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := testRing(64)
	script(r)
	recs, _ := readAll(t, r.NewReaderFromStart())
	clk := r.Clock()
	entries := []Entry{LostEntry(12)}
	for i := range recs {
		entries = append(entries, clk.EntryOf(&recs[i]))
	}
	for _, e := range entries {
		line := AppendJSON(nil, &e)
		got, err := ParseJSON(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("%s:\n got %+v\nwant %+v", line, got, e)
		}
	}
}

func TestParseJSONRejects(t *testing.T) {
	for _, line := range []string{
		``, `[]`, `{"kind":"nope"}`, `{"kind":"post","vf":-1}`, `{"kind":"post","vf":70000}`,
		`{"kind":"comm","toggle":2}`, `{"kind":"flr","phase":"middle"}`, `{"kind":"post","in_param":5}`,
		`{"kind":"post","in_param":"0xz"}`, `{"kind":"post","time":"yesterday"}`,
		`{"kind":"post","qpn":"0x1000000"}`, `{"kind":"post","qpn":72}`, `{"kind":"post","res_op":"RES_OP_RESERVE"}`,
		`{"kind":"post","mad_class":""}`, `{"kind":"post","port":256}`,
	} {
		if e, err := ParseJSON([]byte(line)); !errors.Is(err, ErrDecode) {
			t.Errorf("%q: %+v, %v; want ErrDecode", line, e, err)
		}
	}
}

func TestPackUnpack(t *testing.T) {
	for _, rec := range wantScript {
		w := rec.Pack()
		got := Unpack(&w)
		got.Seq = rec.Seq
		if got != rec {
			t.Errorf("got %+v, want %+v", got, rec)
		}
	}
}

// TestSlowReaderLoses writes more than the ring holds between two reads:
// the reader gets the newest N-1 records and the count of the others.
func TestSlowReaderLoses(t *testing.T) {
	r := testRing(8)
	rd := r.NewReader()
	for i := range 20 {
		r.IRQ(uint64(i), 1, i)
	}
	buf := make([]Record, 16)
	n, lost := rd.Read(buf)
	if n != 7 || lost != 13 {
		t.Fatalf("read %d, lost %d; want 7, 13", n, lost)
	}
	for i, rec := range buf[:n] {
		if rec.Seq != uint64(13+i) || rec.Arg != uint32(13+i) {
			t.Errorf("record %d: %+v", i, rec)
		}
	}
	if n, lost := rd.Read(buf); n != 0 || lost != 0 {
		t.Errorf("then read %d, lost %d", n, lost)
	}
	r.IRQ(20, 1, 20)
	if n, lost := rd.Read(buf); n != 1 || lost != 0 || buf[0].Seq != 20 {
		t.Errorf("then read %d, lost %d, %+v", n, lost, buf[0])
	}
	if rd.Lost() != 13 {
		t.Errorf("Lost = %d", rd.Lost())
	}

	// The stream says so.
	rd = r.NewReaderFromStart()
	var b bytes.Buffer
	if err := Stream(context.Background(), &b, rd, Options{Filter: All}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "# lost 14 records\n") || strings.Count(b.String(), "\n") != 8 {
		t.Errorf("stream:\n%s", b.String())
	}
}

// TestTornCopy overwrites the records a Read is copying, between its copy
// and its check: they are reported lost, never returned.
func TestTornCopy(t *testing.T) {
	r := testRing(8)
	rd := r.NewReader()
	for i := range 6 {
		r.IRQ(0, 1, i)
	}
	afterCopy = func() {
		for i := range 10 {
			r.IRQ(0, 2, 100+i) // records 6..15
		}
	}
	buf := make([]Record, 3)
	n, lost := rd.Read(buf) // copies 0..2; cursor is then 16: oldest intact is 9
	afterCopy = nil
	if n != 0 || lost != 9 || rd.Next() != 9 {
		t.Fatalf("read %d, lost %d, next %d; want 0, 9, 9", n, lost, rd.Next())
	}
	n, lost = rd.Read(make([]Record, 16))
	if n != 7 || lost != 0 {
		t.Errorf("then read %d, lost %d", n, lost)
	}

	// A partly torn copy keeps its intact tail.
	r = testRing(8)
	rd = r.NewReader()
	for i := range 6 {
		r.IRQ(0, 1, i)
	}
	afterCopy = func() { r.IRQ(0, 2, 6); r.IRQ(0, 2, 7); r.IRQ(0, 2, 8); r.IRQ(0, 2, 9) } // cursor 10: oldest intact 3
	buf = make([]Record, 6)
	n, lost = rd.Read(buf)
	afterCopy = nil
	if n != 3 || lost != 3 || buf[0].Seq != 3 || buf[2].Seq != 5 || buf[2].Arg != 5 {
		t.Errorf("read %d, lost %d, %+v", n, lost, buf[:n])
	}
}

// TestConcurrent runs a writer and readers at once: every record a reader
// gets is whole (its fields agree with its sequence number), and read plus
// lost accounts for every record.
func TestConcurrent(t *testing.T) {
	const total = 200_000
	r := testRing(256)
	readers := make([]*Reader, 2)
	for i := range readers {
		readers[i] = r.NewReaderFromStart()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := hca.Cmd{}
		for i := uint64(0); i < total; i++ {
			c.VF, c.InParam, c.OutParam, c.InMod, c.Token = int(i%7), i, ^i, uint32(i), uint16(i)
			r.Post(i, i+i%1000, uint32(i&1), &c, mlx4.Status(i%0x40))
		}
	}()
	errs := make(chan error, len(readers))
	for _, rd := range readers {
		go func() {
			buf := make([]Record, 64)
			var got uint64
			for rd.Next() < total {
				n, _ := rd.Read(buf)
				for _, rec := range buf[:n] {
					s := rec.Seq
					if rec.Ticks != s || rec.InParam != s || rec.OutParam != ^s || rec.Arg != uint32(s) ||
						rec.Token != uint16(s) || rec.VF != uint16(s%7) || rec.Latency != s%1000 ||
						rec.Toggle() != uint8(s&1) || rec.Status != mlx4.Status(s%0x40) || rec.Kind != KindPost {
						errs <- errors.New("torn record")
						return
					}
				}
				got += uint64(n)
				if n == 0 {
					runtime.Gosched()
				}
			}
			if got+rd.Lost() != total {
				errs <- errors.New("records unaccounted for")
				return
			}
			errs <- nil
		}()
	}
	<-done
	for range readers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestEnabled: a ring records whether or not anyone reads it; only a
// missing ring does not.
func TestEnabled(t *testing.T) {
	var nilRing *Ring
	if nilRing.Enabled() {
		t.Error("nil ring enabled")
	}
	if r := testRing(8); !r.Enabled() {
		t.Error("a ring nobody reads is disabled")
	}
}

func TestNewRejects(t *testing.T) {
	for _, c := range []Config{{Records: 3}, {Records: 2}, {Records: 100}, {Records: MaxRecords * 2},
		{TicksPerNS: 3}, {Ticks: func() uint64 { return 0 }}, {Ticks: func() uint64 { return 0 }, TicksPerNS: -1}} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	r, err := New(Config{})
	if err != nil || r.Records() != DefaultRecords {
		t.Fatalf("default: %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	r := testRing(64)
	script(r)
	path := filepath.Join(t.TempDir(), "trace")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // write what the ring holds, then stop
	if err := WriteFile(ctx, path, r, Options{Filter: All}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "script.txt", got)
	if err := WriteFile(ctx, filepath.Join(t.TempDir(), "no", "such"), r, Options{}); err == nil {
		t.Error("no error for a missing directory")
	}
}

func TestLatencyText(t *testing.T) {
	for ns, want := range map[int64]string{0: "0ns", 999: "999ns", 1000: "1.0µs", 1249: "1.2µs", 99_949: "99.9µs",
		123_456: "123µs", 1_250_000: "1.2ms", 2_500_000_000: "2.50s"} {
		if got := string(appendLatency(nil, ns)); got != want {
			t.Errorf("%d: %q, want %q", ns, got, want)
		}
	}
}

func TestTimeOfDay(t *testing.T) {
	for _, tm := range []time.Time{anchor, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 2, 23, 59, 59, 999999999, time.UTC), time.Date(2026, 1, 2, 9, 5, 7, 1, time.FixedZone("x", 3600))} {
		if got, want := string(appendTimeOfDay(nil, tm)), tm.UTC().Format("15:04:05.000000000"); got != want {
			t.Errorf("%v: %s, want %s", tm, got, want)
		}
	}
}

func TestNameTables(t *testing.T) {
	for _, op := range []mlx4.Opcode{mlx4.NOP, mlx4.QUERY_FUNC_CAP, 0xabc, 0xfff} {
		if names().op[op] != op.String() {
			t.Errorf("%v: %q", op, names().op[op])
		}
	}
	for _, s := range []mlx4.Status{mlx4.OK, mlx4.BAD_PARAM, 0x77, 0xff} {
		if names().status[s] != s.Name() {
			t.Errorf("%v: %q", s, names().status[s])
		}
	}
}
