package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/irq"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// (e) interrupt delivery. The PF is a process of the vhcrd binary
// (`vhcrd bench-irq`, which runs IRQPF with the product's software HCA,
// vhcr/bench/irqpf): VF 0 has an EQ of 128 entries in a tmpfs DMA
// window, armed, with MSI-X vector 0 an eventfd (irq.Set). This process
// (RunIRQ, in vfctl) is the VF: it receives the vector's eventfd and an
// acknowledgement eventfd by SCM_RIGHTS, maps the window, and loops on a
// thread of its own: wait on the vector (poll, read), consume every
// software-owned EQE of the ring and re-arm through the doorbell word (ci |
// bit 31), then signal the acknowledgement. One round trip of the EQE
// figure is: PostEQE (the EQE written, the doorbell word read, the vector
// raised) → the VF wakes, finds the EQE, re-arms → the acknowledgement
// wakes the PF process, which times it. The bare figure is the same round
// trip with PostEQE replaced by one write to the same eventfd: the VF runs
// the same loop and finds no EQE. The ratio is what delivering an EQE as an
// interrupt costs over signalling the eventfd alone. The PF process prints
// its IRQResult as JSON on its standard output.

// The region of (e), shared by the two processes: VF 0's DMA window (the
// ring at IRQEQPage), then the doorbell word the VF writes and the HCA
// reads, then the stop word.
const (
	IRQWindow = 64 << 10
	IRQEQPage = 0x1000    // IOVA of the ring (one page: 128 EQEs)
	IRQDB     = IRQWindow // the doorbell word, after the window
	irqStop   = IRQWindow + 64
	irqFile   = IRQWindow + 4096
	IRQEQN    = 3
	IRQLogEQ  = 7
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

// IRQSource is the PF side of (e): a software HCA whose VF 0's EQ IRQEQN
// (at IRQEQPage of the window at offset 0 of the region, its doorbell word
// read at IRQDB) is armed and mapped for command completions, its MSI-X
// vector 0 an eventfd.
type IRQSource interface {
	// PostEQE posts one command-completion EQE into the EQ (the vector
	// raised if the EQ is armed).
	PostEQE() error
	// Raise writes the vector's eventfd once, posting nothing.
	Raise() error
	// Vector is the vector's eventfd.
	Vector() int
	// Interrupts is the interrupts the HCA counted for VF 0.
	Interrupts() uint64
	Close() error
}

// NewIRQSource builds an IRQSource over the region of (e).
type NewIRQSource func(region bar.Region) (IRQSource, error)

// RunIRQ measures (e) over o.Rounds rounds of iters round trips per figure
// against `o.VHCRD bench-irq`.
func RunIRQ(ctx context.Context, o Options, iters int) (*IRQResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if o.VHCRD == "" {
		return nil, errors.New("no vhcrd binary given")
	}
	if iters <= 0 {
		iters = 20_000
	}
	path := filepath.Join(o.Dir, fmt.Sprintf("vhcrbench-irq-%d", os.Getpid()))
	defer os.Remove(path)
	region, _, err := bar.CreateFile(path, irqFile)
	if err != nil {
		return nil, err
	}
	defer region.Close()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "irq-sock"), os.NewFile(uintptr(pair[1]), "irq-pf-sock")
	var out bytes.Buffer
	pf := exec.CommandContext(ctx, o.VHCRD, "bench-irq", path, strconv.Itoa(o.Rounds), strconv.Itoa(iters))
	pf.ExtraFiles, pf.Stdout, pf.Stderr = []*os.File{theirs}, &out, os.Stderr
	err = pf.Start()
	theirs.Close()
	if err != nil {
		mine.Close()
		return nil, err
	}
	peerErr := irqVF(mine, region)
	if err := pf.Wait(); err != nil {
		return nil, fmt.Errorf("%s bench-irq: %w", o.VHCRD, err)
	}
	if peerErr != nil {
		return nil, peerErr
	}
	res := new(IRQResult)
	if err := json.Unmarshal(out.Bytes(), res); err != nil {
		return nil, fmt.Errorf("%s bench-irq: %w", o.VHCRD, err)
	}
	if res.Raised != res.Posted {
		return res, fmt.Errorf("%d interrupts for %d EQEs: the VF did not re-arm before each", res.Raised, res.Posted)
	}
	return res, nil
}

