package vhcrbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/irq"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/restrack"
)

// (e) interrupt delivery. This process is the PF: a software HCA (the
// product's hca.HCA) whose VF 0 has an EQ of 128 entries in a tmpfs DMA
// window, armed, with MSI-X vector 0 an eventfd (irq.Set). The peer process
// is the VF: it receives the vector's eventfd and an acknowledgement
// eventfd by SCM_RIGHTS, maps the window, and loops: wait on the vector
// (poll, read), consume every software-owned EQE of the ring and re-arm
// through the doorbell word (ci | bit 31), then signal the
// acknowledgement. One round trip of the EQE figure is: PostEQE (the EQE
// written, the doorbell word read, the vector raised) → the peer wakes,
// finds the EQE, re-arms → the acknowledgement wakes this process. The bare
// figure is the same round trip with PostEQE replaced by one write to the
// same eventfd: the peer runs the same loop and finds no EQE. The ratio is
// what delivering an EQE as an interrupt costs over signalling the
// eventfd alone.

const (
	irqWindow = 64 << 10
	irqEQPage = 0x1000    // IOVA of the ring (one page: 128 EQEs)
	irqDB     = irqWindow // the doorbell word, after the window
	irqStop   = irqWindow + 64
	irqFile   = irqWindow + 4096
	irqEQN    = 3
	irqLogEQ  = 7
)

// IRQResult is the interrupt figures of a run.
type IRQResult struct {
	EQE  Figure `json:"eqe_to_wake"`
	Bare Figure `json:"eventfd_to_wake"`
	// Ratio is the median over rounds of each round's EQE/bare median.
	Ratio       float64   `json:"ratio_eqe_over_eventfd"`
	RoundRatios []float64 `json:"round_ratios_eqe_over_eventfd"`
	// Raised is the interrupts the HCA counted, against the EQEs posted:
	// equal when every EQE found the EQ re-armed.
	Raised, Posted uint64
	// Load is the 1-minute load average at each round.
	Load Load `json:"loadavg_1m"`
}

// RunIRQ measures (e) over o.Rounds rounds of iters round trips per figure.
func RunIRQ(ctx context.Context, o Options, iters int) (*IRQResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if iters <= 0 {
		iters = 20_000
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	path := filepath.Join(o.Dir, fmt.Sprintf("vhcrbench-irq-%d", os.Getpid()))
	defer os.Remove(path)
	region, _, err := bar.CreateFile(path, irqFile)
	if err != nil {
		return nil, err
	}
	defer region.Close()
	h, set, err := irqPF(region)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	ack, err := irq.New(1)
	if err != nil {
		return nil, err
	}
	defer ack.Close()
	vec, _ := set.VF(0).FD(0)
	ackFD, _ := ack.FD(0)

	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "irq-sock"), os.NewFile(uintptr(pair[1]), "irq-peer-sock")
	peer := exec.CommandContext(ctx, o.Self, o.PeerArg, "irq", path)
	peer.ExtraFiles = []*os.File{theirs}
	peer.Stderr = os.Stderr
	if err := peer.Start(); err != nil {
		mine.Close()
		theirs.Close()
		return nil, err
	}
	theirs.Close()
	stop, _ := bar.NewReg(region, irqStop)
	defer func() {
		stop.Store(1)
		_ = set.Raise(0, 0) // wakes the peer to see the stop word
		_ = peer.Wait()
	}()
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := irq.SendFDs(c.(*net.UnixConn), []byte("irq"), vec, ackFD); err != nil {
		return nil, err
	}

	eqe := hca.CompletionEQE(1, mlx4.OK, 0)
	posted := uint64(0)
	viaEQE := ackedRoundTrip(ackFD, func() error { posted++; return h.PostEQE(0, mlx4.EventCmd, &eqe) })
	bare := ackedRoundTrip(ackFD, func() error { return set.Raise(0, 0) })

	res := &IRQResult{EQE: Figure{Name: "EQE posted → VF process wakes"}, Bare: Figure{Name: "eventfd signal → VF process wakes"}}
	if err := res.rounds(o, iters, bare, viaEQE); err != nil {
		return nil, err
	}
	for _, f := range []*Figure{&res.EQE, &res.Bare} {
		f.MedianNS, f.P99NS = median(f.RoundMedian), median(f.RoundP99)
	}
	res.Ratio = median(res.RoundRatios)
	res.Raised, res.Posted = h.Stats(0).Interrupts.Load(), posted
	if res.Raised != posted {
		return res, fmt.Errorf("%d interrupts for %d EQEs: the peer did not re-arm before each", res.Raised, posted)
	}
	return res, nil
}

// ackedRoundTrip is one round trip: signal, then the peer's acknowledgement
// on ackFD.
func ackedRoundTrip(ackFD int, signal func() error) func() error {
	return func() error {
		if err := signal(); err != nil {
			return err
		}
		n, err := irq.Wait(ackFD, 10*time.Second)
		if err == nil && n != 1 {
			err = fmt.Errorf("%d acknowledgements for one signal", n)
		}
		return err
	}
}

