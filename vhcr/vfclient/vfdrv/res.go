package vfdrv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// Resource types (ALLOC_RES/FREE_RES in_modifier[7:0], mlx4.Resource)
// and allocation modes (op_modifier, mlx4.AllocMode).
const (
	ResQP  = uint32(mlx4.RES_QP)
	ResCQ  = uint32(mlx4.RES_CQ)
	ResSRQ = uint32(mlx4.RES_SRQ)
	ResMPT = uint32(mlx4.RES_MPT)
	ResMTT = uint32(mlx4.RES_MTT)

	opReserve       = uint8(mlx4.RES_OP_RESERVE)
	opReserveAndMap = uint8(mlx4.RES_OP_RESERVE_AND_MAP)
	opMapICM        = uint8(mlx4.RES_OP_MAP_ICM)
)

// MaxEQN bounds the EQ numbers the driver uses: one doorbell word each in
// the VF's BAR region (wire.MaxEQDoorbells).
const MaxEQN = wire.MaxEQDoorbells - 1

// MTT is an MTT allocation: 2^Order entries from Base.
type MTT struct {
	Base  uint64
	Order int
}

// orderFor is the smallest order with 2^order >= pages.
func orderFor(pages int) int {
	o := 0
	for 1<<o < pages {
		o++
	}
	return o
}

func (d *Driver) alloc(ctx context.Context, ty uint32, op uint8, in uint64) (uint32, error) {
	res, err := d.must(ctx, &vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ty, OpMod: op, InParam: in})
	return uint32(res.OutParam), err
}

func (d *Driver) free(ctx context.Context, ty uint32, op uint8, in uint64) error {
	_, err := d.must(ctx, &vfclient.Request{Op: mlx4.FREE_RES, InMod: ty, OpMod: op, InParam: in})
	return err
}

// AllocMTT allocates 2^order MTT entries (ALLOC_RES MTT RESERVE_AND_MAP).
func (d *Driver) AllocMTT(ctx context.Context, order int) (MTT, error) {
	base, err := d.alloc(ctx, ResMTT, opReserveAndMap, uint64(order))
	return MTT{Base: uint64(base), Order: order}, err
}

// FreeMTT frees an MTT allocation (FREE_RES MTT: base in the low word,
// order in the high word).
func (d *Driver) FreeMTT(ctx context.Context, m MTT) error {
	return d.free(ctx, ResMTT, opReserveAndMap, uint64(m.Order)<<32|m.Base&0xffffffff)
}

// WriteMTT writes page addresses into MTT entries from start,
// mlx4.MaxWriteMTTEntries per WRITE_MTT.
func (d *Driver) WriteMTT(ctx context.Context, start uint64, addrs []uint64) error {
	var buf [mlx4.MailboxSize]byte
	for len(addrs) > 0 {
		n := min(len(addrs), mlx4.MaxWriteMTTEntries)
		l := mlx4.EncodeWriteMTT(buf[:], start, addrs[:n])
		if _, err := d.must(ctx, &vfclient.Request{Op: mlx4.WRITE_MTT, InMod: uint32(n), In: buf[:l]}); err != nil {
			return err
		}
		start += uint64(n)
		addrs = addrs[n:]
	}
	return nil
}

// buffer is a run of pages of the VF's memory with an MTT describing them.
type buffer struct {
	IOVA  uint64
	Pages int
	MTT   MTT
}

// newBuffer takes pages, allocates an MTT for them and writes their
// addresses into it.
func (d *Driver) newBuffer(ctx context.Context, pages int, poll bool) (buffer, error) {
	iova, err := d.pool.get(pages)
	if err != nil {
		return buffer{}, err
	}
	b := buffer{IOVA: iova, Pages: pages}
	post := d.must
	if poll {
		post = d.mustPoll
	}
	res, err := post(ctx, &vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResMTT, OpMod: opReserveAndMap, InParam: uint64(orderFor(pages))})
	if err != nil {
		d.pool.put(iova, pages)
		return buffer{}, err
	}
	b.MTT = MTT{Base: uint64(uint32(res.OutParam)), Order: orderFor(pages)}
	addrs := make([]uint64, pages)
	for i := range addrs {
		addrs[i] = iova + uint64(i)*mlx4.PageSize
	}
	var mbox [mlx4.MailboxSize]byte
	l := mlx4.EncodeWriteMTT(mbox[:], b.MTT.Base, addrs)
	if _, err := post(ctx, &vfclient.Request{Op: mlx4.WRITE_MTT, InMod: uint32(len(addrs)), In: mbox[:l]}); err != nil {
		_ = d.freeBuffer(ctx, b, poll)
		return buffer{}, err
	}
	return b, nil
}

func (d *Driver) freeBuffer(ctx context.Context, b buffer, poll bool) error {
	post := d.must
	if poll {
		post = d.mustPoll
	}
	_, err := post(ctx, &vfclient.Request{Op: mlx4.FREE_RES, InMod: ResMTT, OpMod: opReserveAndMap, InParam: uint64(b.MTT.Order)<<32 | b.MTT.Base&0xffffffff})
	if err == nil && b.Pages > 0 {
		d.pool.put(b.IOVA, b.Pages)
	}
	return err
}

