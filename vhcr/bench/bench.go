package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/vhcr/internal/tick"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// Options of a run.
type Options struct {
	Self      string // executable that implements Peer (os.Executable() by default)
	PeerArg   string // the subcommand that dispatches to Peer ("bench-peer")
	VHCRD     string // path of the vhcrd binary for (b)
	Rounds    int
	Iters     int // round trips per round for the limits and (b)
	SockIters int // round trips per round for (c)
	Dir       string
	Log       io.Writer
}

// Figure is one measurement summarised over rounds (ns).
type Figure struct {
	Name        string    `json:"name"`
	MedianNS    float64   `json:"median_ns"`
	P99NS       float64   `json:"p99_ns"`
	RoundMedian []float64 `json:"round_medians_ns"`
	RoundP99    []float64 `json:"round_p99s_ns"`
}

// Result is the whole run.
type Result struct {
	// Toggle and Minimum are the two limits (LimitToggle, LimitMinimum),
	// NOP vhcrd's NOP; the three are driven by the same VF client over
	// the same layout, in an order that alternates each round.
	Toggle  Figure `json:"toggle_only_limit"`
	Minimum Figure `json:"protocol_minimum_limit"`
	NOP     Figure `json:"vhcrd_nop"`
	Socket  Figure `json:"unix_socket_64b"`
	// NOPOverMinimum and NOPOverToggle are the medians over rounds of
	// each round's ratio of medians.
	NOPOverMinimum      float64   `json:"ratio_nop_over_minimum"`
	NOPOverToggle       float64   `json:"ratio_nop_over_toggle"`
	RoundNOPOverMinimum []float64 `json:"round_ratios_nop_over_minimum"`
	RoundNOPOverToggle  []float64 `json:"round_ratios_nop_over_toggle"`
	COverB              float64   `json:"ratio_c_over_b"`
	// Regime is the toggle-only limit's rounds classified; Load the
	// 1-minute load average at each round.
	Regime Regime `json:"regime"`
	Load   Load   `json:"loadavg_1m"`
	// TracedNOP is (b) against a second vhcrd whose command trace has a
	// reader (serve --trace /dev/null: the ring read from the start and
	// written out); both vhcrds record every command into their rings, so
	// TracedOverNOP, the median over rounds of each round's traced/untraced
	// median, is the cost of the reader.
	TracedNOP     Figure    `json:"vhcrd_nop_traced"`
	TracedOverNOP float64   `json:"ratio_traced_over_untraced"`
	RoundTraced   []float64 `json:"round_ratios_traced_over_untraced"`
}

// defaults fills in the Rounds, Dir and Self that o leaves out.
func (o *Options) defaults() error {
	if o.Rounds == 0 {
		o.Rounds = 5
	}
	if o.Dir == "" {
		o.Dir = "/dev/shm"
	}
	if o.Self == "" {
		var err error
		if o.Self, err = os.Executable(); err != nil {
			return err
		}
	}
	return nil
}

// Run measures the two limits, (b) and (c).
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if o.Iters == 0 {
		o.Iters = 100_000
	}
	if o.SockIters == 0 {
		o.SockIters = 10_000
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res := &Result{Toggle: Figure{Name: "toggle-only limit"}, Minimum: Figure{Name: "protocol-minimum limit"},
		NOP: Figure{Name: "NOP through vhcrd"}, Socket: Figure{Name: "64-byte UNIX socket round trip"},
		TracedNOP: Figure{Name: "NOP through vhcrd, traced"}}
	nop, err := startVHCRD(ctx, o, 1)
	if err != nil {
		return nil, err
	}
	defer nop.close()
	traced, err := startVHCRD(ctx, o, 1, "--trace", os.DevNull)
	if err != nil {
		return nil, err
	}
	defer traced.close()
	for r := 0; r < o.Rounds; r++ {
		res.Load = append(res.Load, LoadAvg1())
		if err := nopRounds(ctx, o, r, res, nop, traced); err != nil {
			return nil, err
		}
		// The socket peer is measured from an ordinary goroutine: the
		// netpoller is how a Go user talks over a socket, and a goroutine
		// locked to its thread pays a handoff on every wake.
		var s []float64
		sockDone := make(chan struct{})
		go func() { s, err = socket(ctx, o); close(sockDone) }()
		<-sockDone
		if err != nil {
			return nil, fmt.Errorf("unix socket: %w", err)
		}
		add(&res.Socket, s)
		fmt.Fprintf(o.Log, "round %d (load 1m %.2f): toggle-only p50 %.0f ns, protocol-minimum p50 %.0f ns, vhcrd NOP p50 %.0f ns (traced %.0f ns), socket p50 %.0f ns\n",
			r+1, res.Load[r], res.Toggle.RoundMedian[r], res.Minimum.RoundMedian[r], res.NOP.RoundMedian[r], res.TracedNOP.RoundMedian[r], res.Socket.RoundMedian[r])
	}
	for _, f := range []*Figure{&res.Toggle, &res.Minimum, &res.NOP, &res.Socket, &res.TracedNOP} {
		f.MedianNS, f.P99NS = median(f.RoundMedian), median(f.RoundP99)
	}
	res.NOPOverMinimum = median(res.RoundNOPOverMinimum)
	res.NOPOverToggle = median(res.RoundNOPOverToggle)
	res.COverB = res.Socket.MedianNS / res.NOP.MedianNS
	res.TracedOverNOP = median(res.RoundTraced)
	res.Regime = ClassifyRegime(res.Toggle.RoundMedian, res.Minimum.RoundMedian, res.NOP.RoundMedian)
	return res, nil
}

