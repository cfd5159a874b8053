package master

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Every row of the table has the class its cmd_info[] facts and its
// wrapper family give it; EPERM rows and opcodes without a row are denied.
func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		op   mlx4.Opcode
		want Class
	}{
		{mlx4.NOP, ClassPlain},
		{mlx4.INIT_PORT, ClassPlain},
		{mlx4.QUERY_FW, ClassMailbox},
		{mlx4.SET_PORT, ClassMailbox},
		{mlx4.ACCESS_REG, ClassMailbox},
		{mlx4.ALLOC_RES, ClassResource},
		{mlx4.SW2HW_CQ, ClassResource},
		{mlx4.WRITE_MTT, ClassResource},
		{mlx4.RST2INIT_QP, ClassQP},
		{mlx4.QUERY_QP, ClassQP},
		{mlx4.TWO_RST_QP, ClassQP},
		{mlx4.MAD_IFC, ClassMAD},
		{mlx4.MAD_DEMUX, ClassDenied},
		{mlx4.Opcode(0xfff), ClassDenied},
	} {
		if got := ClassOf(tc.op); got != tc.want {
			t.Errorf("%v: class %v, want %v", tc.op, got, tc.want)
		}
	}
	tab := NewTable()
	if classOf(nil) != ClassDenied {
		t.Error("an opcode without a row is not denied")
	}
	seen := map[Class]int{}
	for i := range tab.Entries() {
		e := &tab.Entries()[i]
		c := classOf(e)
		seen[c]++
		if e.EPERM != (c == ClassDenied) {
			t.Errorf("%v: EPERM %v but class %v", e.Op, e.EPERM, c)
		}
		if c == ClassPlain && (e.HasInbox || e.HasOutbox) {
			t.Errorf("%v: has a mailbox but class plain", e.Op)
		}
	}
	for c := Class(0); c < NumClasses; c++ {
		if seen[c] == 0 {
			t.Errorf("class %v has no row", c)
		}
	}
}

// A timed command lands in its class's histogram and in no other.
func TestObserveByClass(t *testing.T) {
	s := newStats(1, NewTable().NumOps())
	s.observe(ClassMAD, 1)
	s.observe(ClassMAD, 1<<62)
	for c := Class(0); c < NumClasses; c++ {
		var n uint64
		for _, v := range s.Latency[c] {
			n += v
		}
		want := uint64(0)
		if c == ClassMAD {
			want = 2
		}
		if n != want {
			t.Errorf("class %v: %d observations, want %d", c, n, want)
		}
	}
	if s.Latency[ClassMAD][0] != 1 || s.Latency[ClassMAD][len(LatencyBounds)] != 1 {
		t.Errorf("MAD buckets %v: want one in the first and one in +Inf", s.Latency[ClassMAD])
	}
}
