package hca

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Every field of the live HCA, its firmware and its per-object and per-VF
// structs is either persistent (a State table, or the embedded XState that
// Image copies whole) or named here with the reason it is not. A field
// added to none of them fails TestStateCoversTheFirmware: decide which it
// is before it can slip out of the checkpoint.
var (
	// firmwareState names the firmware field each State field is kept in.
	firmwareState = map[string]string{
		"MTT": "mtt", "QPs": "qps", "CQs": "cqs", "SRQs": "srqs", "MPTs": "mpts", "EQs": "eqs",
		"Ports": "ports", "VFs": "vfs", "CounterPort": "counterPort", "MCG": "mcg", "NextRegID": "nextRegID",
	}
	transient = map[reflect.Type]map[string]string{
		reflect.TypeFor[HCA](): {
			"Cfg": "configuration: the restarted PF's own", "NumVFs": "configuration", "Funcs": "configuration, resolved per VF",
			"gids": "derived from the configuration at New (each VF's RoCE GID slices)",
			"Res":  "persistent through its own image (restrack.Image, Image.Res)", "fw": "persistent through State",
			"mad": "MAD_IFC's engine, wired by the PF", "madViews": "derived from the configuration",
			"madRec": "capture wiring", "madScratch": "scratch buffer", "eqeScratch": "scratch buffer",
			"dropEvents": "an injected fault's pending drops (faults.go), not firmware state",
			"dp":         "scratch buffer",
			"sched":      "derived: the data path's lists (attached QPs, watched CQs), rebuilt by attach and as CQEs are posted; counters",
			"tptGen":     "derived: the key caches' generation (keycache.go), moved by every command, reset and Load",
			"clock":      "wiring: the data path retries' clock (retry.go), the test rig's hook",
			"cqeScratch": "scratch buffer", "cqRec": "scratch buffer", "compEQE": "scratch buffer",
			"dl":      "wiring: the data path's log in the PF's state file",
			"cqeHook": "wiring: the PF's injected data-path faults (dpfault.go), installed while a rule is armed",
			"fab":     "wiring: the switch the ports are cabled to (SetFabric), the switch's state is the SM's",
			"tun":     "the MAD tunnel's wiring, its queue of datagrams (lost at a kill, as on a wire) and counters",
			"eth":     "the uplink cmd/vhcrd installs and the frame scratch of one send",
		},
		reflect.TypeFor[firmware](): {
			"doorbell": "wiring: the PF's doorbell reader", "irq": "wiring: MSI-X delivery",
			"watch":  "derived: EQs with EQEs pending and not armed, rebuilt as EQEs are posted",
			"posted": "wiring: the PF's EQE observer", "pos": "wiring: the PF's EQ position words",
			"quiet": "replay mode of the restarted PF", "adminChanges": "a counter the PF compares to decide to checkpoint, not state",
			"dmfs": "configuration (flow-steering mode the PF sets)",
		},
		reflect.TypeFor[qpObj]():  {"tr": "link to the tracker object, joined again by Load", "wq": "geometry derived from Ctx and the MTT, rebuilt by Load", "dps": "wiring: its entry in the data path's log, joined again by AttachDataPathLog"},
		reflect.TypeFor[cqObj]():  {"tr": "link to the tracker object", "ring": "derived from Ctx and the MTT, rebuilt by Load", "dps": "wiring: its entry in the data path's log"},
		reflect.TypeFor[srqObj](): {"tr": "link to the tracker object", "q": "ring derived from Ctx and the MTT, rebuilt on first use", "dps": "wiring: its entry in the data path's log"},
		reflect.TypeFor[mptObj](): {"tr": "link to the tracker object", "dec": "derived from Entry (the data path's decoded copy)", "decoded": "whether dec is Entry's"},
		reflect.TypeFor[eqObj](): {
			"tr": "link to the tracker object", "win": "the VF's DMA window, given to Load",
			"dbLast": "the doorbell word last applied: a restarted PF reads every doorbell afresh (RefreshEQs)",
			"intr":   "derived from Ctx (the MSI-X vector)", "always": "derived from Ctx (EQ_STATE_ALWAYS_ARMED)",
			"watched": "membership of firmware.watch",
		},
		reflect.TypeFor[vfFW](): {"stats": "event counters: metrics, carried over by Load", "eng": "engine counters: metrics"},
	}
	// embedsState names the persistent value each live struct embeds.
	embedsState = map[reflect.Type]reflect.Type{
		reflect.TypeFor[qpObj](): reflect.TypeFor[QPState](), reflect.TypeFor[cqObj](): reflect.TypeFor[CQState](),
		reflect.TypeFor[srqObj](): reflect.TypeFor[SRQState](), reflect.TypeFor[mptObj](): reflect.TypeFor[MPTState](),
		reflect.TypeFor[eqObj](): reflect.TypeFor[EQState](), reflect.TypeFor[vfFW](): reflect.TypeFor[VFState](),
	}
	// references are the only maps and slices in State; Image and Load
	// clone each of them.
	references = []string{"MTT", "MTT[]", "QPs", "CQs", "SRQs", "MPTs", "EQs", "EQs[].Pages", "Ports", "VFs", "CounterPort", "MCG", "MCG[]"}
)

