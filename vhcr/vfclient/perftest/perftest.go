package perftest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// Errors of the runs.
var (
	// ErrCompletion: a work completion with a status other than success,
	// or one the run did not expect.
	ErrCompletion = errors.New("perftest: bad work completion")
	// ErrData: a received message is not the one sent.
	ErrData = errors.New("perftest: data check failed")
)

// UDQKey is the Q_Key ibv_ud_pingpong uses on both ends.
const UDQKey = 0x11111111

// GRHBytes is the room a UD receive buffer keeps for the GRH
// (ibv_ud_pingpong posts size + 40).
const GRHBytes = 40

// Config is one end of a run.
type Config struct {
	UD      bool  // UD (ibv_ud_pingpong) instead of RC
	Size    int   // message bytes (default 4096)
	RxDepth int   // receive WQEs (default 500, ibv_rc_pingpong's)
	TxDepth int   // send WQEs (default 1 for the ping-pong; the rate runs' window)
	Port    int   // the VF's port (default 1)
	SL      uint8 // service level of the path
	PSN     uint32
	EQN     int // the EQ the CQ reports to (default 1)
	// Events waits for completion events (ibv_rc_pingpong -e): the CQ is
	// armed and the driver waits on its EQ (with vfdrv.Options.IRQ, on the
	// vector's eventfd) before polling.
	Events bool
	// Check verifies every received message (ibv_rc_pingpong -c).
	Check bool
	// Selective: only the sends a run asks for are signalled (the rate
	// runs); otherwise every send is (sq_sig_all, as ibv_rc_pingpong).
	Selective bool
}

func (c *Config) defaults() {
	if c.Size <= 0 {
		c.Size = 4096
	}
	if c.RxDepth <= 0 {
		c.RxDepth = 500
	}
	if c.TxDepth <= 0 {
		c.TxDepth = 1
	}
	if c.Port == 0 {
		c.Port = 1
	}
	if c.EQN == 0 {
		c.EQN = 1
	}
}

// Dest is what the two ends exchange out of band (ibv_rc_pingpong's
// "LID:QPN:PSN:GID", plus the buffer ib_write_bw writes to).
type Dest struct {
	LID  uint16
	QPN  uint32
	PSN  uint32
	RKey uint32
	Addr uint64
}

// Endpoint is one end: its driver, EQ, CQ, QP and a registered buffer
// holding a send and a receive message.
type Endpoint struct {
	D     *vfdrv.Driver
	EQ    *vfdrv.EQ
	CQ    *vfdrv.VCQ
	QP    *vfdrv.VQP
	MR    *vfdrv.MR
	Local Dest
	cfg   Config
	ah    *vfdrv.AH
	rem   Dest
	// the work requests, built once (no allocation per post)
	send  [1]vfdrv.SendWR
	recv  [1]vfdrv.RecvWR
	ssge  [1]vfdrv.SGE
	rsge  [1]vfdrv.SGE
	wc    [16]vfdrv.WC
	check []byte
	routs int // receives posted for the ping-pong
}

// Work request IDs (ibv_rc_pingpong's PINGPONG_RECV_WRID, _SEND_WRID).
const (
	recvWRID = 1
	sendWRID = 2
)

// recvLen is the bytes of a receive buffer.
func (e *Endpoint) recvLen() int {
	if e.cfg.UD {
		return e.cfg.Size + GRHBytes
	}
	return e.cfg.Size
}

// SendAddr and RecvAddr are the IOVAs of the send and the receive message.
func (e *Endpoint) SendAddr() uint64 { return e.MR.IOVA }
func (e *Endpoint) RecvAddr() uint64 { return e.MR.IOVA + uint64(e.cfg.Size) }