// nopRounds measures round r of the toggle-only limit, the
// protocol-minimum limit, vhcrd's NOP and the traced vhcrd's, in an order
// that reverses every other round, and adds the round's ratios.
func nopRounds(ctx context.Context, o Options, r int, res *Result, nop, traced *nopPeer) error {
	type step struct {
		f    *Figure
		name string
		run  func() ([]float64, error)
	}
	limitRound := func(mode string) func() ([]float64, error) {
		return func() ([]float64, error) {
			p, err := startLimit(ctx, o, mode, o.Iters+o.Iters/10)
			if err != nil {
				return nil, err
			}
			s, err := p.round(ctx, o.Iters)
			if cerr := p.close(); err == nil && cerr != nil {
				err = fmt.Errorf("%s responder: %w", mode, cerr)
			}
			return s, err
		}
	}
	steps := []step{
		{&res.Toggle, "toggle-only limit", limitRound(LimitToggle)},
		{&res.Minimum, "protocol-minimum limit", limitRound(LimitMinimum)},
		{&res.NOP, "vhcrd NOP", func() ([]float64, error) { return nop.round(ctx, o.Iters) }},
		{&res.TracedNOP, "traced vhcrd NOP", func() ([]float64, error) { return traced.round(ctx, o.Iters) }},
	}
	if r%2 == 1 {
		slices.Reverse(steps)
	}
	for _, st := range steps {
		s, err := st.run()
		if err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
		add(st.f, s)
	}
	n := res.NOP.RoundMedian[r]
	res.RoundNOPOverMinimum = append(res.RoundNOPOverMinimum, n/res.Minimum.RoundMedian[r])
	res.RoundNOPOverToggle = append(res.RoundNOPOverToggle, n/res.Toggle.RoundMedian[r])
	res.RoundTraced = append(res.RoundTraced, res.TracedNOP.RoundMedian[r]/n)
	return nil
}

