package vfdrv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// Errors of the driver. Every error it returns wraps one of them (or an
// error of vfclient.VF, for the comm channel itself).
var (
	// ErrCommand: the PF completed a command with a non-OK status. The
	// error is a *CommandError, which also matches the mlx4.Status.
	ErrCommand = errors.New("vfdrv: command failed")
	// ErrCompletionTimeout: an accepted 'e' command's completion EQE did not
	// arrive within the VF's Post timeout.
	ErrCompletionTimeout = errors.New("vfdrv: completion EQE timed out")
	// ErrLostCompletion: a later token completed first, so this command's
	// completion EQE was lost (an EQ overrun on the PF side).
	ErrLostCompletion = errors.New("vfdrv: completion EQE lost")
	// ErrTicket: the ticket was never issued or its result was overwritten.
	ErrTicket = errors.New("vfdrv: unknown ticket")
	// ErrNoEvents: event mode asked for without an EQ for completions.
	ErrNoEvents = errors.New("vfdrv: no EQ mapped for command completions")
	// ErrNoMemory: the VF's DMA window has no room left for a ring or buffer.
	ErrNoMemory = errors.New("vfdrv: VF DMA window exhausted")
	// ErrArgument: a caller's argument the driver rejects before posting.
	ErrArgument = errors.New("vfdrv: bad argument")
	// ErrStrayCompletion: in mlx4 mode, a command-completion EQE carried a
	// token other than the one the command waits for (Linux's
	// mlx4_cmd_event ignores it and the command times out after 70 s; the
	// model fails at once).
	ErrStrayCompletion = errors.New("vfdrv: completion EQE with another token")
)

// CommandError is a non-OK completion.
type CommandError struct {
	Op     mlx4.Opcode
	Status mlx4.Status
}

func (e *CommandError) Error() string { return fmt.Sprintf("vfdrv: %v: %v", e.Op, e.Status) }

// Unwrap lets errors.Is match ErrCommand and the status itself.
func (e *CommandError) Unwrap() []error { return []error{ErrCommand, e.Status} }

// StatusOf returns the status carried by err (OK for nil, INTERNAL_ERR for
// errors that are not command statuses).
func StatusOf(err error) mlx4.Status {
	if err == nil {
		return mlx4.OK
	}
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.Status
	}
	return mlx4.INTERNAL_ERR
}

// Options configure a Driver.
type Options struct {
	// BAR is the VF's own BAR region, where the EQ doorbells are
	// (mlx4.EQDoorbellOffset). A nil BAR writes none.
	BAR bar.Region
	// MaxInFlight bounds the accepted, uncompleted 'e' commands (default 4).
	MaxInFlight int
	// RecycleEQ is for a PF that never reads the EQ doorbell: it then
	// believes an EQ full after 2^log_size EQEs whatever the VF consumed,
	// so the driver re-creates its completion EQ in place (same EQN, ring
	// and MTT; poll mode) before that point. Without a BAR no doorbell is
	// written and the driver recycles too.
	RecycleEQ bool
	// Trace, if set, sees every completed command.
	Trace func(op mlx4.Opcode, s mlx4.Status, event bool)
	// OnEvent, if set, receives asynchronous EQEs (every type but 0x0a)
	// consumed while waiting for completions.
	OnEvent func(EQE)
	// Completions is the 'e'-bit protocol the driver speaks (events.go):
	// the early way (zero value, pipelined) or Linux mlx4_core's.
	Completions Completions
	// IRQ is the eventfd of MSI-X vector 0, the vector of the driver's
	// EQs (their contexts' intr), as the PF hands it over (irq.RecvFDs);
	// nil: the driver polls its EQ. With it, a wait for a completion
	// spins briefly, then sleeps on the eventfd instead of polling
	// (irq.go). The driver does not close it.
	IRQ *os.File
	// Ledger, if set, sees every command the driver posts and every
	// completion it takes.
	Ledger Ledger
	// UAR is the UAR index the verbs' CQs and QPs name in their contexts
	// (usr_page) and ring at (mlx4.UARPageOffset of it in BAR); 0 is
	// mlx4.ReservedUARs, the first a driver allocates.
	UAR uint32
	// CQESize is the verbs CQs' CQE slot size, 32 (0) or 64 bytes as the
	// device reports (the 64-byte CQE capability); the CQE proper is a
	// 64-byte slot's second half.
	CQESize int
}