func TestStateCoversTheFirmware(t *testing.T) {
	st := reflect.TypeFor[State]()
	fw := reflect.TypeFor[firmware]()
	named := map[string]bool{}
	for f := range st.Fields() {
		in, ok := firmwareState[f.Name]
		if !ok {
			t.Errorf("State.%s is kept in no firmware field (firmwareState)", f.Name)
			continue
		}
		if _, ok := fw.FieldByName(in); !ok {
			t.Errorf("State.%s: firmware has no field %s", f.Name, in)
		}
		named[in] = true
	}
	for ty, tr := range transient {
		for f := range ty.Fields() {
			_, isTransient := tr[f.Name]
			persistent := named[f.Name] && ty == fw || f.Anonymous && f.Type == embedsState[ty]
			if isTransient == persistent {
				t.Errorf("%v.%s: persistent %v, on the transient list %v: exactly one", ty, f.Name, persistent, isTransient)
			}
		}
		for name := range tr {
			if _, ok := ty.FieldByName(name); !ok {
				t.Errorf("transient list of %v names %s, which it does not have", ty, name)
			}
		}
	}
	for ty, s := range embedsState {
		if _, ok := transient[ty]; !ok {
			t.Errorf("%v embeds %v but has no transient list", ty, s)
		}
	}
}

// TestStateIsPlainValues: State holds values a copy does not alias (no
// pointers, functions, channels or interfaces); its maps and slices are
// the listed ones, which Image and Load clone, and every field is
// exported, so gob (the checkpoint's encoding) carries it.
func TestStateIsPlainValues(t *testing.T) {
	var refs []string
	var walk func(path string, ty reflect.Type)
	walk = func(path string, ty reflect.Type) {
		switch ty.Kind() {
		case reflect.Struct:
			for f := range ty.Fields() {
				if !f.IsExported() {
					t.Errorf("%s.%s is unexported: gob drops it", path, f.Name)
				}
				p := f.Name
				if path != "" {
					p = path + "." + f.Name
				}
				walk(p, f.Type)
			}
		case reflect.Array:
			walk(path, ty.Elem())
		case reflect.Slice:
			refs = append(refs, path)
			walk(path+"[]", ty.Elem())
		case reflect.Map:
			refs = append(refs, path)
			walk(path+"[]", ty.Elem())
		case reflect.Pointer, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer, reflect.Uintptr:
			t.Errorf("%s is a %v: a copy would alias it", path, ty.Kind())
		}
	}
	walk("", reflect.TypeFor[State]())
	slices.Sort(refs)
	want := slices.Sorted(slices.Values(references))
	if !slices.Equal(refs, want) {
		t.Errorf("maps and slices in State %q, the cloned ones %q: clone a new one in Image and Load and list it", refs, want)
	}
}