// EQ is an event queue in the VF's memory.
type EQ struct {
	EQN     int
	LogSize int
	buffer
	ring     ring
	consumed uint64 // EQEs consumed since SW2HW_EQ
	db       bar.Reg
	live     bool
}

// Consumer is the EQ's consumer index (24 bits).
func (q *EQ) Consumer() uint32 { return q.ring.cons }

// ringDoorbell writes the consumer index (and the arm bit) to the EQ's
// doorbell word in the VF's BAR region.
func (q *EQ) ringDoorbell(arm bool) {
	if !q.db.Valid() {
		return
	}
	v := q.ring.cons & mlx4.EQIndexMask
	if arm {
		v |= mlx4.EQ_DOORBELL_ARM
	}
	q.db.Store(v)
}

// DoorbellOffset is the offset of EQ eqn's doorbell word in the VF's BAR
// region: mlx4's (mlx4.EQDoorbellOffset).
func DoorbellOffset(eqn int) int64 { return mlx4.EQDoorbellOffset(eqn) }

// newEQ prepares an EQ's ring and MTT (poll mode); it is not in HW yet.
func (d *Driver) newEQ(ctx context.Context, eqn, logSize int) (*EQ, error) {
	if eqn < 0 || eqn > MaxEQN || logSize < 0 || logSize > 19 {
		return nil, fmt.Errorf("%w: EQ %d of 2^%d entries", ErrArgument, eqn, logSize)
	}
	nent := 1 << logSize
	pages := max(1, nent*mlx4.EQESize/mlx4.PageSize)
	b, err := d.newBuffer(ctx, pages, true)
	if err != nil {
		return nil, err
	}
	return d.eqAt(eqn, logSize, b), nil
}

// doorbell is EQ eqn's doorbell word in the VF's BAR region (invalid
// without a BAR).
func (d *Driver) doorbell(eqn int) bar.Reg {
	if d.opt.BAR == nil {
		return bar.Reg{}
	}
	reg, err := bar.NewReg(d.opt.BAR, DoorbellOffset(eqn))
	if err != nil {
		return bar.Reg{}
	}
	return reg
}

// sw2hwEQ hands q's (reset) ring to the PF.
func (d *Driver) sw2hwEQ(ctx context.Context, q *EQ) error {
	q.ring.reset()
	q.consumed = 0
	q.ringDoorbell(false)
	var in [mlx4.EQContextSize]byte
	mlx4.EQContext{LogSize: q.LogSize, MTTBase: q.MTT.Base}.Encode(in[:])
	if _, err := d.mustPoll(ctx, &vfclient.Request{Op: mlx4.SW2HW_EQ, InMod: uint32(q.EQN), In: in[:]}); err != nil {
		return err
	}
	q.live = true
	return nil
}

func (d *Driver) mapEQ(ctx context.Context, q *EQ, mask uint64, unmap bool) error {
	in := uint32(q.EQN)
	if unmap {
		in |= mlx4.MAP_EQ_UNMAP
	}
	_, err := d.mustPoll(ctx, &vfclient.Request{Op: mlx4.MAP_EQ, InMod: in, InParam: mask})
	return err
}

// CreateEQ creates EQ eqn with 2^logSize EQEs: ring pages, MTT, WRITE_MTT,
// SW2HW_EQ. EQ commands always go in poll mode (a completion must not
// depend on the EQ being changed).
func (d *Driver) CreateEQ(ctx context.Context, eqn, logSize int) (*EQ, error) {
	q, err := d.newEQ(ctx, eqn, logSize)
	if err != nil {
		return nil, err
	}
	if err := d.sw2hwEQ(ctx, q); err != nil {
		_ = d.freeBuffer(ctx, q.buffer, true)
		return nil, err
	}
	return q, nil
}

// MapEQ maps the event types of mask to q (MAP_EQ).
func (d *Driver) MapEQ(ctx context.Context, q *EQ, mask uint64) error {
	return d.mapEQ(ctx, q, mask, false)
}

// UnmapEQ unmaps the event types of mask (MAP_EQ with bit 31).
func (d *Driver) UnmapEQ(ctx context.Context, q *EQ, mask uint64) error {
	return d.mapEQ(ctx, q, mask, true)
}

// QueryEQ returns the PF's view of q (QUERY_EQ).
func (d *Driver) QueryEQ(ctx context.Context, q *EQ) (mlx4.EQContext, error) {
	res, err := d.mustPoll(ctx, &vfclient.Request{Op: mlx4.QUERY_EQ, InMod: uint32(q.EQN)})
	if err != nil {
		return mlx4.EQContext{}, err
	}
	return mlx4.DecodeEQContext(res.Out)
}

// PollEQ consumes q's EQEs (async events go to Options.OnEvent) and rings
// its doorbell. It returns how many it consumed.
func (d *Driver) PollEQ(q *EQ) int { return d.pump(q) }

