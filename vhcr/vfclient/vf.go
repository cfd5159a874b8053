package vfclient

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/vhcrd/vhcrd/vhcr/wire"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/internal/futex"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// VF-side errors.
var (
	ErrBusy          = errors.New("vhcr: comm channel not idle")                       // mlx4: -EAGAIN
	ErrTimeout       = errors.New("vhcr: comm channel command timed out")              // mlx4: -EIO, error state
	ErrOffline       = errors.New("vhcr: communication channel is offline")            // FLAGS bit 9 stayed set
	ErrFLR           = errors.New("vhcr: RESET timed out, function is in FLR")         // MLX4_DELAY_RESET_SLAVE
	ErrVersion       = errors.New("vhcr: slave driver version is not supported")       // RESET reply version
	ErrInternal      = errors.New("vhcr: master reset this function (internal error)") // bit 17
	ErrResetNotAcked = errors.New("vhcr: reset request not acknowledged")
	ErrNotStarted    = errors.New("vhcr: no command started")
)

// Timeouts of the VF side (mlx4 defaults).
type Timeouts struct {
	Sync    time.Duration // sync_toggles: 5 s
	Offline time.Duration // offline bit: MLX4_COMM_OFFLINE_TIME_OUT, 30 s
	Comm    time.Duration // RESET, VHCR0..EN: MLX4_COMM_TIME, 10 s
	Post    time.Duration // VHCR_POST: MLX4_COMM_TIME + command class, 70 s
}

// DefaultTimeouts are mlx4's.
var DefaultTimeouts = Timeouts{Sync: 5 * time.Second, Offline: 30 * time.Second, Comm: 10 * time.Second, Post: 70 * time.Second}

// VF page layout in its own DMA window (the VF's choice; the PF learns the
// vHCR address from VHCR0..EN and the mailboxes from each command).
const (
	VFPageVHCR   = 0 // page 0: the vHCR
	VFPageInbox  = 1 // page 1: inbox
	VFPageOutbox = 2 // page 2: outbox
	vfFirstFree  = 3
)

// VF is the VF (slave) side of one function's comm channel: the mlx4 VF
// driver's command path as a library. A VF is used by one goroutine.
type VF struct {
	Index    int
	Timeouts Timeouts
	// PFAlive, when set, is asked while a wait lasts (after pfCheckAfter,
	// then every pfCheckEvery): an error ends the wait with it. A one-shot
	// tool sets it to Attachment.PFAlive to report a PF that died at once
	// instead of after mlx4's timeouts; a VF that should ride out a PF's
	// restart (the crash tier's, a guest's) leaves it nil.
	PFAlive func() error

	sw, sr, caps, flags bar.Reg
	win                 *dma.Window
	mem                 []byte // the VF's own DMA memory
	toggle              uint32 // 0 or 1
	doorbell, sleeping  *uint32
	fence               atomic.Uint32
	resetCap            bool
	nextPage            int64
	started, hasOut     bool // a Start awaits Poll; its opcode has an outbox
}

// NewVF opens VF idx's side over the regions described by l: the control
// region ctrl (the futex doorbell), the VF's own BAR region vfBAR (its comm
// page at 0) and the DMA region. The DMA region must be mapped: the VF
// writes its vHCR and mailboxes into its own memory.
func NewVF(ctrl, vfBAR, dmaR bar.Region, l wire.Layout, idx int) (*VF, error) {
	if idx < 0 || idx >= l.NumVFs {
		return nil, fmt.Errorf("vhcr: VF %d outside 0..%d", idx, l.NumVFs-1)
	}
	space, err := dma.NewSpace(dmaR, l.DMABase, l.Window, l.NumVFs)
	if err != nil {
		return nil, err
	}
	win, err := space.Window(idx)
	if err != nil {
		return nil, err
	}
	return newVF(ctrl, vfBAR, win, l, idx)
}

// NewGuestVF is NewVF for a VF whose DMA memory is a guest's RAM (the
// PF's master.Options.GuestRAM), below q35's split: its IOVA is the offset
// in ram. It stands in for a guest's driver in tests.
func NewGuestVF(ctrl, vfBAR, ram bar.Region, l wire.Layout, idx int) (*VF, error) {
	if idx < 0 || idx >= l.NumVFs {
		return nil, fmt.Errorf("vhcr: VF %d outside 0..%d", idx, l.NumVFs-1)
	}
	if ram.Size() >= dma.Q35SplitAbove {
		return nil, fmt.Errorf("vhcr: VF %d: guest RAM of %#x bytes is split by q35; the VF library addresses one range", idx, ram.Size())
	}
	space, err := dma.NewSpace(ram, 0, ram.Size(), 1)
	if err != nil {
		return nil, err
	}
	win, _ := space.Window(0)
	return newVF(ctrl, vfBAR, win, l, idx)
}

