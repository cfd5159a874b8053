package vfdrv

// Adopting objects another process of the same VF created: their state
// lives in the PF, so a new driver learns it with the QUERY commands (and
// READ_MTT for an EQ's ring pages). Adopted objects own no pages of this
// driver's pool.

import (
	"context"
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// CreateEQAt is CreateEQ with the ring at iova of the VF's window (pages
// the caller keeps out of the driver's pool, e.g. at the top of the window
// so that later processes of the same VF do not reuse them).
func (d *Driver) CreateEQAt(ctx context.Context, eqn, logSize int, iova uint64) (*EQ, error) {
	if eqn < 0 || eqn > MaxEQN || logSize < 0 || logSize > 19 {
		return nil, fmt.Errorf("%w: EQ %d of 2^%d entries", ErrArgument, eqn, logSize)
	}
	nent := 1 << logSize
	pages := max(1, nent*mlx4.EQESize/mlx4.PageSize)
	if iova%mlx4.PageSize != 0 || iova < 3*mlx4.PageSize || iova+uint64(pages*mlx4.PageSize) > uint64(len(d.mem)) {
		return nil, fmt.Errorf("%w: ring of %d pages at %#x", ErrArgument, pages, iova)
	}
	mtt, err := d.allocMTTPoll(ctx, orderFor(pages))
	if err != nil {
		return nil, err
	}
	q := d.eqAt(eqn, logSize, buffer{IOVA: iova, MTT: mtt})
	addrs := make([]uint64, pages)
	for i := range addrs {
		addrs[i] = iova + uint64(i)*mlx4.PageSize
	}
	var mbox [mlx4.MailboxSize]byte
	l := mlx4.EncodeWriteMTT(mbox[:], mtt.Base, addrs)
	if _, err := d.mustPoll(ctx, &vfclient.Request{Op: mlx4.WRITE_MTT, InMod: uint32(pages), In: mbox[:l]}); err != nil {
		_ = d.freeBuffer(ctx, q.buffer, true)
		return nil, err
	}
	if err := d.sw2hwEQ(ctx, q); err != nil {
		_ = d.freeBuffer(ctx, q.buffer, true)
		return nil, err
	}
	return q, nil
}

func (d *Driver) allocMTTPoll(ctx context.Context, order int) (MTT, error) {
	res, err := d.mustPoll(ctx, &vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResMTT, OpMod: opReserveAndMap, InParam: uint64(order)})
	return MTT{Base: uint64(uint32(res.OutParam)), Order: order}, err
}

// AdoptEQ takes over EQ eqn: QUERY_EQ gives its size, MTT and indexes,
// READ_MTT its ring pages (which must be contiguous). Every EQE the PF
// wrote so far counts as consumed. With events, the driver posts in event
// mode with this EQ receiving completions (the PF refuses 'e' commands
// with BAD_SYS_STATE if command completions are not mapped to it).
func (d *Driver) AdoptEQ(ctx context.Context, eqn int, events bool) (*EQ, error) {
	if eqn < 0 || eqn > MaxEQN {
		return nil, fmt.Errorf("%w: EQ %d", ErrArgument, eqn)
	}
	res, err := d.mustPoll(ctx, &vfclient.Request{Op: mlx4.QUERY_EQ, InMod: uint32(eqn)})
	if err != nil {
		return nil, err
	}
	c, err := mlx4.DecodeEQContext(res.Out)
	if err != nil {
		return nil, err
	}
	nent := 1 << c.LogSize
	if c.LogPageSize != 0 {
		return nil, fmt.Errorf("%w: EQ %d has %d KiB pages", ErrArgument, eqn, 4<<c.LogPageSize)
	}
	pages := max(1, nent*mlx4.EQESize/mlx4.PageSize)
	if pages > mlx4.MaxWriteMTTEntries {
		return nil, fmt.Errorf("%w: EQ %d of %d pages", ErrArgument, eqn, pages)
	}
	res, err = d.mustPoll(ctx, &vfclient.Request{Op: mlx4.READ_MTT, InParam: c.MTTBase, InMod: uint32(pages)})
	if err != nil {
		return nil, err
	}
	if len(res.Out) < mlx4.MTTMailboxLen(pages) {
		return nil, fmt.Errorf("READ_MTT: %w", mlx4.ErrShort)
	}
	iova := mlx4.MTTMailboxEntry(res.Out, 0) &^ (mlx4.PageSize - 1)
	for i := range pages {
		if mlx4.MTTMailboxEntry(res.Out, i)&^(mlx4.PageSize-1) != iova+uint64(i)*mlx4.PageSize {
			return nil, fmt.Errorf("%w: EQ %d's ring is not contiguous", ErrArgument, eqn)
		}
	}
	if iova+uint64(nent*mlx4.EQESize) > uint64(len(d.mem)) {
		return nil, fmt.Errorf("%w: EQ %d's ring at %#x outside the window", ErrArgument, eqn, iova)
	}
	q := d.eqAt(eqn, c.LogSize, buffer{IOVA: iova, MTT: MTT{Base: c.MTTBase, Order: orderFor(pages)}})
	q.ring.cons = c.Producer
	q.consumed = uint64(c.Producer)
	q.live = true
	q.ringDoorbell(d.irq >= 0)
	if events {
		if d.ev.eq != nil {
			return nil, fmt.Errorf("%w: events already enabled on EQ %d", ErrArgument, d.ev.eq.EQN)
		}
		d.ev.eq, d.ev.mask, d.ev.on = q, 1<<mlx4.EventCmd|AsyncEventMask, true
	}
	return q, nil
}

