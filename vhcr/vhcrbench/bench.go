package vhcrbench

import (
	"context"
	"encoding/binary"
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
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/internal/tick"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Options of a run.
type Options struct {
	Self      string // executable that implements Peer (os.Executable() by default)
	PeerArg   string // the subcommand that dispatches to Peer ("bench-peer")
	VHCRD     string // path of the vhcrd binary for (b)
	Rounds    int
	Iters     int // round trips per round for (a) and (b)
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
	Physical Figure  `json:"physical_limit"`
	NOP      Figure  `json:"vhcrd_nop"`
	Socket   Figure  `json:"unix_socket_64b"`
	BOverA   float64 `json:"ratio_b_over_a"`
	COverB   float64 `json:"ratio_c_over_b"`
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

// Run measures (a), (b) and (c).
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
	res := &Result{Physical: Figure{Name: "physical limit (bare responder)"}, NOP: Figure{Name: "NOP through vhcrd"},
		Socket: Figure{Name: "64-byte UNIX socket round trip"}, TracedNOP: Figure{Name: "NOP through vhcrd, traced"}}
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
		s, err := physical(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("physical limit: %w", err)
		}
		add(&res.Physical, s)
		s, err = nop.round(ctx, o.Iters)
		if err != nil {
			return nil, fmt.Errorf("vhcrd NOP: %w", err)
		}
		add(&res.NOP, s)
		s, err = traced.round(ctx, o.Iters)
		if err != nil {
			return nil, fmt.Errorf("traced vhcrd NOP: %w", err)
		}
		add(&res.TracedNOP, s)
		res.RoundTraced = append(res.RoundTraced, res.TracedNOP.RoundMedian[r]/res.NOP.RoundMedian[r])
		// The socket peer is measured from an ordinary goroutine: the
		// netpoller is how a Go user talks over a socket, and a goroutine
		// locked to its thread pays a handoff on every wake.
		sockDone := make(chan struct{})
		go func() { s, err = socket(ctx, o); close(sockDone) }()
		<-sockDone
		if err != nil {
			return nil, fmt.Errorf("unix socket: %w", err)
		}
		add(&res.Socket, s)
		fmt.Fprintf(o.Log, "round %d: physical p50 %.0f ns, vhcrd NOP p50 %.0f ns (traced %.0f ns), socket p50 %.0f ns\n", r+1,
			res.Physical.RoundMedian[r], res.NOP.RoundMedian[r], res.TracedNOP.RoundMedian[r], res.Socket.RoundMedian[r])
	}
	for _, f := range []*Figure{&res.Physical, &res.NOP, &res.Socket, &res.TracedNOP} {
		f.MedianNS, f.P99NS = median(f.RoundMedian), median(f.RoundP99)
	}
	res.BOverA = res.NOP.MedianNS / res.Physical.MedianNS
	res.COverB = res.Socket.MedianNS / res.NOP.MedianNS
	res.TracedOverNOP = median(res.RoundTraced)
	return res, nil
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

// --- (a) the physical limit -------------------------------------------------

const (
	regVF  = 0      // VF's post register (slave_write)
	regPF  = 4      // responder's toggle (slave_read), same cache line as mlx4's pair
	dmaOff = 0x1000 // the vHCR page
)

func physical(ctx context.Context, o Options) ([]float64, error) {
	path := filepath.Join(o.Dir, fmt.Sprintf("vhcrbench-phys-%d", os.Getpid()))
	defer os.Remove(path)
	r, _, err := bar.CreateFile(path, 0x2000)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	peer := exec.CommandContext(ctx, o.Self, o.PeerArg, "responder", path, strconv.Itoa(o.Iters+o.Iters/10))
	peer.Stderr = os.Stderr
	if err := peer.Start(); err != nil {
		return nil, err
	}
	defer peer.Wait()
	post, _ := bar.NewReg(r, regVF)
	ack, _ := bar.NewReg(r, regPF)
	mem, _ := r.Bytes()
	var cmd [mlx4.VHCRSize]byte
	h := mlx4.VHCR{Op: mlx4.NOP, Token: mlx4.PollToken}
	h.Encode(&cmd)
	toggle := uint32(0)
	deadline := time.Now().Add(30 * time.Second)
	return timeLoop(o.Iters, func() error {
		copy(mem[dmaOff:dmaOff+mlx4.VHCRSize], cmd[:])
		toggle ^= 1
		post.Store(toggle<<31 | uint32(5)<<16)
		// The VF library's wait, so that (a) and (b) differ only in who
		// answers.
		for {
			if _, ok := vhcr.SpinPoll(ack, toggle, 1<<16); ok {
				break
			}
			if time.Now().After(deadline) {
				return errors.New("responder did not answer")
			}
		}
		if mem[dmaOff+mlx4.OffStatus] != 0 {
			return errors.New("bad status")
		}
		return nil
	})
}

// responder is the bare peer of (a): copy the vHCR, write the status, toggle.
func responder(path string, iters int) error {
	runtime.LockOSThread()
	r, err := bar.OpenFile(path, false)
	if err != nil {
		return err
	}
	defer r.Close()
	post, _ := bar.NewReg(r, regVF)
	ack, _ := bar.NewReg(r, regPF)
	mem, _ := r.Bytes()
	var shadow [mlx4.VHCRSize]byte
	toggle := uint32(0) // the file starts zeroed: nothing posted, nothing acknowledged
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < iters; i++ {
		var w uint32
		for n := 0; ; n++ {
			if w = post.Load(); w>>31 != toggle {
				break
			}
			bar.Pause()
			if n&0xfffff == 0 && time.Now().After(deadline) {
				return errors.New("no post")
			}
		}
		toggle ^= 1
		copy(shadow[:], mem[dmaOff:dmaOff+mlx4.VHCRSize])
		// The status depends on the copy, so that the copy is really made
		// (a copy into a dead local is optimised away, and with it the
		// read of the vHCR's cache line).
		status := byte(mlx4.BAD_PARAM)
		if mlx4.Opcode(binary.BigEndian.Uint16(shadow[mlx4.OffOpcode:])&0xfff) == mlx4.NOP {
			status = byte(mlx4.OK)
		}
		mem[dmaOff+mlx4.OffStatus] = status
		ack.Store(w & vhcr.ToggleBit)
	}
	return nil
}

// --- (b) NOP through vhcrd ------------------------------------------------

type nopPeer struct {
	cmd      *exec.Cmd
	bar, dma string
	vfs      int
	att      *vhcr.Attachment
	vf       *vhcr.VF
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := vhcr.AttachFile(p.bar)
		if err == nil && a.PFState() == vhcr.PFStateServing {
			p.att = a
			break
		}
		if a != nil {
			a.Close()
		}
		if time.Now().After(deadline) {
			p.close()
			return nil, fmt.Errorf("vhcrd did not start serving: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var err error
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
	req := vhcr.Request{Op: mlx4.NOP}
	return timeLoop(iters, func() error {
		resp, err := p.vf.Post(ctx, &req)
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
		os.Remove(vhcr.VFBARPath(p.bar, i))
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

// Peer runs the peer side named by args[0] ("responder PATH N" or "echo N").
func Peer(args []string) error {
	if len(args) < 2 {
		return errors.New("bench-peer: want responder PATH N | echo N | irq PATH")
	}
	switch args[0] {
	case "responder":
		if len(args) != 3 {
			return errors.New("bench-peer responder PATH N")
		}
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		return responder(args[1], n)
	case "echo":
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		return echo(n)
	case "irq":
		if len(args) != 2 {
			return errIRQPeerArgs
		}
		return irqPeer(args[1])
	}
	return fmt.Errorf("bench-peer: unknown peer %q", args[0])
}