// Ledger records a driver's commands: Posted once per VHCR_POST that went
// out (slave_write written), Completed once per completion the driver took
// (toggle, EQE, or a refusal at acceptance), with the status and immediate
// output (Result.Out is the driver's buffer: copy what is kept). A posted
// command the driver never saw complete (a timeout, a lost EQE, bit 17) has
// a Posted and no Completed. The crash tier (hack/crashtest) keeps its
// ledger this way.
type Ledger interface {
	Posted(op mlx4.Opcode, event bool)
	Completed(op mlx4.Opcode, r Result)
}

// Stats are the driver's counters.
type Stats struct {
	Commands    uint64 // completed commands, both modes
	Inbox       uint64 // of which with an inbox
	Events      uint64 // of which posted with the 'e' bit
	NonOK       uint64 // completed with a non-OK status
	Refused     uint64 // 'e' commands the PF completed at acceptance (no EQE)
	Completions uint64 // completion EQEs matched
	Lost        uint64 // completions skipped by a later token
	Stray       uint64 // completion EQEs with a token nothing waits for
	Async       uint64 // other EQEs
	Doorbells   uint64 // doorbell writes
	Interrupts  uint64 // wake-ups by the IRQ eventfd (Options.IRQ)
	Recycles    uint64 // completion EQ re-creations
	CompEvents  uint64 // completion EQEs for the verbs' CQs
}

// Result is a completed command.
type Result struct {
	Status   mlx4.Status
	OutParam uint64 // immediate output
	Out      []byte // outbox (valid until MaxInFlight more commands or the next poll-mode one)
	Token    uint16 // the token of an 'e' command
	Event    bool   // completed by an EQE
}

// Ticket names an accepted 'e' command.
type Ticket uint64

// Driver is a VF driver over one VF. Use it from one goroutine.
type Driver struct {
	VF    *vfclient.VF
	Stats Stats

	opt  Options
	mem  []byte
	pool pagePool
	ev   events
	sink int // the sink counter index (QUERY_DEV_CAP max_counters - 1); -1 until asked
	irq  int // Options.IRQ's descriptor, -1 without one
	// the verbs' objects (verbs.go) by number, and their doorbell records
	cqs map[uint32]*VCQ
	qps map[uint32]*VQP
	db  dbPool
}

// New builds a driver over v, whose comm channel must be up (VF.Init).
func New(v *vfclient.VF, opt Options) (*Driver, error) {
	if opt.MaxInFlight <= 0 {
		opt.MaxInFlight = 4
	}
	if opt.MaxInFlight > resultRing/2 {
		return nil, fmt.Errorf("%w: MaxInFlight %d above %d", ErrArgument, opt.MaxInFlight, resultRing/2)
	}
	d := &Driver{VF: v, opt: opt, mem: v.Memory(), sink: -1, irq: -1}
	if opt.IRQ != nil {
		fd, err := rawFD(opt.IRQ)
		if err != nil {
			return nil, fmt.Errorf("%w: IRQ: %w", ErrArgument, err)
		}
		d.irq = fd
	}
	d.pool.v = v
	d.ev.token = 0
	return d, nil
}

// Events reports whether commands are posted with the 'e' bit.
func (d *Driver) Events() bool { return d.ev.on }

// EQ returns the EQ receiving command completions (nil in poll mode).
func (d *Driver) EQ() *EQ { return d.ev.eq }

// Do posts r in the driver's mode (events if enabled, else poll) and waits
// for its completion. A non-OK status is in the Result, not an error.
func (d *Driver) Do(ctx context.Context, r *vfclient.Request) (Result, error) {
	if d.ev.on {
		return d.PostEvent(ctx, r)
	}
	return d.Poll(ctx, r)
}

// Poll posts r in poll mode (vfclient.VF.Post). Accepted 'e' commands are
// completed first, so that results arrive in posting order.
func (d *Driver) Poll(ctx context.Context, r *vfclient.Request) (Result, error) {
	if err := d.Drain(ctx); err != nil {
		return Result{}, err
	}
	q := *r
	q.Event = false
	resp, err := d.VF.Post(ctx, &q)
	if d.opt.Ledger != nil && !errors.Is(err, vfclient.ErrBusy) {
		d.opt.Ledger.Posted(r.Op, false)
	}
	if err != nil {
		return Result{}, err
	}
	d.count(r.Op, resp.Status, false)
	res := Result{Status: resp.Status, OutParam: resp.OutParam}
	if resp.Out != nil {
		res.Out = resp.Out[:]
	}
	if d.opt.Ledger != nil {
		d.opt.Ledger.Completed(r.Op, res)
	}
	return res, nil
}