// DestroyEQ takes q back (HW2SW_EQ, poll mode) and frees its MTT and
// pages. The completion EQ goes with DisableEvents.
func (d *Driver) DestroyEQ(ctx context.Context, q *EQ) error {
	if q == d.ev.eq {
		return fmt.Errorf("%w: EQ %d receives command completions (DisableEvents)", ErrArgument, q.EQN)
	}
	if q.live {
		if _, err := d.mustPoll(ctx, &vfclient.Request{Op: mlx4.HW2SW_EQ, InMod: uint32(q.EQN)}); err != nil {
			return err
		}
		q.live = false
	}
	return d.freeBuffer(ctx, q.buffer, true)
}

// EnableEvents creates the VF's async EQ eqn (2^logSize EQEs), maps command
// completions and the async event types to it and switches the driver to
// event mode (mlx4_cmd_use_events). With RecycleEQ (or no BAR for the
// doorbell) the driver re-creates the EQ in place before the PF would
// believe it full.
func (d *Driver) EnableEvents(ctx context.Context, eqn, logSize int) (*EQ, error) {
	if d.ev.eq != nil {
		return nil, fmt.Errorf("%w: events already enabled on EQ %d", ErrArgument, d.ev.eq.EQN)
	}
	if nent := 1 << logSize; d.opt.MaxInFlight+1+max(1, nent/8) > nent {
		return nil, fmt.Errorf("%w: 2^%d EQEs cannot hold %d commands in flight", ErrArgument, logSize, d.opt.MaxInFlight)
	}
	q, err := d.CreateEQ(ctx, eqn, logSize)
	if err != nil {
		return nil, err
	}
	mask := uint64(1<<mlx4.EventCmd | AsyncEventMask)
	if err := d.mapEQ(ctx, q, mask, false); err != nil {
		_ = d.DestroyEQ(ctx, q)
		return nil, err
	}
	d.ev.eq, d.ev.mask, d.ev.on = q, mask, true
	return q, nil
}

// UseEvents switches between event and poll mode once events are enabled.
func (d *Driver) UseEvents(on bool) error {
	if on && d.ev.eq == nil {
		return ErrNoEvents
	}
	d.ev.on = on
	return nil
}

// UseEventsOn switches to event mode with q receiving command completions
// (the caller mapped them to it with MapEQ).
func (d *Driver) UseEventsOn(q *EQ) error {
	if d.ev.eq != nil && d.ev.eq != q {
		return fmt.Errorf("%w: events already enabled on EQ %d", ErrArgument, d.ev.eq.EQN)
	}
	if d.opt.MaxInFlight+1+max(1, int(q.ring.nent)/8) > int(q.ring.nent) {
		return fmt.Errorf("%w: 2^%d EQEs cannot hold %d commands in flight", ErrArgument, q.LogSize, d.opt.MaxInFlight)
	}
	d.ev.eq, d.ev.mask, d.ev.on = q, 1<<mlx4.EventCmd|AsyncEventMask, true
	return nil
}

// DisableEvents completes what is in flight, unmaps and destroys the
// completion EQ and returns to poll mode.
func (d *Driver) DisableEvents(ctx context.Context) error {
	q := d.ev.eq
	if q == nil {
		return nil
	}
	if err := d.Drain(ctx); err != nil {
		return err
	}
	d.ev.on = false
	if err := d.mapEQ(ctx, q, d.ev.mask, true); err != nil {
		return err
	}
	d.pump(q)
	d.ev.eq = nil
	return d.DestroyEQ(ctx, q)
}

// CQ is a completion queue.
type CQ struct {
	CQN     uint32
	LogSize int
	EQN     int
	buffer
	hw bool
}

// CreateCQ allocates a CQ of 2^logSize 32-byte CQEs reporting to EQ eqn:
// ALLOC_RES of the CQ and of its MTT, then WRITE_MTT of its ring pages and
// SW2HW_CQ, each pair pipelined.
func (d *Driver) CreateCQ(ctx context.Context, logSize, eqn int) (*CQ, error) {
	if logSize < 0 || logSize > 22 {
		return nil, fmt.Errorf("%w: CQ of 2^%d entries", ErrArgument, logSize)
	}
	var in [mlx4.CQContextSize]byte
	cq := &CQ{LogSize: logSize, EQN: eqn}
	res, err := d.create(ctx, max(1, (1<<logSize)*32/mlx4.PageSize),
		vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResCQ, OpMod: opReserveAndMap},
		func(n uint32) vfclient.Request { return freeReq(ResCQ, opReserveAndMap, uint64(n)) },
		func(n uint32, b buffer) []vfclient.Request {
			cq.CQN, cq.buffer = n, b
			mlx4.CQContext{LogSize: logSize, CompEQN: uint8(eqn), MTTBase: b.MTT.Base}.Encode(in[:])
			return []vfclient.Request{{Op: mlx4.SW2HW_CQ, InMod: n, In: in[:]}}
		})
	if res == nil {
		return nil, err
	}
	cq.hw = completed(err) && res[1].Status == mlx4.OK
	if err != nil {
		_ = d.DestroyCQ(ctx, cq)
		return nil, err
	}
	return cq, nil
}