func newVF(ctrl, vfBAR bar.Region, win *dma.Window, l wire.Layout, idx int) (*VF, error) {
	if vfBAR.Size() < l.VFBARSize {
		return nil, fmt.Errorf("%s: %w: VF %d's BAR region has %#x bytes, the header says %#x", vfBAR.Name(), bar.ErrTooSmall, idx, vfBAR.Size(), l.VFBARSize)
	}
	v := &VF{Index: idx, Timeouts: DefaultTimeouts, nextPage: vfFirstFree, win: win}
	var err error
	if v.mem, err = v.win.Bytes(); err != nil {
		return nil, fmt.Errorf("vhcr: VF %d: DMA region %s: %w", idx, win.Region().Name(), err)
	}
	for _, x := range []struct {
		r   *bar.Reg
		off int64
	}{{&v.sw, mlx4.CommSlaveWrite}, {&v.sr, mlx4.CommSlaveRead}, {&v.caps, mlx4.MLX4_COMM_CHAN_CAPS}, {&v.flags, mlx4.MLX4_COMM_CHAN_FLAGS}} {
		if *x.r, err = bar.NewReg(vfBAR, x.off); err != nil {
			return nil, err
		}
	}
	if l.Doorbell && ctrl.Shared() {
		v.doorbell, _ = bar.Word(ctrl, wire.HdrDoorbell)
		v.sleeping, _ = bar.Word(ctrl, wire.HdrPFSleeping)
	}
	return v, nil
}

// NoDoorbell stops the VF from ringing the PF's futex doorbell, as a
// guest's driver cannot: the PF then finds its commands by polling only.
func (v *VF) NoDoorbell() { v.doorbell, v.sleeping = nil, nil }

// Memory is the VF's DMA window (its own memory; IOVA 0 is byte 0).
func (v *VF) Memory() []byte { return v.mem }

// AllocPages reserves n consecutive 4 KiB pages of the VF's window beyond the
// vHCR and mailbox pages and returns the IOVA of the first.
func (v *VF) AllocPages(n int) (uint64, error) {
	if n <= 0 || (v.nextPage+int64(n))*bar.PageSize > int64(len(v.mem)) {
		return 0, fmt.Errorf("vhcr: VF %d: no room for %d pages", v.Index, n)
	}
	iova := uint64(v.nextPage) * bar.PageSize
	v.nextPage += int64(n)
	return iova, nil
}

// SlaveRead returns the current slave_read register.
func (v *VF) SlaveRead() uint32 { return v.sr.Load() }

// SyncToggles adopts the toggle both registers agree on (sync_toggles). If
// they do not agree within the Sync timeout, it zeroes both ("recovering from
// previously mis-behaved VM").
func (v *VF) SyncToggles(ctx context.Context) error {
	limit := v.Timeouts.Sync
	if v.sw.Load() == 0xffffffff {
		limit = 30 * time.Second
	}
	start := time.Now()
	deadline := start.Add(limit)
	pw := pfWatch{v: v}
	for time.Now().Before(deadline) {
		w, r := v.sw.Load(), v.sr.Load()
		if w != 0xffffffff && r != 0xffffffff && w>>mlx4.CommToggleShift == r>>mlx4.CommToggleShift {
			v.toggle, v.started = r>>mlx4.CommToggleShift, false
			return nil
		}
		if err := pw.check(time.Since(start)); err != nil {
			return err
		}
		if err := sleepCtx(ctx, time.Millisecond); err != nil {
			return err
		}
	}
	v.sr.Store(0)
	v.sw.Store(0)
	v.toggle, v.started = 0, false
	return nil
}

// WaitOnline waits for the PF to clear the offline bit.
func (v *VF) WaitOnline(ctx context.Context) error {
	start := time.Now()
	deadline := start.Add(v.Timeouts.Offline)
	pw := pfWatch{v: v}
	for v.flags.Load()&mlx4.CommFlagsOffline != 0 {
		if !time.Now().Before(deadline) {
			return ErrOffline
		}
		if err := pw.check(time.Since(start)); err != nil {
			return err
		}
		if err := sleepCtx(ctx, time.Millisecond); err != nil {
			return err
		}
	}
	v.resetCap = v.caps.Load()&mlx4.CommCapsVFReset != 0
	return nil
}