// NewEndpoint builds an end on d (poll mode, its VF's LID lid): an EQ, a
// CQ of rx_depth + tx_depth entries, a QP (max_send_wr tx_depth,
// max_recv_wr rx_depth, one SGE each way, inline up to the size where it
// fits, every send signalled as ibv_rc_pingpong's are) and an MR over
// both messages with remote write and read, then INIT.
func NewEndpoint(ctx context.Context, d *vfdrv.Driver, cfg Config, lid uint16) (*Endpoint, error) {
	cfg.defaults()
	e := &Endpoint{D: d, cfg: cfg}
	e, err := e.build(ctx, lid)
	if err != nil {
		_ = e.Close(ctx) // what was created, so that the VF can run again
		return nil, err
	}
	return e, nil
}

func (e *Endpoint) build(ctx context.Context, lid uint16) (*Endpoint, error) {
	d, cfg := e.D, e.cfg
	var err error
	if e.EQ, err = d.CreateEQ(ctx, cfg.EQN, 7); err != nil {
		return e, fmt.Errorf("EQ: %w", err)
	}
	if e.CQ, err = d.CreateVerbsCQ(ctx, cfg.RxDepth+cfg.TxDepth, e.EQ.EQN); err != nil {
		return e, fmt.Errorf("CQ: %w", err)
	}
	pages := (cfg.Size + e.recvLen() + mlx4.PageSize - 1) / mlx4.PageSize
	if e.MR, err = d.CreateMR(ctx, pages, mlx4.PERM_LOCAL_READ|mlx4.PERM_LOCAL_WRITE|mlx4.PERM_REMOTE_WRITE|mlx4.PERM_REMOTE_READ, pd); err != nil {
		return e, fmt.Errorf("MR: %w", err)
	}
	st := uint8(mlx4.QP_ST_RC)
	if cfg.UD {
		st = mlx4.QP_ST_UD
	}
	qcfg := vfdrv.QPConfig{ST: st, SendCQ: e.CQ.CQN, RecvCQ: e.CQ.CQN, Port: cfg.Port, PD: pd, QKey: UDQKey, NextSendPSN: cfg.PSN,
		Access: mlx4.QP_BIT_RRE | mlx4.QP_BIT_RWE}
	caps := vfdrv.QPCaps{MaxSendWR: cfg.TxDepth, MaxRecvWR: cfg.RxDepth, MaxSendSGE: 1, MaxRecvSGE: 1}
	if e.QP, err = d.CreateVerbsQP(ctx, qcfg, caps, !cfg.Selective); err != nil {
		return e, fmt.Errorf("QP: %w", err)
	}
	if err := d.Modify(ctx, e.QP.QP, mlx4.QP_STATE_INIT); err != nil {
		return e, fmt.Errorf("QP to INIT: %w", err)
	}
	e.Local = Dest{LID: lid, QPN: e.QP.QPN, PSN: cfg.PSN, RKey: e.MR.Key, Addr: e.RecvAddr()}
	e.ssge[0] = vfdrv.SGE{Addr: e.SendAddr(), Length: uint32(cfg.Size), LKey: e.MR.Key}
	e.rsge[0] = vfdrv.SGE{Addr: e.RecvAddr(), Length: uint32(e.recvLen()), LKey: e.MR.Key}
	e.recv[0] = vfdrv.RecvWR{WRID: recvWRID, SGE: e.rsge[:]}
	e.send[0] = vfdrv.SendWR{WRID: sendWRID, Opcode: mlx4.OPCODE_SEND, SGE: e.ssge[:], Signaled: true,
		Inline: cfg.Size <= e.QP.Caps.MaxInline}
	if cfg.Check {
		e.check = make([]byte, cfg.Size)
	}
	if !cfg.Selective {
		// ibv_rc_pingpong posts its rx_depth receives before the
		// exchange: a UD message that finds none is dropped
		if e.routs, err = e.postRecv(cfg.RxDepth); err != nil {
			return e, fmt.Errorf("post receives: %w", err)
		}
	}
	return e, nil
}

// pd is the protection domain of the runs' QPs and MRs.
const pd = 1