// create is the two-step creation of an object backed by pages: ALLOC_RES
// of the object (alloc; its number is out_param's low word) pipelined with
// ALLOC_RES of an MTT for the pages, then WRITE_MTT of the pages pipelined
// with the requests then returns. A failure in the first step is undone
// here (free names the object's FREE_RES) and returns nil results; after
// the second step the caller reads the results (WRITE_MTT first) and
// undoes what it needs.
func (d *Driver) create(ctx context.Context, pages int, alloc vfclient.Request, free func(uint32) vfclient.Request,
	then func(n uint32, b buffer) []vfclient.Request) ([]Result, error) {
	iova, err := d.pool.get(pages)
	if err != nil {
		return nil, err
	}
	order := orderFor(pages)
	res, err := d.Pipeline(ctx, []vfclient.Request{alloc, {Op: mlx4.ALLOC_RES, InMod: ResMTT, OpMod: opReserveAndMap, InParam: uint64(order)}})
	if err != nil {
		if completed(err) {
			var undo []vfclient.Request
			if res[0].Status == mlx4.OK {
				undo = append(undo, free(uint32(res[0].OutParam)))
			}
			if res[1].Status == mlx4.OK {
				undo = append(undo, freeMTTReq(MTT{Base: uint64(uint32(res[1].OutParam)), Order: order}))
			}
			_, _ = d.Pipeline(ctx, undo)
			d.pool.put(iova, pages)
		}
		return nil, err
	}
	b := buffer{IOVA: iova, Pages: pages, MTT: MTT{Base: uint64(uint32(res[1].OutParam)), Order: order}}
	addrs := make([]uint64, pages)
	for i := range addrs {
		addrs[i] = iova + uint64(i)*mlx4.PageSize
	}
	var mbox [mlx4.MailboxSize]byte
	l := mlx4.EncodeWriteMTT(mbox[:], b.MTT.Base, addrs)
	reqs := append([]vfclient.Request{{Op: mlx4.WRITE_MTT, InMod: uint32(pages), In: mbox[:l]}}, then(uint32(res[0].OutParam), b)...)
	return d.Pipeline(ctx, reqs)
}

// QueryCQ returns the CQ's context (QUERY_CQ).
func (d *Driver) QueryCQ(ctx context.Context, cq *CQ) (mlx4.CQContext, error) {
	res, err := d.must(ctx, &vfclient.Request{Op: mlx4.QUERY_CQ, InMod: cq.CQN})
	if err != nil {
		return mlx4.CQContext{}, err
	}
	return mlx4.DecodeCQContext(res.Out)
}

// DestroyCQ runs HW2SW_CQ, FREE_RES of the CQ and of its MTT, pipelined.
func (d *Driver) DestroyCQ(ctx context.Context, cq *CQ) error {
	reqs := make([]vfclient.Request, 0, 3)
	if cq.hw {
		reqs = append(reqs, vfclient.Request{Op: mlx4.HW2SW_CQ, InMod: cq.CQN})
	}
	reqs = append(reqs, freeReq(ResCQ, opReserveAndMap, uint64(cq.CQN)), freeMTTReq(cq.MTT))
	res, err := d.Pipeline(ctx, reqs)
	if cq.hw && completed(err) && res[0].Status == mlx4.OK {
		cq.hw = false
	}
	if err == nil && cq.Pages > 0 {
		d.pool.put(cq.IOVA, cq.Pages)
	}
	return err
}

func freeReq(ty uint32, op uint8, in uint64) vfclient.Request {
	return vfclient.Request{Op: mlx4.FREE_RES, InMod: ty, OpMod: op, InParam: in}
}

func freeMTTReq(m MTT) vfclient.Request {
	return freeReq(ResMTT, opReserveAndMap, uint64(m.Order)<<32|m.Base&0xffffffff)
}

// SRQ is a shared receive queue.
type SRQ struct {
	SRQN    uint32
	LogSize int
	buffer
	hw bool
}

// CreateSRQ allocates an SRQ of 2^logSize 64-byte WQEs: ALLOC_RES of the
// SRQ and of its MTT, then WRITE_MTT and SW2HW_SRQ, each pair pipelined.
func (d *Driver) CreateSRQ(ctx context.Context, logSize int, pd uint32) (*SRQ, error) {
	if logSize < 0 || logSize > 15 {
		return nil, fmt.Errorf("%w: SRQ of 2^%d entries", ErrArgument, logSize)
	}
	const logStride = 2 // 64-byte WQEs
	var in [mlx4.SRQContextSize]byte
	s := &SRQ{LogSize: logSize}
	res, err := d.create(ctx, max(1, (1<<(logSize+logStride+4))/mlx4.PageSize),
		vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResSRQ, OpMod: opReserveAndMap},
		func(n uint32) vfclient.Request { return freeReq(ResSRQ, opReserveAndMap, uint64(n)) },
		func(n uint32, b buffer) []vfclient.Request {
			s.SRQN, s.buffer = n, b
			mlx4.SRQContext{SRQN: n, LogSize: logSize, LogStride: logStride, MTTBase: b.MTT.Base, PD: pd}.Encode(in[:])
			return []vfclient.Request{{Op: mlx4.SW2HW_SRQ, InMod: n, In: in[:]}}
		})
	if res == nil {
		return nil, err
	}
	s.hw = completed(err) && res[1].Status == mlx4.OK
	if err != nil {
		_ = d.DestroySRQ(ctx, s)
		return nil, err
	}
	return s, nil
}