// IRQPF is the PF process of (e) (`vhcrd bench-irq PATH ROUNDS ITERS`):
// it opens the region RunIRQ created, builds the source over it, hands the
// vector and an acknowledgement eventfd to the VF over the socket it
// inherits as descriptor 3, times the rounds and prints the IRQResult as
// JSON on stdout; the rounds' progress goes to stderr.
func IRQPF(args []string, newSource NewIRQSource) error {
	if len(args) != 3 {
		return errIRQPFArgs
	}
	rounds, err1 := strconv.Atoi(args[1])
	iters, err2 := strconv.Atoi(args[2])
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%w: %w", errIRQPFArgs, err)
	}
	if rounds <= 0 || iters <= 0 {
		return fmt.Errorf("%w: %d rounds of %d round trips", errIRQPFArgs, rounds, iters)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	region, err := bar.OpenFile(args[0], false)
	if err != nil {
		return err
	}
	defer region.Close()
	src, err := newSource(region)
	if err != nil {
		return err
	}
	defer src.Close()
	ack, err := irq.New(1)
	if err != nil {
		return err
	}
	defer ack.Close()
	ackFD, _ := ack.FD(0)
	c, err := inheritedConn("irq-sock")
	if err != nil {
		return err
	}
	defer c.Close()
	stop, _ := bar.NewReg(region, irqStop)
	defer func() {
		stop.Store(1)
		_ = src.Raise() // wakes the VF to see the stop word
	}()
	if err := irq.SendFDs(c.(*net.UnixConn), []byte("irq"), src.Vector(), ackFD); err != nil {
		return err
	}
	posted := uint64(0)
	viaEQE := ackedRoundTrip(ackFD, func() error { posted++; return src.PostEQE() })
	bare := ackedRoundTrip(ackFD, src.Raise)
	res := &IRQResult{EQE: Figure{Name: "EQE posted → VF process wakes"}, Bare: Figure{Name: "eventfd signal → VF process wakes"}}
	if err := res.rounds(rounds, os.Stderr, iters, bare, viaEQE); err != nil {
		return err
	}
	for _, f := range []*Figure{&res.EQE, &res.Bare} {
		f.MedianNS, f.P99NS = median(f.RoundMedian), median(f.RoundP99)
	}
	res.Ratio = median(res.RoundRatios)
	res.Raised, res.Posted = src.Interrupts(), posted
	return json.NewEncoder(os.Stdout).Encode(res)
}

var errIRQPFArgs = errors.New("bench-irq PATH ROUNDS ITERS")

// ackedRoundTrip is one round trip: signal, then the VF's acknowledgement
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
func (res *IRQResult) rounds(rounds int, log io.Writer, iters int, bare, viaEQE func() error) error {
	for r := 0; r < rounds; r++ {
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
		if log != nil {
			fmt.Fprintf(log, "irq round %d: EQE→wake p50 %.0f ns, eventfd→wake p50 %.0f ns\n", r+1, res.EQE.RoundMedian[r], res.Bare.RoundMedian[r])
		}
	}
	return nil
}

// irqVF is the VF of (e), on a thread of its own: it receives the two
// eventfds over sock (closed here) and answers until the PF sets the stop
// word or closes its end of the socket before sending them.
func irqVF(sock *os.File, region bar.Region) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := net.FileConn(sock)
	sock.Close()
	if err != nil {
		return err
	}
	defer c.Close()
	var buf [8]byte
	_, fds, err := irq.RecvFDs(c.(*net.UnixConn), buf[:], 2)
	if err != nil {
		return fmt.Errorf("irq VF: %w", err)
	}
	for _, fd := range fds {
		defer unix.Close(fd)
	}
	if len(fds) != 2 {
		return fmt.Errorf("irq VF: %d descriptors, want 2", len(fds))
	}
	mem, err := region.Bytes()
	if err != nil {
		return err
	}
	db, _ := bar.NewReg(region, IRQDB)
	stop, _ := bar.NewReg(region, irqStop)
	return irqAnswer(fds[0], fds[1], mem, db, stop)
}

// irqAnswer is the VF's loop: per wake on vec, consume the EQEs the PF
// wrote, re-arm if there were any, acknowledge on ack.
func irqAnswer(vec, ack int, mem []byte, db, stop bar.Reg) error {
	const nent = 1 << IRQLogEQ
	var ackOne [8]byte
	binary.NativeEndian.PutUint64(ackOne[:], 1)
	cons := uint32(0)
	for {
		if _, err := irq.Wait(vec, time.Minute); err != nil {
			return fmt.Errorf("irq VF: %w", err)
		}
		if stop.Load() != 0 {
			return nil
		}
		n := 0
		for {
			owner := mem[IRQEQPage+int(cons&(nent-1))*mlx4.EQESize+mlx4.EQEOwner]
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
			return fmt.Errorf("irq VF: ack: %w", err)
		}
	}
}
