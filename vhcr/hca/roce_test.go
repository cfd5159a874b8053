package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// roceGIDs is a SET_PORT GID_TABLE mailbox whose entry i is the GID with
// prefix word firsts[i] and interface ID i+1 (0 firsts: an empty entry).
func roceGIDs(firsts ...uint16) []byte {
	b := make([]byte, mlx4.ROCE_MAX_GIDS*mlx4.ROCE_GID_ENTRY_SIZE)
	for i, f := range firsts {
		if f != 0 {
			binary.BigEndian.PutUint16(b[i*16:], f)
			binary.BigEndian.PutUint64(b[i*16+8:], uint64(i+1))
		}
	}
	return b
}

func setGIDs(v *vf, port uint32, inbox []byte) (mlx4.Status, refusal.Reason) {
	c := v.cmd(mlx4.SET_PORT, 0, mlx4.SET_PORT_GID_TABLE<<mlx4.SetPortTypeShift|port, mlx4.SET_PORT_ETH_OPCODE, inbox, false)
	s := v.r.h.Exec(c)
	return s, c.Reason
}

// TestGIDSlices: the VFs' slices of an Ethernet port's RoCE GID table are
// Linux's (mlx4_get_slave_num_gids, mlx4_get_base_gid_ix): after the PF's
// 16, 112 shared, the first 112 mod n VFs one more; QUERY_PORT reports
// the VF's count, 1 on IB.
func TestGIDSlices(t *testing.T) {
	for _, c := range []struct {
		vfs         int
		base, n     []int
		description string
	}{
		{2, []int{16, 72}, []int{56, 56}, "two VFs"},
		{3, []int{16, 54, 91}, []int{38, 37, 37}, "three: 112 = 38+37+37"},
		{126, []int{16, 17, 128}, []int{1, 1, 0}, "126 VFs: 112 of them one GID, the rest none"},
	} {
		r := newRig(t, c.vfs, func(cfg *config.Config) { cfg.Ports[0].LinkLayer = "eth" })
		for i, vf := range []int{0, 1, c.vfs - 1} {
			if i >= len(c.base) {
				break
			}
			b, n := r.h.gidSlice(vf, 1)
			if b != c.base[i] || n != c.n[i] {
				t.Errorf("%s: VF %d's slice %d+%d, want %d+%d", c.description, vf, b, n, c.base[i], c.n[i])
			}
		}
	}
	r := newRig(t, 3, func(cfg *config.Config) { cfg.Ports[0].LinkLayer = "eth" })
	v := r.vf(1)
	c := v.cmd(mlx4.QUERY_PORT, 0, 1, 0, nil, true)
	v.must(v.run(c), "QUERY_PORT 1")
	if n := binary.BigEndian.Uint16(c.Outbox[mlx4.QUERY_PORT_CUR_MAX_GID_OFFSET:]); n != 37 {
		t.Errorf("QUERY_PORT of the Ethernet port: %d GIDs, want 37", n)
	}
	c = v.cmd(mlx4.QUERY_PORT, 0, 2, 0, nil, true)
	v.must(v.run(c), "QUERY_PORT 2")
	if n := binary.BigEndian.Uint16(c.Outbox[mlx4.QUERY_PORT_CUR_MAX_GID_OFFSET:]); n != 1 {
		t.Errorf("QUERY_PORT of the IB port: %d GIDs, want 1", n)
	}
}

// TestSetPortGIDTable: a VF's SET_PORT GID_TABLE fills its slice and only
// it; a duplicate inside its entries, or of a GID another VF has, is
// BAD_PARAM and changes nothing; an IB port's GID table, other Ethernet
// SET_PORT types and an IB capability mask with IsSM are refused as
// Linux's PF refuses them; the VF's reset empties its slice.
func TestSetPortGIDTable(t *testing.T) {
	r := newRig(t, 2, func(cfg *config.Config) { cfg.Ports[0].LinkLayer = "eth" })
	v0, v1 := r.vf(0), r.vf(1)
	if s, why := setGIDs(v0, 1, roceGIDs(0xfe80, 0, 0x0a4f)); s != mlx4.OK {
		t.Fatalf("VF 0's GIDs: %v (%v)", s, why)
	}
	g := r.h.RoCEGID(1, 16)
	if binary.BigEndian.Uint16(g[:]) != 0xfe80 || r.h.RoCEGID(1, 18)[1] != 0x4f || r.h.RoCEGID(1, 17) != [16]byte{} || r.h.RoCEGID(1, 72) != [16]byte{} {
		t.Fatalf("VF 0's slice: % x", g)
	}
	// VF 1 with VF 0's GID at another index: a duplicate of the table's.
	theirs := roceGIDs()
	g0 := r.h.RoCEGID(1, 16)
	copy(theirs[2*16:], g0[:])
	if s, why := setGIDs(v1, 1, theirs); s != mlx4.BAD_PARAM || why != refusal.GID {
		t.Errorf("VF 1 with VF 0's GID: %v (%v), want BAD_PARAM gid", s, why)
	}
	if s, _ := setGIDs(v1, 1, roceGIDs(0x0a4f, 0x0a4f)); s != mlx4.OK {
		// Different interface IDs (i+1): not duplicates.
		t.Errorf("VF 1's two GIDs: %v", s)
	}
	dup := roceGIDs(0xfe80)
	copy(dup[5*16:6*16], dup[:16])
	dup[0] = 0xfd
	copy(dup[7*16:8*16], dup[:16])
	if s, why := setGIDs(v1, 1, dup); s != mlx4.BAD_PARAM || why != refusal.GID {
		t.Errorf("a duplicate among the VF's own entries: %v (%v)", s, why)
	}
	if r.h.RoCEGID(1, 72)[0] != 0x0a {
		t.Fatal("a refused GID_TABLE changed the VF's slice")
	}
	for _, c := range []struct {
		what  string
		inMod uint32
		opMod uint8
		inbox []byte
		want  mlx4.Status
	}{
		{"RQP_CALC", mlx4.SET_PORT_RQP_CALC<<mlx4.SetPortTypeShift | 1, mlx4.SET_PORT_ETH_OPCODE, roceGIDs(), mlx4.BAD_PARAM},
		{"GENERAL (the VF's MTU)", mlx4.SET_PORT_GENERAL<<mlx4.SetPortTypeShift | 1, mlx4.SET_PORT_ETH_OPCODE, roceGIDs(), mlx4.OK},
		{"GID_TABLE on the IB port", mlx4.SET_PORT_GID_TABLE<<mlx4.SetPortTypeShift | 2, mlx4.SET_PORT_ETH_OPCODE, roceGIDs(0xfe80), mlx4.BAD_PARAM},
		{"IB with IsSM", 2, 0, binary.BigEndian.AppendUint32(make([]byte, 4), mlx4.PORT_CAP_IS_SM), mlx4.BAD_PARAM},
		{"IB with IsCM", 2, 0, binary.BigEndian.AppendUint32(make([]byte, 4), 1<<16), mlx4.OK},
		{"a port the VF lacks", 3, 0, roceGIDs(), mlx4.BAD_PARAM},
	} {
		if s := v0.run(v0.cmd(mlx4.SET_PORT, 0, c.inMod, c.opMod, c.inbox, false)); s != c.want {
			t.Errorf("SET_PORT %s: %v, want %v", c.what, s, c.want)
		}
	}
	r.h.ResetFunction(0)
	if r.h.RoCEGID(1, 16) != [16]byte{} || r.h.RoCEGID(1, 72)[0] != 0x0a {
		t.Fatal("VF 0's reset did not empty its slice alone")
	}
}