// DestroySRQ runs HW2SW_SRQ, FREE_RES of the SRQ and of its MTT,
// pipelined.
func (d *Driver) DestroySRQ(ctx context.Context, s *SRQ) error {
	reqs := make([]vfclient.Request, 0, 3)
	if s.hw {
		reqs = append(reqs, vfclient.Request{Op: mlx4.HW2SW_SRQ, InMod: s.SRQN})
	}
	reqs = append(reqs, freeReq(ResSRQ, opReserveAndMap, uint64(s.SRQN)), freeMTTReq(s.MTT))
	res, err := d.Pipeline(ctx, reqs)
	if s.hw && completed(err) && res[0].Status == mlx4.OK {
		s.hw = false
	}
	if err == nil && s.Pages > 0 {
		d.pool.put(s.IOVA, s.Pages)
	}
	return err
}

// MR is a memory region: an MPT over pages of the VF's memory.
type MR struct {
	Index uint32
	Key   uint32
	buffer
	mapped, hw bool
}

// CreateMR registers pages of the VF's memory: ALLOC_RES MPT RESERVE and of
// an MTT, then WRITE_MTT, ALLOC_RES MPT MAP_ICM and SW2HW_MPT, each step
// pipelined.
func (d *Driver) CreateMR(ctx context.Context, pages int, access, pd uint32) (*MR, error) {
	if pages <= 0 || pages > mlx4.MaxWriteMTTEntries {
		return nil, fmt.Errorf("%w: MR of %d pages", ErrArgument, pages)
	}
	var in [mlx4.MPTEntrySize]byte
	mr := &MR{}
	res, err := d.create(ctx, pages,
		vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResMPT, OpMod: opReserve},
		func(n uint32) vfclient.Request { return freeReq(ResMPT, opReserve, uint64(n)) },
		func(n uint32, b buffer) []vfclient.Request {
			mr.Index, mr.Key, mr.buffer = n, mlx4.KeyOf(n), b
			// mtt_sz 0, as mlx4_mr_enable leaves it (it writes mtt_sz
			// only for fast-register regions): the region's entries are
			// its pages from mtt_addr.
			mlx4.MPT{Access: access, Key: mr.Key, PD: pd, Start: b.IOVA, Length: uint64(pages) * mlx4.PageSize,
				MTTBase: b.MTT.Base, EntitySize: mlx4.PageShift}.Encode(in[:])
			return []vfclient.Request{
				{Op: mlx4.ALLOC_RES, InMod: ResMPT, OpMod: opMapICM, InParam: uint64(n)},
				{Op: mlx4.SW2HW_MPT, InMod: n, In: in[:]},
			}
		})
	if res == nil {
		return nil, err
	}
	if completed(err) {
		mr.mapped = res[1].Status == mlx4.OK
		mr.hw = res[2].Status == mlx4.OK
	}
	if err != nil {
		_ = d.DestroyMR(ctx, mr)
		return nil, err
	}
	return mr, nil
}

// QueryMR returns the MPT entry (QUERY_MPT).
func (d *Driver) QueryMR(ctx context.Context, mr *MR) (mlx4.MPT, error) {
	res, err := d.must(ctx, &vfclient.Request{Op: mlx4.QUERY_MPT, InMod: mr.Index})
	if err != nil {
		return mlx4.MPT{}, err
	}
	return mlx4.DecodeMPT(res.Out)
}

// DestroyMR runs HW2SW_MPT, FREE_RES MPT MAP_ICM and RESERVE and FREE_RES
// of the MTT, pipelined, and returns the pages.
func (d *Driver) DestroyMR(ctx context.Context, mr *MR) error {
	reqs := make([]vfclient.Request, 0, 4)
	if mr.hw {
		reqs = append(reqs, vfclient.Request{Op: mlx4.HW2SW_MPT, InMod: mr.Index})
	}
	if mr.mapped {
		reqs = append(reqs, freeReq(ResMPT, opMapICM, uint64(mr.Index)))
	}
	reqs = append(reqs, freeReq(ResMPT, opReserve, uint64(mr.Index)), freeMTTReq(mr.MTT))
	res, err := d.Pipeline(ctx, reqs)
	if completed(err) {
		i := 0
		if mr.hw {
			mr.hw = res[i].Status != mlx4.OK
			i++
		}
		if mr.mapped {
			mr.mapped = res[i].Status != mlx4.OK
		}
	}
	if err == nil && mr.Pages > 0 {
		d.pool.put(mr.IOVA, mr.Pages)
	}
	return err
}

// QPConfig describes a QP to create.
type QPConfig struct {
	ST          uint8  // service type (mlx4.QP_ST_RC, mlx4.QP_ST_UC, mlx4.QP_ST_UD)
	SendCQ      uint32 // CQNs
	RecvCQ      uint32
	UseSRQ      bool
	SRQN        uint32
	Port        int   // the VF's port (default 1)
	PKeyIndex   uint8 // in the VF's virtual P_Key table
	LogSQSize   uint8 // default 4 (16 WQEs)
	LogRQSize   uint8 // default 4
	PD          uint32
	QKey        uint32
	RemoteQPN   uint32
	DestLID     uint16
	NextSendPSN uint32
	SMACIndex   uint8  // Ethernet: a MAC index the VF registered (ALLOC_RES MAC)
	RecvPSN     uint32 // the receive PSN (rnr_nextrecvpsn: the remote's send PSN)
	// Access is the responder's remote access enables (params2:
	// mlx4.QP_BIT_RRE, _RWE, _RAE; to_mlx4_access_flags of
	// qp_access_flags), Retry and RNRRetry the requester's retry counts
	// (params1; 7 is infinite RNR retry). A verbs QP's zero Retry and
	// RNRRetry are 7 and its min_rnr_timer 12, with the ACK timeout 14
	// of every QP, as ibv_rc_pingpong sets them.
	Access          uint32
	Retry, RNRRetry uint8
}