// Connect takes the QP to RTR and RTS toward rem (pp_connect_ctx: the
// remote QPN, its PSN as the receive PSN, the path to its LID; UD keeps
// the remote for its address handle).
func (e *Endpoint) Connect(ctx context.Context, rem Dest) error {
	e.rem = rem
	q := e.QP
	q.Cfg.RemoteQPN, q.Cfg.DestLID, q.Cfg.RecvPSN = rem.QPN, rem.LID, rem.PSN
	if e.cfg.UD {
		q.Cfg.RemoteQPN, q.Cfg.DestLID = 0, 0
		e.ah = vfdrv.NewAH(vfdrv.AHAttr{DLID: rem.LID, SL: e.cfg.SL, Port: e.cfg.Port, PD: pd})
		e.send[0].AH, e.send[0].RemoteQPN, e.send[0].RemoteQKey = e.ah, rem.QPN, UDQKey
		e.send[0].SGE = e.ssge[:]
	}
	return e.D.ModifyPath(ctx, q.QP, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS)
}

// Close destroys the end's objects.
func (e *Endpoint) Close(ctx context.Context) error {
	var errs []error
	if e.QP != nil {
		errs = append(errs, e.D.DestroyVerbsQP(ctx, e.QP))
	}
	if e.MR != nil {
		errs = append(errs, e.D.DestroyMR(ctx, e.MR))
	}
	if e.CQ != nil {
		errs = append(errs, e.D.DestroyVerbsCQ(ctx, e.CQ))
	}
	if e.EQ != nil {
		errs = append(errs, e.D.DestroyEQ(ctx, e.EQ))
	}
	return errors.Join(errs...)
}

// postRecv posts n receives of the receive message.
func (e *Endpoint) postRecv(n int) (int, error) {
	for i := 0; i < n; i++ {
		if _, err := e.QP.PostRecv(e.recv[:]); err != nil {
			return i, err
		}
	}
	return n, nil
}

// stamp writes message seq into the send buffer (Check): the sequence
// number in its first 8 bytes, and each later byte seq + offset.
func (e *Endpoint) stamp(seq uint64) error {
	if e.check == nil {
		return nil
	}
	fill(e.check, seq)
	return e.D.Write(e.SendAddr(), e.check)
}

func fill(b []byte, seq uint64) {
	for i := range b {
		b[i] = byte(seq + uint64(i))
	}
	if len(b) >= 8 {
		binary.BigEndian.PutUint64(b, seq)
	}
}

// verify checks the received message seq (Check).
func (e *Endpoint) verify(seq uint64) error {
	if e.check == nil {
		return nil
	}
	off := uint64(0)
	if e.cfg.UD {
		off = GRHBytes
	}
	if err := e.D.Read(e.RecvAddr()+off, e.check); err != nil {
		return err
	}
	for i, b := range e.check {
		want := byte(seq + uint64(i))
		if i < 8 && len(e.check) >= 8 {
			want = byte(seq >> (56 - 8*i))
		}
		if b != want {
			return fmt.Errorf("%w: message %d byte %d is %#x, want %#x", ErrData, seq, i, b, want)
		}
	}
	return nil
}

// wait is the completion wait of one loop turn: with Events the CQ's
// event (ibv_get_cq_event), then the CQ is re-armed (ibv_req_notify_cq)
// before it is polled.
func (e *Endpoint) wait(ctx context.Context) error {
	if !e.cfg.Events {
		return nil
	}
	if err := e.CQ.WaitEvent(ctx, e.EQ); err != nil {
		return err
	}
	e.CQ.Arm(false)
	return nil
}

// idle is one empty poll: a pause, and past a few a yield, so that other
// goroutines of the process (the other end, a PF in the same process) and
// other processes (vhcrd) run on a loaded machine; it reports when the caller should look at its
// context.
func idle(spins *int) bool {
	*spins++
	if *spins < 64 {
		bar.Pause()
	} else {
		// the PF may be waiting for the very CPU this end spins on (a
		// machine with fewer free CPUs than spinners): give it up, to
		// this process's goroutines and to other threads
		runtime.Gosched()
		schedYield()
	}
	return *spins&0xff == 0
}

