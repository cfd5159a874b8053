package master_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// cpuTicks is the process's utime + stime from /proc/self/stat, in clock
// ticks (USER_HZ, 100 per second on Linux).
func cpuTicks(b *testing.B) int64 {
	s, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		b.Fatal(err)
	}
	// fields after the command's closing parenthesis: state is field 3,
	// utime 14 and stime 15
	f := bytes.Fields(s[bytes.LastIndexByte(s, ')')+2:])
	u, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/self/stat: %q", s)
	}
	return u + st
}

// BenchmarkDataPathIdleCPU measures the poller's idle CPU (utime + stime
// of the process, /proc/self/stat, over each 2-second iteration, as a
// percentage of one CPU) with no QP and with 1,000 UD QPs in RTS, each with
// its own CQ, all idle: the QPs are attached to the data path's scheduler,
// so every scan reads their UAR pages' words and each idle checkpoint
// sweeps them by ownership.
func BenchmarkDataPathIdleCPU(b *testing.B) {
	for _, n := range []int{0, 1000} {
		b.Run(fmt.Sprintf("qps=%d", n), func(b *testing.B) {
			r := newStepRigWith(b, 2, mastertest.Options{Files: true})
			r.up(b, 1)
			v := benchVF{r, b, new(time.Duration)}
			ectx := make([]byte, mlx4.EQContextSize)
			mlx4.EQContext{LogSize: 7, MTTBase: uint64(v.mtt(0x8000))}.Encode(ectx)
			v.post(mlx4.VHCR{Op: mlx4.SW2HW_EQ, InMod: 1}, ectx)
			for i := range n {
				cqn := uint32(v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1}, nil))
				cctx := make([]byte, mlx4.CQContextSize)
				mlx4.CQContext{LogSize: 6, CompEQN: 1, MTTBase: uint64(v.mtt(0x9000)), DBRecAddr: 0x7000, UsrPage: 1 + uint32(i%8)}.Encode(cctx)
				v.post(mlx4.VHCR{Op: mlx4.SW2HW_CQ, InMod: cqn}, cctx)
				qpn := uint32(v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.QP), OpMod: 0, InParam: 1<<32 | 1}, nil))
				v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.QP), OpMod: 2, InParam: uint64(qpn)}, nil)
				in := make([]byte, mlx4.QPMailboxSize)
				mlx4.QPMailbox{Ctx: mlx4.QPContext{ST: mlx4.QP_ST_UD, LogSQSize: 3, LogSQStride: 2, LogRQSize: 3, LogRQStride: 2,
					Pri:     mlx4.QPPath{Port: 1, CounterIndex: uint8(config.Default().Resources.Counters - 1)},
					UsrPage: 1 + uint32(i%8), CQNSend: cqn, CQNRecv: cqn, MTTBase: uint64(v.mtt(0xa000)), DBRecAddr: 0x7100}}.Encode(in)
				for _, op := range []mlx4.Opcode{mlx4.RST2INIT_QP, mlx4.INIT2RTR_QP, mlx4.RTR2RTS_QP} {
					v.post(mlx4.VHCR{Op: op, InMod: qpn}, in)
				}
			}
			if got := r.HCA.Attached(); got != n {
				b.Fatalf("%d QPs attached, want %d", got, n)
			}
			r.Start(b)
			// The set-up's garbage collected and returned now, so that the
			// runtime's background work is not counted as the poller's.
			runtime.GC()
			debug.FreeOSMemory()
			time.Sleep(200 * time.Millisecond) // past the start-up and the first hot scans
			var ticks int64
			var wall time.Duration
			var sleeps uint64
			for b.Loop() {
				s0 := r.PF.Stats().Sleeps
				t0, c0 := time.Now(), cpuTicks(b)
				time.Sleep(2 * time.Second)
				ticks += cpuTicks(b) - c0
				wall += time.Since(t0)
				sleeps += r.PF.Stats().Sleeps - s0
			}
			b.ReportMetric(float64(ticks)/100/wall.Seconds()*100, "%cpu")
			b.ReportMetric(float64(sleeps)/wall.Seconds(), "sleeps/s")
		})
	}
}
