package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/perftest"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// (g) the data path. One `vhcrd serve --num-vfs 2`; in this process a
// vfdrv driver on each VF runs, in every round and in this order:
//
//   - NOP round trips from VF 0 (poll mode): the command path's latency
//     and capacity in the same run, the baseline of the next figures;
//   - RDMA_WRITE of 64 KiB messages from VF 0 into VF 1's memory
//     (perftest.WriteBW, ib_write_bw's stream), against a plain copy of the
//     same bytes from the same place into VF 1's window of the same file
//     (the DMA region both windows are in), by this process: the ratio of
//     bandwidths;
//   - 64-byte SENDs from VF 0 to VF 1 (perftest.SendRatePair): the
//     message rate of one PF thread (vhcrd's poller), and its ratio to the
//     NOP capacity (1 / the NOP round trip);
//   - an RC ping-pong of 64-byte messages (perftest.PingPongPair): half
//     its round trip against the NOP round trip;
//
// The SEND and ping-pong ends run on one goroutine, in turn, as the NOPs
// do: two spinning ends and the PF's poller on a 2-CPU machine time-slice,
// and the slices, not vhcrd, become the figure;
//
// and the VF side's heap allocations per WQE posted and per CQE polled
// over the SEND stream (runtime.MemStats.Mallocs).

// DataPath sizes (g).
type DataPath struct {
	WriteIters int // RDMA_WRITEs of 64 KiB per round
	SendIters  int // 64-byte SENDs per round
	PingIters  int // ping-pong round trips per round
	NOPIters   int // NOP round trips per round
}

// DataPathResult is the figures of (g).
type DataPathResult struct {
	NOP Figure `json:"nop_round_trip"`
	// WriteMBps and MemcpyMBps are the medians over rounds (MB = 2^20
	// bytes), WriteOverMemcpy the median of each round's ratio.
	WriteMBps       float64   `json:"rdma_write_64k_mb_per_s"`
	MemcpyMBps      float64   `json:"memcpy_64k_mb_per_s"`
	WriteOverMemcpy float64   `json:"ratio_write_over_memcpy"`
	RoundWrite      []float64 `json:"round_ratios_write_over_memcpy"`
	// SendRate is 64-byte SENDs per second (median over rounds),
	// NOPRate 1e9 / the NOP's median round trip (ns) of the same round,
	// SendOverNOP the median of each round's ratio.
	SendRate    float64   `json:"send_64b_per_s"`
	NOPRate     float64   `json:"nop_per_s"`
	SendOverNOP float64   `json:"ratio_send_over_nop"`
	RoundSend   []float64 `json:"round_ratios_send_over_nop"`
	// HalfRTTNS is half the ping-pong's round trip (median over rounds),
	// HalfRTTOverNOP the median of each round's ratio to the NOP round
	// trip.
	HalfRTTNS      float64   `json:"pingpong_half_round_trip_ns"`
	HalfRTTOverNOP float64   `json:"ratio_half_round_trip_over_nop"`
	RoundPing      []float64 `json:"round_ratios_half_round_trip_over_nop"`
	// Mallocs is the VF side's heap allocations over the SEND streams of
	// every round (the run's two goroutines included), WQEs and CQEs what
	// those streams posted and polled (sends and receives; receive CQEs
	// and the signalled sends'), AllocsPerWQE and AllocsPerCQE the ratios.
	Mallocs      uint64  `json:"vf_mallocs"`
	WQEs         uint64  `json:"vf_wqes"`
	CQEs         uint64  `json:"vf_cqes"`
	AllocsPerWQE float64 `json:"vf_allocs_per_wqe"`
	AllocsPerCQE float64 `json:"vf_allocs_per_cqe"`
	Load         Load    `json:"loadavg_1m"`
}

// dpPeer is the daemon of (g) and the two VFs' drivers.
type dpPeer struct {
	*nopPeer
	d [2]*vfdrv.Driver
}

func startDPPeer(ctx context.Context, o Options) (*dpPeer, error) {
	np, err := startVHCRD(ctx, o, 2, "--window", "8M")
	if err != nil {
		return nil, err
	}
	p := &dpPeer{nopPeer: np}
	for i := range p.d {
		v := np.vf
		if i > 0 {
			if v, err = np.att.VF(i); err == nil {
				err = v.Init(ctx)
			}
		}
		if err == nil {
			bar, berr := np.att.VFBAR(i)
			if berr != nil {
				err = berr
			} else {
				p.d[i], err = vfdrv.New(v, vfdrv.Options{BAR: bar})
			}
		}
		if err != nil {
			np.close()
			return nil, fmt.Errorf("VF %d: %w", i, err)
		}
	}
	return p, nil
}

