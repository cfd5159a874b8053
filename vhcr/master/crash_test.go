package master_test

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// crashScan runs one scan that dies at the nth hit of point and reports
// whether it did; the PF is then dropped without shutdown.
func crashScan(t *testing.T, r stepRig, point string, nth int) (crashed bool) {
	t.Helper()
	r.PF.CrashAt(point, nth)
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(master.Crash); !ok {
				panic(v)
			}
			crashed = true
		}
	}()
	r.scan()
	return false
}

// postAllocCQ posts ALLOC_RES of one CQ for VF 1 (poll mode).
func postAllocCQ(r stepRig) {
	r.SetVHCR(r.t, 1, mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1, Token: mlx4.PollToken})
	r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
}

// result reads VF 1's vHCR: the status and the immediate output.
func result(r stepRig) (mlx4.Status, uint64) {
	img := r.VHCR(r.t, 1)
	return mlx4.Status(img[mlx4.OffStatus]), binary.BigEndian.Uint64(img[mlx4.OffOutParam:])
}

// TestKillAtEachPoint: a PF killed at each point of a resource command's
// post path, restarted on the same regions and state file, completes the
// command exactly once: the VF gets its acknowledgement, status and CQ
// number; the tracker holds that one CQ; objects made before the kill are
// still there under their numbers; the next allocation gets a new number.
func TestKillAtEachPoint(t *testing.T) {
	for _, point := range []string{crashpoint.PostAccepted, crashpoint.PostExecuting, crashpoint.PostWrittenBack, crashpoint.CommitTorn} {
		t.Run(point, func(t *testing.T) {
			r := newStepRigWith(t, 2, mastertest.Options{State: true})
			r.up(t, 1)
			postAllocCQ(r)
			r.scan()
			if s, _ := result(r); s != mlx4.OK || !r.acked(1) {
				t.Fatalf("first ALLOC_RES: %v acked=%v", s, r.acked(1))
			}
			_, first := result(r)
			postAllocCQ(r)
			if !crashScan(t, r, point, 1) {
				t.Fatalf("no kill at %s", point)
			}
			r.Rebuild(t)
			r.scan()
			s, cqn := result(r)
			if s != mlx4.OK || !r.acked(1) || r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
				t.Fatalf("after the restart: status %v acked=%v slave_read %#x", s, r.acked(1), r.SlaveRead(1).Load())
			}
			if n := r.HCA.Res.Counts(1)[restrack.CQ]; n != 2 {
				t.Fatalf("VF 1 owns %d CQs after the restart, want 2 (0 lost, 0 duplicated)", n)
			}
			for _, id := range []uint64{first, cqn} {
				if _, err := r.HCA.Res.Peek(1, restrack.CQ, id&0xffffff); err != nil {
					t.Fatalf("CQ %#x after the restart: %v", id, err)
				}
			}
			postAllocCQ(r)
			r.scan()
			if s, next := result(r); s != mlx4.OK || next == cqn || next == first {
				t.Fatalf("allocation after the restart: %v number %#x (live: %#x, %#x)", s, next, first, cqn)
			}
		})
	}
}

// TestKillBetweenResetAndVHCR0: the RESET is persisted before its
// acknowledgement, so the restarted PF continues with VHCR0 and resets no
// one; the VF's old objects were released by the RESET.
func TestKillBetweenResetAndVHCR0(t *testing.T) {
	r := newStepRigWith(t, 2, mastertest.Options{State: true})
	r.up(t, 1)
	postAllocCQ(r)
	r.scan()
	r.write(1, mlx4.MLX4_COMM_CMD_RESET, 0)
	if !crashScan(t, r, crashpoint.ResetAcked, 1) {
		t.Fatal("no kill after the RESET")
	}
	r.Rebuild(t)
	for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2, mlx4.MLX4_COMM_CMD_VHCR_EN} {
		r.write(1, c, 0)
		r.scan()
		if !r.acked(1) || r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
			t.Fatalf("%v after the restart: acked=%v slave_read %#x", c, r.acked(1), r.SlaveRead(1).Load())
		}
	}
	if n := r.HCA.Res.Counts(1)[restrack.CQ]; n != 0 {
		t.Fatalf("VF 1 owns %d CQs after its RESET and a restart", n)
	}
}