// schedYield gives the CPU to another runnable thread (x/sys/unix has no
// wrapper for sched_yield).
func schedYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// Result is a run's figures.
type Result struct {
	Iters   int
	Bytes   int64
	Elapsed time.Duration
}

// Mbits is ibv_rc_pingpong's "X Mbit/sec": bytes * 8 / µs.
func (r Result) Mbits() float64 { return float64(r.Bytes) * 8 / float64(r.Elapsed.Microseconds()) }

// UsecPerIter is ibv_rc_pingpong's "U usec/iter".
func (r Result) UsecPerIter() float64 { return float64(r.Elapsed.Microseconds()) / float64(r.Iters) }

// Lines are ibv_rc_pingpong's two result lines.
func (r Result) Lines() string {
	s := r.Elapsed.Seconds()
	return fmt.Sprintf("%d bytes in %.2f seconds = %.2f Mbit/sec\n%d iters in %.2f seconds = %.2f usec/iter\n",
		r.Bytes, s, r.Mbits(), r.Iters, s, r.UsecPerIter())
}

// PingPong runs ibv_rc_pingpong's loop (ibv_ud_pingpong's with UD) for
// iters messages each way: rx_depth receives posted (NewEndpoint posts
// them before the exchange) and topped up when one is left, the client
// (server false) sending first, each end sending its next message once
// its last send completed and the peer's message arrived. Bytes counts
// both directions, as ibv_rc_pingpong does.
func (e *Endpoint) PingPong(ctx context.Context, iters int, server bool) (Result, error) {
	p, err := e.startPingPong(iters, server)
	if err != nil {
		return Result{}, err
	}
	defer p.end()
	spins := 0
	for !p.done() {
		if err := e.wait(ctx); err != nil {
			return Result{}, err
		}
		got, err := p.poll()
		if err != nil {
			return Result{}, err
		}
		if got {
			spins = 0
		} else if idle(&spins) {
			if err := ctx.Err(); err != nil {
				return Result{}, fmt.Errorf("after %d sends and %d receives: %w", p.scnt, p.rcnt, err)
			}
		}
	}
	return p.result(), nil
}

// PingPongPair is PingPong with both ends, client and server, driven by
// the calling goroutine in turn (polled, not with completion events): the
// exchange of two hosts' processes without a second spinning thread, for
// a machine with fewer free CPUs than spinners (the PF's poller and two
// ends on two CPUs time-slice, and the time slices become the round
// trip). It returns the client's figures.
func PingPongPair(ctx context.Context, client, server *Endpoint, iters int) (Result, error) {
	if client.cfg.Events || server.cfg.Events {
		return Result{}, errors.New("perftest: PingPongPair polls: no completion events")
	}
	c, err := client.startPingPong(iters, false)
	if err != nil {
		return Result{}, err
	}
	defer c.end()
	s, err := server.startPingPong(iters, true)
	if err != nil {
		return Result{}, err
	}
	defer s.end()
	spins := 0
	for !c.done() || !s.done() {
		gc, err := c.poll()
		if err != nil {
			return Result{}, fmt.Errorf("client: %w", err)
		}
		gs, err := s.poll()
		if err != nil {
			return Result{}, fmt.Errorf("server: %w", err)
		}
		if gc || gs {
			spins = 0
		} else if idle(&spins) {
			if err := ctx.Err(); err != nil {
				return Result{}, fmt.Errorf("client after %d sends and %d receives, server after %d and %d: %w", c.scnt, c.rcnt, s.scnt, s.rcnt, err)
			}
		}
	}
	return c.result(), nil
}

