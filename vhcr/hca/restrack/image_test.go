package restrack

import (
	"errors"
	"reflect"
	"testing"
)

// A tracker loaded from another's image holds the same objects under the
// same numbers and hands out the same next numbers.
func TestImageRoundTrip(t *testing.T) {
	a := newTracker(t, 2)
	cq, err := a.Alloc(0, CQ)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Alloc(1, CQ); err != nil {
		t.Fatal(err)
	}
	mtt, err := a.AllocMTT(0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(1, CQ, uint64(cq)+1); err != nil {
		t.Fatal(err)
	}
	o, err := a.Get(0, CQ, uint64(cq))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := a.Peek(0, MTT, uint64(mtt))
	if err := a.AddDep(o, m); err != nil {
		t.Fatal(err)
	}
	a.Put(o)
	b := newTracker(t, 2)
	if err := b.Load(a.Image()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Image(), b.Image()) {
		t.Fatal("image of the loaded tracker differs")
	}
	bo, err := b.Peek(0, CQ, uint64(cq))
	if err != nil || len(bo.Deps()) != 1 || bo.Deps()[0].ID != uint64(mtt) {
		t.Fatalf("CQ %#x after load: %v, deps %v", cq, err, bo)
	}
	na, _ := a.Alloc(0, CQ)
	nb, _ := b.Alloc(0, CQ)
	if na != nb {
		t.Fatalf("next CQ %d after load, %d before", nb, na)
	}
	if a.Counts(0) != b.Counts(0) {
		t.Fatalf("counts %v, want %v", b.Counts(0), a.Counts(0))
	}
}

func TestImageOtherConfigRefused(t *testing.T) {
	a := newTracker(t, 2)
	b := newTracker(t, 3)
	if err := b.Load(a.Image()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("load of another VF count: %v", err)
	}
	im := a.Image()
	im.Objects = append(im.Objects, ObjectImage{Type: CQ, Owner: 7})
	if err := a.Load(im); !errors.Is(err, ErrInvalid) {
		t.Fatalf("object of VF 7: %v", err)
	}
}