// TestKillInChannelRecord: a PF killed at any commit point of a RESET
// (its journal record, between two stores of the VF's channel record,
// before its acknowledgement) leaves the channel record of before or after
// in the state file (two slots, the torn one ignored): the restarted PF
// trusts it, tells no one with bit 17, completes the RESET and the VF goes
// on.
func TestKillInChannelRecord(t *testing.T) {
	kills := 0
	for nth := 1; ; nth++ {
		r := newStepRigWith(t, 2, mastertest.Options{State: true})
		r.up(t, 1)
		postAllocCQ(r)
		r.scan()
		r.write(1, mlx4.MLX4_COMM_CMD_RESET, 0)
		if !crashScan(t, r, crashpoint.CommitTorn, nth) {
			break
		}
		kills++
		r.Rebuild(t)
		r.scan()
		if !r.acked(1) || r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
			t.Fatalf("kill at commit-torn %d: RESET after the restart: acked=%v slave_read %#x", nth, r.acked(1), r.SlaveRead(1).Load())
		}
		if n := r.HCA.Res.Counts(1)[restrack.CQ]; n != 0 {
			t.Fatalf("kill at commit-torn %d: VF 1 owns %d CQs after its RESET", nth, n)
		}
		for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2, mlx4.MLX4_COMM_CMD_VHCR_EN} {
			r.write(1, c, 0)
			r.scan()
			if !r.acked(1) || r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
				t.Fatalf("kill at commit-torn %d: %v after the restart: acked=%v slave_read %#x", nth, c, r.acked(1), r.SlaveRead(1).Load())
			}
		}
	}
	if kills < 2 {
		t.Fatalf("%d commit points in a RESET, want the journal record's and the channel record's", kills)
	}
}

// restartFromEdited: VF 1 of a two-VF rig with a state file allocates a
// CQ, edit changes the state file, and the PF restarts from it logging
// into the returned builder.
func restartFromEdited(t *testing.T, edit func(b []byte)) (stepRig, *strings.Builder) {
	t.Helper()
	r := newStepRigWith(t, 2, mastertest.Options{State: true})
	r.up(t, 1)
	postAllocCQ(r)
	r.scan()
	log := new(strings.Builder)
	r.SetLogger(slog.New(slog.NewTextHandler(log, nil)))
	b, err := r.StateFile.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	edit(b)
	r.Rebuild(t)
	return r, log
}

// TestStateFileNotTrusted: a corrupted state file is logged and every VF
// that used its channel is reset with bit 17; nothing is silently zeroed.
func TestStateFileNotTrusted(t *testing.T) {
	r, log := restartFromEdited(t, func(b []byte) { b[pfstate.HdrMagic+3] ^= 0xff }) // the magic
	if r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 {
		t.Fatalf("VF 1 not told: slave_read %#x", r.SlaveRead(1).Load())
	}
	if !strings.Contains(log.String(), "PF state file not trusted") {
		t.Fatalf("no log line: %q", log.String())
	}
	if r.SlaveRead(0).Load() != 0 {
		t.Fatalf("VF 0 never used its channel and was told: %#x", r.SlaveRead(0).Load())
	}
}

// TestStateFileOtherVersionOrPF: a state file of another format version or
// written for another PF's regions is not trusted: logged with its cause,
// bit 17 to every VF that used its channel.
func TestStateFileOtherVersionOrPF(t *testing.T) {
	for _, c := range []struct {
		name, cause string
		edit        func(b []byte)
	}{
		{"other version", "checksum mismatch", func(b []byte) { b[pfstate.HdrVersion]++ }}, // the version is under the header's check
		{"other PF", "another PF's state file", func(b []byte) { b[pfstate.HdrGen] += 7 }},
		{"no checkpoint", "no checkpoint", func(b []byte) { clear(b[pfstate.HdrActive : pfstate.HdrActive+4]) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, log := restartFromEdited(t, c.edit)
			if r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 {
				t.Fatalf("VF 1 not told: slave_read %#x", r.SlaveRead(1).Load())
			}
			if !strings.Contains(log.String(), c.cause) {
				t.Fatalf("log does not say %q: %q", c.cause, log.String())
			}
			if n := r.HCA.Res.Counts(1)[restrack.CQ]; n != 0 {
				t.Fatalf("%d CQs kept from an untrusted file", n)
			}
		})
	}
}