// pingPong is one end's state in PingPong's loop.
type pingPong struct {
	e                 *Endpoint
	iters             int
	routs, scnt, rcnt int
	pending           uint
	start             time.Time
}

const (
	recvPending = 1 << recvWRID
	sendPending = 1 << sendWRID
)

// startPingPong tops the receives up to rx_depth and, for the client,
// posts the first message.
func (e *Endpoint) startPingPong(iters int, server bool) (*pingPong, error) {
	p := &pingPong{e: e, iters: iters, routs: e.routs, pending: recvPending}
	k, err := e.postRecv(e.cfg.RxDepth - p.routs)
	p.routs += k
	if err != nil {
		e.routs = p.routs
		return nil, err
	}
	if e.cfg.Events {
		e.CQ.Arm(false)
	}
	p.start = time.Now()
	if !server {
		if err := e.sendNext(p.scnt); err != nil {
			e.routs = p.routs
			return nil, err
		}
		p.pending |= sendPending
	}
	return p, nil
}

func (p *pingPong) done() bool { return p.rcnt >= p.iters && p.scnt >= p.iters }

// end leaves the endpoint's receive count as the exchange left it.
func (p *pingPong) end() { p.e.routs = p.routs }

func (p *pingPong) result() Result {
	// the last message of the server's first send is counted once: bytes
	// = size * iters * 2, as ibv_rc_pingpong prints
	return Result{Iters: p.iters, Bytes: int64(p.e.cfg.Size) * int64(p.iters) * 2, Elapsed: time.Since(p.start)}
}

// poll handles the completions one poll of the CQ returns (at most two):
// it reports whether there were any.
func (p *pingPong) poll() (bool, error) {
	e := p.e
	n := e.CQ.Poll(e.wc[:2])
	for i := range e.wc[:n] {
		wc := &e.wc[i]
		if wc.Status != vfdrv.WCSuccess {
			return true, fmt.Errorf("%w: %v (syndrome %#x, vendor %#x) for wr_id %d after %d sends and %d receives",
				ErrCompletion, wc.Status, wc.Syndrome, wc.VendorErr, wc.WRID, p.scnt, p.rcnt)
		}
		switch wc.WRID {
		case sendWRID:
			p.scnt++
		case recvWRID:
			if err := e.verify(uint64(p.rcnt)); err != nil {
				return true, err
			}
			if p.routs--; p.routs <= 1 {
				k, err := e.postRecv(e.cfg.RxDepth - p.routs)
				p.routs += k
				if err != nil {
					return true, err
				}
			}
			p.rcnt++
		default:
			return true, fmt.Errorf("%w: wr_id %d", ErrCompletion, wc.WRID)
		}
		p.pending &^= 1 << wc.WRID
		if p.scnt < p.iters && p.pending == 0 {
			if err := e.sendNext(p.scnt); err != nil {
				return true, err
			}
			p.pending = recvPending | sendPending
		}
	}
	return n > 0, nil
}

// sendNext stamps message n into the send buffer and posts it.
func (e *Endpoint) sendNext(n int) error {
	if err := e.stamp(uint64(n)); err != nil {
		return err
	}
	if _, err := e.QP.PostSend(e.send[:]); err != nil {
		return fmt.Errorf("post send: %w", err)
	}
	return nil
}

// BWResult is a bandwidth or message rate run's figures.
type BWResult struct {
	Size    int
	Iters   int
	Elapsed time.Duration
}

// MBps is ib_write_bw's "BW average[MB/sec]" (MB = 2^20 bytes).
func (r BWResult) MBps() float64 {
	return float64(r.Size) * float64(r.Iters) / r.Elapsed.Seconds() / (1 << 20)
}

// MsgRate is messages per second.
func (r BWResult) MsgRate() float64 { return float64(r.Iters) / r.Elapsed.Seconds() }