// QP is a queue pair; State is the driver's view of its firmware state.
type QP struct {
	QPN   uint32
	Cfg   QPConfig
	State mlx4.QPState
	buffer
	counter uint8     // pri_path.counter_index the driver writes: the sink
	uar     uint32    // usr_page: the UAR of the send doorbell (Options.UAR)
	rqdb    uint64    // db_rec_addr: the RQ doorbell record (none on an SRQ)
	wq      *qpQueues // the work queues of a verbs QP (CreateVerbsQP), nil for others
}

// CreateQP reserves a QPN (ALLOC_RES QP RESERVE) and an MTT for its
// queues, then maps its ICM (ALLOC_RES QP MAP_ICM) and writes the pages
// into the MTT (WRITE_MTT), each step pipelined. The QP stays in RST until
// Modify.
func (d *Driver) CreateQP(ctx context.Context, cfg QPConfig) (*QP, error) {
	qp, err := d.newQP(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// an RQ doorbell record, as mlx4_ib gives every QP with a receive
	// queue (the device reads it when it flushes the queue)
	if !cfg.UseSRQ {
		if qp.rqdb, err = d.allocDB(dbRQ); err != nil {
			return nil, err
		}
	}
	mapped := false
	res, err := d.create(ctx, qp.context().MTTPages(),
		vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResQP, OpMod: opReserve, InParam: 1<<32 | 1}, // align 1, count 1
		func(n uint32) vfclient.Request { return freeReq(ResQP, opReserve, 1<<32|uint64(n)) },
		func(n uint32, b buffer) []vfclient.Request {
			qp.QPN, qp.buffer = n, b
			return []vfclient.Request{{Op: mlx4.ALLOC_RES, InMod: ResQP, OpMod: opMapICM, InParam: uint64(n)}}
		})
	if res == nil {
		d.freeDB(dbRQ, qp.rqdb)
		return nil, err
	}
	mapped = completed(err) && res[1].Status == mlx4.OK
	if err != nil {
		undo := []vfclient.Request{freeReq(ResQP, opReserve, 1<<32|uint64(qp.QPN)), freeMTTReq(qp.MTT)}
		if mapped {
			undo = append([]vfclient.Request{freeReq(ResQP, opMapICM, uint64(qp.QPN))}, undo...)
		}
		if _, uerr := d.Pipeline(ctx, undo); uerr == nil {
			d.pool.put(qp.IOVA, qp.Pages)
		}
		d.freeDB(dbRQ, qp.rqdb)
		return nil, err
	}
	return qp, nil
}

// newQP is the driver's view of a QP with cfg's defaults filled in (port
// 1, 16 send and receive WQEs) and the sink as its counter.
func (d *Driver) newQP(ctx context.Context, cfg QPConfig) (*QP, error) {
	if cfg.Port == 0 {
		cfg.Port = 1
	}
	if cfg.LogSQSize == 0 {
		cfg.LogSQSize = 4
	}
	if cfg.LogRQSize == 0 {
		cfg.LogRQSize = 4
	}
	sink, err := d.sinkCounter(ctx)
	if err != nil {
		return nil, err
	}
	return &QP{Cfg: cfg, counter: sink, uar: d.uar()}, nil
}

// context is the QP context the driver writes in every modify mailbox.
func (qp *QP) context() mlx4.QPContext {
	c := qp.Cfg
	ctx := mlx4.QPContext{
		ST: c.ST, PD: c.PD, MTU: 5, MsgMax: 31,
		LogRQSize: c.LogRQSize, LogRQStride: 2, LogSQSize: c.LogSQSize, LogSQStride: 2,
		NoRQ: c.UseSRQ, LocalQPN: qp.QPN, RemoteQPN: c.RemoteQPN,
		Pri:         mlx4.QPPath{Port: c.Port, PKeyIndex: c.PKeyIndex, CounterIndex: qp.counter, RLID: c.DestLID, AckTimeout: 14 << mlx4.PathAckTOShift, SMACIndex: c.SMACIndex},
		NextSendPSN: c.NextSendPSN, CQNSend: c.SendCQ, CQNRecv: c.RecvCQ,
		QKey: c.QKey, UseSRQ: c.UseSRQ, SRQN: c.SRQN, MTTBase: qp.MTT.Base, RNRNextRecvPSN: c.RecvPSN, UsrPage: qp.uar,
		DBRecAddr: qp.rqdb,
	}
	if q := qp.wq; q != nil {
		// ibv_rc_pingpong's min_rnr_timer 12 (0.64 ms: the RNR timer
		// an RNR NAK of this responder carries), set at INIT2RTR
		ctx.MinRNRTimer = 12
		// the queues as CreateVerbsQP laid them out (log_page_size 0 and
		// page offset 0: 4 KiB pages, the buffer page-aligned)
		ctx.LogSQStride = q.v.sq.shift - 4
		if !c.UseSRQ {
			ctx.LogRQStride = q.v.rq.shift - 4
		}
	}
	return ctx
}

