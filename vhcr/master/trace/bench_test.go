package trace_test

import (
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/internal/tick"

	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The benchmarks run the poller's per-command trace step in a loop whose
// body otherwise only changes the command (Baseline): OffNil is the check
// with no ring, Post the check and a record (a ring records always), with the ticks the
// poller already has (reads=0), with one read of the cycle counter
// (PostUntimed, reads=1) or two, detection and completion (reads=2). Rings
// of 64 records stay in L1; the default ring (1 MiB) in L2, if the core
// has 1 MiB of it.

var (
	cmd  hca.Cmd
	sink uint64
)

func newRing(b *testing.B, records int) *trace.Ring {
	r, err := trace.New(trace.Config{Records: records, Ticks: tick.Now, TicksPerNS: tick.PerNS()})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkBaseline(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		cmd.Token = uint16(i)
	}
}

func BenchmarkOffNil(b *testing.B) {
	var r *trace.Ring
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		cmd.Token = uint16(i)
		if r.Enabled() {
			r.Post(uint64(i), uint64(i), 1, &cmd, mlx4.OK)
		}
	}
}

// benchPost records a NOP per iteration, reading the clock reads times
// (0: ticks the caller already has; 1: one read, PostUntimed; 2: detection
// and completion, Post).
func benchPost(b *testing.B, records int, reads int) {
	r := newRing(b, records)
	cmd = hca.Cmd{VF: 3, Op: mlx4.NOP, InParam: 1, OutParam: 2, InMod: 3}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		cmd.Token = uint16(i)
		if r.Enabled() {
			switch reads {
			case 0:
				r.Post(uint64(i), uint64(i)+100, uint32(i&1), &cmd, mlx4.OK)
			case 1:
				r.PostUntimed(tick.Now(), uint32(i&1), &cmd, mlx4.OK)
			default:
				t0 := tick.Now()
				r.Post(t0, tick.Now(), uint32(i&1), &cmd, mlx4.OK)
			}
		}
	}
}

func BenchmarkPost(b *testing.B) {
	for _, reads := range []int{0, 1, 2} {
		b.Run("reads="+strconv.Itoa(reads)+"/ring=64", func(b *testing.B) { benchPost(b, 64, reads) })
		b.Run("reads="+strconv.Itoa(reads)+"/ring=default", func(b *testing.B) {
			benchPost(b, trace.DefaultRecords, reads)
		})
	}
}

func BenchmarkComm(b *testing.B) {
	r := newRing(b, 64)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if r.Enabled() {
			r.Comm(uint64(i), 3, trace.CommVHCR0, uint32(i&1), uint16(i))
		}
	}
}

func BenchmarkTicks(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sink += tick.Now()
	}
}

// BenchmarkRead is a reader's cost per record: copying batches out of a
// full ring.
func BenchmarkRead(b *testing.B) {
	r := newRing(b, 1024)
	for i := range 1024 {
		r.IRQ(uint64(i), 1, i)
	}
	buf := make([]trace.Record, 256)
	b.ReportAllocs()
	for b.Loop() {
		rd := r.NewReaderFromStart()
		for n := 1; n > 0; n, _ = rd.Read(buf) {
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1023, "ns/record")
}

// BenchmarkStream is a stream's cost per record, text and JSON.
func BenchmarkStream(b *testing.B) {
	for _, json := range []bool{false, true} {
		name := "text"
		if json {
			name = "json"
		}
		b.Run(name, func(b *testing.B) {
			r := newRing(b, 1024)
			c := hca.Cmd{VF: 3, Op: mlx4.QUERY_FUNC_CAP, OpMod: 1, InMod: 2, OutParam: 0x5000, Token: 0xffff}
			for i := range 1023 {
				r.Post(uint64(i), uint64(i)+3000, 0, &c, mlx4.OK)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := trace.Stream(context.Background(), io.Discard, r.NewReaderFromStart(),
					trace.Options{Filter: trace.All, JSON: json}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1023, "ns/record")
		})
	}
}
