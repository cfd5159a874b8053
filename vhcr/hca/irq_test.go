package hca

import (
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/irq"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

var errNoVector = errors.New("test: no such vector")

// vectors records raises as MSI-X delivery would see them: a count per
// (VF, vector); vectors at or above n are refused.
type vectors struct {
	n      int
	raised map[[2]int]int
}

func (x *vectors) Raise(vf, vector int) error {
	if vector >= x.n {
		return errNoVector
	}
	x.raised[[2]int{vf, vector}]++
	return nil
}

func (x *vectors) total() int {
	n := 0
	for _, c := range x.raised {
		n += c
	}
	return n
}

// irqRig is a rig with interrupts (n vectors per VF) and doorbell words the
// test writes as a VF would, read through the installed reader.
type irqRig struct {
	*rig
	irq *vectors
	db  map[[2]int]uint32
}

func newIRQRig(t *testing.T, n int) *irqRig {
	r := &irqRig{rig: newRig(t, 2, nil), irq: &vectors{n: n, raised: map[[2]int]int{}}, db: map[[2]int]uint32{}}
	r.h.SetInterrupts(r.irq)
	r.h.SetDoorbellReader(func(vf, eqn int) (uint32, bool) { return r.db[[2]int{vf, eqn}], true })
	return r
}

// eq creates EQ eqn (16 entries) with intr and state in its context and
// maps command completions to it.
func (r *irqRig) eq(v *vf, eqn int, intr uint8, state uint32) {
	r.t.Helper()
	b := make([]byte, mlx4.EQContextSize)
	mlx4.EQContext{LogSize: 4, MTTBase: uint64(v.mtt(0, v.newPage())), Intr: intr, State: state}.Encode(b)
	v.must(v.run(v.cmd(mlx4.SW2HW_EQ, 0, uint32(eqn), 0, b, false)), "SW2HW_EQ")
	v.must(v.run(v.cmd(mlx4.MAP_EQ, 1<<mlx4.EventCmd, uint32(eqn), 0, nil, false)), "MAP_EQ")
}

func (r *irqRig) post(vf int) {
	r.t.Helper()
	e := CompletionEQE(1, mlx4.OK, 0)
	if err := r.h.PostEQE(vf, mlx4.EventCmd, &e); err != nil {
		r.t.Fatal(err)
	}
}

// doorbell writes val to EQ eqn's doorbell of VF vf.
func (r *irqRig) doorbell(vf, eqn int, val uint32) {
	r.t.Helper()
	if err := r.h.EQDoorbell(vf, eqn, val); err != nil {
		r.t.Fatal(err)
	}
}

// want checks the raises of (vf, vector) and the VF's counters.
func (r *irqRig) want(vf, vector, raised int, unarmed, errs uint64) {
	r.t.Helper()
	st := r.h.Stats(vf)
	if got := r.irq.raised[[2]int{vf, vector}]; got != raised || r.irq.total() != raised {
		r.t.Fatalf("VF %d vector %d raised %d times (%d in all), want %d", vf, vector, got, r.irq.total(), raised)
	}
	if st.Interrupts.Load() != uint64(raised) || st.Unarmed.Load() != unarmed || st.IRQErrors.Load() != errs {
		r.t.Fatalf("counters: interrupts %d unarmed %d errors %d, want %d %d %d",
			st.Interrupts.Load(), st.Unarmed.Load(), st.IRQErrors.Load(), raised, unarmed, errs)
	}
}

// TestIRQOncePerArm: an EQ created armed (mlx4_create_eq) raises its
// vector for the first EQE and not for the next ones; a re-arm with
// nothing pending raises nothing, and the next EQE raises again.
func TestIRQOncePerArm(t *testing.T) {
	r := newIRQRig(t, 8)
	v := r.vf(1)
	r.eq(v, 3, 2, 0)
	r.want(1, 2, 0, 0, 0)
	r.post(1)
	r.want(1, 2, 1, 0, 0)
	r.post(1)
	r.post(1)
	r.want(1, 2, 1, 2, 0)
	r.doorbell(1, 3, 3|mlx4.EQ_DOORBELL_ARM) // consumed all three, armed
	r.want(1, 2, 1, 2, 0)
	r.post(1)
	r.want(1, 2, 2, 2, 0)
}

// TestIRQRearmWithPending: arming with the consumer index behind the
// producer raises at once (mlx4_eq_int arms and does not look again).
func TestIRQRearmWithPending(t *testing.T) {
	r := newIRQRig(t, 8)
	v := r.vf(0)
	r.eq(v, 1, 0, 0)
	r.post(0)
	r.post(0)
	r.post(0)
	r.want(0, 0, 1, 2, 0)
	r.doorbell(0, 1, 1|mlx4.EQ_DOORBELL_ARM) // one consumed, two pending
	r.want(0, 0, 2, 2, 0)
	r.post(0) // fired again by the arm: disarmed
	r.want(0, 0, 2, 3, 0)
}

// TestIRQDoorbellWithoutArm: a consumer-index update without bit 31 neither
// arms a fired EQ nor disarms an armed one.
func TestIRQDoorbellWithoutArm(t *testing.T) {
	r := newIRQRig(t, 8)
	v := r.vf(0)
	r.eq(v, 1, 4, 0)
	r.doorbell(0, 1, 0)
	r.post(0)
	r.want(0, 4, 1, 0, 0)
	r.doorbell(0, 1, 1)
	r.post(0)
	r.want(0, 4, 1, 1, 0)
}

// TestIRQVectorFromEQC: the vector is the EQ context's intr, per EQ; EQEs
// go to the EQ mapped for their type, and raise only its vector.
func TestIRQVectorFromEQC(t *testing.T) {
	r := newIRQRig(t, 8)
	v := r.vf(0)
	r.eq(v, 1, 0, 0)
	r.eq(v, 2, 5, 0) // command completions now map to EQ 2
	r.post(0)
	r.want(0, 5, 1, 0, 0)
	if r.irq.raised[[2]int{0, 0}] != 0 {
		t.Fatal("EQ 1's vector raised by an EQE to EQ 2")
	}
	if r.h.Stats(1).Interrupts.Load() != 0 {
		t.Fatal("VF 1 counted VF 0's interrupt")
	}
}

// TestIRQBadVector: a context naming a vector the VF does not have is the
// VF's error: counted, nothing raised, no panic; the EQ is fired all the
// same, and other VFs are not affected.
func TestIRQBadVector(t *testing.T) {
	r := newIRQRig(t, 2)
	v := r.vf(0)
	r.eq(v, 1, 2, 0)
	r.eq(r.vf(1), 1, 1, 0)
	r.post(0)
	r.post(0)
	r.want(0, 2, 0, 1, 1)
	r.post(1)
	if r.irq.raised[[2]int{1, 1}] != 1 || r.h.Stats(1).IRQErrors.Load() != 0 {
		t.Fatal("VF 1's interrupt affected by VF 0's bad vector")
	}
}

// TestIRQContextStates: FIRED starts disarmed (the first arm raises for
// pending EQEs); ALWAYS_ARMED raises for every EQE.
func TestIRQContextStates(t *testing.T) {
	r := newIRQRig(t, 8)
	v := r.vf(0)
	r.eq(v, 1, 3, mlx4.EQ_STATE_FIRED)
	r.post(0)
	r.want(0, 3, 0, 1, 0)
	r.doorbell(0, 1, mlx4.EQ_DOORBELL_ARM)
	r.want(0, 3, 1, 1, 0)

	r = newIRQRig(t, 8)
	v = r.vf(0)
	r.eq(v, 1, 3, mlx4.EQ_STATE_ALWAYS_ARMED)
	for range 3 {
		r.post(0)
	}
	r.want(0, 3, 3, 0, 0)
}

// TestIRQDoorbellWord: through the doorbell reader, an arm is taken once
// however often the same word is read; a new word arms; a re-arm with EQEs
// pending and no EQE after it is found by CheckArms, once.
func TestIRQDoorbellWord(t *testing.T) {
	r := newIRQRig(t, 8)
	v := r.vf(0)
	r.eq(v, 1, 1, 0)
	db := [2]int{0, 1}
	r.db[db] = mlx4.EQ_DOORBELL_ARM // eq_set_ci(eq, 1) after mlx4_create_eq
	r.post(0)
	r.want(0, 1, 1, 0, 0)
	r.post(0) // the word still says armed: not a new arm
	r.want(0, 1, 1, 1, 0)
	if n := r.h.CheckArms(); n != 0 {
		t.Fatalf("CheckArms raised %d with no new arm", n)
	}
	r.db[db] = 1 | mlx4.EQ_DOORBELL_ARM // one consumed, one pending
	if n := r.h.CheckArms(); n != 1 {
		t.Fatalf("CheckArms raised %d for a re-arm with an EQE pending, want 1", n)
	}
	r.want(0, 1, 2, 1, 0)
	if n := r.h.CheckArms(); n != 0 {
		t.Fatalf("CheckArms raised %d again for the same arm", n)
	}
	r.db[db] = 2 | mlx4.EQ_DOORBELL_ARM // all consumed
	if n := r.h.CheckArms(); n != 0 || len(r.h.fw.watch) != 0 {
		t.Fatalf("CheckArms raised %d, %d EQs watched, with nothing pending", n, len(r.h.fw.watch))
	}
	r.post(0)
	r.want(0, 1, 3, 1, 0)
	// destroyed while watched: dropped from the watch list at once
	r.post(0)
	if len(r.h.fw.watch) != 1 {
		t.Fatalf("%d EQs watched after an EQE into a fired EQ, want 1", len(r.h.fw.watch))
	}
	v.must(v.run(v.cmd(mlx4.HW2SW_EQ, 0, 1, 0, nil, false)), "HW2SW_EQ")
	if len(r.h.fw.watch) != 0 {
		t.Fatal("a destroyed EQ stays watched")
	}
	// and by the VF's reset
	r.eq(v, 2, 1, mlx4.EQ_STATE_FIRED)
	r.post(0)
	if len(r.h.fw.watch) != 1 {
		t.Fatalf("%d EQs watched, want 1", len(r.h.fw.watch))
	}
	r.h.ResetFunction(0)
	if len(r.h.fw.watch) != 0 {
		t.Fatal("an EQ released by the VF's reset stays watched")
	}
}

// TestIRQNone: without interrupts nothing is raised or counted.
func TestIRQNone(t *testing.T) {
	r := newRig(t, 1, nil)
	v := r.vf(0)
	v.setupEQ(1, 4)
	e := CompletionEQE(1, mlx4.OK, 0)
	if err := r.h.PostEQE(0, mlx4.EventCmd, &e); err != nil {
		t.Fatal(err)
	}
	if st := r.h.Stats(0); st.Interrupts.Load()+st.Unarmed.Load()+st.IRQErrors.Load() != 0 {
		t.Fatal("interrupt counters moved without interrupts")
	}
}

// TestIRQPostAllocs: PostEQE with interrupts and a doorbell reader
// allocates nothing, armed or not.
func TestIRQPostAllocs(t *testing.T) {
	r := newIRQRig(t, 8)
	v := r.vf(0)
	r.eq(v, 1, 1, mlx4.EQ_STATE_ALWAYS_ARMED)
	r.post(0) // the watch list is not used by an always-armed EQ
	e := CompletionEQE(1, mlx4.OK, 0)
	n := uint32(1)
	if a := testing.AllocsPerRun(200, func() {
		_ = r.h.PostEQE(0, mlx4.EventCmd, &e)
		_ = r.h.EQDoorbell(0, 1, n)
		n++
	}); a != 0 {
		t.Fatalf("PostEQE with interrupts: %v allocs", a)
	}
}

// FuzzEQInterrupts drives one EQ through the doorbell word with an
// arbitrary schedule (each byte: op in bits 1:0 — post, consume and write
// the consumer index, consume and arm, CheckArms — and a count in 4:2):
// an EQ raises at most once per arm (the context's initial one included),
// and once the schedule ends and CheckArms has run, no arm is left owed an
// interrupt: either a raise followed the last arm, or the VF has consumed
// every EQE posted. An arm the VF overwrote without bit 31 before the PF
// read the word is the VF's loss (the word holds one value; Linux never
// writes after an arm before the interrupt).
func FuzzEQInterrupts(f *testing.F) {
	f.Add([]byte{0x00, 0x00, 0x06, 0x03})
	f.Add([]byte{0x1c, 0x0a, 0x00, 0x07, 0x03, 0x01, 0x02})
	f.Add([]byte{0x3c, 0x3c, 0x0e, 0x04, 0x12, 0x03})
	f.Fuzz(func(t *testing.T, sched []byte) {
		r := newIRQRig(t, 8)
		v := r.vf(0)
		r.eq(v, 1, 0, 0)
		const nent = 16
		db := [2]int{0, 1}
		var posted, ci uint32
		arms, raised := 1, 0
		owed := true // the context's arm, not yet used by a raise
		read := true // the PF has read the word since it was written
		write := func(arm bool) {
			w := ci & mlx4.EQIndexMask
			if arm {
				w |= mlx4.EQ_DOORBELL_ARM
			}
			if w != r.db[db] {
				if !arm && !read && r.db[db]&mlx4.EQ_DOORBELL_ARM != 0 {
					owed = false // an arm the PF never saw
				}
				r.db[db], read = w, false
				if arm {
					arms++
					owed = true
				}
			}
		}
		saw := func() {
			if n := r.irq.total(); n > raised {
				raised, owed = n, false
			}
			if raised > arms {
				t.Fatalf("%d raises for %d arms", raised, arms)
			}
		}
		for _, b := range sched {
			k := uint32(b>>2&7) + 1
			switch b & 3 {
			case 0:
				for range k {
					e := CompletionEQE(1, mlx4.OK, 0)
					switch err := r.h.PostEQE(0, mlx4.EventCmd, &e); err {
					case nil:
						posted++
						read = true // PostEQE reads the word after the EQE
					case ErrOverrun:
					default:
						t.Fatal(err)
					}
					saw()
				}
			case 1, 2:
				ci += min(k, posted-ci)
				write(b&3 == 2)
			case 3:
				read = read || len(r.h.fw.watch) != 0 // only watched EQs are read
				r.h.CheckArms()
				saw()
			}
			if posted-ci > nent {
				t.Fatalf("%d EQEs unread in a ring of %d", posted-ci, nent)
			}
		}
		r.h.CheckArms()
		saw()
		if owed && posted != ci {
			t.Fatalf("armed at %d with %d posted and no interrupt", ci, posted)
		}
	})
}

// BenchmarkPostEQEInterrupt is the interrupt path of an event: the EQE
// written into an armed EQ, the doorbell word read, the vector raised
// (one eventfd write), then the VF's re-arm with nothing pending.
func BenchmarkPostEQEInterrupt(b *testing.B) {
	r := newRig(b, 1, nil)
	v := r.vf(0)
	v.setupEQ(1, 7)
	set, err := irq.NewSet(1, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer set.Close()
	word := uint32(0)
	r.h.SetInterrupts(set)
	r.h.SetDoorbellReader(func(vf, eqn int) (uint32, bool) { return word, true })
	fd, _ := set.VF(0).FD(0)
	e := CompletionEQE(1, mlx4.OK, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := r.h.PostEQE(0, mlx4.EventCmd, &e); err != nil {
			b.Fatal(err)
		}
		word = uint32(i+1)&mlx4.EQIndexMask | mlx4.EQ_DOORBELL_ARM // consumed, re-armed
		if i&0xffff == 0 {
			_, _ = irq.Drain(fd)
		}
	}
	if st := r.h.Stats(0); st.Interrupts.Load() != st.EQEs.Load() {
		b.Fatalf("%d interrupts for %d EQEs", st.Interrupts.Load(), st.EQEs.Load())
	}
}

// TestIRQAfterLoad: an HCA loaded from an image (a restarted PF's
// checkpoint) keeps the MSI-X delivery installed before the load: an EQE
// into the armed EQ raises its vector.
func TestIRQAfterLoad(t *testing.T) {
	r := newIRQRig(t, 8)
	v := r.vf(1)
	r.eq(v, 3, 2, 0)
	win := func(vf int) *dma.Window { w, _ := r.sp.Window(vf); return w }
	if err := r.h.Load(r.h.Image(), win); err != nil {
		t.Fatal(err)
	}
	r.post(1)
	r.want(1, 2, 1, 0, 0)
}
