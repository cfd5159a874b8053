package ibsim_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/hack/testenv"
	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/capture"
	"github.com/vhcrd/vhcrd/mad/ibsim"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

var (
	le  = binary.LittleEndian
	be  = binary.BigEndian
	seq atomic.Int32
)

func start(t *testing.T, mutate func(*mad.NodeConfig)) (*mad.Engine, string) {
	t.Helper()
	cfg := madtest.Node()
	cfg.Ports[0].LID = 5
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := mad.New(cfg, mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("vhcrdtest%d-%d", os.Getpid(), seq.Add(1))
	s, err := ibsim.Listen(name, e, ibsim.Options{NodeID: "model-hca"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return e, name
}

func addr(name string) *net.UnixAddr {
	return &net.UnixAddr{Name: "@" + name + "\x00", Net: "unixgram"}
}

// fakeClient speaks the client side of the protocol, as sim_client.c does.
type fakeClient struct {
	ctl, data *net.UnixConn
	id        uint32
}

func dial(t *testing.T, name string) *fakeClient { return dialSM(t, name, false) }

func dialSM(t *testing.T, name string, issm bool) *fakeClient {
	t.Helper()
	pid := 900000 + int(seq.Add(1))
	ctl, err := net.ListenUnixgram("unixgram", addr(fmt.Sprintf("%s:ctl%d", name, pid)))
	if err != nil {
		t.Fatal(err)
	}
	data, err := net.ListenUnixgram("unixgram", addr(fmt.Sprintf("%s:in%d", name, pid)))
	if err != nil {
		t.Fatal(err)
	}
	c := &fakeClient{ctl: ctl, data: data}
	t.Cleanup(func() { ctl.Close(); data.Close() })
	info := make([]byte, 44)
	le.PutUint32(info, uint32(pid))
	if issm {
		le.PutUint32(info[8:], 1)
	}
	reply := c.call(t, name, 1, info)
	c.id = le.Uint32(reply[16:])
	if got := strings.TrimRight(string(reply[28:60]), "\x00"); got != "model-hca" {
		t.Fatalf("node id %q", got)
	}
	return c
}

func (c *fakeClient) call(t *testing.T, name string, typ uint32, data []byte) []byte {
	t.Helper()
	msg := make([]byte, 80)
	le.PutUint32(msg[0:], 0xDEADBEEF)
	le.PutUint32(msg[4:], c.id)
	le.PutUint32(msg[8:], typ)
	le.PutUint32(msg[12:], uint32(len(data)))
	copy(msg[16:], data)
	if _, err := c.ctl.WriteToUnix(msg, addr(name+":ctl")); err != nil {
		t.Fatal(err)
	}
	_ = c.ctl.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.ctl.Read(msg)
	if err != nil || n != 80 {
		t.Fatalf("ctl reply: %d %v", n, err)
	}
	if le.Uint32(msg[8:]) != typ {
		t.Fatalf("ctl type %d reply type %d", typ, le.Uint32(msg[8:]))
	}
	return msg
}

func (c *fakeClient) mad(t *testing.T, name string, dlid uint16, dqp uint32, m *mad.MAD) (status uint32, slid uint16, out mad.MAD) {
	t.Helper()
	req := make([]byte, 288)
	be.PutUint16(req[0:], dlid)
	be.PutUint32(req[8:], dqp)
	be.PutUint32(req[12:], dqp)
	be.PutUint64(req[24:], 256)
	copy(req[32:], m[:])
	if _, err := c.data.WriteToUnix(req, addr(fmt.Sprintf("%s:out%d", name, c.id))); err != nil {
		t.Fatal(err)
	}
	_ = c.data.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.data.Read(req)
	if err != nil || n != 288 {
		t.Fatalf("reply: %d %v", n, err)
	}
	copy(out[:], req[32:])
	return be.Uint32(req[16:]), be.Uint16(req[4:]), out
}

func TestProtocol(t *testing.T) {
	_, name := start(t, nil)
	c := dial(t, name)
	pi := c.call(t, name, 8, []byte{0})
	var p mad.PortInfo
	if err := p.Decode(pi[16:]); err != nil || p.LID != 5 || p.PortState != mad.PortActive {
		t.Fatalf("GET_PORTINFO %+v %v", p, err)
	}
	ni := c.call(t, name, 7, nil)
	var n mad.NodeInfo
	if err := n.Decode(ni[16:]); err != nil || n.NodeGUID != 0x0002c90300a0b0c0 {
		t.Fatalf("GET_NODEINFO %+v %v", n, err)
	}
	pk := c.call(t, name, 10, nil)
	if be.Uint16(pk[16:]) != 0xFFFF || be.Uint16(pk[18:]) != 0x8001 {
		t.Fatalf("GET_PKEYS % x", pk[16:24])
	}
	v := c.call(t, name, 4, nil)
	if le.Uint32(v[16:]) != 0x0002c9 || le.Uint32(v[20:]) != 0x1003 {
		t.Fatalf("GET_VENDOR % x", v[16:40])
	}

	st, slid, out := c.mad(t, name, 5, 0, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil))
	if st != 0 || slid != 5 || out.Method() != mad.MethodGetResp || out.TID() != 0x1234 {
		t.Fatalf("SubnGet: status %d slid %d method 0x%x", st, slid, out.Method())
	}
	dr := madtest.DRSMP(mad.MethodGet, mad.AttrNodeDescription, 0, 0, 0)
	dr[6] = 0 // as smpquery -D sends it
	st, _, out = c.mad(t, name, 0xFFFF, 0, dr)
	if st != 0 || !out.Direction() || out.HopPointer() != 0 {
		t.Fatalf("DR: status %d", st)
	}
	st, _, _ = c.mad(t, name, 9, 0, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil))
	if st != ibsim.StatusDropped {
		t.Fatalf("other LID: status %d", st)
	}
	st, _, out = c.mad(t, name, 5, 1, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	if st != 0 || out.Status() != 0 {
		t.Fatalf("PerfGet: status %d/%x", st, out.Status())
	}
	c.call(t, name, 2, nil)
}

// sinkTo forwards traps to a server created after the engine (the server's
// goroutines may raise traps before Listen has returned it).
type sinkTo struct{ s *atomic.Pointer[ibsim.Server] }

func (k sinkTo) SendTrap(t mad.Trap) {
	if s := k.s.Load(); s != nil {
		s.SendTrap(t)
	}
}

// trapServer is a server named after suffix for an engine of cfg whose
// traps it sends.
func trapServer(t *testing.T, cfg mad.NodeConfig, suffix string) (*mad.Engine, string) {
	t.Helper()
	var srvp atomic.Pointer[ibsim.Server]
	e, err := mad.New(cfg, mad.Options{Sink: sinkTo{&srvp}})
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("vhcrdtest%d-%s", os.Getpid(), suffix)
	srv, err := ibsim.Listen(name, e, ibsim.Options{NodeID: "model-hca"})
	if err != nil {
		t.Fatal(err)
	}
	srvp.Store(srv)
	t.Cleanup(func() { srv.Close() })
	return e, name
}

func TestTrapsReachTheSMClient(t *testing.T) {
	cfg := madtest.Node()
	cfg.Ports[0].MKey, cfg.Ports[0].MKeyProtect = 0x77, 1
	_, name := trapServer(t, cfg, "trap")
	sm := dialSM(t, name, true)
	tool := dial(t, name)
	st, _, _ := tool.mad(t, name, 5, 0, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0x99, nil))
	if st != ibsim.StatusDropped {
		t.Fatalf("Set with a wrong M_Key: status %d", st)
	}
	buf := make([]byte, 400)
	_ = sm.data.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := sm.data.Read(buf)
	if err != nil || n != 288 {
		t.Fatalf("SM client read %d %v", n, err)
	}
	var m mad.MAD
	copy(m[:], buf[32:])
	var notice mad.Notice
	_ = notice.Decode(m.SMPData())
	if be.Uint16(buf[0:]) != 1 || be.Uint16(buf[4:]) != 5 || m.Method() != mad.MethodTrap || notice.TrapNum != 256 {
		t.Fatalf("trap dlid %d slid %d method 0x%x trap %d", be.Uint16(buf[0:]), be.Uint16(buf[4:]), m.Method(), notice.TrapNum)
	}
	var d mad.Trap256
	_ = d.Decode(notice.Details[:])
	if d.LIDAddr != 5 || d.MKey != 0x99 || d.Method != mad.MethodSet {
		t.Fatalf("trap 256 %+v", d)
	}
}

// The SM client gets only the classes it has agents for (OpenSM's SMI
// and SA): a BM trap and a DEVICE_MGMT request, which the HCA leaves to
// other agents, are not sent to it (libumad2sim would crash on a class it
// has no agent for); the Bad M_Key trap after them is.
func TestSMClientOnlyItsClasses(t *testing.T) {
	cfg := madtest.Node()
	cfg.Ports[0].MKey, cfg.Ports[0].MKeyProtect, cfg.Ports[0].BKey = 0x77, 1, 0x66
	e, name := trapServer(t, cfg, "classes")
	sm := dialSM(t, name, true)
	tool := dial(t, name)
	if st, _, _ := tool.mad(t, name, 5, 1, madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 0x1, make([]byte, 14))); st != ibsim.StatusDropped {
		t.Fatalf("BM Set with a wrong B_Key: status %d", st)
	}
	if n := e.Snapshot().TrapsSent[mad.CTrap259]; n != 1 {
		t.Fatalf("trap 259 sent %d times", n)
	}
	dm := madtest.Perf(mad.MethodGet, 0x0001, 0, 0)
	dm[1] = mad.ClassDevMgt
	if st, _, _ := tool.mad(t, name, 5, 1, dm); st != ibsim.StatusDropped {
		t.Fatalf("DEVICE_MGMT Get: status %d", st)
	}
	tool.mad(t, name, 5, 0, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0x99, nil))
	_, m := sm.recv(t)
	if m.MgmtClass() != mad.ClassSubnLID || m.Method() != mad.MethodTrap {
		t.Fatalf("the SM client's first MAD: class %#x method %#x, want the Bad M_Key trap", m.MgmtClass(), m.Method())
	}
}

