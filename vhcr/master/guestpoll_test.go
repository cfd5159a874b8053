package master_test

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// BenchmarkPolledRoundTrip: a VF that cannot ring the futex doorbell (a
// guest's driver) posts a NOP to a poller that has gone to sleep (each
// iteration first idles 3 ms, past the poller's spin and yield) and spins
// on slave_read, as mlx4's mlx4_comm_cmd_poll does. With a guest attached
// (GuestAttached) the poller's sleep is bounded by Idle.GuestSleep;
// without, by FutexTimeout: the two sub-benchmarks are that bound's effect
// in the same run. Only the post's round trip is timed.
func BenchmarkPolledRoundTrip(b *testing.B) {
	for _, guest := range []bool{true, false} {
		name := "guest-attached"
		if !guest {
			name = "no-guest"
		}
		b.Run(name, func(b *testing.B) {
			r := mastertest.New(b, 1)
			r.Start(b)
			v := r.InitVF(b, 0)
			r.SetToggle(0, v.SlaveRead()>>mlx4.CommToggleShift)
			r.SetVHCR(b, 0, mlx4.VHCR{Op: mlx4.NOP})
			if guest {
				r.PF.GuestAttached(true)
				defer r.PF.GuestAttached(false)
			}
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				time.Sleep(3 * time.Millisecond) // let the poller block: what is measured, not a synchronisation
				b.StartTimer()
				t0 := time.Now()
				r.Write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
				for !r.Acked(0) {
					runtime.Gosched()
				}
				samples = append(samples, time.Since(t0))
			}
			slices.Sort(samples)
			b.ReportMetric(float64(samples[len(samples)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(samples[len(samples)*9/10].Microseconds()), "p90-µs")
			b.ReportMetric(float64(samples[len(samples)-1].Microseconds()), "worst-µs")
		})
	}
}