// rounds times iters round trips of each kind per round, alternating which
// goes first so that drift hits both alike.
func (res *IRQResult) rounds(o Options, iters int, bare, viaEQE func() error) error {
	for r := 0; r < o.Rounds; r++ {
		res.Load = append(res.Load, LoadAvg1())
		order := []struct {
			f   *Figure
			run func() error
		}{{&res.Bare, bare}, {&res.EQE, viaEQE}}
		if r%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, x := range order {
			s, err := timeLoop(iters, x.run)
			if err != nil {
				return fmt.Errorf("%s: %w", x.f.Name, err)
			}
			add(x.f, s)
		}
		res.RoundRatios = append(res.RoundRatios, res.EQE.RoundMedian[r]/res.Bare.RoundMedian[r])
		if o.Log != nil {
			fmt.Fprintf(o.Log, "irq round %d: EQE→wake p50 %.0f ns, eventfd→wake p50 %.0f ns\n", r+1, res.EQE.RoundMedian[r], res.Bare.RoundMedian[r])
		}
	}
	return nil
}

// irqPF builds the HCA side of (e): VF 0's EQ irqEQN at irqEQPage, armed
// (the context's state, as mlx4_create_eq), intr 0, mapped for command
// completions, its doorbell word read at irqDB.
func irqPF(region bar.Region) (*hca.HCA, *irq.Set, error) {
	h, err := hca.New(config.Default(), 1)
	if err != nil {
		return nil, nil, err
	}
	sp, err := dma.NewSpace(region, 0, irqWindow, 1)
	if err != nil {
		return nil, nil, err
	}
	w, err := sp.Window(0)
	if err != nil {
		return nil, nil, err
	}
	run := func(c *hca.Cmd, what string) error {
		c.Mem, c.Token = w, mlx4.PollToken
		if s := h.Exec(c); s != mlx4.OK {
			return fmt.Errorf("%s: %v", what, s)
		}
		return nil
	}
	alloc := &hca.Cmd{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.MTT), OpMod: 1}
	if err := run(alloc, "ALLOC_RES MTT"); err != nil {
		return nil, nil, err
	}
	base := uint64(uint32(alloc.OutParam))
	var in [mlx4.MailboxSize]byte
	binary.BigEndian.PutUint64(in[0:], base)
	binary.BigEndian.PutUint64(in[16:], irqEQPage)
	if err := run(&hca.Cmd{Op: mlx4.WRITE_MTT, InMod: 1, Inbox: &in}, "WRITE_MTT"); err != nil {
		return nil, nil, err
	}
	var ctx [mlx4.MailboxSize]byte
	mlx4.EQContext{LogSize: irqLogEQ, MTTBase: base}.Encode(ctx[:])
	if err := run(&hca.Cmd{Op: mlx4.SW2HW_EQ, InMod: irqEQN, Inbox: &ctx}, "SW2HW_EQ"); err != nil {
		return nil, nil, err
	}
	if err := run(&hca.Cmd{Op: mlx4.MAP_EQ, InParam: 1 << mlx4.EventCmd, InMod: irqEQN}, "MAP_EQ"); err != nil {
		return nil, nil, err
	}
	db, err := bar.NewReg(region, irqDB)
	if err != nil {
		return nil, nil, err
	}
	h.SetDoorbellReader(func(vf, eqn int) (uint32, bool) { return db.Load(), vf == 0 && eqn == irqEQN })
	set, err := irq.NewSet(1, 2)
	if err != nil {
		return nil, nil, err
	}
	h.SetInterrupts(set)
	return h, set, nil
}

// irqPeer is the VF process of (e).
func irqPeer(path string) error {
	runtime.LockOSThread()
	c, err := inheritedConn("irq-sock")
	if err != nil {
		return err
	}
	defer c.Close()
	var buf [8]byte
	_, fds, err := irq.RecvFDs(c.(*net.UnixConn), buf[:], 2)
	if err != nil {
		return err
	}
	if len(fds) != 2 {
		return fmt.Errorf("irq peer: %d descriptors, want 2", len(fds))
	}
	vec, ack := fds[0], fds[1]
	defer unix.Close(vec)
	defer unix.Close(ack)
	r, err := bar.OpenFile(path, false)
	if err != nil {
		return err
	}
	defer r.Close()
	mem, err := r.Bytes()
	if err != nil {
		return err
	}
	db, _ := bar.NewReg(r, irqDB)
	stop, _ := bar.NewReg(r, irqStop)
	const nent = 1 << irqLogEQ
	var ackOne [8]byte
	binary.NativeEndian.PutUint64(ackOne[:], 1)
	cons := uint32(0)
	for {
		if _, err := irq.Wait(vec, time.Minute); err != nil {
			return fmt.Errorf("irq peer: %w", err)
		}
		if stop.Load() != 0 {
			return nil
		}
		n := 0
		for {
			owner := mem[irqEQPage+int(cons&(nent-1))*mlx4.EQESize+mlx4.EQEOwner]
			if (owner&mlx4.EQEOwnerHW != 0) != (cons&nent != 0) {
				break // hardware-owned: not written yet
			}
			cons = (cons + 1) & mlx4.EQIndexMask
			n++
		}
		if n > 0 {
			db.Store(cons | mlx4.EQ_DOORBELL_ARM) // eq_set_ci(eq, 1)
		}
		if _, err := unix.Write(ack, ackOne[:]); err != nil {
			return fmt.Errorf("irq peer: ack: %w", err)
		}
	}
}

var errIRQPeerArgs = errors.New("bench-peer irq PATH")
