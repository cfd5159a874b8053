package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Ring sizes, in records of SlotSize bytes.
const (
	SlotSize       = 64
	MinRecords     = 4
	MaxRecords     = 1 << 22 // 256 MiB
	DefaultRecords = 1 << 14 // 1 MiB, a core's L2; 10 ms of commands at 1.6 M/s
)

// ErrConfig is returned, wrapped, by New for an unusable Config.
var ErrConfig = errors.New("trace: bad ring configuration")

// Config configures a Ring.
type Config struct {
	// Records is the ring's capacity, a power of two in
	// [MinRecords, MaxRecords]; 0 means DefaultRecords.
	Records int
	// Ticks is the clock records are stamped with (the poller's cycle
	// counter, tick.Now) and TicksPerNS its rate (tick.PerNS). With
	// Ticks nil, records are stamped in nanoseconds and TicksPerNS must be
	// 0 or 1.
	Ticks      func() uint64
	TicksPerNS float64
	// Now is the wall clock read once, with Ticks, as the anchor that
	// converts ticks to time; nil means time.Now.
	Now func() time.Time
}

// slot is one record in the ring: the eight words of Words, one cache line,
// so that the writer dirties one line per record.
type slot [SlotSize / 8]uint64

// Ring is the trace: a fixed array of records that one writer (the poller)
// fills in order, overwriting the oldest, whether or not anyone reads it (a
// flight recorder: a reader that attaches later finds the last Records()-1
// records), and that any number of Readers copy from. Its writer methods
// (Comm, Post, EQE, IRQ, Reset, FLR, Restart) must be called from one
// goroutine at a time; Enabled, NewReader, Written and Clock may be called
// from any.
type Ring struct {
	slots []slot
	mask  uint64
	clock Clock
	_     [64]byte
	// cursor counts the records written: records [0, cursor) are complete.
	// Only the writer stores it (publish, after the record's words).
	cursor uint64
	_      [56]byte
}