// stateRig is an HCA with every table in use: random command streams of
// the isolation property test from three VFs, and the commands those do
// not reach (VST and spoof check, admin MAC, filters, counters at
// INIT2RTR, SUSPEND_QP, doorbells, the old VLAN API).
func stateRig(t *testing.T, seed uint64) (*propState, *uint32) {
	r := newRig(t, 3, func(c *config.Config) {
		c.Ports[0].LinkLayer, c.Ports[1].LinkLayer = "eth", "eth"
		c.Ports[1].LID = 0
		on := true
		c.VFs.Overrides = map[string]config.VF{"0": {VST: &config.VST{VLAN: 100, QoS: 5}, SpoofCheck: &on}}
	})
	r.h.SetDeviceManagedSteering(true)
	db := new(uint32)
	*db = mlx4.EQ_DOORBELL_ARM
	r.h.SetDoorbellReader(func(vf, eqn int) (uint32, bool) { return *db, true })
	mac := uint64(0x0002c9000102)
	if _, err := r.h.SetVF(2, VFSettingsChange{MAC: &mac}); err != nil {
		t.Fatal(err)
	}
	for vf := range 3 {
		if err := r.h.ActivateVF(vf); err != nil {
			t.Fatal(err)
		}
	}
	p := &propState{t: t, r: r, rnd: rand.New(rand.NewPCG(seed, 7)), mtts: map[uint32]int{}}
	for i := range 3 {
		v := r.vf(i)
		v.setupEQ(1, 6)
		p.vfs = append(p.vfs, v)
	}
	for range 400 {
		p.step(p.vfs[p.rnd.IntN(3)])
	}
	v := p.vfs[1]
	v.must(v.run(v.cmd(mlx4.SET_PORT, 0, mlx4.SET_PORT_GID_TABLE<<mlx4.SetPortTypeShift|1, mlx4.SET_PORT_ETH_OPCODE, roceGIDs(0xfe80, 0x0ac9), false)), "SET_PORT GID_TABLE")
	cq := v.createCQ()
	qpn, q := v.newQP(cq)
	v.must(v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), "RST2INIT")
	q.smac = ownMAC(v)
	q.optpar = mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH
	v.must(v.qpCmd(mlx4.INIT2RTR_QP, qpn, &q), "INIT2RTR")
	v.must(v.qpCmd(mlx4.RTR2RTS_QP, qpn, &q), "RTR2RTS")
	v.must(v.qpCmd(mlx4.SUSPEND_QP, qpn, nil), "SUSPEND_QP")
	// The data path's positions, as traffic leaves them (sq_test.go moves
	// them for real): the image must carry them.
	r.h.fw.qps[qpn].SQHead, r.h.fw.qps[qpn].RQHead = 5, 3
	fltr := make([]byte, 512)
	binary.BigEndian.PutUint32(fltr[8:], 0x10)
	v.must(v.run(v.cmd(mlx4.SET_VLAN_FLTR, 0, 2, 0, fltr, false)), "SET_VLAN_FLTR")
	v.must(v.run(v.cmd(mlx4.SET_MCAST_FLTR, 0, 2, 1, nil, false)), "SET_MCAST_FLTR")
	v.must(v.run(v.cmd(mlx4.INIT_PORT, 0, 1, 0, nil, false)), "INIT_PORT")
	old := v.cmd(mlx4.ALLOC_RES, 0, uint32(restrack.VLAN), resOpReserveAndMap, nil, false)
	old.OutParam = 2 // the old API names the port in out_param
	v.must(v.run(old), "ALLOC_RES VLAN (old API)")
	mac++
	if _, err := r.h.SetVF(2, VFSettingsChange{MAC: &mac}); err != nil {
		t.Fatal(err)
	}
	srq := v.createSRQ()
	v.must(v.run(v.cmd(mlx4.ARM_SRQ, 9, srq, 0, nil, false)), "ARM_SRQ")
	r.h.fw.srqs[srq].Head, r.h.fw.srqs[srq].Taken = 7, 2
	gid := make([]byte, 16)
	gid[5], gid[15] = 1, 1 // an Ethernet group: its port in byte 5
	v.must(v.run(v.cmd(mlx4.QP_ATTACH, 0, qpn, 1, gid, false)), "QP_ATTACH")
	v.must(v.run(v.cmd(mlx4.PROMISC, uint64(qpn)|2<<62, 1, 1, nil, false)), "PROMISC")
	vstQP(t, p.vfs[0])
	if _, err := r.h.PortChange(1, 4); err != nil {
		t.Fatal(err)
	}
	*db = mlx4.EQ_DOORBELL_ARM | 1
	r.h.RefreshEQs()
	v.must(v.createEQ(5, 3), "SW2HW_EQ") // its word at creation stays stale
	exerciseCQ(t, r.h, cq)
	return p, db
}

// vstQP takes a new UD QP of v (a VST VF) to RTR, which rewrites its
// context.
func vstQP(t *testing.T, v *vf) {
	t.Helper()
	cq := v.createCQ()
	qpn, q := v.newQP(cq)
	q.st = mlx4.QP_ST_UD
	v.must(v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), "RST2INIT")
	q.smac = ownMAC(v)
	v.must(v.run(v.cmd(mlx4.INIT2RTR_QP, 0, qpn, 0, q.bytes(), false)), "INIT2RTR")
}

// ownMAC registers a MAC of v on its port 1 and returns its index, as
// mlx4_ib does for a RoCE QP's source MAC.
func ownMAC(v *vf) uint8 {
	c := v.cmd(mlx4.ALLOC_RES, 0x0002c9aabb00+uint64(v.n), uint32(restrack.MAC)|1<<8, resOpReserveAndMap, nil, false)
	v.must(v.run(c), "MAC")
	return uint8(c.OutParam)
}