// sinkCounter returns the sink counter index, asking QUERY_DEV_CAP once:
// a QP's context names it until the PF assigns the VF's counter.
func (d *Driver) sinkCounter(ctx context.Context) (uint8, error) {
	if d.sink < 0 {
		res, err := d.must(ctx, &vfclient.Request{Op: mlx4.QUERY_DEV_CAP})
		if err != nil {
			return 0, err
		}
		n := binary.BigEndian.Uint32(res.Out[mlx4.QUERY_DEV_CAP_MAX_COUNTERS_OFFSET:])
		if n < 1 || n > 256 {
			return 0, fmt.Errorf("%w: QUERY_DEV_CAP reports %d counters", ErrArgument, n)
		}
		d.sink = int(n - 1)
	}
	return uint8(d.sink), nil
}

// must runs r in the driver's mode and turns a non-OK status into an error.
func (d *Driver) must(ctx context.Context, r *vfclient.Request) (Result, error) {
	res, err := d.Do(ctx, r)
	if err != nil {
		return res, fmt.Errorf("%v: %w", r.Op, err)
	}
	if res.Status != mlx4.OK {
		return res, &CommandError{Op: r.Op, Status: res.Status}
	}
	return res, nil
}

// mustPoll is must in poll mode.
func (d *Driver) mustPoll(ctx context.Context, r *vfclient.Request) (Result, error) {
	res, err := d.Poll(ctx, r)
	if err != nil {
		return res, fmt.Errorf("%v: %w", r.Op, err)
	}
	if res.Status != mlx4.OK {
		return res, &CommandError{Op: r.Op, Status: res.Status}
	}
	return res, nil
}

func (d *Driver) count(op mlx4.Opcode, s mlx4.Status, event bool) {
	d.Stats.Commands++
	if in, _ := mlx4.CmdInfo(op); in.HasInbox {
		d.Stats.Inbox++
	}
	if event {
		d.Stats.Events++
	}
	if s != mlx4.OK {
		d.Stats.NonOK++
	}
	if d.opt.Trace != nil {
		d.opt.Trace(op, s, event)
	}
}

// Reset sends RESET and brings the channel up again (vfclient.VF.Init): the PF
// releases every resource of the VF. Objects the caller holds are gone;
// the driver returns to poll mode and reclaims all its pages.
func (d *Driver) Reset(ctx context.Context) error {
	d.ev.forget()
	d.pool.reclaim()
	d.cqs, d.qps, d.db = nil, nil, dbPool{}
	return d.VF.Init(ctx)
}

// waiter backs off while a completion EQE is awaited: spin briefly (the PF
// writes the EQE right after executing), then yield (other goroutines may
// be VFs with commands to post), then sleep.
// spinWaits is how many waits a waiter spins before it yields or sleeps.
const spinWaits = 256

type waiter struct {
	n     int
	start time.Time
}

func (w *waiter) wait(ctx context.Context, timeout time.Duration) error {
	w.n++
	if w.n < spinWaits {
		bar.Pause()
		return nil
	}
	if w.start.IsZero() {
		w.start = time.Now()
	}
	if w.n%64 != 0 {
		runtime.Gosched()
		return nil
	}
	el := time.Since(w.start)
	if el > timeout {
		return ErrCompletionTimeout
	}
	if el > 2*time.Millisecond {
		t := time.NewTimer(100 * time.Microsecond)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	runtime.Gosched()
	return nil
}

// pagePool hands out runs of 4 KiB pages of the VF's window, taken once
// from VF.AllocPages (which never frees) and recycled here.
type pagePool struct {
	v      *vfclient.VF
	free   map[int][]uint64 // run length → IOVAs
	chunks []chunk          // everything taken from the VF
}

type chunk struct {
	iova uint64
	n    int
}

func (p *pagePool) get(n int) (uint64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("%w: %d pages", ErrArgument, n)
	}
	if l := p.free[n]; len(l) > 0 {
		iova := l[len(l)-1]
		p.free[n] = l[:len(l)-1]
		return iova, nil
	}
	iova, err := p.v.AllocPages(n)
	if err != nil {
		return 0, fmt.Errorf("%w: %d pages: %v", ErrNoMemory, n, err)
	}
	p.chunks = append(p.chunks, chunk{iova, n})
	return iova, nil
}

func (p *pagePool) put(iova uint64, n int) {
	if p.free == nil {
		p.free = map[int][]uint64{}
	}
	p.free[n] = append(p.free[n], iova)
}

// reclaim frees every run (after RESET nothing of the VF is in use).
func (p *pagePool) reclaim() {
	p.free = map[int][]uint64{}
	for _, c := range p.chunks {
		p.free[c.n] = append(p.free[c.n], c.iova)
	}
}