// Init runs the bring-up of mlx4_init_slave: sync_toggles, the offline wait,
// RESET (checking the version), VHCR0..VHCR_EN with the vHCR at page 0.
func (v *VF) Init(ctx context.Context) error {
	if err := v.SyncToggles(ctx); err != nil {
		return err
	}
	if err := v.WaitOnline(ctx); err != nil {
		return err
	}
	if err := v.Reset(ctx); err != nil {
		return err
	}
	addr := uint64(VFPageVHCR * bar.PageSize)
	steps := []struct {
		cmd   mlx4.CommCmd
		param uint16
	}{{mlx4.MLX4_COMM_CMD_VHCR0, uint16(addr >> mlx4.CommVHCRShift(mlx4.MLX4_COMM_CMD_VHCR0))}, {mlx4.MLX4_COMM_CMD_VHCR1, uint16(addr >> mlx4.CommVHCRShift(mlx4.MLX4_COMM_CMD_VHCR1))},
		{mlx4.MLX4_COMM_CMD_VHCR2, uint16(addr >> mlx4.CommVHCRShift(mlx4.MLX4_COMM_CMD_VHCR2))}, {mlx4.MLX4_COMM_CMD_VHCR_EN, uint16(addr >> mlx4.CommVHCRShift(mlx4.MLX4_COMM_CMD_VHCR_EN))}}
	for _, s := range steps {
		if err := v.Comm(ctx, s.cmd, s.param, v.Timeouts.Comm); err != nil {
			_ = v.Comm(ctx, mlx4.MLX4_COMM_CMD_RESET, 0, 0)
			return fmt.Errorf("vhcr: VF %d: %v: %w", v.Index, s.cmd, err)
		}
	}
	return nil
}

// Reset sends RESET and checks the version in the acknowledgement.
func (v *VF) Reset(ctx context.Context) error {
	if err := v.Comm(ctx, mlx4.MLX4_COMM_CMD_RESET, 0, v.Timeouts.Comm); err != nil {
		if errors.Is(err, ErrTimeout) {
			return ErrFLR
		}
		return err
	}
	if r := v.sr.Load(); mlx4.CommIfRev(r) != mlx4.CMD_CHAN_IF_REV {
		return fmt.Errorf("%w: reply %#08x", ErrVersion, r)
	}
	return nil
}

// Comm posts one comm channel command and waits up to timeout for its
// acknowledgement (mlx4_comm_cmd_poll). A timeout of 0 posts without waiting.
func (v *VF) Comm(ctx context.Context, cmd mlx4.CommCmd, param uint16, timeout time.Duration) error {
	if v.sr.Load()>>mlx4.CommToggleShift != v.toggle {
		return ErrBusy
	}
	return v.postComm(ctx, cmd, param, timeout)
}

// postComm flips the toggle, writes slave_write, rings a sleeping PF and,
// unless timeout is 0, waits for the acknowledgement. The caller checked
// that the channel is idle.
func (v *VF) postComm(ctx context.Context, cmd mlx4.CommCmd, param uint16, timeout time.Duration) error {
	v.post(cmd, param)
	if timeout == 0 {
		return nil
	}
	r, err := v.waitAck(ctx, timeout)
	if err != nil {
		return fmt.Errorf("%w: %v", err, cmd)
	}
	if r&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
		return ErrInternal
	}
	return nil
}

// post flips the toggle, writes slave_write and rings a sleeping PF.
func (v *VF) post(cmd mlx4.CommCmd, param uint16) {
	v.toggle ^= 1
	v.sw.Store(mlx4.CommWord(v.toggle, cmd, param))
	v.ring()
}

// WaitAck waits for the acknowledgement of a command posted with a zero
// timeout.
func (v *VF) WaitAck(ctx context.Context) error {
	r, err := v.waitAck(ctx, v.Timeouts.Post)
	if err != nil {
		return err
	}
	if r&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
		return ErrInternal
	}
	return nil
}

// Ring wakes the PF if it says it sleeps on the futex doorbell (the wire
// contract's HdrPFSleeping word): one locked add and one load when it does
// not. The comm channel rings after every post; the verbs (vfdrv) ring after
// a send doorbell and a CQ arm, stores the PF can only see by looking. A VF
// with no futex doorbell (NoDoorbell, a region that is not shared memory)
// rings nothing.
func (v *VF) Ring() {
	if v != nil {
		v.ring()
	}
}