// pair builds an end on each VF with cfg, connected.
func (p *dpPeer) pair(ctx context.Context, cfg perftest.Config, lid uint16) (a, b *perftest.Endpoint, err error) {
	ends := [2]*perftest.Endpoint{}
	for i := range ends {
		c := cfg
		c.PSN = uint32(0x100 * (i + 1))
		if ends[i], err = perftest.NewEndpoint(ctx, p.d[i], c, lid); err != nil {
			if i == 1 {
				_ = ends[0].Close(ctx)
			}
			return nil, nil, fmt.Errorf("VF %d: %w", i, err)
		}
	}
	for i, e := range ends {
		if err = e.Connect(ctx, ends[1-i].Local); err != nil {
			closeEnds(ctx, ends[0], ends[1])
			return nil, nil, fmt.Errorf("VF %d connect: %w", i, err)
		}
	}
	return ends[0], ends[1], nil
}

func closeEnds(ctx context.Context, ends ...*perftest.Endpoint) {
	for _, e := range ends {
		_ = e.Close(ctx)
	}
}

// lid is VF 0's port 1 LID (PortInfo through MAD_IFC): both ends are on
// that port of one PF.
func (p *dpPeer) lid(ctx context.Context) (uint16, error) { return perftest.LocalLID(ctx, p.d[0], 1) }

// sendSignal is the SEND stream's one signalled send in so many.
const sendSignal = 64

// RunDataPath measures (g) over o.Rounds rounds.
func RunDataPath(ctx context.Context, o Options, dp DataPath) (*DataPathResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if dp.WriteIters <= 0 {
		dp.WriteIters = 2000
	}
	if dp.SendIters <= 0 {
		dp.SendIters = 200_000
	}
	if dp.PingIters <= 0 {
		dp.PingIters = 10_000
	}
	if dp.NOPIters <= 0 {
		dp.NOPIters = 20_000
	}
	p, err := startDPPeer(ctx, o)
	if err != nil {
		return nil, err
	}
	defer p.close()
	lid, err := p.lid(ctx)
	if err != nil {
		return nil, err
	}
	return p.run(ctx, o, dp, lid)
}

// sendRound is one round of the SEND message rate from sa to sb, iters
// messages, both ends on this goroutine (perftest.SendRatePair: the PF's
// poller keeps a CPU to itself), and the allocations the process made
// meanwhile.
func sendRound(ctx context.Context, sa, sb *perftest.Endpoint, iters int) (perftest.BWResult, uint64, error) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	sr, err := perftest.SendRatePair(ctx, sa, sb, iters, sendSignal)
	runtime.ReadMemStats(&m1)
	if err != nil {
		return sr, 0, fmt.Errorf("SEND: %w", err)
	}
	return sr, m1.Mallocs - m0.Mallocs, nil
}

// dpEnds are the data-path rounds' three pairs of endpoints: RDMA_WRITE,
// SEND and ping-pong.
type dpEnds struct{ wa, wb, sa, sb, pa, pb *perftest.Endpoint }

// ends connects the three pairs over p's two drivers (port LID lid); the
// writes are wsize bytes.
func (p *dpPeer) ends(ctx context.Context, lid uint16, wsize int) (*dpEnds, error) {
	e := &dpEnds{}
	var err error
	if e.wa, e.wb, err = p.pair(ctx, perftest.Config{Size: wsize, RxDepth: 1, TxDepth: 128, Selective: true, EQN: 1}, lid); err != nil {
		return nil, fmt.Errorf("RDMA_WRITE ends: %w", err)
	}
	if e.sa, e.sb, err = p.pair(ctx, perftest.Config{Size: 64, RxDepth: 4096, TxDepth: 256, Selective: true, EQN: 2}, lid); err != nil {
		closeEnds(ctx, e.wa, e.wb)
		return nil, fmt.Errorf("SEND ends: %w", err)
	}
	if e.pa, e.pb, err = p.pair(ctx, perftest.Config{Size: 64, RxDepth: 500, EQN: 3}, lid); err != nil {
		closeEnds(ctx, e.wa, e.wb)
		closeEnds(ctx, e.sa, e.sb)
		return nil, fmt.Errorf("ping-pong ends: %w", err)
	}
	return e, nil
}

