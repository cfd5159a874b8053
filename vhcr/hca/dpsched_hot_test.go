package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestSchedHotPageNotRead: the send doorbell word of a UAR page whose
// attached QPs are all hot is not read (the busy QP's ownership checks are
// what runs it, a SEND stream's WQEs served without the load of the line
// the VF stores at every post), while a page with a cold QP is read every
// scan; a ring stored while every QP of the page was hot is seen once one
// of them cools, and heats the page's QPs again: no ring is lost.
func TestSchedHotPageNotRead(t *testing.T) {
	f := useFakeSQ(t)
	r := newSchedRig(t, 1)
	busy := fakeQP(0, 0x100, 128)
	r.h.dpAttach(busy)
	page := [2]uint64{0, mlx4.UARPageOffset(128, mlx4.UARSize) + mlx4.MLX4_SEND_DOORBELL}
	f.work[busy] = 1 << 20
	r.ring(0, 128, 0x100)
	before := r.reads[page]
	for range 100 {
		if n := r.h.ServiceQueues(64); n != 64 {
			t.Fatalf("a scan did %d WQEs, want 64", n)
		}
	}
	if n := r.reads[page] - before; n != 0 {
		t.Fatalf("the all-hot page's word was read %d times in 100 scans, want 0", n)
	}

	// A second QP on the page, cold: the page is read every scan and its
	// ring heats it.
	other := fakeQP(0, 0x101, 128)
	r.h.dpAttach(other)
	f.work[busy] = 0
	coolAll(t, r)
	before = r.reads[page]
	for range 10 {
		r.h.ServiceQueues(64)
	}
	if n := r.reads[page] - before; n != 10 {
		t.Fatalf("a page with cold QPs was read %d times in 10 scans, want 10", n)
	}
	f.work[other] = 3
	r.ring(0, 128, 0x101)
	if n := r.h.ServiceQueues(64); n != 3 || f.ran[other] != 3 {
		t.Fatalf("the cold QP's ring: %d WQEs, the QP ran %d; want 3 3", n, f.ran[other])
	}

	// Both hot (other just ran, busy heated by the ring): a ring now is
	// not read; once both cool it is, and it heats the QP it names.
	r.ring(0, 128, 0x100) // the word changes while nothing reads it
	dbs := r.h.DPStats(0).Doorbells.Load()
	coolAll(t, r)
	if got := r.h.DPStats(0).Doorbells.Load(); got != dbs+1 {
		t.Fatalf("doorbells %d after the QPs cooled, want %d: the ring stored while they were hot is seen once", got, dbs+1)
	}
	f.work[busy] = 5
	r.ring(0, 128, 0x101) // another QPN of the page: the word changes, both QPs heat
	if n := r.h.ServiceQueues(64); n != 5 || f.ran[busy] != 100*64+5 {
		t.Fatalf("after cooling, the ring ran %d WQEs (busy ran %d in all)", n, f.ran[busy])
	}
}

// coolAll runs scans until no QP is hot: a cooling that finds the page's
// word changed (a ring stored while all its QPs were hot) heats them for one
// more period, so it may take two.
func coolAll(t *testing.T, r *schedRig) {
	for range 2 * (hotScans + 1) {
		r.h.ServiceQueues(64)
	}
	for _, v := range r.h.sched.vfs {
		if len(v.hot) != 0 {
			t.Fatalf("%d QPs still hot", len(v.hot))
		}
	}
}