// eqAt builds the driver's view of an EQ whose ring is b.
func (d *Driver) eqAt(eqn, logSize int, b buffer) *EQ {
	nent := 1 << logSize
	q := &EQ{EQN: eqn, LogSize: logSize, buffer: b}
	q.ring = ring{mem: d.mem[b.IOVA : b.IOVA+uint64(nent*mlx4.EQESize)], nent: uint32(nent)}
	q.db = d.doorbell(eqn)
	return q
}

// AdoptCQ takes over CQ cqn in HW: QUERY_CQ gives its size, EQ and MTT.
func (d *Driver) AdoptCQ(ctx context.Context, cqn uint32) (*CQ, error) {
	cq := &CQ{CQN: cqn}
	c, err := d.QueryCQ(ctx, cq)
	if err != nil {
		return nil, err
	}
	if c == (mlx4.CQContext{}) {
		// mlx4's quirk: a CQ that is not in HW answers OK with nothing.
		return nil, fmt.Errorf("%w: CQ %d is not in HW", ErrArgument, cqn)
	}
	cq.LogSize, cq.EQN, cq.hw = c.LogSize, int(c.CompEQN), true
	cq.MTT = MTT{Base: c.MTTBase, Order: orderFor(max(1, (1<<c.LogSize)*32/mlx4.PageSize))}
	return cq, nil
}

// AdoptMR takes over MPT index (in HW): QUERY_MPT gives its MTT (its
// entries are the region's pages: mtt_sz is 0, as Linux writes it).
func (d *Driver) AdoptMR(ctx context.Context, index uint32) (*MR, error) {
	mr := &MR{Index: index}
	m, err := d.QueryMR(ctx, mr)
	if err != nil {
		return nil, err
	}
	mr.Key, mr.IOVA, mr.mapped, mr.hw = m.Key, m.Start, true, true
	mr.MTT = MTT{Base: m.MTTBase, Order: orderFor(int(max(1, min(m.Length/mlx4.PageSize, mlx4.MaxWriteMTTEntries))))}
	return mr, nil
}

// AdoptQP takes over QP qpn. In HW, QUERY_QP gives its state, CQs, SRQ,
// service type and MTT (cfg supplies the port and P_Key index, which the PF
// rewrote to physical values); in RST (QUERY_QP is RESOURCE_BUSY) cfg and
// mtt describe it.
func (d *Driver) AdoptQP(ctx context.Context, qpn uint32, cfg QPConfig, mtt MTT) (*QP, error) {
	qp, err := d.newQP(ctx, cfg)
	if err != nil {
		return nil, err
	}
	qp.QPN, qp.MTT = qpn, mtt
	c, err := d.QueryQP(ctx, qp)
	if errors.Is(err, mlx4.RESOURCE_BUSY) {
		qp.State = mlx4.QP_STATE_RST
		return qp, nil
	}
	if err != nil {
		return nil, err
	}
	qp.counter = c.Pri.CounterIndex // the PF's assignment, if any
	qp.uar, qp.rqdb = c.UsrPage, c.DBRecAddr
	qp.Cfg.ST, qp.Cfg.SendCQ, qp.Cfg.RecvCQ = c.ST, c.CQNSend, c.CQNRecv
	qp.Cfg.UseSRQ, qp.Cfg.SRQN, qp.Cfg.PD, qp.Cfg.QKey = c.UseSRQ, c.SRQN, c.PD, c.QKey
	qp.Cfg.RemoteQPN, qp.Cfg.DestLID, qp.Cfg.NextSendPSN = c.RemoteQPN, c.Pri.RLID, c.NextSendPSN
	qp.Cfg.LogSQSize, qp.Cfg.LogRQSize = c.LogSQSize, c.LogRQSize
	qp.MTT = MTT{Base: c.MTTBase, Order: orderFor(qp.context().MTTPages())}
	return qp, nil
}
