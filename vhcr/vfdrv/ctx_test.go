package vfdrv

import (
	"encoding/binary"
	"testing"
)

// The encoders put the fields the PF validates at mlx4's mailbox offsets
// (research/mlx4-commchan.md §2.6).
func TestContextOffsets(t *testing.T) {
	be32 := func(b []byte, off int) uint32 { return binary.BigEndian.Uint32(b[off:]) }
	var qp [QPMailboxSize]byte
	QPMailbox{OptPar: OptPrimaryAddr, Ctx: QPContext{ST: STUD, SendCQ: 0x111, RecvCQ: 0x222, UseSRQ: true, SRQN: 0x333,
		Pri: QPPath{Port: 2, PKeyIndex: 3, MGIDIndex: 4}, LogSQSize: 5, LogSQStride: 2, MTTBase: 0x40, LocalQPN: 0x4242}}.Encode(qp[:])
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"optpar@0", be32(qp[:], 0), OptPrimaryAddr},
		{"service type@8", be32(qp[:], 8) >> 16 & 0xff, STUD},
		{"sq_size_stride@18", uint32(qp[18]), 5<<3 | 2},
		{"local_qpn@24", be32(qp[:], 24), 0x4242},
		{"pkey_index@35", uint32(qp[35]), 3},
		{"mgid_index@41", uint32(qp[41]), 4},
		{"sched_queue port bit@64", uint32(qp[64] >> 6 & 1), 1},
		{"cqn_send@132", be32(qp[:], 132), 0x111},
		{"cqn_recv@164", be32(qp[:], 164), 0x222},
		{"srqn@180", be32(qp[:], 180), 1<<24 | 0x333},
		{"mtt_base_addr_l@212", be32(qp[:], 212), 0x40 * 8},
	} {
		if c.got != c.want {
			t.Errorf("QP mailbox %s: %#x, want %#x", c.name, c.got, c.want)
		}
	}
	back, err := DecodeQPContext(qp[8:])
	if err != nil || back.SendCQ != 0x111 || back.SRQN != 0x333 || !back.UseSRQ || back.Pri.Port != 2 || back.MTTBase != 0x40 {
		t.Errorf("QP decode: %+v %v", back, err)
	}
	var cq [CQContextSize]byte
	CQContext{LogSize: 7, CompEQN: 9, MTTBase: 0x1_0000_0001}.Encode(cq[:])
	if cq[0x17] != 9 || be32(cq[:], 0x0c)>>24 != 7 || cq[0x1b] != 0x8 || be32(cq[:], 0x1c) != 8 {
		t.Errorf("CQ context %x", cq)
	}
	if c, _ := DecodeCQContext(cq[:]); c.MTTBase != 0x1_0000_0001 || c.CompEQN != 9 || c.LogSize != 7 {
		t.Errorf("CQ decode %+v", c)
	}
	var eq [EQContextSize]byte
	EQContext{LogSize: 10, MTTBase: 3}.Encode(eq[:])
	if eq[0x0c] != 10 || eq[0x18] != 0 || be32(eq[:], 0x1c) != 24 {
		t.Errorf("EQ context %x", eq)
	}
	var srq [SRQContextSize]byte
	SRQContext{SRQN: 0x55, LogSize: 4, LogStride: 2, MTTBase: 2}.Encode(srq[:])
	if be32(srq[:], 0) != 4<<24|0x55 || srq[4] != 2 || be32(srq[:], 0x14) != 16 {
		t.Errorf("SRQ context %x", srq)
	}
	var mpt [MPTSize]byte
	MPT{Key: KeyOf(0x10), PD: 1, Start: 0x3000, Length: 0x2000, MTTBase: 5, MTTSize: 2, EntitySize: 12}.Encode(mpt[:])
	if be32(mpt[:], 0)&MPTFlagRegion == 0 || binary.BigEndian.Uint64(mpt[0x2c:]) != 40 || be32(mpt[:], 0x34) != 2 || be32(mpt[:], 0x0c)>>17&0x7f != 0 {
		t.Errorf("MPT %x", mpt)
	}
	if pd := be32(mpt[:], 0x0c); pd != 3<<24|1 { // MLX4_MPT_PD_FLAG_EN_INV (3 << 24) | pd
		t.Errorf("MPT pd_flags %#x, want %#x", pd, 3<<24|1)
	}
	if m, _ := DecodeMPT(mpt[:]); m.Start != 0x3000 || m.Length != 0x2000 || m.MTTBase != 5 || m.Key != 0x1000 {
		t.Errorf("MPT decode %+v", m)
	}
	var w [64]byte
	if n := EncodeWriteMTT(w[:], 7, []uint64{0x4000, 0x5000}); n != 32 || binary.BigEndian.Uint64(w[0:]) != 7 ||
		binary.BigEndian.Uint64(w[16:]) != 0x4001 || binary.BigEndian.Uint64(w[24:]) != 0x5001 {
		t.Errorf("WRITE_MTT inbox %x (%d)", w, n)
	}
	if (QPContext{LogSQSize: 4, LogSQStride: 2, LogRQSize: 4, LogRQStride: 2}).MTTPages() != 1 ||
		(QPContext{LogSQSize: 6, LogSQStride: 2, LogRQSize: 6, LogRQStride: 2}).MTTPages() != 2 {
		t.Error("MTTPages")
	}
	for _, s := range []string{"rst", "INIT", "rtr", "rts", "sqd", "err"} {
		if _, ok := ParseQPState(s); !ok {
			t.Errorf("ParseQPState(%q)", s)
		}
	}
}