func TestStaleClientsReclaimed(t *testing.T) {
	_, name := start(t, nil)
	for range ibsim.MaxClients {
		c := dial(t, name)
		c.ctl.Close() // gone without DISCONNECT, as a killed tool
		c.data.Close()
	}
	c := dial(t, name)
	if st, _, _ := c.mad(t, name, 5, 0, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil)); st != 0 {
		t.Fatalf("status %d", st)
	}
}

func TestHandleBadInput(t *testing.T) {
	e, err := mad.New(madtest.Node(), mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("vhcrdtest%d-bad", os.Getpid())
	s, err := ibsim.Listen(name, e, ibsim.Options{NodeID: "model-hca"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Handle(make([]byte, 10)) // wrong size: ignored
	req := make([]byte, 288)
	be.PutUint16(req[0:], 5)
	req[32] = 7 // base version 7: dropped by the engine
	s.Handle(req)
	if be.Uint32(req[16:]) != ibsim.StatusDropped {
		t.Fatalf("status %d", be.Uint32(req[16:]))
	}
	if _, err := ibsim.Listen(name, e, ibsim.Options{}); err == nil {
		t.Fatal("second server bound the same name")
	}
	if _, err := ibsim.Listen("x\x00y", e, ibsim.Options{}); err == nil {
		t.Fatal("name with NUL accepted")
	}
	if _, err := ibsim.Listen(name+"p", e, ibsim.Options{Port: 3}); err == nil {
		t.Fatal("port 3 of 2 accepted")
	}
	// Garbage on the control socket is ignored; a real request still works.
	conn, err := net.DialUnix("unixgram", nil, addr(name+":ctl"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("garbage")); err != nil {
		t.Fatal(err)
	}
	c := dial(t, name)
	c.call(t, name, 3, nil)
}

// tools returns the libumad2sim path, skipping (or failing in CI) when the
// Debian packages are missing.
func tools(t *testing.T) string {
	t.Helper()
	missing := []string{}
	for _, tool := range []string{"smpquery", "perfquery", "ibstat", "ibaddr", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	lib := ""
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so", "/usr/lib/aarch64-linux-gnu/umad2sim/libumad2sim.so", "/usr/lib64/umad2sim/libumad2sim.so"} {
		if _, err := os.Stat(p); err == nil {
			lib = p
			break
		}
	}
	if lib == "" {
		missing = append(missing, "libumad2sim.so")
	}
	if len(missing) > 0 {
		testenv.SkipOrFail(t, "missing %v (Debian packages infiniband-diags, libumad2sim0 via ibsim-utils)", missing)
	}
	return lib
}

func runTool(t *testing.T, lib, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("timeout", append([]string{"20"}, args...)...)
	cmd.Dir = t.TempDir() // umad2sim writes ./sys-<pid>
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "IBSIM_SOCKNAME="+name)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustRun(t *testing.T, lib, name string, args ...string) string {
	t.Helper()
	out, err := runTool(t, lib, name, args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestInfinibandDiags(t *testing.T) {
	lib := tools(t)
	_, name := start(t, nil)

	out := mustRun(t, lib, name, "smpquery", "nodeinfo", "5")
	t.Logf("smpquery nodeinfo 5:\n%s", out)
	wantLines(t, out, "NodeType:........................Channel Adapter", "NumPorts:........................2",
		"Guid:............................0x0002c90300a0b0c0", "PortGuid:........................0x0002c90300a0b0c1",
		"PartCap:.........................64", "DevId:...........................0x1003", "VendorId:........................0x0002c9")

	out = mustRun(t, lib, name, "smpquery", "portinfo", "5", "1")
	t.Logf("smpquery portinfo 5 1:\n%s", out)
	wantLines(t, out, "Lid:.............................5", "SMLid:...........................1",
		"LinkState:.......................Active", "PhysLinkState:...................LinkUp", "SMSL:............................3",
		"GidPrefix:.......................0xfe80000000000000")

	out = mustRun(t, lib, name, "smpquery", "-D", "nodedesc", "0")
	wantLines(t, out, "Node Description:.................vhcrd model hca")

	out = mustRun(t, lib, name, "smpquery", "pkeys", "5", "1")
	t.Logf("smpquery pkeys:\n%s", out)
	wantLines(t, out, "0xffff", "0x8001", "0x0002")

	out = mustRun(t, lib, name, "smpquery", "guidinfo", "5")
	t.Logf("smpquery guidinfo:\n%s", out)
	wantLines(t, out, "0x0002c90300a0b0c1", "0x0002c90300a0b1c1", "0x0002c90300a0b2c1")

	out = mustRun(t, lib, name, "smpquery", "sl2vl", "5", "1")
	t.Logf("smpquery sl2vl:\n%s", out)
	wantLines(t, out, "| 0| 1| 2| 3| 4| 5| 6| 7| 0| 1| 2| 3| 4| 5| 6|15|")

	out = mustRun(t, lib, name, "perfquery", "5", "1")
	t.Logf("perfquery 5 1:\n%s", out)
	wantLines(t, out, "# Port counters: Lid 5 port 1 (CapMask: 0x1200)", "PortRcvPkts:")

	out = mustRun(t, lib, name, "perfquery", "-x", "5", "1")
	t.Logf("perfquery -x 5 1:\n%s", out)
	wantLines(t, out, "# Port extended counters: Lid 5 port 1", "PortUnicastRcvPkts:")

	// perfquery -R resets through PortCounters Set; afterwards the port has
	// sent the Set's reply and, by the time the next query is answered,
	// received that query's ClassPortInfo and PortCounters Gets and sent
	// the ClassPortInfo reply. umad2sim's control queries are no MADs on
	// the link and do not count.
	mustRun(t, lib, name, "perfquery", "-R", "5", "1")
	out = mustRun(t, lib, name, "perfquery", "5", "1")
	wantLines(t, out, "PortRcvPkts:.....................2\n", "PortXmitPkts:....................2\n")

	out = mustRun(t, lib, name, "ibstat")
	t.Logf("ibstat:\n%s", out)
	wantLines(t, out, "CA 'ibsim0'", "State: Active", "Physical state: LinkUp", "Base lid: 5", "SM lid: 1",
		"Port GUID: 0x0002c90300a0b0c1", "Node GUID: 0x0002c90300a0b0c0")

	out = mustRun(t, lib, name, "ibaddr")
	t.Logf("ibaddr:\n%s", out)
	wantLines(t, out, "GID fe80::2:c903:a0:b0c1 LID start 0x5 end 0x5")
}

func TestInfinibandDiagsMKey(t *testing.T) {
	lib := tools(t)
	for _, c := range []struct {
		level  uint8
		answer bool
	}{{1, true}, {2, false}, {3, false}} {
		t.Run(fmt.Sprintf("level%d", c.level), func(t *testing.T) {
			e, name := start(t, func(cfg *mad.NodeConfig) {
				cfg.Ports[0].MKey, cfg.Ports[0].MKeyProtect = 0x1111222233334444, c.level
			})
			out, err := runTool(t, lib, name, "smpquery", "-y", "0x99", "portinfo", "5", "1")
			if c.answer {
				if err != nil {
					t.Fatalf("level %d Get with a wrong M_Key refused: %v\n%s", c.level, err, out)
				}
				wantLines(t, out, "LinkState:.......................Active")
			} else if err == nil {
				t.Fatalf("level %d Get with a wrong M_Key answered:\n%s", c.level, out)
			}
			pi, _ := e.PortInfo(1)
			if viol := pi.MKeyViolations; c.answer != (viol == 0) {
				t.Fatalf("M_KeyViolations %d", viol)
			}
			out = mustRun(t, lib, name, "smpquery", "-y", "0x1111222233334444", "portinfo", "5", "1")
			wantLines(t, out, "LinkState:.......................Active")
		})
	}
}

// TestToolsCapturedForTshark runs the real tools against a server that
// records to a capture, then reads the capture with tshark: the tools'
// MADs, the replies and the trap 256 that smpquery -y with a wrong M_Key
// caused all appear with the fields the engine saw.
func TestToolsCapturedForTshark(t *testing.T) {
	lib := tools(t)
	testenv.LookPath(t, "tshark", "tshark")
	path := filepath.Join(t.TempDir(), "tools.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := capture.NewWriter(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := madtest.Node()
	cfg.Ports[0].MKey, cfg.Ports[0].MKeyProtect = 0x1111222233334444, 2
	e, err := mad.New(cfg, mad.Options{Sink: w})
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("vhcrdtest%d-cap", os.Getpid())
	s, err := ibsim.Listen(name, e, ibsim.Options{NodeID: "model-hca", Capture: w})
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, lib, name, "smpquery", "-y", "0x1111222233334444", "nodeinfo", "5")
	mustRun(t, lib, name, "perfquery", "5", "1")
	if out, err := runTool(t, lib, name, "smpquery", "-y", "0x42", "portinfo", "5", "1"); err == nil {
		t.Fatalf("wrong M_Key at level 2 answered:\n%s", out)
	}
	s.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fields := []string{"infiniband.lrh.slid", "infiniband.lrh.dlid", "infiniband.mad.mgmtclass", "infiniband.mad.method",
		"infiniband.mad.attributeid", "infiniband.mad.attributemodifier", "infiniband.notice.trapnumberdeviceid",
		"infiniband.trap.lidaddr", "infiniband.trap.mkey", "infiniband.nodeinfo.nodeguid"}
	args := []string{"60", "tshark", "-r", path, "-T", "fields", "-E", "separator=,"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command("timeout", args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	t.Logf("tshark:\n%s", out)
	text := string(out)
	for _, want := range []string{
		"5,5,0x01,0x01,0x0011,0x00000000,,,,0x0000000000000000",             // SubnGet(NodeInfo)
		"5,5,0x01,0x81,0x0011,0x00000000,,,,0x0002c90300a0b0c0",             // its GetResp
		"5,5,0x04,0x01,0x0012,0x00000000,,,,",                               // PerfGet(PortCounters)
		"5,5,0x01,0x01,0x0015,0x00000001,,,,",                               // SubnGet(PortInfo), wrong M_Key
		"5,1,0x01,0x05,0x0002,0x00000000,0x0100,0x0005,0x0000000000000042,", // trap 256 to the SM
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("capture lacks %q", want)
		}
	}
}

// send writes one sim_request from the client without waiting.
func (c *fakeClient) send(t *testing.T, name string, dlid uint16, sqp, dqp uint32, m *mad.MAD) {
	t.Helper()
	req := make([]byte, 288)
	be.PutUint16(req[0:], dlid)
	be.PutUint32(req[8:], dqp)
	be.PutUint32(req[12:], sqp)
	be.PutUint64(req[24:], 256)
	copy(req[32:], m[:])
	if _, err := c.data.WriteToUnix(req, addr(fmt.Sprintf("%s:out%d", name, c.id))); err != nil {
		t.Fatal(err)
	}
}

// recv reads the next datagram the server sends the client.
func (c *fakeClient) recv(t *testing.T) (req []byte, m mad.MAD) {
	t.Helper()
	req = make([]byte, 400)
	_ = c.data.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.data.Read(req)
	if err != nil || n != 288 {
		t.Fatalf("read %d %v", n, err)
	}
	copy(m[:], req[32:])
	return req[:n], m
}

// MADs the HCA leaves to other agents (SMInfo on QP0, the SA class on QP1)
// reach the client attached as an SM, with the sender's LID and QP and its
// client index in TID bits 63:48 (ibsim's find_client); the SM's response,
// addressed back to that LID, reaches the sender.
func TestAgentMADsReachTheSMClient(t *testing.T) {
	_, name := start(t, nil)
	sm := dialSM(t, name, true)
	tool := dial(t, name)
	for _, tc := range []struct {
		name     string
		qp       uint32
		class    uint8
		attr     uint16
		response func(*mad.MAD)
	}{
		{"SMInfo", 0, mad.ClassSubnLID, mad.AttrSMInfo, func(m *mad.MAD) { m[3] = mad.MethodGetResp }},
		{"SA NodeRecord", 1, mad.ClassSubnAdm, 0x0011, func(m *mad.MAD) { m[3] = 0x92 }}, // GetTableResp
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := madtest.SMP(mad.MethodGet, tc.attr, 0, 0, nil)
			req[1], req[2] = tc.class, 1
			if tc.class == mad.ClassSubnAdm {
				req[2], req[3] = 2, 0x12 // SubnAdmGetTable
			}
			tool.send(t, name, 5, tc.qp, tc.qp, req)
			got, in := sm.recv(t)
			if be.Uint16(got[0:]) != 5 || be.Uint16(got[4:]) != 5 || be.Uint32(got[8:]) != tc.qp || be.Uint32(got[12:]) != tc.qp {
				t.Fatalf("forwarded: dlid %d slid %d dqp %d sqp %d", be.Uint16(got[0:]), be.Uint16(got[4:]), be.Uint32(got[8:]), be.Uint32(got[12:]))
			}
			if in.AttrID() != tc.attr || in.MgmtClass() != tc.class || in.TID() != uint64(tool.id)<<48|0x1234 {
				t.Fatalf("forwarded MAD: class 0x%x attr 0x%x TID %#x", in.MgmtClass(), in.AttrID(), in.TID())
			}
			// The SM answers as umad2sim writes a response: DLID the
			// requester's, SLID 0 (auto).
			resp := in
			tc.response(&resp)
			resp[64] = 0xAB
			sm.send(t, name, 5, tc.qp, tc.qp, &resp)
			back, out := tool.recv(t)
			if be.Uint32(back[16:]) != 0 || out.Method() != resp.Method() || out.TID() != in.TID() || out[64] != 0xAB {
				t.Fatalf("response at the tool: status %d method 0x%x TID %#x", be.Uint32(back[16:]), out.Method(), out.TID())
			}
		})
	}
	// A response whose TID names no client goes nowhere; the tool's next
	// exchange is its own.
	stray := madtest.SMP(mad.MethodGetResp, mad.AttrSMInfo, 0, 0, nil)
	be.PutUint64(stray[8:], uint64(9)<<48)
	sm.send(t, name, 5, 0, 0, stray)
	if st, _, out := tool.mad(t, name, 5, 0, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil)); st != 0 || out.AttrID() != mad.AttrNodeInfo {
		t.Fatalf("NodeInfo after a stray response: status %d attr 0x%x", st, out.AttrID())
	}
}

// Without an SM client, or once it has gone, an SMInfo Get times out at
// the sender (StatusDropped), as on ibsim.
func TestAgentMADsWithoutSM(t *testing.T) {
	_, name := start(t, nil)
	tool := dial(t, name)
	sminfo := madtest.SMP(mad.MethodGet, mad.AttrSMInfo, 0, 0, nil)
	if st, _, _ := tool.mad(t, name, 5, 0, sminfo); st != ibsim.StatusDropped {
		t.Fatalf("no SM: status %d", st)
	}
	sm := dialSM(t, name, true)
	sm.data.Close() // killed without DISCONNECT
	if st, _, _ := tool.mad(t, name, 5, 0, sminfo); st != ibsim.StatusDropped {
		t.Fatalf("SM gone: status %d", st)
	}
}

// The PF's tunnel on the server: a VF's SA request (SendTunnel) reaches the
// SM client with its TID as the tunnel set it (the slave in the top byte)
// and from the port's LID and QP1; the SM's response comes back through
// Options.Tunnel, not to a client. A MAD the port's own agents answer
// comes back at once. A tool's exchange is untouched.
func TestTunnelThroughTheSM(t *testing.T) {
	cfg := madtest.Node()
	cfg.Ports[0].LID = 5
	e, err := mad.New(cfg, mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		wc mad.WC
		m  mad.MAD
	}
	back := make(chan got, 4)
	name := fmt.Sprintf("vhcrdtest%d-%d", os.Getpid(), seq.Add(1))
	s, err := ibsim.Listen(name, e, ibsim.Options{NodeID: "model-hca", Tunnel: func(_ uint8, wc *mad.WC, m *mad.MAD) { back <- got{*wc, *m} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sm := dialSM(t, name, true)
	req := madtest.SMP(mad.MethodGet, 0x0035, 0, 0, nil)
	req[1], req[2], req[3] = mad.ClassSubnAdm, 2, mad.MethodSAGetTable
	be.PutUint64(req[8:], 0x0200_0000_0000_0077)
	if _, _, ok := s.SendTunnel(ibsim.TunnelAddr{DLID: 5, SQP: 1, DQP: 1}, req); ok {
		t.Fatal("an SA request answered by the port itself")
	}
	raw, in := sm.recv(t)
	if in.TID() != 0x0200_0000_0000_0077 || be.Uint16(raw[4:]) != 5 || be.Uint32(raw[12:]) != 1 {
		t.Fatalf("at the SM: TID %#x slid %d sqp %d", in.TID(), be.Uint16(raw[4:]), be.Uint32(raw[12:]))
	}
	resp := in
	resp[3] = 0x92 // GetTableResp
	sm.send(t, name, 5, 1, 1, &resp)
	select {
	case g := <-back:
		if g.m.TID() != in.TID() || g.m.Method() != 0x92 || g.wc.QPN != 1 || g.wc.SrcQP != 1 || g.wc.SLID != 5 {
			t.Fatalf("tunnel got wc %+v, TID %#x method %#x", g.wc, g.m.TID(), g.m.Method())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the SM's response did not reach the tunnel")
	}
	// The port's own SMA answers an SMP at once.
	ni := madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil)
	be.PutUint64(ni[8:], 0x0100_0000_0000_0001)
	out, from, ok := s.SendTunnel(ibsim.TunnelAddr{DLID: 5}, ni)
	if !ok || from != 5 || out.Method() != mad.MethodGetResp || out.TID() != 0x0100_0000_0000_0001 {
		t.Fatalf("NodeInfo: ok %v from %d method %#x", ok, from, out.Method())
	}
	tool := dial(t, name)
	if st, _, out := tool.mad(t, name, 5, 0, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil)); st != 0 || out.AttrID() != mad.AttrNodeInfo {
		t.Fatalf("a tool's NodeInfo: status %d", st)
	}
}

// An SA client's RMPP-active response that its host's MAD layer would
// frame (OpenSM sets only the ACTIVE flag) reaches the receiver as one DATA
// segment: version 1, FIRST and LAST, segment 1, the payload length from
// the request's length; a framed one is left as it is. A VF's RMPP ACK of
// it goes to the SM client, not back into the tunnel.
func TestRMPPFramedForTheTunnel(t *testing.T) {
	cfg := madtest.Node()
	cfg.Ports[0].LID = 5
	e, err := mad.New(cfg, mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	back := make(chan mad.MAD, 4)
	name := fmt.Sprintf("vhcrdtest%d-%d", os.Getpid(), seq.Add(1))
	s, err := ibsim.Listen(name, e, ibsim.Options{NodeID: "model-hca", Tunnel: func(_ uint8, _ *mad.WC, m *mad.MAD) { back <- *m }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sm := dialSM(t, name, true)
	for _, tc := range []struct {
		name   string
		in     [4]byte // version, type, flags, status
		length uint64
		want   [4]byte
		paylen uint32
	}{
		{"OpenSM's", [4]byte{0, 0, 1, 0}, 164, [4]byte{1, 1, 7, 0}, 128},
		{"already framed", [4]byte{1, 1, 7, 0}, 256, [4]byte{1, 1, 7, 0}, 0x99},
	} {
		resp := madtest.SMP(mad.MethodGet, 0x0011, 0, 0, nil)
		resp[1], resp[2], resp[3] = mad.ClassSubnAdm, 2, 0x92
		be.PutUint64(resp[8:], 0x0300_0000_0000_0001)
		copy(resp[24:28], tc.in[:])
		if tc.in[0] != 0 {
			be.PutUint32(resp[28:], 1)
			be.PutUint32(resp[32:], 0x99)
		}
		req := make([]byte, 288)
		be.PutUint16(req[0:], 5)
		be.PutUint32(req[8:], 1)
		be.PutUint32(req[12:], 1)
		be.PutUint64(req[24:], tc.length)
		copy(req[32:], resp[:])
		if _, err := sm.data.WriteToUnix(req, addr(fmt.Sprintf("%s:out%d", name, sm.id))); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-back:
			if [4]byte(m[24:28]) != tc.want || be.Uint32(m[28:]) != 1 || be.Uint32(m[32:]) != tc.paylen {
				t.Errorf("%s: RMPP header % x", tc.name, m[24:36])
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: nothing reached the tunnel", tc.name)
		}
	}
	ack := madtest.SMP(mad.MethodGet, 0x0011, 0, 0, nil)
	ack[1], ack[2], ack[3] = mad.ClassSubnAdm, 2, 0x92
	ack[24], ack[25], ack[26] = 1, 2, 1          // version 1, ACK, ACTIVE
	be.PutUint64(ack[8:], 0x0300_0000_0000_0001) // a VF's: the slave's byte as it came
	if _, _, ok := s.SendTunnel(ibsim.TunnelAddr{DLID: 5, SQP: 1, DQP: 1}, ack); ok {
		t.Fatal("an ACK answered")
	}
	if _, m := sm.recv(t); m[25] != 2 || m.TID() != 0x0300_0000_0000_0001 {
		t.Fatalf("at the SM: type %d TID %#x", m[25], m.TID())
	}
}