// mailbox writes the modify-QP mailbox: optpar and the driver's context,
// with the retry counts (params1) and the remote access enables (params2)
// the context codec does not carry.
func (qp *QP) mailbox(optpar uint32, b []byte) {
	mlx4.QPMailbox{OptPar: optpar, Ctx: qp.context()}.Encode(b)
	c := b[mlx4.QPMailboxContext:]
	retry, rnr := qp.Cfg.Retry, qp.Cfg.RNRRetry
	if qp.wq != nil {
		if retry == 0 {
			retry = 7
		}
		if rnr == 0 {
			rnr = 7
		}
	}
	p1 := binary.BigEndian.Uint32(c[mlx4.QPCParams1:])
	p1 |= uint32(retry&7)<<mlx4.QPCParams1RetryShift | uint32(rnr&7)<<mlx4.QPCParams1RNRRetryShift
	binary.BigEndian.PutUint32(c[mlx4.QPCParams1:], p1)
	p2 := binary.BigEndian.Uint32(c[mlx4.QPCParams2:])
	p2 |= qp.Cfg.Access & (mlx4.QP_BIT_RRE | mlx4.QP_BIT_RWE | mlx4.QP_BIT_RAE)
	binary.BigEndian.PutUint32(c[mlx4.QPCParams2:], p2)
}

// modifyOptPar is the optpar the driver sets in a transition's mailbox,
// by command (none in the others'), as mlx4_ib sets it for the attributes
// it passes there.
var modifyOptPar = map[mlx4.Opcode]uint32{
	mlx4.INIT2INIT_QP: mlx4.QP_OPTPAR_PKEY_INDEX,
	mlx4.INIT2RTR_QP:  mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH | mlx4.QP_OPTPAR_PKEY_INDEX | mlx4.QP_OPTPAR_RNR_TIMEOUT,
	mlx4.RTR2RTS_QP:   mlx4.QP_OPTPAR_ACK_TIMEOUT | mlx4.QP_OPTPAR_RETRY_COUNT | mlx4.QP_OPTPAR_RNR_RETRY,
	mlx4.RTS2RTS_QP:   mlx4.QP_OPTPAR_RNR_TIMEOUT,
	mlx4.SQD2SQD_QP:   mlx4.QP_OPTPAR_RNR_TIMEOUT,
}

// transition is the command that moves a QP from one state to another
// (qp.c's op[][]: mlx4.QPModifyOp), with whether it carries a mailbox
// (its cmd_info[] row) and the driver's optpar.
func transition(from, to mlx4.QPState) (op mlx4.Opcode, inbox bool, optpar uint32, ok bool) {
	if op, ok = mlx4.QPModifyOp(from, to); !ok {
		return 0, false, 0, false
	}
	in, _ := mlx4.CmdInfo(op)
	return op, in.HasInbox, modifyOptPar[op], true
}

// Modify moves qp to state to with the transition command mlx4 uses
// (RST2INIT, INIT2RTR, RTR2RTS, RTS2RTS, RTS2SQD, SQD2SQD, SQD2RTS,
// SQERR2RTS, 2ERR, 2RST); from RST to RST it does nothing.
func (d *Driver) Modify(ctx context.Context, qp *QP, to mlx4.QPState) error {
	if qp.State == mlx4.QP_STATE_RST && to == mlx4.QP_STATE_RST {
		return nil
	}
	op, inbox, optpar, ok := transition(qp.State, to)
	if !ok {
		return fmt.Errorf("%w: no QP transition %v→%v", ErrArgument, qp.State, to)
	}
	r := vfclient.Request{Op: op, InMod: qp.QPN}
	if inbox {
		var in [mlx4.QPMailboxSize]byte
		qp.mailbox(optpar, in[:])
		r.In = in[:]
	}
	d.before(qp, to)
	if _, err := d.must(ctx, &r); err != nil {
		return err
	}
	qp.State = to
	qp.after()
	return nil
}

// before and after are what libmlx4's mlx4_modify_qp does around a
// transition of a verbs QP: the send queue's ownership and stamps before
// RESET→INIT, the indices and the RQ record after a transition to RESET.
func (d *Driver) before(qp *QP, to mlx4.QPState) {
	if qp.State == mlx4.QP_STATE_RST && to == mlx4.QP_STATE_INIT {
		d.initSQ(qp)
	}
}