// ring wakes a PF that blocks on the futex doorbell.
func (v *VF) ring() {
	if v.sleeping == nil {
		return
	}
	v.fence.Add(1) // a locked instruction: orders the slave_write store before the load below
	if atomic.LoadUint32(v.sleeping) != 0 {
		atomic.AddUint32(v.doorbell, 1)
		futex.Wake(v.doorbell, 1)
	}
}

// waitAck waits until slave_read's toggle equals ours. It spins briefly
// (SpinPoll), then yields (other goroutines of this process may be VFs too),
// then sleeps: a long spin would steal the PF's CPU on a 2-CPU machine.
func (v *VF) waitAck(ctx context.Context, timeout time.Duration) (uint32, error) {
	if r, ok := SpinPoll(v.sr, v.toggle, spinPolls); ok {
		return r, nil
	}
	start := time.Now()
	w := pfWatch{v: v}
	for n := 0; ; n++ {
		if r := v.sr.Load(); r>>mlx4.CommToggleShift == v.toggle {
			return r, nil
		}
		if n%64 == 0 {
			el := time.Since(start)
			if el > timeout {
				return 0, ErrTimeout
			}
			if err := w.check(el); err != nil {
				return 0, err
			}
			if el > 2*time.Millisecond {
				if err := sleepCtx(ctx, time.Millisecond); err != nil {
					return 0, err
				}
				continue
			}
		}
		runtime.Gosched()
	}
}

// SpinPauses is the number of PAUSEs between two polls of a register a VF
// spins on. A waiter that polls at every PAUSE contends with the PF while
// the PF works on the command: for the comm channel's cache line, and where
// the two run on sibling threads of one core, for the core. On the project
// machine (one PAUSE is about 35 ns) the median NOP round trip, in blocks
// alternating in one process against one vhcrd, was 110 or 190 ns polling
// at every PAUSE (bimodal), 110 ns at every second, 140-150 ns at every
// third and 170-180 ns at every fourth.
const SpinPauses = 2

// spinPolls bounds the spin phase of a wait: about 150 µs here.
const spinPolls = 2048

// SpinPoll polls g until its bit 31 equals toggle, at most polls times, with
// SpinPauses PAUSEs between polls. It returns the last value read and
// whether the toggle matched. The VF library waits for acknowledgements this
// way, and so does the physical-limit baseline of vfctl bench.
func SpinPoll(g bar.Reg, toggle uint32, polls int) (uint32, bool) {
	var r uint32
	for n := 0; n < polls; n++ {
		if r = g.Load(); r>>mlx4.CommToggleShift == toggle {
			return r, true
		}
		for k := 0; k < SpinPauses; k++ {
			bar.Pause()
		}
	}
	return r, false
}

// A wait asks VF.PFAlive first after pfCheckAfter, then every pfCheckEvery:
// a dead PF is reported within about a tenth of a second, and a command
// that completes in its first milliseconds costs no system call.
const (
	pfCheckAfter = 20 * time.Millisecond
	pfCheckEvery = 100 * time.Millisecond
)

// pfWatch asks a VF's PFAlive on a wait's schedule.
type pfWatch struct {
	v    *VF
	next time.Duration
}