func add(f *Figure, samples []float64) {
	slices.Sort(samples)
	f.RoundMedian = append(f.RoundMedian, samples[len(samples)/2])
	f.RoundP99 = append(f.RoundP99, samples[len(samples)*99/100])
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// timeLoop runs iters iterations of f, timing each with the cycle counter.
func timeLoop(iters int, f func() error) ([]float64, error) {
	perNS := tick.PerNS()
	out := make([]float64, 0, iters)
	for i := 0; i < iters/10; i++ { // warm-up
		if err := f(); err != nil {
			return nil, err
		}
	}
	for i := 0; i < iters; i++ {
		t0 := tick.Now()
		if err := f(); err != nil {
			return nil, err
		}
		out = append(out, float64(tick.Now()-t0)/perNS)
	}
	return out, nil
}

// --- (b) NOP through vhcrd ------------------------------------------------

type nopPeer struct {
	cmd      *exec.Cmd
	bar, dma string
	vfs      int
	att      *vfclient.Attachment
	vf       *vfclient.VF
}

// startVHCRD starts `vhcrd serve` with vfs VFs (and extra arguments) and
// brings VF 0 up. Each daemon of a run has its own region files.
func startVHCRD(ctx context.Context, o Options, vfs int, extra ...string) (*nopPeer, error) {
	if o.VHCRD == "" {
		return nil, errors.New("no vhcrd binary given")
	}
	n := daemons.Add(1)
	p := &nopPeer{bar: filepath.Join(o.Dir, fmt.Sprintf("vhcrbench-bar-%d-%d", os.Getpid(), n)),
		dma: filepath.Join(o.Dir, fmt.Sprintf("vhcrbench-dma-%d-%d", os.Getpid(), n)), vfs: vfs}
	p.cmd = exec.CommandContext(ctx, o.VHCRD, append([]string{"serve", "--bar", "file:" + p.bar, "--dma", "file:" + p.dma,
		"--num-vfs", strconv.Itoa(vfs), "--window", "64K", "--metrics-addr", "", "--log-level", "warn"}, extra...)...)
	p.cmd.Stderr = os.Stderr
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	var err error
	if p.att, err = attachServing(p.bar, p.cmd); err != nil {
		p.close()
		return nil, fmt.Errorf("vhcrd: %w", err)
	}
	if p.vf, err = p.att.VF(0); err != nil {
		p.close()
		return nil, err
	}
	if err := p.vf.Init(ctx); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// daemons numbers the vhcrd processes a run starts.
var daemons atomic.Int32

func (p *nopPeer) round(ctx context.Context, iters int) ([]float64, error) {
	return nopRound(ctx, p.vf, iters)
}

// nopRound times iters NOPs posted by vf (after a tenth as many to warm
// up), each checked for status OK.
func nopRound(ctx context.Context, vf *vfclient.VF, iters int) ([]float64, error) {
	req := vfclient.Request{Op: mlx4.NOP}
	return timeLoop(iters, func() error {
		resp, err := vf.Post(ctx, &req)
		if err == nil && resp.Status != mlx4.OK {
			err = resp.Status
		}
		return err
	})
}

func (p *nopPeer) close() {
	if p.att != nil {
		p.att.Close()
	}
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(os.Interrupt)
		_ = p.cmd.Wait()
	}
	os.Remove(p.bar)
	os.Remove(p.dma)
	// and what vhcrd serve made beside the control file: the VFs' BAR
	// regions and the default state file
	for i := 0; i < p.vfs; i++ {
		os.Remove(wire.VFBARPath(p.bar, i))
	}
	os.Remove(p.bar + ".pfstate")
}

// --- (c) UNIX socket --------------------------------------------------------

func socket(ctx context.Context, o Options) ([]float64, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	mine := os.NewFile(uintptr(fds[0]), "bench-sock")
	theirs := os.NewFile(uintptr(fds[1]), "bench-peer-sock")
	peer := exec.CommandContext(ctx, o.Self, o.PeerArg, "echo", strconv.Itoa(o.SockIters+o.SockIters/10))
	peer.ExtraFiles = []*os.File{theirs}
	peer.Stderr = os.Stderr
	if err := peer.Start(); err != nil {
		return nil, err
	}
	theirs.Close()
	defer peer.Wait()
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var msg, in [64]byte
	return timeLoop(o.SockIters, func() error {
		if _, err := c.Write(msg[:]); err != nil {
			return err
		}
		_, err := io.ReadFull(c, in[:])
		return err
	})
}

// inheritedConn is the socket a peer process inherits as descriptor 3
// (exec.Cmd.ExtraFiles[0]).
func inheritedConn(name string) (net.Conn, error) {
	f := os.NewFile(3, name)
	c, err := net.FileConn(f) // a dup: f is closed here
	f.Close()
	return c, err
}

func echo(iters int) error {
	c, err := inheritedConn("bench-sock")
	if err != nil {
		return err
	}
	defer c.Close()
	var buf [64]byte
	for i := 0; i < iters; i++ {
		if _, err := io.ReadFull(c, buf[:]); err != nil {
			return err
		}
		if _, err := c.Write(buf[:]); err != nil {
			return err
		}
	}
	return nil
}

// Peer runs the peer side named by args[0] ("limit toggle|minimum PATH N",
// "echo N" or "irq PATH").
func Peer(args []string) error {
	if len(args) < 2 {
		return errors.New("bench-peer: want limit toggle|minimum PATH N | echo N")
	}
	switch args[0] {
	case "limit":
		if len(args) != 4 {
			return errors.New("bench-peer limit toggle|minimum PATH N")
		}
		n, err := strconv.Atoi(args[3])
		if err != nil {
			return err
		}
		return limit(args[1], args[2], n)
	case "echo":
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		return echo(n)
	}
	return fmt.Errorf("bench-peer: unknown peer %q", args[0])
}