// initSQ makes every send WQE of qp hardware-owned (and stamped) for the
// first pass.
func (d *Driver) initSQ(qp *QP) {
	if qp.wq != nil {
		qp.wq.v.initOwnership()
		return
	}
	// a QP the driver posts nothing to: its send queue (first in the
	// buffer, 64-byte WQEs) hardware-owned all the same, as mlx4_ib
	// leaves a kernel QP's, so that the device finds nothing to run
	if qp.Pages == 0 {
		return
	}
	const stride = 1 << mlx4.SendWQEMinShift
	for i := uint64(0); i < 1<<qp.Cfg.LogSQSize && (i+1)*stride <= uint64(qp.Pages)*mlx4.PageSize; i++ {
		w := d.mem[qp.IOVA+i*stride : qp.IOVA+(i+1)*stride]
		w[mlx4.CtrlFenceSize] = stride / mlx4.WQESegUnit
		dmaPut32(w[mlx4.CtrlOwnerOpcode:], mlx4.WQEOwner)
	}
}

func (qp *QP) after() {
	if qp.wq != nil && qp.State == mlx4.QP_STATE_RST {
		qp.wq.v.resetIndices()
	}
}

// Transition posts op on qp as given (for walking illegal transitions by
// hand): the mailbox, if op has one, is the driver's context with optpar.
// The driver's view of the state is not changed.
func (d *Driver) Transition(ctx context.Context, qp *QP, op mlx4.Opcode, optpar uint32) (mlx4.Status, error) {
	r := vfclient.Request{Op: op, InMod: qp.QPN}
	if info, _ := mlx4.CmdInfo(op); info.HasInbox {
		var in [mlx4.QPMailboxSize]byte
		qp.mailbox(optpar, in[:])
		r.In = in[:]
	}
	res, err := d.Do(ctx, &r)
	return res.Status, err
}

// QueryQP returns the QP's context as the PF keeps it (QUERY_QP) and
// updates qp.State from it.
func (d *Driver) QueryQP(ctx context.Context, qp *QP) (mlx4.QPContext, error) {
	res, err := d.must(ctx, &vfclient.Request{Op: mlx4.QUERY_QP, InMod: qp.QPN})
	if err != nil {
		return mlx4.QPContext{}, err
	}
	if len(res.Out) < mlx4.QPMailboxSize {
		return mlx4.QPContext{}, fmt.Errorf("QUERY_QP: %w", mlx4.ErrShort)
	}
	c, err := mlx4.DecodeQPContext(res.Out[mlx4.QPMailboxContext:])
	if err == nil {
		qp.State = c.State
	}
	return c, err
}

// DestroyQP returns the QP to RST if needed (2RST), unmaps its ICM, frees
// the QPN and the MTT, pipelined.
func (d *Driver) DestroyQP(ctx context.Context, qp *QP) error {
	reqs := make([]vfclient.Request, 0, 4)
	if qp.State != mlx4.QP_STATE_RST {
		reqs = append(reqs, vfclient.Request{Op: mlx4.TWO_RST_QP, InMod: qp.QPN})
	}
	reqs = append(reqs, freeReq(ResQP, opMapICM, uint64(qp.QPN)), freeReq(ResQP, opReserve, 1<<32|uint64(qp.QPN)), freeMTTReq(qp.MTT))
	res, err := d.Pipeline(ctx, reqs)
	if qp.State != mlx4.QP_STATE_RST && completed(err) && res[0].Status == mlx4.OK {
		qp.State = mlx4.QP_STATE_RST
	}
	if err == nil && qp.Pages > 0 {
		d.pool.put(qp.IOVA, qp.Pages)
	}
	if err == nil && qp.rqdb != 0 && qp.wq == nil {
		d.freeDB(dbRQ, qp.rqdb)
		qp.rqdb = 0
	}
	return err
}

// ModifyPath walks qp through the states in order, the transitions
// pipelined (none needs another's output). qp.State follows the
// transitions that succeeded.
func (d *Driver) ModifyPath(ctx context.Context, qp *QP, states ...mlx4.QPState) error {
	reqs := make([]vfclient.Request, 0, len(states))
	var mboxes [][mlx4.QPMailboxSize]byte
	from := qp.State
	for _, to := range states {
		if from == mlx4.QP_STATE_RST && to == mlx4.QP_STATE_RST {
			continue
		}
		op, inbox, optpar, ok := transition(from, to)
		if !ok {
			return fmt.Errorf("%w: no QP transition %v→%v", ErrArgument, from, to)
		}
		r := vfclient.Request{Op: op, InMod: qp.QPN}
		if inbox {
			if mboxes == nil {
				mboxes = make([][mlx4.QPMailboxSize]byte, len(states))
			}
			mb := &mboxes[len(reqs)]
			qp.mailbox(optpar, mb[:])
			r.In = mb[:]
		}
		reqs = append(reqs, r)
		if from == mlx4.QP_STATE_RST && to == mlx4.QP_STATE_INIT {
			d.initSQ(qp)
		}
		from = to
	}
	res, err := d.Pipeline(ctx, reqs)
	if !completed(err) {
		return err // the QP's state is unknown: QueryQP tells
	}
	from, j := qp.State, 0
	for _, to := range states {
		if from == mlx4.QP_STATE_RST && to == mlx4.QP_STATE_RST {
			continue
		}
		if res[j].Status != mlx4.OK {
			break
		}
		qp.State, from = to, to
		qp.after()
		j++
	}
	return err
}

// completed reports whether a Pipeline that returned err completed every
// request (nil, or only non-OK statuses).
func completed(err error) bool { return err == nil || errors.Is(err, ErrCommand) }