// check asks PFAlive when the wait has lasted el and its turn has come.
func (w *pfWatch) check(el time.Duration) error {
	if w.v.PFAlive == nil || el < pfCheckAfter || el < w.next {
		return nil
	}
	w.next = el + pfCheckEvery
	return w.v.PFAlive()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Request is one command to post.
type Request struct {
	Op       mlx4.Opcode
	OpMod    uint8
	InMod    uint32
	InParam  uint64 // immediate input (ignored when In is set)
	OutParam uint64 // immediate input/output for Imm commands
	In       []byte // inbox contents (copied into the inbox page)
	Event    bool   // set the 'e' bit
	Token    uint16 // token for event mode (poll mode uses 0xffff)
}

// Response is what the PF returned.
type Response struct {
	Status   mlx4.Status
	OutParam uint64
	// Out is the VF's outbox page, valid until the next command; nil for
	// opcodes without an outbox and for failed commands. (A pointer, not a
	// slice, keeps Response at three words, which the compiler passes in
	// registers.)
	Out *[mlx4.MailboxSize]byte
}

// Post posts r through the vHCR in poll mode and waits for completion
// (mlx4_slave_cmd). A non-OK status is not an error: it is in the Response.
func (v *VF) Post(ctx context.Context, r *Request) (Response, error) {
	if err := v.Start(r); err != nil {
		return Response{}, err
	}
	sr, err := v.waitAck(ctx, v.Timeouts.Post)
	if err != nil {
		return Response{}, fmt.Errorf("%w: %v", err, mlx4.MLX4_COMM_CMD_VHCR_POST)
	}
	return v.complete(sr)
}

// Start writes r into the vHCR and posts it (VHCR_POST) without waiting:
// Poll reports its completion. Post is Start and a wait for Poll's answer.
// Start returns ErrBusy while the channel still owns the previous command.
func (v *VF) Start(r *Request) error {
	if v.sr.Load()>>mlx4.CommToggleShift != v.toggle {
		return ErrBusy // the previous command still owns the vHCR
	}
	info, _ := mlx4.CmdInfo(r.Op)
	inParam := r.InParam
	if r.In != nil {
		if len(r.In) > mlx4.MailboxSize {
			return fmt.Errorf("vhcr: inbox of %d bytes", len(r.In))
		}
		in := v.mem[VFPageInbox*bar.PageSize : (VFPageInbox+1)*bar.PageSize]
		n := copy(in, r.In)
		clear(in[n:])
		inParam = VFPageInbox * bar.PageSize
	}
	outParam := r.OutParam
	v.hasOut = info.HasOutbox
	if v.hasOut {
		outParam = VFPageOutbox * bar.PageSize
	}
	token := uint16(mlx4.PollToken)
	var flags uint8
	if r.Event {
		flags, token = mlx4.FlagE, r.Token
	}
	// The vHCR is written in place as a driver writes its coherent vHCR
	// page, reserved fields zeroed. Word 3 (token, status, flags, opcode)
	// is composed and stored whole: field by field, the compiler emits byte
	// stores.
	vh := (*[mlx4.VHCRSize]byte)(v.mem[VFPageVHCR*bar.PageSize:])
	mlx4.PutVHCRWords(vh, inParam, mlx4.Word1(r.InMod), outParam, mlx4.Word3(token, flags, r.OpMod, r.Op))
	v.started = true
	v.post(mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	return nil
}

// Poll looks once at slave_read for the completion of the command Start
// posted, without waiting. It returns the Response and true once the PF has
// acknowledged, false while the command is in flight, and ErrNotStarted if no
// command is outstanding. It does not time out: a caller that polls applies
// its own bound (Timeouts.Post is mlx4's).
func (v *VF) Poll() (Response, bool, error) {
	if !v.started {
		return Response{}, false, ErrNotStarted
	}
	sr := v.sr.Load()
	if sr>>mlx4.CommToggleShift != v.toggle {
		return Response{}, false, nil
	}
	resp, err := v.complete(sr)
	return resp, true, err
}

// complete reads the Response of the acknowledged command (slave_read sr).
func (v *VF) complete(sr uint32) (Response, error) {
	v.started = false
	if sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
		return Response{}, ErrInternal
	}
	vh := (*[mlx4.VHCRSize]byte)(v.mem[VFPageVHCR*bar.PageSize:])
	resp := Response{Status: mlx4.Status(vh[mlx4.OffStatus]), OutParam: binary.BigEndian.Uint64(vh[mlx4.OffOutParam:])}
	if v.hasOut && resp.Status == mlx4.OK {
		resp.Out = (*[mlx4.MailboxSize]byte)(v.mem[VFPageOutbox*bar.PageSize:])
	}
	return resp, nil
}

// RequestReset runs the VF reset handshake of mlx4_reset_slave: toggle FLAGS
// bit 16 and wait up to 10 s for the PF to copy it into bit 8.
func (v *VF) RequestReset(ctx context.Context) error {
	f := v.flags.Load()
	if f == 0xffffffff {
		return nil // PCI offline: "VF reset is not needed"
	}
	if (f&mlx4.CommFlagsResetReq != 0) != (f&mlx4.CommFlagsResetAck != 0) {
		return fmt.Errorf("%w: request and ack bits out of sync", ErrResetNotAcked)
	}
	f ^= mlx4.CommFlagsResetReq
	v.flags.Store(f)
	v.ring()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g := v.flags.Load()
		if (g&mlx4.CommFlagsResetReq != 0) == (g&mlx4.CommFlagsResetAck != 0) {
			return nil
		}
		if !time.Now().Before(deadline) {
			return ErrResetNotAcked
		}
		if err := sleepCtx(ctx, time.Millisecond); err != nil {
			return err
		}
	}
}

// Request2VHCR is a poll-mode vHCR image for op with the given inbox and
// outbox IOVAs, for tests and tools that post by hand.
func Request2VHCR(op mlx4.Opcode, inParam, outParam uint64) mlx4.VHCR {
	return mlx4.VHCR{InParam: inParam, OutParam: outParam, Token: mlx4.PollToken, Op: op}
}
