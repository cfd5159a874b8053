package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// linuxEQ consumes a VF's EQ ring as Linux's mlx4 eq.c does: next_eqe_sw
// takes the EQE at cons_index & (nent-1) when its owner bit equals
// !!(cons_index & nent), and mlx4_eq_int advances cons_index past it; the
// consumer index is reported through the EQ doorbell (eq_set_ci).
type linuxEQ struct {
	v          *vf
	eqn        int
	page       uint64
	nent, cons uint32
}

func (q *linuxEQ) next() ([mlx4.EQESize]byte, bool) {
	e := q.v.readEQE(q.page, int(q.cons&(q.nent-1)))
	if (e[mlx4.EQEOwner]&mlx4.EQEOwnerHW != 0) != (q.cons&q.nent != 0) {
		return e, false
	}
	q.cons = (q.cons + 1) & mlx4.EQIndexMask
	return e, true
}

func (q *linuxEQ) setCI() {
	if err := q.v.r.h.EQDoorbell(q.v.n, q.eqn, q.cons|mlx4.EQ_DOORBELL_ARM); err != nil {
		q.v.r.t.Fatal(err)
	}
}

// newLinuxEQ creates EQ eqn of 2^logSize entries on a zeroed page, maps
// command completions to it and returns its consumer.
func newLinuxEQ(v *vf, eqn, logSize int) *linuxEQ {
	v.r.t.Helper()
	page := v.newPage()
	base := v.mtt(0, page)
	v.must(v.run(v.cmd(mlx4.SW2HW_EQ, 0, uint32(eqn), 0, eqContext(logSize, base), false)), "SW2HW_EQ")
	v.must(v.run(v.cmd(mlx4.MAP_EQ, 1<<mlx4.EventCmd, uint32(eqn), 0, nil, false)), "MAP_EQ")
	return &linuxEQ{v: v, eqn: eqn, page: page, nent: 1 << logSize}
}

// TestSW2HWEQHandsOverHWOwned: a zeroed ring (Linux's mlx4_create_eq) reads
// as all hardware-owned after SW2HW_EQ: a Linux consumer finds no EQE in
// any slot, and only the owner bytes were written.
func TestSW2HWEQHandsOverHWOwned(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(0)
	q := newLinuxEQ(v, 3, 7) // 128 entries: the whole page
	for s := range q.nent {
		q.cons = s // every slot, first pass
		if _, ok := q.next(); ok {
			t.Fatalf("slot %d of a fresh EQ reads as software-owned", s)
		}
		e := v.readEQE(q.page, int(s))
		for i, b := range e {
			if want := byte(0); i == mlx4.EQEOwner {
				want = mlx4.EQEOwnerHW
				if b != want {
					t.Fatalf("slot %d owner byte %#x, want %#x", s, b, want)
				}
			} else if b != want {
				t.Fatalf("slot %d byte %#x is %#x: SW2HW_EQ wrote more than the owner byte", s, i, b)
			}
		}
	}
}

// TestLinuxConsumerAcrossWrap: a Linux consumer sees exactly the EQEs posted,
// in order, over several passes of the ring, consuming in batches of every
// size up to the ring's and reporting its index through the doorbell.
func TestLinuxConsumerAcrossWrap(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(1)
	q := newLinuxEQ(v, 5, 3) // 8 entries
	var posted, seen uint16
	for batch := 1; posted < 8*7; batch = batch%8 + 1 {
		for range batch {
			posted++
			e := CompletionEQE(posted, mlx4.OK, 0)
			if err := r.h.PostEQE(1, mlx4.EventCmd, &e); err != nil {
				t.Fatalf("EQE %d: %v", posted, err)
			}
		}
		for {
			e, ok := q.next()
			if !ok {
				break
			}
			seen++
			if tok := binary.BigEndian.Uint16(e[mlx4.EQECmdToken:]); tok != seen || e[mlx4.EQEType] != mlx4.EventCmd {
				t.Fatalf("EQE %d: type %#x token %d", seen, e[mlx4.EQEType], tok)
			}
		}
		if seen != posted {
			t.Fatalf("posted %d, consumer saw %d", posted, seen)
		}
		q.setCI()
	}
	if r.h.Stats(1).Overruns.Load() != 0 {
		t.Fatal("overrun with the consumer keeping up")
	}
}

// FuzzEQRing drives one EQ with an arbitrary schedule of posts and
// consumption (each byte: low nibble EQEs to post, high nibble EQEs to
// consume, bit 3 of the high nibble rings the doorbell) from a zeroed ring
// of any size: the Linux consumer sees exactly the EQEs PostEQE accepted,
// in order, and never one it did not post; posts beyond the room the
// doorbell reported are overruns, not overwrites.
func FuzzEQRing(f *testing.F) {
	f.Add(uint8(3), []byte{0x08, 0x88, 0x0f, 0xf8, 0x01, 0x18})
	f.Add(uint8(0), []byte{0x0f, 0x0f, 0x88})
	f.Add(uint8(7), []byte{0x0f, 0xff, 0x0f, 0xff, 0x0f, 0xff})
	f.Fuzz(func(t *testing.T, logSize uint8, sched []byte) {
		r := newRig(t, 1, nil)
		v := r.vf(0)
		q := newLinuxEQ(v, 2, int(logSize%8))
		var posted, seen uint16
		for _, b := range sched {
			for range b & 0xf {
				e := CompletionEQE(posted+1, mlx4.OK, 0)
				switch err := r.h.PostEQE(0, mlx4.EventCmd, &e); err {
				case nil:
					posted++
				case ErrOverrun:
					if d := uint32(posted - seen); d < q.nent && r.h.fw.eqs[restrack.EQID(0, 2)].Cons == q.cons {
						t.Fatalf("overrun with %d of %d entries unread", d, q.nent)
					}
				default:
					t.Fatal(err)
				}
			}
			for range b >> 4 & 7 {
				e, ok := q.next()
				if !ok {
					break
				}
				seen++
				if tok := binary.BigEndian.Uint16(e[mlx4.EQECmdToken:]); tok != seen {
					t.Fatalf("EQE %d carries token %d", seen, tok)
				}
			}
			if b&0x80 != 0 {
				q.setCI()
			}
		}
		for {
			if _, ok := q.next(); !ok {
				break
			}
			seen++
		}
		if seen != posted {
			t.Fatalf("posted %d, consumer saw %d", posted, seen)
		}
	})
}