// New returns an empty ring.
func New(c Config) (*Ring, error) {
	n := c.Records
	if n == 0 {
		n = DefaultRecords
	}
	if n < MinRecords || n > MaxRecords || n&(n-1) != 0 {
		return nil, fmt.Errorf("%w: %d records (want a power of two in [%d, %d])", ErrConfig, n, MinRecords, MaxRecords)
	}
	ticks, perNS := c.Ticks, c.TicksPerNS
	if ticks == nil {
		if perNS != 0 && perNS != 1 {
			return nil, fmt.Errorf("%w: TicksPerNS %v without a Ticks clock", ErrConfig, perNS)
		}
		base := time.Now()
		ticks, perNS = func() uint64 { return uint64(time.Since(base)) }, 1
	}
	if !(perNS > 0) || math.IsInf(perNS, 0) {
		return nil, fmt.Errorf("%w: TicksPerNS %v", ErrConfig, perNS)
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	r := &Ring{slots: make([]slot, n), mask: uint64(n - 1)}
	r.clock = Clock{Wall: now(), Ticks: ticks(), PerNS: perNS}
	return r, nil
}

// Records is the ring's capacity.
func (r *Ring) Records() int { return len(r.slots) }

// Clock is the conversion from the ring's ticks to wall time.
func (r *Ring) Clock() Clock { return r.clock }

// Written is the number of records written since New.
func (r *Ring) Written() uint64 { return loadCursor(&r.cursor) }

// Enabled reports whether there is a ring to write (r is not nil): a PF
// made without one (master.Options.Trace nil) asks before each record. A
// ring records always, read or not.
func (r *Ring) Enabled() bool { return r != nil }

// put writes the next record and publishes it. The cursor is read back with
// loadCursor, not a plain load: were two puts inlined into one block, the
// compiler could forward the first publish to the second's plain load and
// drop the first publish as a dead store, and a reader could then see the
// old cursor while the second record overwrote a slot.
func (r *Ring) put(w0, w1, w2, w3, w4, w5, w6, w7 uint64) {
	n := loadCursor(&r.cursor)
	storeSlot(&r.slots[n&r.mask], w0, w1, w2, w3, w4, w5, w6, w7)
	publish(&r.cursor, n+1)
}

func toggleFlag(toggle uint32) uint8 {
	var f uint8
	if toggle != 0 {
		f = FlagToggle
	}
	return f
}

// Comm records comm command cmd (a mlx4.CommCmd) of VF vf at tick t, with
// its toggle (any non-zero value is 1: the slave_write word's bit 31 will
// do) and its 16-bit parameter. VHCR_POST is recorded by Post.
func (r *Ring) Comm(t uint64, vf int, cmd uint8, toggle uint32, param uint16) {
	r.put(t, 0, 0, 0, hdr(KindComm, cmd, uint16(vf), 0, 0), misc(uint32(param), 0, 0, toggleFlag(toggle), 0), 0, 0)
}

// Post records a timed VHCR_POST: the command as decoded (c, with the
// refusal reason its executor set, and the head of its shadow inbox if it
// has one: Record.Inbox), the status returned, the toggle, and the ticks at
// detection (t0) and completion (t1).
func (r *Ring) Post(t0, t1 uint64, toggle uint32, c *hca.Cmd, status mlx4.Status) {
	r.post(t0, t1-t0, toggleFlag(toggle)|FlagTimed, c, status)
}

// PostUntimed records a VHCR_POST whose latency was not measured, stamped
// t: typically the poller's latest clock reading, so that tracing the
// command adds no read of the clock (see the package documentation).
func (r *Ring) PostUntimed(t uint64, toggle uint32, c *hca.Cmd, status mlx4.Status) {
	r.post(t, 0, toggleFlag(toggle), c, status)
}

func (r *Ring) post(t, latency uint64, f uint8, c *hca.Cmd, status mlx4.Status) {
	if c.EBit {
		f |= FlagE
	}
	var in0, in1 uint64
	if in := c.Inbox; in != nil {
		in0, in1 = binary.BigEndian.Uint64(in[0:8]), binary.BigEndian.Uint64(in[16:24])
	}
	r.put(t, c.InParam, c.OutParam, latency,
		hdr(KindPost, CommVHCRPost, uint16(c.VF), uint16(c.Op)&mlx4.OpcodeMask|uint16(c.OpMod&0xf)<<12, c.Token),
		misc(c.InMod, status, c.Reason, f, 0), in0, in1)
}

// EQE records an EQE of type typ (mlx4.Event*) posted to EQ eq of VF vf;
// token is the command token of a completion EQE, else 0.
func (r *Ring) EQE(t uint64, vf int, typ uint8, eq int, token uint16) {
	r.put(t, 0, 0, 0, hdr(KindEQE, 0, uint16(vf), 0, token), misc(uint32(eq), 0, 0, 0, typ), 0, 0)
}

// IRQ records an interrupt raised on MSI-X vector vector of VF vf.
func (r *Ring) IRQ(t uint64, vf, vector int) {
	r.put(t, 0, 0, 0, hdr(KindIRQ, 0, uint16(vf), 0, 0), misc(uint32(vector), 0, 0, 0, 0), 0, 0)
}

// Reset records that the PF reset VF vf's channel state for reason (a
// master.ResetReason).
func (r *Ring) Reset(t uint64, vf int, reason uint8) {
	r.put(t, 0, 0, 0, hdr(KindReset, 0, uint16(vf), 0, 0), misc(0, 0, 0, 0, reason), 0, 0)
}

// FLR records the beginning (begin) or the end of a function-level reset of
// VF vf.
func (r *Ring) FLR(t uint64, vf int, begin bool) {
	var a uint8
	if begin {
		a = 1
	}
	r.put(t, 0, 0, 0, hdr(KindFLR, CommFLR, uint16(vf), 0, 0), misc(0, 0, 0, 0, a), 0, 0)
}

// Restart records what a starting PF did with VF vf's persisted channel
// state: adopted it, or started the VF afresh.
func (r *Ring) Restart(t uint64, vf int, adopted bool) {
	var a uint8
	if adopted {
		a = 1
	}
	r.put(t, 0, 0, 0, hdr(KindRestart, 0, uint16(vf), 0, 0), misc(0, 0, 0, 0, a), 0, 0)
}

// Fault records a fault the PF injected into VF vf: its kind (a
// faultinj.Kind), the rule that fired, the point (a faultinj.Point) and,
// at a VHCR_POST, the opcode, at a comm command, the command, or at a
// completion (PointCQE), the work request's key (faultinj.CQEKey) in op.
func (r *Ring) Fault(t uint64, vf int, kind uint8, rule uint32, point uint8, op mlx4.Opcode, comm uint8) {
	r.put(t, uint64(point), 0, 0, hdr(KindFault, comm, uint16(vf), uint16(op)&mlx4.OpcodeMask, 0), misc(rule, 0, 0, 0, kind), 0, 0)
}

// afterCopy, if set (by tests), runs between a Read's copy and its check.
var afterCopy func()

// Reader copies records out of a Ring. It never blocks or slows the writer:
// a reader that falls more than the ring's capacity behind loses the
// records overwritten meanwhile, and Read says how many. A Reader is for
// one goroutine; any number of Readers may read one Ring.
type Reader struct {
	r    *Ring
	next uint64
	lost uint64
}

// NewReader returns a reader of the records written from now on.
func (r *Ring) NewReader() *Reader { return &Reader{r: r, next: loadCursor(&r.cursor)} }

// NewReaderFromStart returns a reader of every record since New; those
// already overwritten are reported lost by its first Read.
func (r *Ring) NewReaderFromStart() *Reader { return &Reader{r: r} }

// Next is the sequence number of the next record Read returns.
func (rd *Reader) Next() uint64 { return rd.next }

// Lost is the number of records this reader has lost so far.
func (rd *Reader) Lost() uint64 { return rd.lost }

// Ring is the ring rd reads.
func (rd *Reader) Ring() *Ring { return rd.r }

// Read copies the oldest unread records, up to len(dst), into dst in
// order. It returns how many it copied and how many records were lost
// (overwritten before they could be copied) since the previous Read; the
// records copied follow the lost ones. n is 0 when the reader is caught up,
// or when all it copied was overwritten meanwhile (lost is then non-zero).
//
// A record s is intact if the writer had not begun record s+capacity, which
// overwrites its slot, when the copy ended: the writer publishes the cursor
// after each record's words, so Read loads the cursor after copying and
// keeps only the records with s+capacity > cursor.
func (rd *Reader) Read(dst []Record) (n int, lost uint64) {
	r := rd.r
	size := uint64(len(r.slots))
	c := loadCursor(&r.cursor)
	if c >= size && rd.next < c-size+1 {
		lost = c - size + 1 - rd.next
		rd.next += lost
	}
	first := rd.next
	var w Words
	for n < len(dst) && rd.next < c {
		loadSlot(&r.slots[rd.next&r.mask], &w)
		dst[n] = Unpack(&w)
		dst[n].Seq = rd.next
		n++
		rd.next++
	}
	if afterCopy != nil {
		afterCopy()
	}
	if c2 := loadCursor(&r.cursor); c2 >= size && first < c2-size+1 {
		torn := min(c2-size+1-first, uint64(n))
		copy(dst, dst[torn:n])
		n -= int(torn)
		lost += torn
		if rd.next < c2-size+1 {
			// Everything copied was torn and more went since: skip
			// to the oldest intact record, as the next load would.
			lost += c2 - size + 1 - rd.next
			rd.next = c2 - size + 1
		}
	}
	rd.lost += lost
	return n, lost
}