// WriteBW runs ib_write_bw's client loop: iters RDMA_WRITEs of the size
// from the send message to rem's buffer, up to tx_depth in flight, every
// signalEvery-th signalled (ib_write_bw's cq_mod) and the last. The
// remote end does nothing.
func (e *Endpoint) WriteBW(ctx context.Context, iters, signalEvery int) (BWResult, error) {
	if signalEvery <= 0 || signalEvery > e.cfg.TxDepth {
		signalEvery = max(1, min(e.cfg.TxDepth/2, 64))
	}
	wr := [1]vfdrv.SendWR{{Opcode: mlx4.OPCODE_RDMA_WRITE, SGE: e.ssge[:], RemoteAddr: e.rem.Addr, RKey: e.rem.RKey}}
	return e.stream(ctx, iters, signalEvery, wr[:], nil)
}

// SendRate posts iters SENDs of the size toward a peer running
// ReceiveLoop, at most tx_depth in flight and never more than the peer's
// posted receives (credits, which the peer raises): the message rate of
// SEND.
func (e *Endpoint) SendRate(ctx context.Context, iters, signalEvery int, credits *atomic.Int64) (BWResult, error) {
	if signalEvery <= 0 || signalEvery > e.cfg.TxDepth {
		signalEvery = max(1, min(e.cfg.TxDepth/2, 64))
	}
	wr := [1]vfdrv.SendWR{e.send[0]}
	wr[0].Signaled = false
	return e.stream(ctx, iters, signalEvery, wr[:], credits)
}

// stream posts iters copies of wr[0] with a window of tx_depth.
func (e *Endpoint) stream(ctx context.Context, iters, signalEvery int, wr []vfdrv.SendWR, credits *atomic.Int64) (BWResult, error) {
	if e.QP.Caps.MaxSendWR < e.cfg.TxDepth {
		return BWResult{}, fmt.Errorf("QP holds %d sends, tx_depth %d", e.QP.Caps.MaxSendWR, e.cfg.TxDepth)
	}
	posted, done := 0, 0
	spins := 0
	var err error
	start := time.Now()
	for done < iters {
		for posted < iters && posted-done < e.cfg.TxDepth && (credits == nil || int64(posted) < credits.Load()) {
			wr[0].WRID = uint64(posted)
			wr[0].Signaled = (posted+1)%signalEvery == 0 || posted+1 == iters
			if _, err := e.QP.PostSend(wr); err != nil {
				return BWResult{}, fmt.Errorf("post %d: %w", posted, err)
			}
			posted++
		}
		n := e.CQ.Poll(e.wc[:])
		if n == 0 {
			if idle(&spins) {
				if err := ctx.Err(); err != nil {
					return BWResult{}, fmt.Errorf("after %d of %d completed: %w", done, iters, err)
				}
			}
			continue
		}
		spins = 0
		if done, err = e.sendsDone(n, done); err != nil {
			return BWResult{}, err
		}
	}
	return BWResult{Size: e.cfg.Size, Iters: iters, Elapsed: time.Since(start)}, nil
}

// sendsDone checks the n send completions in e.wc and returns how many
// sends are done after them (the last one's wr_id + 1), done before.
func (e *Endpoint) sendsDone(n, done int) (int, error) {
	for i := range e.wc[:n] {
		wc := &e.wc[i]
		if wc.Status != vfdrv.WCSuccess || !wc.IsSend {
			return done, fmt.Errorf("%w: %v (syndrome %#x) for wr_id %d after %d completed", ErrCompletion, wc.Status, wc.Syndrome, wc.WRID, done)
		}
		done = int(wc.WRID) + 1
	}
	return done, nil
}

// recvsDone checks the n receive completions in e.wc, got received
// before them.
func (e *Endpoint) recvsDone(n, got int) error {
	for i := range e.wc[:n] {
		if wc := &e.wc[i]; wc.Status != vfdrv.WCSuccess || wc.IsSend {
			return fmt.Errorf("%w: %v (syndrome %#x) after %d received", ErrCompletion, wc.Status, wc.Syndrome, got)
		}
	}
	return nil
}

