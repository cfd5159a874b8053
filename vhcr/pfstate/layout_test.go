package pfstate_test

import (
	"encoding/hex"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/pfstate"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// The offsets below are written out by hand from the format as version 4
// of the state file and wire contract v2's channel record lay it out, so
// that a constant changed in this package fails here rather than silently
// changing the format its files and seed corpora (vhcr/master/testdata/fuzz)
// are written in.

type off struct {
	name      string
	got, want int64
}

func checkOffsets(t *testing.T, what string, offs []off) {
	t.Helper()
	for _, o := range offs {
		if o.got != o.want {
			t.Errorf("%s.%s = %#x, the format has %#x", what, o.name, o.got, o.want)
		}
	}
}

func TestChannelRecordLayout(t *testing.T) {
	checkOffsets(t, "record", []off{
		{"size", pfstate.RecordSize, 16}, {"last_cmd", pfstate.WordLastCmd, 0x0}, {"check", pfstate.WordCheck, 0x4},
		{"vhcr_hi", pfstate.WordVHCRHi, 0x8}, {"vhcr_lo", pfstate.WordVHCRLo, 0xc},
		{"cmd_mask", pfstate.RecCmdMask, 0xff}, {"active", pfstate.RecActive, 1 << 8}, {"valid", pfstate.RecValid, 1 << 31},
		{"seq_shift", pfstate.RecSeqShift, 9}, {"seq_mask", pfstate.RecSeqMask, 0x7f}, {"slots", pfstate.SlotsPerVF, 2},
		// the header's copy: VF n's record at 0x400 + 16*n
		{"header_slot", wire.HdrVFState, 0x400}, {"header_slot_size", wire.HdrVFStateSize, 16},
	})
	// VHCR_POST (6), active, sequence 5, at 0x12345678_9abcd000.
	r := pfstate.Record{LastCmd: 6, Active: true, VHCR: 0x123456789abcd000}
	w0, hi, lo := r.Words(5, pfstate.SlotsPerVF)
	if w0 != 0x80000b06 || hi != 0x12345678 || lo != 0x9abcd000 {
		t.Fatalf("words %#x %#x %#x", w0, hi, lo)
	}
	if h, _, _ := r.Words(5, 1); h != 0x80000106 {
		t.Fatalf("header slot word %#x carries a sequence", h)
	}
	// CRC32C over big-endian w0, hi, lo, the VF (3) and PF_GEN (7), computed
	// apart from this package.
	const check = 0xf592a7af
	if c := pfstate.RecordCheck(w0, hi, lo, 3, 7); c != check {
		t.Fatalf("check %#08x, the format has %#08x", c, check)
	}
	got, seq, cause := pfstate.DecodeRecord(w0, check, hi, lo, 3, 6, pfstate.SlotsPerVF) // gen+1 is trusted
	if cause != "" || got != r || seq != 5 {
		t.Fatalf("decode: %+v seq %d %q", got, seq, cause)
	}
	if _, _, cause := pfstate.DecodeRecord(w0, check, hi, lo, 3, 7, 1); cause == "" {
		t.Fatal("a header slot's word with a sequence decoded")
	}
	if _, _, cause := pfstate.DecodeRecord(w0, check, hi, lo, 2, 7, pfstate.SlotsPerVF); cause == "" {
		t.Fatal("another VF's record decoded")
	}
	if !pfstate.Newer(0, 0x7f) || pfstate.Newer(0x7f, 0) || !pfstate.Newer(5, 4) {
		t.Fatal("sequence order")
	}
}

// TestSlaveReadUnanswered: vhcrd's mark of a command left unanswered is bit
// 30 of slave_read, outside the bits the driver reads and apart from the
// version a RESET acknowledgement carries.
func TestSlaveReadUnanswered(t *testing.T) {
	checkOffsets(t, "slave_read", []off{{"unanswered", pfstate.SlaveReadUnanswered, 1 << 30}})
	if pfstate.SlaveReadUnanswered&(mlx4.CommSlaveReadDriverBits|mlx4.CommVersion) != 0 {
		t.Fatalf("mark %#x overlaps the driver's bits %#x or the version %#x", pfstate.SlaveReadUnanswered, mlx4.CommSlaveReadDriverBits, mlx4.CommVersion)
	}
}

func TestStateFileHeaderLayout(t *testing.T) {
	checkOffsets(t, "header", []off{
		{"size", pfstate.HeaderSize, 0x1000}, {"magic", pfstate.HdrMagic, 0x00}, {"version", pfstate.HdrVersion, 0x08},
		{"num_vfs", pfstate.HdrNumVFs, 0x0c}, {"eqs_per_vf", pfstate.HdrEQsPerVF, 0x10},
		{"journal_kib", pfstate.HdrJournalKiB, 0x14}, {"ckpt_kib", pfstate.HdrCkptKiB, 0x18},
		{"layout_crc", pfstate.HdrLayoutCRC, 0x1c}, {"check", pfstate.HdrCheck, 0x20},
		{"active", pfstate.HdrActive, 0x40}, {"gen", pfstate.HdrGen, 0x44},
		{"version_number", pfstate.Version, 6},
	})
	h := pfstate.Header(2, 4, 16<<20, 16<<20, pfstate.LayoutCheck(0x10000, 0x1000, 0x21000))
	want := "5648435250465331" + "06000000" + "02000000" + "04000000" + "00400000" + "00400000" + "09bebffb"
	if got := hex.EncodeToString(h[:]); got != want {
		t.Fatalf("header\n%s, the format has\n%s", got, want)
	}
	// the values computed apart from this package (a bitwise CRC32C)
	if c := pfstate.Checksum(h[:]); c != 0xf01fa6b9 {
		t.Fatalf("header check %#08x", c)
	}
}

func TestStateFileGeometry(t *testing.T) {
	g := pfstate.NewGeometry(2, 4)
	checkOffsets(t, "geometry(2 VFs, 4 EQs)", []off{
		{"chans", g.Chans.Off, 0x1000}, {"chans_size", g.Chans.Size, 0x1000},
		{"seqs", g.Seqs.Off, 0x2000}, {"pos", g.Pos.Off, 0x3000}, {"journal", g.Journal.Off, 0x4000},
		{"journal_size", g.Journal.Size, 0x1000000}, {"ckpt", g.Ckpt.Off, 0x1004000}, {"ckpt_size", g.Ckpt.Size, 0x1000000},
		{"dp", g.DP.Off, 0x3004000}, {"dp_size", g.DP.Size, 0x203000}, {"size", g.Size, 0x3207000},
		{"chan(1,1)", g.ChanSlot(1, 1), 0x1030}, {"seq(1)", g.SeqWord(1), 0x2008}, {"pos(1,2)", g.PosWord(1, 2, 4), 0x3018},
		{"ckpt_slot(1)", g.CkptSlot(1), 0x2004000},
	})
	g = pfstate.NewGeometry(wire.MaxVFs, 1024)
	checkOffsets(t, "geometry(126 VFs, 1024 EQs)", []off{
		{"seqs", g.Seqs.Off, 0x2000}, {"pos", g.Pos.Off, 0x3000}, {"pos_size", g.Pos.Size, 0x7e000}, {"journal", g.Journal.Off, 0x81000},
	})
	checkOffsets(t, "words", []off{{"seq", pfstate.SeqSize, 8}, {"pos", pfstate.PosSize, 4}, {"pos_live", pfstate.PosLive, 1 << 31}})
}

func TestJournalRecordLayout(t *testing.T) {
	checkOffsets(t, "intent", []off{
		{"commit", pfstate.RecCommit, 0x00}, {"check", pfstate.RecCheck, 0x04}, {"seq", pfstate.RecSeq, 0x08},
		{"vf", pfstate.RecVF, 0x10}, {"kind", pfstate.RecKind, 0x14}, {"vhcr", pfstate.RecVHCR, 0x18},
		{"checked_end", pfstate.RecChecked, 0x38}, {"result_check", pfstate.RecResCheck, 0x3c}, {"size", pfstate.RecHdr, 0x40},
		{"align", pfstate.RecAlign, 64}, {"in_shift", pfstate.RecInShift, 16}, {"vf_mask", pfstate.RecVFMask, 0xffff},
		{"flag_shift", pfstate.RecFlagShift, 8}, {"kind_flags", pfstate.RecKindFlags, 0xffff}, {"toggle", pfstate.RecToggle, 1 << 31},
		{"magic_intent", pfstate.MagicIntent, 0x494e5431}, {"magic_commit", pfstate.MagicCommit, 0x434d5431},
		{"kind_cmd", pfstate.KindCmd, 1}, {"kind_reset", pfstate.KindReset, 2}, {"kind_activate", pfstate.KindActivate, 3},
		{"flag_inbox", pfstate.FlagInbox, 1}, {"flag_early", pfstate.FlagEarly, 2}, {"flag_event", pfstate.FlagEvent, 4},
		{"flag_outbox", pfstate.FlagOutbox, 8}, {"flag_imm", pfstate.FlagImm, 0x10}, {"flag_exec", pfstate.FlagExec, 0x20},
	})
	checkOffsets(t, "result", []off{
		{"out", pfstate.ResOut, 0x00}, {"token", pfstate.ResToken, 0x08}, {"eqn", pfstate.ResEQN, 0x0c},
		{"prod_before", pfstate.ResProdBefore, 0x10}, {"status", pfstate.ResStatus, 0x14}, {"size", pfstate.ResHdr, 0x18},
		{"out_shift", pfstate.ResOutShift, 16}, {"status_flags", pfstate.ResStatusFlags, 0xffff},
		{"max", pfstate.ResMax, 0x18 + 4096 + 63},
	})
	checkOffsets(t, "checkpoint", []off{
		{"zero", pfstate.CkptZero, 0x00}, {"crc", pfstate.CkptCRC, 0x04}, {"seq", pfstate.CkptSeq, 0x08},
		{"len", pfstate.CkptLen, 0x10}, {"gen", pfstate.CkptGen, 0x18}, {"checked_end", pfstate.CkptChecked, 0x1c},
		{"size", pfstate.CkptHdr, 0x40},
	})
	// the record's toggle is the comm channel's
	if pfstate.RecToggle != mlx4.CommToggle {
		t.Fatalf("RecToggle %#x, the comm channel's toggle %#x", pfstate.RecToggle, mlx4.CommToggle)
	}
}

func TestDataPathLayout(t *testing.T) {
	checkOffsets(t, "region", []off{
		{"step", pfstate.DPStepOff, 0}, {"step_size", pfstate.DPStepSize, 0x1000}, {"step_slots", pfstate.DPStepSlots, 2},
		{"intent", pfstate.DPIntentOff, 0x2000}, {"intent_size", pfstate.DPIntentSize, 0x40}, {"table", pfstate.DPTableOff, 0x3000},
		{"entries", pfstate.DPEntries, 16384}, {"entry", pfstate.DPEntrySize, 128}, {"copy", pfstate.DPCopySize, 64}, {"size", pfstate.DPSize, 0x203000},
	})
	checkOffsets(t, "step", []off{
		{"commit", pfstate.StepCommit, 0}, {"check", pfstate.StepCheck, 4}, {"seq", pfstate.StepSeq, 8}, {"counts", pfstate.StepCounts, 0x10},
		{"body", pfstate.StepBody, 0x18}, {"cqe", pfstate.StepCQESize, 40}, {"cq", pfstate.StepCQSize, 48}, {"qp", pfstate.StepQPSize, 16},
		{"srq", pfstate.StepSRQSize, 16}, {"solicited", pfstate.StepSolicited, 1}, {"overrun", pfstate.StepOverrun, 2}, {"max_cqes", pfstate.MaxStepCQEs, 32},
		{"max_cqs", pfstate.MaxStepCQs, 8}, {"max_qps", pfstate.MaxStepQPs, 8}, {"max_srqs", pfstate.MaxStepSRQs, 4},
		{"magic_step", pfstate.MagicStep, 0x44505331}, {"magic_applied", pfstate.MagicApplied, 0x44504131}, {"magic_flushed", pfstate.MagicFlushed, 0x44504631},
		{"after", pfstate.StepAfter, 0x800}, {"after_qp", pfstate.StepAfterQP, 12}, {"after_srq", pfstate.StepAfterSRQ, 12}, {"after_cq", pfstate.StepAfterCQ, 32},
	})
	checkOffsets(t, "intent", []off{
		{"commit", pfstate.IntCommit, 0}, {"check", pfstate.IntCheck, 4}, {"seq", pfstate.IntSeq, 8}, {"qpn", pfstate.IntQPN, 0x10},
		{"sq", pfstate.IntSQ, 0x14}, {"orig", pfstate.IntOrig, 0x18}, {"end", pfstate.IntEnd, 0x20}, {"magic", pfstate.MagicAtomic, 0x44504931},
	})
	checkOffsets(t, "entry", []off{
		{"seq", pfstate.EntSeq, 0}, {"check", pfstate.EntCheck, 4}, {"key", pfstate.EntKey, 8}, {"vals", pfstate.EntVals, 0x0c},
		{"words", pfstate.EntWords, 13}, {"kind_shift", pfstate.EntKindShift, 24}, {"qp", pfstate.EntQP, 1}, {"cq", pfstate.EntCQ, 2},
		{"srq", pfstate.EntSRQ, 3}, {"cq_words", pfstate.CQWords, 8},
	})
	// the step's largest body fits its slot; a copy's words fit the copy
	if n := pfstate.StepBody + pfstate.MaxStepCQEs*pfstate.StepCQESize + pfstate.MaxStepCQs*pfstate.StepCQSize +
		pfstate.MaxStepQPs*pfstate.StepQPSize + pfstate.MaxStepSRQs*pfstate.StepSRQSize; n > pfstate.StepAfter {
		t.Fatalf("step body %d > its after-state's offset %d", n, pfstate.StepAfter)
	}
	if n := pfstate.StepAfter + pfstate.MaxStepQPs*pfstate.StepAfterQP + pfstate.MaxStepSRQs*pfstate.StepAfterSRQ +
		pfstate.MaxStepCQs*pfstate.StepAfterCQ; n > pfstate.DPStepSize {
		t.Fatalf("step after-state ends at %d > %d", n, pfstate.DPStepSize)
	}
	if pfstate.DPStepOff+pfstate.DPStepSlots*pfstate.DPStepSize > pfstate.DPIntentOff {
		t.Fatal("the step slots overlap the intent")
	}
	if pfstate.EntVals+4*pfstate.EntWords != pfstate.DPCopySize || pfstate.StepCQSize != 16+4*pfstate.CQWords {
		t.Fatal("entry or step CQ words do not fill their size")
	}
}

// The one table is CRC32C (Castagnoli): "123456789" checks to 0xe3069283.
func TestChecksumIsCRC32C(t *testing.T) {
	if c := pfstate.Checksum([]byte("123456789")); c != 0xe3069283 {
		t.Fatalf("%#08x", c)
	}
	if c := pfstate.Update(pfstate.Checksum([]byte("1234")), []byte("56789")); c != 0xe3069283 {
		t.Fatalf("update: %#08x", c)
	}
}