// TestCheckpointAndJournal: objects made before a checkpoint, after it,
// and released by another VF's RESET in between all come back as they
// were; a kill in the middle of writing a checkpoint leaves the previous
// one and its journal.
func TestCheckpointAndJournal(t *testing.T) {
	r := newStepRigWith(t, 3, mastertest.Options{State: true})
	r.up(t, 1)
	r.up(t, 2)
	alloc := func(vf int) uint64 {
		r.SetVHCR(t, vf, mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1, Token: mlx4.PollToken})
		r.write(vf, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
		r.scan()
		img := r.VHCR(t, vf)
		if mlx4.Status(img[mlx4.OffStatus]) != mlx4.OK {
			t.Fatalf("VF %d ALLOC_RES: %v", vf, mlx4.Status(img[mlx4.OffStatus]))
		}
		return binary.BigEndian.Uint64(img[mlx4.OffOutParam:])
	}
	var kept []uint64
	for range 3 {
		kept = append(kept, alloc(1))
		alloc(2)
	}
	r.PF.Checkpoint()
	for range 2 {
		kept = append(kept, alloc(1))
		alloc(2)
	}
	r.write(2, mlx4.MLX4_COMM_CMD_RESET, 0) // VF 2's CQs go
	r.scan()
	kept = append(kept, alloc(1))
	r.PF.CrashAt(crashpoint.CommitTorn, 1)
	func() {
		defer func() {
			if _, ok := recover().(master.Crash); !ok {
				t.Fatal("no kill in the checkpoint")
			}
		}()
		r.PF.Checkpoint()
	}()
	r.Rebuild(t)
	if n := r.HCA.Res.Counts(1)[restrack.CQ]; n != len(kept) {
		t.Fatalf("VF 1 has %d CQs after the restart, want %d", n, len(kept))
	}
	for _, id := range kept {
		if _, err := r.HCA.Res.Peek(1, restrack.CQ, id&0xffffff); err != nil {
			t.Fatalf("CQ %#x: %v", id, err)
		}
	}
	if n := r.HCA.Res.Counts(2)[restrack.CQ]; n != 0 {
		t.Fatalf("VF 2 has %d CQs after its RESET and a restart", n)
	}
	next := alloc(1)
	for _, id := range kept {
		if id == next {
			t.Fatalf("live CQ %#x handed out again", id)
		}
	}
}

// TestCorruptRecordMidJournal: a record lost in the middle of the journal
// (a VF's last result lies beyond where replay stops) is not silently
// dropped: the file is not trusted.
func TestCorruptRecordMidJournal(t *testing.T) {
	r := newStepRigWith(t, 2, mastertest.Options{State: true})
	r.up(t, 1)
	for range 3 {
		postAllocCQ(r)
		r.scan()
	}
	var log strings.Builder
	r.SetLogger(slog.New(slog.NewTextHandler(&log, nil)))
	b, _ := r.StateFile.Bytes()
	off := pfstate.NewGeometry(r.Layout.NumVFs, r.HCA.Res.Config().EQsPerVF).Journal.Off
	b[off+pfstate.RecVHCR] ^= 1 // the journal's first record (VF 1's RESET after the start's checkpoint)
	r.Rebuild(t)
	if !strings.Contains(log.String(), "a corrupt record") || r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 {
		t.Fatalf("slave_read %#x, log %q", r.SlaveRead(1).Load(), log.String())
	}
}

// TestJournaledPostAllocatesNothing: with the state file, a journaled
// command (intent, result appended, commit) allocates nothing, nor does a NOP;
// the journal's checkpoints are off this measurement (the journal has
// room for every run).
func TestJournaledPostAllocatesNothing(t *testing.T) {
	r := newStepRigWith(t, 2, mastertest.Options{State: true})
	r.up(t, 1)
	for _, h := range []mlx4.VHCR{
		{Op: mlx4.NOP, Token: mlx4.PollToken},
		{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.XRCD), OpMod: 1, Token: mlx4.PollToken}, // refused past the quota after a while: journaled all the same
		{Op: mlx4.INIT_PORT, InMod: 1, Token: mlx4.PollToken},
	} {
		r.SetVHCR(t, 1, h)
		allocs := testing.AllocsPerRun(500, func() {
			r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
			r.scan()
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per post", h.Op, allocs)
		}
		if !r.acked(1) {
			t.Fatalf("%v: not acknowledged", h.Op)
		}
	}
}

// TestKillsAtRandomKeepLedger: three VFs allocate and free CQs and MTTs in
// a random order, with now and then a VF's RESET and a checkpoint, while
// the PF is killed at a random point of about one command in four; after
// each restart the command is answered, and at the end every VF's objects
// are exactly what the VFs' ledger of acknowledged replies says: 0 lost,
// 0 duplicated, no live number handed out again.
func TestKillsAtRandomKeepLedger(t *testing.T) {
	for _, seed := range []uint64{3, 23, 55} { // 3 and 23 found bugs once
		t.Run(fmt.Sprint(seed), func(t *testing.T) { killsAtRandom(t, seed) })
	}
}