// TestImageRoundTripEveryTable: an HCA with every table in use, saved
// through gob as a checkpoint is and loaded into a fresh HCA, holds the
// same State and tracker image; the saved image shares nothing with the
// live HCA (later commands leave it as it was); and the same next
// commands give the same results and the same state on both.
func TestImageRoundTripEveryTable(t *testing.T) {
	const seed = 3
	pa, db := stateRig(t, seed)
	a := pa.r
	im := a.h.Image()
	exercised(t, im)
	saved := encode(t, im)

	b := newRig(t, 3, func(c *config.Config) { *c = *a.h.Cfg })
	b.sp = a.sp // the VFs' memory survives the PF
	b.h.SetDeviceManagedSteering(true)
	b.h.SetDoorbellReader(func(vf, eqn int) (uint32, bool) { return *db, true })
	win := func(vf int) *dma.Window { w, _ := a.sp.Window(vf); return w }
	if err := b.h.Load(decode(t, saved), win); err != nil {
		t.Fatal(err)
	}
	if got, want := decode(t, encode(t, b.h.Image())), decode(t, saved); !reflect.DeepEqual(got, want) {
		t.Fatal("the loaded HCA's image differs from the saved one")
	}

	// The same commands on both, from the same random stream.
	pb := &propState{t: t, r: b, ids: pa.ids, mtts: maps.Clone(pa.mtts), rules: slices.Clone(pa.rules)}
	for i := range pa.ids {
		pb.ids[i] = slices.Clone(pa.ids[i])
	}
	for _, v := range pa.vfs {
		pb.vfs = append(pb.vfs, &vf{r: b, n: v.n, w: v.w, eq: v.eq, page: v.page})
	}
	pa.rnd, pb.rnd = rand.New(rand.NewPCG(seed, 8)), rand.New(rand.NewPCG(seed, 8))
	for step := range 300 {
		vi := pa.rnd.IntN(3)
		if vj := pb.rnd.IntN(3); vi != vj {
			t.Fatalf("step %d: the streams diverged", step)
		}
		opA, sA, _ := pa.step(pa.vfs[vi])
		opB, sB, _ := pb.step(pb.vfs[vi])
		if opA != opB || sA != sB {
			t.Fatalf("step %d, VF %d: %v %v without the restart, %v %v after it", step, vi, opA, sA, opB, sB)
		}
	}
	if _, err := a.h.PortChange(1, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := b.h.PortChange(1, 4); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decode(t, encode(t, a.h.Image())), decode(t, encode(t, b.h.Image()))) {
		t.Fatal("the same commands left different states")
	}
	if !reflect.DeepEqual(decode(t, encode(t, im)), decode(t, saved)) {
		t.Fatal("the saved image changed with the live HCA: it aliases its state")
	}
}

func encode(t *testing.T, im *Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(im); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func decode(t *testing.T, b []byte) *Image {
	t.Helper()
	var im Image
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&im); err != nil {
		t.Fatal(err)
	}
	return &im
}

// exercised fails for every field of the State that holds its zero value
// in all of im's entries: a table or field the round trip would not prove.
func exercised(t *testing.T, im *Image) {
	t.Helper()
	var walk func(path string, vs []reflect.Value)
	walk = func(path string, vs []reflect.Value) {
		if len(vs) == 0 {
			t.Errorf("%s: no entries", path)
			return
		}
		switch vs[0].Kind() {
		case reflect.Struct:
			for i := range vs[0].NumField() {
				var fs []reflect.Value
				for _, v := range vs {
					fs = append(fs, v.Field(i))
				}
				walk(path+"."+vs[0].Type().Field(i).Name, fs)
			}
			return
		case reflect.Array, reflect.Slice, reflect.Map:
			if k := vs[0].Type().Elem().Kind(); k == reflect.Struct || k == reflect.Array && vs[0].Type().Elem().Elem().Kind() == reflect.Struct {
				var es []reflect.Value
				for _, v := range vs {
					if v.Kind() == reflect.Map {
						for it := v.MapRange(); it.Next(); {
							es = append(es, it.Value())
						}
					} else {
						for i := range v.Len() {
							es = append(es, v.Index(i))
						}
					}
				}
				walk(path+"[]", es)
				return
			}
		}
		for _, v := range vs {
			if !v.IsZero() && (v.Kind() != reflect.Map && v.Kind() != reflect.Slice || v.Len() > 0) {
				return
			}
		}
		t.Errorf("%s is zero (or empty) everywhere: the test does not exercise it", path)
	}
	walk("State", []reflect.Value{reflect.ValueOf(im.State)})
}
