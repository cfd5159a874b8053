package capture_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/hack/testenv"
	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/capture"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

var be = binary.BigEndian

type scenario struct {
	path    string
	records [][]byte // packets as written (without the PDU header)
	traps   []mad.Trap
}

// recordSink keeps traps for comparison and passes them on.
type recordSink struct {
	next  mad.TrapSink
	traps *[]mad.Trap
}

func (r recordSink) SendTrap(t mad.Trap) { *r.traps = append(*r.traps, t); r.next.SendTrap(t) }

func grh() *mad.GRH {
	return &mad.GRH{IPVer: 6, NextHeader: 0x1B, HopLimit: 64,
		SGID: madtest.GID(0xfe80000000000000, 0x0002c90300000007), DGID: madtest.GID(0xfe80000000000000, 0x0002c90300a0b0c1)}
}

// run drives an engine through a Tap: a SubnGet(NodeInfo), a SubnSet with a
// bad M_Key (trap 256), a P_Key-violating PerfMgt Get with a GRH (trap
// 257), a Q_Key violation (trap 258), a PortCounters Get and a BM Set with
// a bad B_Key (trap 259).
func run(t *testing.T) *scenario {
	t.Helper()
	s := &scenario{path: filepath.Join(t.TempDir(), "mads.pcap")}
	f, err := os.Create(s.path)
	if err != nil {
		t.Fatal(err)
	}
	clock := madtest.NewClock()
	w, err := capture.NewWriter(f, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	cfg := madtest.Node()
	cfg.Ports[0].MKey, cfg.Ports[0].MKeyProtect = 0x1111222233334444, 1
	cfg.Ports[0].BKey = 0xB0B0
	e, err := mad.New(cfg, mad.Options{Now: clock.Now, Sink: mad.TrapSinks{recordSink{w, &s.traps}}})
	if err != nil {
		t.Fatal(err)
	}
	tap := &capture.Tap{Engine: e, W: w}
	step := func(wc *mad.WC, g *mad.GRH, in *mad.MAD) {
		clock.Advance(time.Millisecond)
		tap.ProcessMAD(0, 1, wc, g, in)
	}
	step(madtest.SMIWC(1), nil, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil))
	step(madtest.SMIWC(0x33), nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0xBAD, nil))
	wc := madtest.GSIWC(0x21, 3)
	wc.GRHPresent = true
	step(wc, grh(), madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	wc = madtest.GSIWC(0x22, 1)
	wc.QKey, wc.QKeyValid = 0x1234, true
	step(wc, nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	step(madtest.GSIWC(0x23, 0), nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	wc = madtest.GSIWC(0x24, 0)
	wc.GRHPresent = true
	step(wc, grh(), madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0x5A, 0xBAD, nil))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s.records = readPcap(t, s.path)
	return s
}

// readPcap parses the file with the package's own expectations of the
// format and returns each record's packet (after the exported-PDU header).
func readPcap(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if len(b) < 24 || le.Uint32(b) != 0xa1b2c3d4 || le.Uint32(b[20:]) != capture.LinkTypeUpperPDU {
		t.Fatalf("bad pcap header % x", b[:min(24, len(b))])
	}
	var recs [][]byte
	for off := 24; off < len(b); {
		n := int(le.Uint32(b[off+8:]))
		rec := b[off+16 : off+16+n]
		if !bytes.HasPrefix(rec, []byte("\x00\x0c\x00\x0cinfiniband\x00\x00\x00\x00\x00\x00")) {
			t.Fatalf("record %d: exported-PDU header % x", len(recs), rec[:20])
		}
		recs = append(recs, rec[20:])
		off += 16 + n
	}
	return recs
}

// madOf returns the MAD inside a packet.
func madOf(t *testing.T, pkt []byte) *mad.MAD {
	t.Helper()
	off := capture.LRHSize
	if pkt[1]&3 == 3 {
		off += mad.GRHSize
	}
	off += capture.BTHSize + capture.DETHSize
	m, err := mad.DecodeMAD(pkt[off : off+mad.Size])
	if err != nil {
		t.Fatal(err)
	}
	return &m
}

func TestCaptureRecords(t *testing.T) {
	s := run(t)
	// req+reply, req+trap256, req(GRH)+trap257, req+trap258, req+reply, req+trap259
	if len(s.records) != 12 || len(s.traps) != 4 {
		t.Fatalf("%d records, %d traps", len(s.records), len(s.traps))
	}
	for i, pkt := range s.records {
		lnh := pkt[1] & 3
		want := 72
		if lnh == 3 {
			want = 82
		}
		if words := int(be.Uint16(pkt[4:]) & 0x7FF); words != want || len(pkt) != words*4+2 {
			t.Fatalf("record %d: PktLen %d, length %d", i, words, len(pkt))
		}
	}
	// The BM trap 259: tshark shows only its header, so check it with the
	// package's own decoder.
	m := madOf(t, s.records[11])
	if m.MgmtClass() != mad.ClassBM || m.Method() != mad.MethodTrap {
		t.Fatalf("record 11 class 0x%x method 0x%x", m.MgmtClass(), m.Method())
	}
	var n mad.Notice
	if err := n.DecodeGS(m.GSData()); err != nil {
		t.Fatal(err)
	}
	var d mad.Trap259BKey
	_ = d.Decode(n.Details[:])
	want := mad.Trap259BKey{LIDAddr: 0x24, Method: mad.MethodSet, AttrID: mad.AttrBKeyInfo, AttrMod: 0x5A, QP: 0x45, BKey: 0xBAD, GIDAddr: grh().SGID}
	if n.TrapNum != 259 || d != want || *m != s.traps[3].MAD {
		t.Fatalf("trap 259 %+v", d)
	}
	pkt := s.records[11]
	if be.Uint16(pkt[2:]) != 1 || be.Uint16(pkt[6:]) != 5 || be.Uint32(pkt[8+4:])&0xFFFFFF != 1 || be.Uint32(pkt[20:]) != mad.QP1QKey {
		t.Fatalf("trap 259 addressing % x", pkt[:28])
	}
}

// TestCaptureTshark reads the capture with tshark, an independent decoder,
// and compares its fields with what the engine did.
func TestCaptureTshark(t *testing.T) {
	testenv.LookPath(t, "tshark", "tshark")
	s := run(t)
	fields := []string{"frame.number", "infiniband.lrh.slid", "infiniband.lrh.dlid", "infiniband.bth.destqp",
		"infiniband.mad.mgmtclass", "infiniband.mad.method", "infiniband.mad.attributeid", "infiniband.mad.attributemodifier",
		"infiniband.mad.transactionid", "infiniband.notice.trapnumberdeviceid", "infiniband.notice.issuerlid",
		"infiniband.trap.lidaddr", "infiniband.trap.mkey", "infiniband.trap.lidaddr1", "infiniband.trap.lidaddr2",
		"infiniband.trap.key", "infiniband.trap.sl", "infiniband.trap.qp1", "infiniband.trap.gidaddr1",
		"infiniband.nodeinfo.nodeguid", "infiniband.portcounters.portselect"}
	args := []string{"-r", s.path, "-T", "fields", "-E", "separator=,"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command("timeout", append([]string{"60", "tshark"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(s.records) {
		t.Fatalf("tshark printed %d lines for %d records:\n%s", len(lines), len(s.records), out)
	}
	rows := make([]map[string]string, len(lines))
	for i, l := range lines {
		cols := strings.Split(l, ",")
		rows[i] = map[string]string{}
		for j, f := range fields {
			if j < len(cols) {
				rows[i][f] = cols[j]
			}
		}
	}
	t.Logf("tshark:\n%s", out)
	check := func(row int, kv ...string) {
		t.Helper()
		for i := 0; i+1 < len(kv); i += 2 {
			if got := rows[row][kv[i]]; got != kv[i+1] {
				t.Errorf("frame %d %s = %q, want %q", row+1, kv[i], got, kv[i+1])
			}
		}
	}
	check(0, "infiniband.lrh.slid", "1", "infiniband.lrh.dlid", "5", "infiniband.mad.mgmtclass", "0x01",
		"infiniband.mad.method", "0x01", "infiniband.mad.attributeid", "0x0011")
	check(1, "infiniband.lrh.slid", "5", "infiniband.lrh.dlid", "1", "infiniband.mad.method", "0x81",
		"infiniband.nodeinfo.nodeguid", "0x0002c90300a0b0c0", "infiniband.mad.transactionid", "0x0000000000001234")
	// Trap 256 to the SM (LID 1) on QP0 with the offending SMP's fields.
	check(2, "infiniband.lrh.slid", "51", "infiniband.mad.method", "0x02", "infiniband.mad.attributemodifier", "0x00000001")
	check(3, "infiniband.lrh.slid", "5", "infiniband.lrh.dlid", "1", "infiniband.bth.destqp", "0x000000",
		"infiniband.mad.method", "0x05", "infiniband.mad.attributeid", "0x0002",
		"infiniband.notice.trapnumberdeviceid", "0x0100", "infiniband.notice.issuerlid", "0x0005",
		"infiniband.trap.lidaddr", "0x0033", "infiniband.trap.mkey", "0x0000000000000bad")
	// Trap 257: both LIDs, key, SL, QP1 and the requester's GID.
	check(5, "infiniband.notice.trapnumberdeviceid", "0x0101", "infiniband.trap.lidaddr1", "0x0021",
		"infiniband.trap.lidaddr2", "0x0005", "infiniband.trap.key", "0x00000000", "infiniband.trap.sl", "0x03",
		"infiniband.trap.qp1", "0x000045", "infiniband.trap.gidaddr1", "fe80::2:c903:0:7")
	// Trap 258.
	check(7, "infiniband.notice.trapnumberdeviceid", "0x0102", "infiniband.trap.lidaddr1", "0x0022",
		"infiniband.trap.key", "0x00001234")
	check(8, "infiniband.mad.mgmtclass", "0x04", "infiniband.bth.destqp", "0x000001", "infiniband.portcounters.portselect", "0x01")
	check(9, "infiniband.mad.method", "0x81", "infiniband.lrh.dlid", "35")
	// BM trap: header only.
	check(11, "infiniband.mad.mgmtclass", "0x05", "infiniband.mad.method", "0x05", "infiniband.mad.attributeid", "0x0002",
		"infiniband.lrh.dlid", "1", "infiniband.bth.destqp", "0x000001")
}