// close closes the three pairs, the last first.
func (e *dpEnds) close(ctx context.Context) {
	closeEnds(ctx, e.pa, e.pb)
	closeEnds(ctx, e.sa, e.sb)
	closeEnds(ctx, e.wa, e.wb)
}

// run is (g)'s rounds on p's two drivers, whose port has LID lid.
func (p *dpPeer) run(ctx context.Context, o Options, dp DataPath, lid uint16) (*DataPathResult, error) {
	const wsize = 64 << 10
	e, err := p.ends(ctx, lid, wsize)
	if err != nil {
		return nil, err
	}
	defer e.close(ctx)
	wa, wb, sa, sb, pa, pb := e.wa, e.wb, e.sa, e.sb, e.pa, e.pb

	res := &DataPathResult{NOP: Figure{Name: "NOP (data path's vhcrd)"}}
	var writeMB, copyMB, sendRate, nopRate, half []float64
	var mallocs, wqes, cqes uint64
	// the copy's source is the messages' (VF 0's send buffer), its
	// destination a buffer of VF 1's beside the one the writes land in,
	// which the PF does not touch
	src, dst := p.d[0].Memory()[wa.SendAddr():wa.SendAddr()+wsize], p.d[1].Memory()[wb.SendAddr():wb.SendAddr()+wsize]
	nopReq := vfclient.Request{Op: mlx4.NOP}
	for r := 0; r < o.Rounds; r++ {
		res.Load = append(res.Load, LoadAvg1())
		s, err := timeLoop(dp.NOPIters, func() error {
			resp, err := p.d[0].Poll(ctx, &nopReq)
			if err == nil && resp.Status != mlx4.OK {
				err = resp.Status
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("NOP: %w", err)
		}
		add(&res.NOP, s)
		nop := res.NOP.RoundMedian[r]
		nopRate = append(nopRate, 1e9/nop)

		w, err := wa.WriteBW(ctx, dp.WriteIters, 64)
		if err != nil {
			return nil, fmt.Errorf("RDMA_WRITE: %w", err)
		}
		t0 := time.Now()
		for range dp.WriteIters {
			copy(dst, src)
		}
		c := float64(wsize) * float64(dp.WriteIters) / time.Since(t0).Seconds() / (1 << 20)
		writeMB, copyMB = append(writeMB, w.MBps()), append(copyMB, c)
		res.RoundWrite = append(res.RoundWrite, w.MBps()/c)

		sr, n, err := sendRound(ctx, sa, sb, dp.SendIters)
		if err != nil {
			return nil, err
		}
		mallocs += n
		wqes += uint64(2 * dp.SendIters) // the sends and the receives
		// every receive's CQE, and one per sendSignal sends (and the last)
		cqes += uint64(dp.SendIters + (dp.SendIters+sendSignal-1)/sendSignal)
		sendRate = append(sendRate, sr.MsgRate())
		res.RoundSend = append(res.RoundSend, sr.MsgRate()/nopRate[r])

		pr, err := perftest.PingPongPair(ctx, pa, pb, dp.PingIters)
		if err != nil {
			return nil, fmt.Errorf("ping-pong: %w", err)
		}
		h := float64(pr.Elapsed.Nanoseconds()) / float64(pr.Iters) / 2
		half = append(half, h)
		res.RoundPing = append(res.RoundPing, h/nop)
		if o.Log != nil {
			fmt.Fprintf(o.Log, "data path round %d: NOP %.0f ns; RDMA_WRITE 64K %.0f MB/s, memcpy %.0f MB/s; SEND 64B %.0f/s; ping-pong half round trip %.0f ns\n",
				r+1, nop, w.MBps(), c, sr.MsgRate(), h)
		}
	}
	res.NOP.MedianNS, res.NOP.P99NS = median(res.NOP.RoundMedian), median(res.NOP.RoundP99)
	res.WriteMBps, res.MemcpyMBps, res.WriteOverMemcpy = median(writeMB), median(copyMB), median(res.RoundWrite)
	res.SendRate, res.NOPRate, res.SendOverNOP = median(sendRate), median(nopRate), median(res.RoundSend)
	res.HalfRTTNS, res.HalfRTTOverNOP = median(half), median(res.RoundPing)
	res.Mallocs, res.WQEs, res.CQEs = mallocs, wqes, cqes
	res.AllocsPerWQE = float64(mallocs) / float64(wqes)
	res.AllocsPerCQE = float64(mallocs) / float64(cqes)
	return res, nil
}