// ReceiveLoop keeps the receive queue full for iters messages, raising
// credits by each receive it posts, and returns when iters arrived.
func (e *Endpoint) ReceiveLoop(ctx context.Context, iters int, credits *atomic.Int64) (BWResult, error) {
	depth := min(e.cfg.RxDepth, e.QP.Caps.MaxRecvWR)
	k, err := e.postRecv(min(depth, iters))
	credits.Add(int64(k))
	if err != nil {
		return BWResult{}, err
	}
	posted, got := k, 0
	spins := 0
	start := time.Now()
	for got < iters {
		n := e.CQ.Poll(e.wc[:])
		if n == 0 {
			if idle(&spins) {
				if err := ctx.Err(); err != nil {
					return BWResult{}, fmt.Errorf("after %d of %d received: %w", got, iters, err)
				}
			}
			continue
		}
		spins = 0
		if err := e.recvsDone(n, got); err != nil {
			return BWResult{}, err
		}
		got += n
		if m := min(n, iters-posted); m > 0 {
			k, err := e.postRecv(m)
			posted += k
			credits.Add(int64(k))
			if err != nil {
				return BWResult{}, err
			}
		}
	}
	return BWResult{Size: e.cfg.Size, Iters: iters, Elapsed: time.Since(start)}, nil
}

// SendRatePair is SendRate toward ReceiveLoop with both ends driven by the
// calling goroutine in turn (PingPongPair's reason): sends posted up to
// tx_depth in flight and the receiver's posted receives, the receiver's
// CQ polled and its receives topped up, the sender's CQ polled. It returns
// the sender's figures.
func SendRatePair(ctx context.Context, sender, receiver *Endpoint, iters, signalEvery int) (BWResult, error) {
	s, r := sender, receiver
	if signalEvery <= 0 || signalEvery > s.cfg.TxDepth {
		signalEvery = max(1, min(s.cfg.TxDepth/2, 64))
	}
	if s.QP.Caps.MaxSendWR < s.cfg.TxDepth {
		return BWResult{}, fmt.Errorf("QP holds %d sends, tx_depth %d", s.QP.Caps.MaxSendWR, s.cfg.TxDepth)
	}
	depth := min(r.cfg.RxDepth, r.QP.Caps.MaxRecvWR)
	recvs, err := r.postRecv(min(depth, iters))
	if err != nil {
		return BWResult{}, err
	}
	wr := [1]vfdrv.SendWR{s.send[0]}
	posted, done, got := 0, 0, 0
	spins := 0
	start := time.Now()
	for done < iters || got < iters {
		for posted < iters && posted-done < s.cfg.TxDepth && posted < recvs {
			wr[0].WRID = uint64(posted)
			wr[0].Signaled = (posted+1)%signalEvery == 0 || posted+1 == iters
			if _, err := s.QP.PostSend(wr[:]); err != nil {
				return BWResult{}, fmt.Errorf("post %d: %w", posted, err)
			}
			posted++
		}
		n := r.CQ.Poll(r.wc[:])
		if err := r.recvsDone(n, got); err != nil {
			return BWResult{}, fmt.Errorf("receiver: %w", err)
		}
		got += n
		if m := min(n, iters-recvs); m > 0 {
			k, err := r.postRecv(m)
			recvs += k
			if err != nil {
				return BWResult{}, err
			}
		}
		m := s.CQ.Poll(s.wc[:])
		if done, err = s.sendsDone(m, done); err != nil {
			return BWResult{}, fmt.Errorf("sender: %w", err)
		}
		if n+m > 0 {
			spins = 0
		} else if idle(&spins) {
			if err := ctx.Err(); err != nil {
				return BWResult{}, fmt.Errorf("after %d of %d completed and %d received: %w", done, iters, got, err)
			}
		}
	}
	return BWResult{Size: s.cfg.Size, Iters: iters, Elapsed: time.Since(start)}, nil
}
