package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// FuzzCQArm drives one CQ's state machine with a VF's arbitrary writes:
// each step is an op byte and a 32-bit word — a plain, solicited or error
// CQE posted; set_ci or arm_db written into the doorbell record (any bit
// pattern: the decoding is fuzzed too); the UAR's CQ doorbell word written
// and a scan run; CheckArms. Invariants: nothing panics; every CQE written
// is software-owned at its index and no unconsumed CQE is overwritten (a
// post succeeds only while prod - set_ci < nent, set_ci as the VF last
// wrote it while it moves only forward, as a driver's does; after a write
// that moves it back or past the CQEs written, the consumer index the
// device last read stands until it reads the record again, as a device
// caches it: the post succeeds only while the CQE has room by that one or
// by the record); completion events never
// outnumber the arms taken, nor the CQEs written plus one per arm; a
// failed CQ writes nothing more.
func FuzzCQArm(f *testing.F) {
	seed := func(steps ...uint32) []byte {
		b := make([]byte, 0, 5*len(steps))
		for i := 0; i+1 < len(steps); i += 2 {
			b = append(b, byte(steps[i]))
			b = binary.BigEndian.AppendUint32(b, steps[i+1])
		}
		return b
	}
	f.Add(seed(4, mlx4.CQArmDB(0, mlx4.MLX4_CQ_DB_REQ_NOT, 0), 0, 0, 0, 0, 4, mlx4.CQArmDB(1, mlx4.MLX4_CQ_DB_REQ_NOT, 1), 5, 0))
	f.Add(seed(4, mlx4.CQArmDB(0, mlx4.MLX4_CQ_DB_REQ_NOT_SOL, 0), 0, 0, 1, 0, 2, 0, 3, 2, 6, 0x12345678))
	f.Add(seed(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
	f.Add(seed(3, 0xffffff, 0, 0, 4, 0xffffffff, 6, 0xffffffff, 5, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newCQRig(t)
		v := r.vfCQ(0)
		c := v.newCQ(3, 128)
		obj := r.h.fw.cqs[c.n]
		st := r.h.DPStats(0)
		var ci uint32
		lied := false // set_ci moved back or past the CQEs written since the device last read it
		for len(b) >= 5 {
			op, w := b[0], binary.BigEndian.Uint32(b[1:5])
			b = b[5:]
			switch op % 7 {
			case 0, 1, 2:
				e := cqeOfSend(1, uint16(w))
				if op%7 == 2 {
					e.SetError(mlx4.CQE_SYNDROME_WR_FLUSH_ERR, 0)
				}
				prod, failed, cons := obj.Prod, obj.Err != 0, obj.Cons
				var err error
				if op%7 == 1 {
					err = r.h.postSolicitedCQE(c.n, e)
				} else {
					err = r.h.postCQE(c.n, e)
				}
				if err == nil {
					if failed {
						t.Fatal("a failed CQ took a CQE")
					}
					full := (prod-ci)&cqIndexMask >= c.nent
					if full && (!lied || (prod-cons)&cqIndexMask >= c.nent) {
						t.Fatalf("CQE %d written over unconsumed ones (set_ci %d, the device's consumer index %d, set_ci moved only forward: %v)", prod, ci, cons, !lied)
					}
					if s := c.slot(prod); !mlx4.CQEOwnerSW(s.Owner, prod, c.nent) || s.WQEIndex != uint16(w) {
						t.Fatalf("CQE %d: %+v", prod, s)
					}
				}
			case 3:
				if n := w & cqIndexMask; (n-ci)&cqIndexMask > (obj.Prod-ci)&cqIndexMask {
					lied = true
				}
				ci = w & cqIndexMask
				c.ci = ci
				c.setCI()
			case 4:
				var x [4]byte
				binary.BigEndian.PutUint32(x[:], w)
				if err := v.w.CopyOut(c.rec+mlx4.CQDBRecArmDB, x[:]); err != nil {
					t.Fatal(err)
				}
			case 5:
				r.h.CheckArms()
			case 6:
				r.uar[[2]uint64{0, mlx4.UARPageOffset(128, mlx4.UARSize) + mlx4.MLX4_CQ_DOORBELL}] = w
				r.h.ServiceQueues(64)
			}
			if obj.Cons == ci {
				lied = false // the device has read the record since
			}
			if ev, arms := st.CompEvents.Load(), st.CQArms.Load(); ev > arms {
				t.Fatalf("%d completion events for %d arms", ev, arms)
			}
		}
	})
}

// FuzzDoorbellHints drives the scheduler with attaches, detaches, send
// doorbell words (any QPN, any page, any VF) and scans over fake send
// queues. Invariants: the lists stay consistent; only attached QPs run,
// and a scan never runs more than its budget; the UAR reader is asked
// only for the send doorbell of pages the VF's own attached QPs use.
func FuzzDoorbellHints(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 1, 2, 2, 0, 0, 3, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 1, 0, 0, 2, 0, 1, 0, 2, 0, 2, 1, 0, 2, 1, 1, 0, 0, 3, 0, 0, 1, 0, 4, 0, 0, 0, 0})
	f.Add([]byte{0, 1, 3, 2, 1, 3, 0, 0, 3, 3, 0, 0, 1, 1, 3, 3, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fk := useFakeSQ(t)
		r := newSchedRig(t, 2)
		qps := map[uint32]*qpObj{}
		attached := map[*qpObj]bool{}
		for len(b) >= 3 {
			op, x, y := b[0]%5, b[1], b[2]
			b = b[3:]
			qpn := 0x100 + uint32(x%16)
			switch op {
			case 0: // attach QP qpn of VF y&1 on UAR index 128 + y>>1 % 3
				if qps[qpn] == nil {
					qps[qpn] = fakeQP(int(y&1), qpn, 128+uint32(y>>1)%3)
				}
				r.h.dpAttach(qps[qpn])
				attached[qps[qpn]] = true
			case 1:
				if qp := qps[qpn]; qp != nil {
					r.h.dpDetach(qp)
					delete(attached, qp)
				}
			case 2: // VF y&1 stores any QPN on UAR index 128 + y>>1 % 4
				r.ring(int(y&1), 128+uint32(y>>1)%4, uint32(x)<<4|uint32(y))
			case 3: // work appears on a QP (no doorbell)
				if qp := qps[qpn]; qp != nil {
					fk.work[qp] += int(y % 40)
				}
			case 4:
				before := 0
				for _, n := range fk.ran {
					before += n
				}
				fk.log = nil
				budget := int(y % 70)
				if n := r.h.ServiceQueues(budget); n > budget {
					t.Fatalf("a scan did %d WQEs, budget %d", n, budget)
				}
				for _, qp := range fk.log {
					if !attached[qp] {
						t.Fatalf("QP %#x ran while not attached", qp.tr.ID)
					}
				}
			}
			checkSched(t, &r.h.sched, len(attached))
		}
		for k := range r.reads { // the VF's own QPs' pages (attached then)
			vf := int(k[0])
			ok := false
			for _, qp := range qps {
				if qp.tr.Owner == vf && k[1] == mlx4.UARPageOffset(dpUsrPage(qp), mlx4.UARSize)+mlx4.MLX4_SEND_DOORBELL {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("read VF %d's BAR at %#x: no page of its QPs", vf, k[1])
			}
		}
	})
}