func killsAtRandom(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	r := newStepRigWith(t, 4, mastertest.Options{State: true})
	ledger := map[int]map[restrack.Type]map[uint64]bool{}
	for vf := 1; vf <= 3; vf++ {
		r.up(t, vf)
		ledger[vf] = map[restrack.Type]map[uint64]bool{restrack.CQ: {}, restrack.MTT: {}}
	}
	points := []string{crashpoint.PostAccepted, crashpoint.PostExecuting, crashpoint.PostWrittenBack, crashpoint.CommitTorn}
	kills := 0
	lastKill := ""
	for step := 0; step < 400; step++ {
		vf := 1 + rng.IntN(3)
		if rng.IntN(40) == 0 {
			r.PF.Checkpoint()
		}
		if rng.IntN(60) == 0 {
			r.up(t, vf) // RESET..VHCR_EN: the VF's objects go
			ledger[vf] = map[restrack.Type]map[uint64]bool{restrack.CQ: {}, restrack.MTT: {}}
		}
		ty := []restrack.Type{restrack.CQ, restrack.MTT}[rng.IntN(2)]
		h := mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(ty), OpMod: 1, Token: mlx4.PollToken}
		var freed uint64
		if live := ledger[vf][ty]; len(live) > 0 && rng.IntN(2) == 0 {
			for id := range live {
				freed = id
				break
			}
			h = mlx4.VHCR{Op: mlx4.FREE_RES, InMod: uint32(ty), OpMod: 1, InParam: freed, Token: mlx4.PollToken}
		}
		r.SetVHCR(t, vf, h)
		r.write(vf, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
		pt := points[rng.IntN(len(points))]
		if rng.IntN(4) == 0 && crashScan(t, r, pt, 1) {
			kills++
			lastKill = pt
			r.Rebuild(t)
		}
		for k := 0; k < 3 && !r.acked(vf); k++ {
			r.scan()
		}
		img := r.VHCR(t, vf)
		if s := mlx4.Status(img[mlx4.OffStatus]); !r.acked(vf) || s != mlx4.OK {
			t.Fatalf("step %d: VF %d %v %v %#x: acked=%v status %v killed %v", step, vf, h.Op, ty, h.InParam, r.acked(vf), s, lastKill)
		}
		if h.Op == mlx4.ALLOC_RES {
			id := binary.BigEndian.Uint64(img[mlx4.OffOutParam:]) & 0xffffffff
			if ledger[vf][ty][id] {
				t.Fatalf("step %d: %v %#x handed out twice", step, ty, id)
			}
			ledger[vf][ty][id] = true
		} else {
			delete(ledger[vf][ty], freed)
		}
		for v := 1; v <= 3; v++ {
			for _, ty2 := range []restrack.Type{restrack.CQ, restrack.MTT} {
				if n := r.HCA.Res.Counts(v)[ty2]; n != len(ledger[v][ty2]) {
					t.Fatalf("step %d (VF %d %v %v, killed %v): VF %d has %d %v, ledger %d", step, vf, h.Op, ty, lastKill, v, n, ty2, len(ledger[v][ty2]))
				}
			}
		}
		lastKill = ""
	}
	if kills < 40 {
		t.Fatalf("only %d kills", kills)
	}
	for vf := 1; vf <= 3; vf++ {
		got := map[restrack.Type]map[uint64]bool{restrack.CQ: {}, restrack.MTT: {}}
		r.HCA.Res.Walk(vf, func(o *restrack.Object) {
			if got[o.Type] != nil {
				got[o.Type][o.ID] = true
			}
		})
		for _, ty := range []restrack.Type{restrack.CQ, restrack.MTT} {
			if len(got[ty]) != len(ledger[vf][ty]) {
				t.Errorf("VF %d: %d %vs tracked, the ledger says %d", vf, len(got[ty]), ty, len(ledger[vf][ty]))
			}
			for id := range ledger[vf][ty] {
				if !got[ty][id] {
					t.Errorf("VF %d: %v %#x lost", vf, ty, id)
				}
			}
		}
	}
	t.Logf("seed %d: %d kills over 400 commands; every object kept", seed, kills)
}
