package restrack

import "fmt"

// An Image is the tracker's whole state as plain values, for the PF's state
// file: every object with its owner, state, move in progress and the
// objects it holds references on; each VF's lists in their order (the
// release order at reset); the quota pools and the number allocators with
// their hints, so that a tracker loaded from an image hands out the numbers
// the saved one would have.
type Image struct {
	Objects []ObjectImage // each VF's lists in order: VF, then type, then list order
	Pools   [NumTypes][]PoolImage
	Nums    [NumTypes]BitmapImage
}

// ObjectImage is one object; Deps index Objects.
type ObjectImage struct {
	Type     Type
	ID       uint64
	Owner    int
	State    State
	Refs     int
	Order    uint8
	Port     uint8
	Index    int
	Value    uint64
	Special  bool
	From, To State
	Deps     []int
}

// PoolImage is one quota pool.
type PoolImage struct {
	Quota, Guaranteed, Allocated []int
	Free, Reserved               int
}

// BitmapImage is one number allocator.
type BitmapImage struct {
	Words []uint64
	Hint  int
}

// Image returns the tracker's state.
func (t *Tracker) Image() *Image {
	im := &Image{}
	index := map[*Object]int{}
	for vf := range t.vfs {
		for ty := range t.vfs[vf].head {
			for o := t.vfs[vf].head[ty]; o != nil; o = o.next {
				index[o] = len(im.Objects)
				im.Objects = append(im.Objects, ObjectImage{Type: o.Type, ID: o.ID, Owner: o.Owner, State: o.State, Refs: o.Refs,
					Order: o.Order, Port: o.Port, Index: o.Index, Value: o.Value, Special: o.Special, From: o.from, To: o.to})
			}
		}
	}
	for vf := range t.vfs {
		for ty := range t.vfs[vf].head {
			for o := t.vfs[vf].head[ty]; o != nil; o = o.next {
				oi := &im.Objects[index[o]]
				for _, d := range o.Deps() {
					oi.Deps = append(oi.Deps, index[d])
				}
			}
		}
	}
	for ty := range t.pools {
		for _, p := range t.pools[ty] {
			im.Pools[ty] = append(im.Pools[ty], PoolImage{Quota: append([]int(nil), p.quota...), Guaranteed: append([]int(nil), p.guaranteed...),
				Allocated: append([]int(nil), p.allocated...), Free: p.free, Reserved: p.reserved})
		}
	}
	for ty := range t.nums {
		b := &t.nums[ty]
		im.Nums[ty] = BitmapImage{Words: append([]uint64(nil), b.w...), Hint: b.hint}
	}
	return im
}

// Load replaces the tracker's state with im, which must describe a tracker
// of the same configuration (VF and port counts, number spaces); an image
// that does not is refused with ErrInvalid and the tracker is unchanged.
//
// The stages: the image's shape against the tracker's (checkImageShape), its
// objects and their references (loadObjects), the per-VF lists
// (vfLists), then the swap of objects, pools and number spaces.
func (t *Tracker) Load(im *Image) error {
	if err := t.checkImageShape(im); err != nil {
		return err
	}
	objs, maps, err := loadObjects(im, len(t.vfs))
	if err != nil {
		return err
	}
	t.objs, t.vfs = maps, vfLists(objs, len(t.vfs))
	for ty := range t.pools {
		for i, p := range im.Pools[ty] {
			t.pools[ty][i] = pool{quota: append([]int(nil), p.Quota...), guaranteed: append([]int(nil), p.Guaranteed...),
				allocated: append([]int(nil), p.Allocated...), free: p.Free, reserved: p.Reserved}
		}
	}
	for ty := range t.nums {
		copy(t.nums[ty].w, im.Nums[ty].Words)
		t.nums[ty].hint = im.Nums[ty].Hint
	}
	return nil
}

func badImage(f string, a ...any) error {
	return fmt.Errorf("restrack: image: "+f+": %w", append(a, ErrInvalid)...)
}

// checkImageShape checks that the image's pools and number spaces are
// those of this tracker's configuration.
func (t *Tracker) checkImageShape(im *Image) error {
	for ty := range t.pools {
		if len(im.Pools[ty]) != len(t.pools[ty]) {
			return badImage("%v: %d pools, want %d", Type(ty), len(im.Pools[ty]), len(t.pools[ty]))
		}
		for _, p := range im.Pools[ty] {
			n := len(t.vfs)
			if len(p.Quota) != n || len(p.Guaranteed) != n || len(p.Allocated) != n {
				return badImage("%v: pool for another VF count", Type(ty))
			}
		}
	}
	for ty := range t.nums {
		b := &t.nums[ty]
		if len(im.Nums[ty].Words) != len(b.w) || im.Nums[ty].Hint < 0 || im.Nums[ty].Hint > b.n {
			return badImage("%v: number space of another size", Type(ty))
		}
	}
	return nil
}

// loadObjects builds the image's objects (in image order) and the per-type
// maps, and joins each object's references (indices into the image).
func loadObjects(im *Image, nvf int) ([]*Object, [NumTypes]map[uint64]*Object, error) {
	objs := make([]*Object, len(im.Objects))
	var maps [NumTypes]map[uint64]*Object
	for i := range maps {
		maps[i] = make(map[uint64]*Object)
	}
	for i, oi := range im.Objects {
		if int(oi.Type) >= NumTypes || oi.Owner < 0 || oi.Owner >= nvf || len(oi.Deps) > len(Object{}.deps) {
			return nil, maps, badImage("object %d: type %d owner %d deps %d", i, oi.Type, oi.Owner, len(oi.Deps))
		}
		if _, dup := maps[oi.Type][oi.ID]; dup {
			return nil, maps, badImage("%v %#x twice", oi.Type, oi.ID)
		}
		o := &Object{Type: oi.Type, ID: oi.ID, Owner: oi.Owner, State: oi.State, Refs: oi.Refs, Order: oi.Order, Port: oi.Port,
			Index: oi.Index, Value: oi.Value, Special: oi.Special, from: oi.From, to: oi.To}
		objs[i] = o
		maps[oi.Type][oi.ID] = o
	}
	for i, oi := range im.Objects {
		for _, d := range oi.Deps {
			if d < 0 || d >= len(objs) {
				return nil, maps, badImage("object %d: reference to %d", i, d)
			}
			objs[i].deps[objs[i].ndeps] = objs[d]
			objs[i].ndeps++
		}
	}
	return objs, maps, nil
}

// vfLists links the objects into their owners' per-type lists, in image
// order, and counts them.
func vfLists(objs []*Object, nvf int) []vfResources {
	vfs := make([]vfResources, nvf)
	tails := make([][NumTypes]*Object, nvf)
	for _, o := range objs {
		s := &vfs[o.Owner]
		if tail := tails[o.Owner][o.Type]; tail != nil {
			tail.next, o.prev = o, tail
		} else {
			s.head[o.Type] = o
		}
		tails[o.Owner][o.Type] = o
		s.counts[o.Type]++
	}
	return vfs
}
