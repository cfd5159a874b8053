package hca

import (
	"errors"
	"reflect"
	"testing"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// An HCA loaded from another's image holds the same objects in the same
// states under the same numbers, hands out the same next numbers and
// writes the next EQE where the saved one would have.
func TestImageRoundTrip(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(1)
	v.setupEQ(3, 4)
	cq := v.createCQ()
	qpn, q := v.newQP(cq)
	v.must(v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), "RST2INIT")
	v.createSRQ()
	im := r.h.Image()

	b := newRig(t, 2, nil)
	win := func(vf int) *dma.Window { w, _ := r.sp.Window(vf); return w }
	if err := b.h.Load(im, win); err != nil {
		t.Fatal(err)
	}
	if got := b.h.Image(); !reflect.DeepEqual(got, im) {
		t.Fatal("image of the loaded HCA differs")
	}
	if b.h.fw.qps[qpn].State != mlx4.QP_STATE_INIT {
		t.Fatalf("QP %#x state %v after load", qpn, b.h.fw.qps[qpn].State)
	}
	// Next numbers equal; the object survives under its number.
	vb := &vf{r: b, n: 1, w: v.w, eq: v.eq, page: v.page}
	na, _ := v.alloc(restrack.CQ, resOpReserveAndMap, 0)
	nb, _ := vb.alloc(restrack.CQ, resOpReserveAndMap, 0)
	if na != nb {
		t.Fatalf("next CQ %#x after load, %#x without", nb, na)
	}
	v.must(v.qpCmd(mlx4.TWO_RST_QP, qpn, nil), "2RST")
	vb.must(vb.qpCmd(mlx4.TWO_RST_QP, qpn, nil), "2RST after load")
	na2, _ := r.h.PortChange(1, mlx4.PORT_CHANGE_SUBTYPE_ACTIVE) // VF 0 has no EQ: not counted
	nb2, _ := b.h.PortChange(1, mlx4.PORT_CHANGE_SUBTYPE_ACTIVE)
	if na2 != 1 || nb2 != 1 {
		t.Fatalf("port change EQEs %d after load, %d without", nb2, na2)
	}
	ea, eb := r.h.fw.eqs[restrack.EQID(1, 3)], b.h.fw.eqs[restrack.EQID(1, 3)]
	if ea.Prod != eb.Prod || eb.win == nil {
		t.Fatalf("EQ producer %d after load, %d", eb.Prod, ea.Prod)
	}
}

func TestImageRefusedByOtherHCA(t *testing.T) {
	r := newRig(t, 2, nil)
	b := newRig(t, 3, nil)
	if err := b.h.Load(r.h.Image(), nil); !errors.Is(err, ErrImage) {
		t.Fatalf("image of 2 VFs into 3: %v", err)
	}
	v := r.vf(0)
	v.setupEQ(1, 4)
	v.createCQ()
	im := r.h.Image()
	im.Res.Objects = nil // firmware objects without tracker objects
	c := newRig(t, 2, nil)
	if err := c.h.Load(im, nil); !errors.Is(err, ErrImage) {
		t.Fatalf("objects without their tracker objects: %v", err)
	}
}

// TestRefreshEQsTakesTheVFsDoorbell: an EQ whose doorbell word still holds
// what it held at creation (as a replayed EQ sees it) ignores the word as
// stale; RefreshEQs takes it when its consumer index lies within the ring
// behind the producer, so a restarted PF does not drop EQEs as overruns.
func TestRefreshEQsTakesTheVFsDoorbell(t *testing.T) {
	r, db, e := eqRig(t, 16)
	*db = 16 // the VF consumed 16 EQEs; as if this were the word at creation:
	eq := r.h.fw.eqs[restrack.EQID(0, 1)]
	eq.Cons, eq.DBAtCreate, eq.DBStale = 0, 16, true
	if err := r.h.PostEQE(0, mlx4.EventPortChange, &e); !errors.Is(err, ErrOverrun) {
		t.Fatalf("stale word: %v, want an overrun", err)
	}
	r.h.RefreshEQs()
	if err := r.h.PostEQE(0, mlx4.EventPortChange, &e); err != nil {
		t.Fatalf("after RefreshEQs: %v", err)
	}
	*db = 40 // ahead of the producer: not the VF's word for this ring
	eq.Cons, eq.DBStale = 1, true
	r.h.RefreshEQs()
	if eq.Cons != 1 {
		t.Fatalf("a consumer index ahead of the producer was taken: %d", eq.Cons)
	}
}

// TestRefreshEQsRecoversTheProducer: a PF killed between writing an EQE
// and recording its producer index restarts with the record one behind,
// and the VF may have read that EQE (its consumer index then ahead of the
// record). RefreshEQs takes the producer from the ring's owner bits, so
// the next EQE goes to the next slot instead of every EQE after looking
// like an overrun (the crash tier's "EQ full, event dropped" after a
// kill); slots the ring shows unwritten are not taken.
func TestRefreshEQsRecoversTheProducer(t *testing.T) {
	r, db, e := eqRig(t, 3)
	eq := r.h.fw.eqs[restrack.EQID(0, 1)]
	*db = 3                 // the VF read all three
	eq.Prod, eq.Cons = 2, 0 // the record of the third was lost, the checkpoint's consumer index
	r.h.RefreshEQs()
	if eq.Prod != 3 || eq.Cons != 3 {
		t.Fatalf("after RefreshEQs: producer %d consumer %d, want 3 and 3", eq.Prod, eq.Cons)
	}
	for i := range 15 {
		if err := r.h.PostEQE(0, mlx4.EventPortChange, &e); err != nil {
			t.Fatalf("EQE %d after the restart: %v", i, err)
		}
	}
	if eq.Prod != 18 {
		t.Fatalf("producer %d, want 18", eq.Prod)
	}
	// A VF that forges every owner bit as written moves its own ring's
	// producer by one ring at most.
	for n := eq.Prod; n < eq.Prod+uint32(eq.Nent); n++ {
		off := uint64(n&(eq.Nent-1)) * mlx4.EQESize
		owner := []byte{0}
		if n&eq.Nent != 0 {
			owner[0] = mlx4.EQEOwnerHW
		}
		if err := eq.win.CopyOut(eq.Pages[off>>eq.PageShift]+off&(1<<eq.PageShift-1)+mlx4.EQEOwner, owner); err != nil {
			t.Fatal(err)
		}
	}
	if got := eq.ringProd(); got != 18+uint32(eq.Nent) {
		t.Fatalf("forged ring: producer %d, want %d (one ring on)", got, 18+eq.Nent)
	}
}

// eqRig is a VF with a 16-entry EQ 1 mapped for port changes, n EQEs
// posted, its doorbell word read from *db.
func eqRig(t *testing.T, n int) (*rig, *uint32, [mlx4.EQESize]byte) {
	t.Helper()
	r := newRig(t, 1, nil)
	db := new(uint32)
	r.h.SetDoorbellReader(func(vf, eqn int) (uint32, bool) { return *db, true })
	r.vf(0).setupEQ(1, 4) // 16 entries
	var e [mlx4.EQESize]byte
	for i := range n {
		if err := r.h.PostEQE(0, mlx4.EventPortChange, &e); err != nil {
			t.Fatalf("EQE %d: %v", i, err)
		}
	}
	return r, db, e
}
