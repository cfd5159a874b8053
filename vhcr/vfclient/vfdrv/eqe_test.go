package vfdrv

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// fakePF writes EQEs into a ring as the PF does: the body, then the owner
// byte set on odd passes (prod & nent).
type fakePF struct {
	mem  []byte
	nent uint32
	prod uint32
}

func (f *fakePF) post(e EQE) {
	e.Owner = f.prod&f.nent != 0
	b := mlx4.EncodeEQE(e)
	off := int(f.prod&(f.nent-1)) * mlx4.EQESize
	copy(f.mem[off:off+mlx4.EQEOwner], b[:mlx4.EQEOwner])
	f.mem[off+mlx4.EQEOwner] = b[mlx4.EQEOwner]
	f.prod = (f.prod + 1) & mlx4.EQIndexMask
}

// handOver is SW2HW_EQ's: every entry hardware-owned for the first pass.
func (f *fakePF) handOver() {
	for i := mlx4.EQEOwner; i < len(f.mem); i += mlx4.EQESize {
		f.mem[i] = mlx4.EQEOwnerHW
	}
}

func TestRingOwnerBitAcrossPasses(t *testing.T) {
	mem := make([]byte, 4*mlx4.EQESize)
	for i := range mem {
		mem[i] = 0xa5 // what the memory held before
	}
	r := ring{mem: mem, nent: 4}
	r.reset()
	if _, ok := r.next(); !ok {
		t.Fatal("a zeroed ring not yet handed over reads as hardware-owned: the driver would not need the PF's SW2HW_EQ")
	}
	r.cons = 0
	pf := &fakePF{mem: mem, nent: 4}
	pf.handOver()
	if _, ok := r.next(); ok {
		t.Fatal("a fresh ring (every owner bit set by SW2HW_EQ) yielded an EQE")
	}
	token := uint16(1)
	for pass := range 3 {
		for range 4 {
			pf.post(EQE{Type: mlx4.EventCmd, Token: token, Status: byte(pass), OutParam: uint64(token) << 40})
			token++
		}
		for i := range 4 {
			e, ok := r.next()
			want := token - 4 + uint16(i)
			if !ok || e.Type != mlx4.EventCmd || e.Token != want || e.OutParam != uint64(want)<<40 || e.Status != byte(pass) {
				t.Fatalf("pass %d entry %d: %+v %v, want token %d", pass, i, e, ok, want)
			}
		}
		// The entries just consumed are stale for the next pass.
		if e, ok := r.next(); ok {
			t.Fatalf("pass %d: stale entry consumed: %+v", pass, e)
		}
	}
	if r.cons != 12 {
		t.Fatalf("consumer index %d", r.cons)
	}
}

// FuzzEQRing: a ring holding any two entries never yields more than it
// holds in one pass (the codec's own fuzz target is mlx4's FuzzDecodeEQE).
func FuzzEQRing(f *testing.F) {
	for _, e := range []EQE{
		{Type: mlx4.EventCmd, Token: 1, OutParam: 42},
		{Type: mlx4.EventCQError, Object: 7, Status: 1, Owner: true},
		{Type: mlx4.EventPortChange, Subtype: mlx4.PORT_CHANGE_SUBTYPE_DOWN, Port: 1},
	} {
		b := mlx4.EncodeEQE(e)
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < mlx4.EQESize {
			return
		}
		mem := make([]byte, 2*mlx4.EQESize)
		copy(mem, in[:mlx4.EQESize])
		copy(mem[mlx4.EQESize:], in[:mlx4.EQESize])
		r := ring{mem: mem, nent: 2}
		n := 0
		for e, ok := r.next(); ok; e, ok = r.next() {
			if !bytes.Equal(e.Raw[:], in[:mlx4.EQESize]) {
				t.Fatalf("entry %d: %x, the ring holds %x", n, e.Raw, in[:mlx4.EQESize])
			}
			if n++; n > 2 {
				t.Fatal("a two-entry ring yielded a third EQE in one pass")
			}
		}
	})
}

// Completions are matched by token in posting order: a later token
// completing first means the earlier completions were lost; a token nothing
// waits for is counted and ignored.
func TestDispatchLostAndStray(t *testing.T) {
	r := mastertest.New(t, 1)
	d, err := New(r.VF(t, 0), Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := make([]byte, 8*mlx4.EQESize)
	q := &EQ{ring: ring{mem: mem, nent: 8}}
	q.ring.reset()
	(&fakePF{mem: mem, nent: 8}).handOver()
	d.ev.eq, d.ev.on = q, true
	for i := range 3 {
		d.ev.results[i].ticket = Ticket(i)
		d.ev.inflight = append(d.ev.inflight, pending{ticket: Ticket(i), token: uint16(10 + i), op: mlx4.NOP, slot: -1})
	}
	d.ev.seq = 3
	pf := &fakePF{mem: mem, nent: 8}
	pf.post(EQE{Type: mlx4.EventCmd, Token: 99})                  // stray
	pf.post(EQE{Type: mlx4.EventCmd, Token: 11, OutParam: 7})     // 10 was lost
	pf.post(EQE{Type: mlx4.EventPortChange, Subtype: 4, Port: 1}) // async
	pf.post(EQE{Type: mlx4.EventCmd, Token: 12, Status: 0x06})
	if n := d.PollEQ(q); n != 4 {
		t.Fatalf("consumed %d", n)
	}
	ctx := context.Background()
	if _, err := d.Wait(ctx, 0); !errors.Is(err, ErrLostCompletion) {
		t.Fatalf("token 10: %v", err)
	}
	if res, err := d.Wait(ctx, 1); err != nil || res.OutParam != 7 || res.Token != 11 {
		t.Fatalf("token 11: %+v %v", res, err)
	}
	if res, err := d.Wait(ctx, 2); err != nil || res.Status != mlx4.RESOURCE_BUSY {
		t.Fatalf("token 12: %+v %v", res, err)
	}
	if st := d.Stats; st.Lost != 1 || st.Stray != 1 || st.Async != 1 || st.Completions != 2 || d.InFlight() != 0 {
		t.Fatalf("stats %+v, in flight %d", st, d.InFlight())
	}
}
