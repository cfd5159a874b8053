package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

// pingpongAcross runs vfctl pingpong (RC, or UD with ud) between VF 2 on
// port 1 (the server) and VF 3 on port 2 (the client), one process each
// as ibv_rc_pingpong runs: their packets cross the switch, by the LFT
// entries of each other's LID. It returns both ends' output, failing the
// test if either end fails.
func pingpongAcross(t *testing.T, barPath string, ud bool) (server, client string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := func(vf, ibPort string) []string {
		a := []string{"pingpong", "--bar", "file:" + barPath, "--vf", vf, "--ib-port", ibPort, "-p", strconv.Itoa(port), "-n", "200", "--chk"}
		if ud {
			a = append(a, "--ud", "-s", "1024")
		}
		return a
	}
	var srvOut bytes.Buffer
	srv := exec.Command("timeout", append([]string{"60", filepath.Join(binDir, "vfctl")}, args("2", "1")...)...)
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	waitFor(t, fmt.Sprintf("vfctl pingpong's server listening on TCP port %d", port), func() bool {
		select {
		case err := <-done:
			t.Fatalf("the server ended before listening: %v\n%s", err, srvOut.String())
		default:
		}
		return tcpListening(port)
	})
	c := exec.Command("timeout", append([]string{"60", filepath.Join(binDir, "vfctl")}, append(args("3", "2"), "127.0.0.1")...)...)
	out, cerr := c.CombinedOutput()
	serr := <-done
	if cerr != nil || serr != nil {
		t.Fatalf("pingpong (ud %v) across the switch: client %v\n%s\nserver %v\n%s", ud, cerr, out, serr, srvOut.String())
	}
	return srvOut.String(), string(out)
}

// tcpListening reports whether a socket listens on TCP port port
// (/proc/net/tcp and tcp6: local address :PORT in state 0A, LISTEN).
func tcpListening(port int) bool {
	re := regexp.MustCompile(fmt.Sprintf(`(?m)^\s*\d+: [0-9A-F]+:%04X [0-9A-F]+:0000 0A `, port))
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if b, err := os.ReadFile(f); err == nil && re.Match(b) {
			return true
		}
	}
	return false
}

// simClient is an ibsim-protocol client as libumad2sim's sim_client.c is:
// it attaches to the daemon's ibsim socket and sends SMPs as an SM would.
type simClient struct {
	sock      string
	ctl, data *net.UnixConn
	id        uint32
}

func simAddr(name string) *net.UnixAddr {
	return &net.UnixAddr{Name: "@" + name + "\x00", Net: "unixgram"}
}

func dialSim(t *testing.T, sock string) *simClient {
	t.Helper()
	pid := os.Getpid()<<4 | 0xb
	ctl, err := net.ListenUnixgram("unixgram", simAddr(fmt.Sprintf("%s:ctl%d", sock, pid)))
	if err != nil {
		t.Fatal(err)
	}
	data, err := net.ListenUnixgram("unixgram", simAddr(fmt.Sprintf("%s:in%d", sock, pid)))
	if err != nil {
		t.Fatal(err)
	}
	c := &simClient{sock: sock, ctl: ctl, data: data}
	t.Cleanup(func() { ctl.Close(); data.Close() })
	msg := make([]byte, 80) // sim_ctl CONNECT: magic, client id, type, length, the client's pid
	binary.LittleEndian.PutUint32(msg[0:], 0xDEADBEEF)
	binary.LittleEndian.PutUint32(msg[8:], 1)
	binary.LittleEndian.PutUint32(msg[12:], 44)
	binary.LittleEndian.PutUint32(msg[16:], uint32(pid))
	if _, err := ctl.WriteToUnix(msg, simAddr(sock+":ctl")); err != nil {
		t.Fatal(err)
	}
	_ = ctl.SetReadDeadline(time.Now().Add(osmWait))
	if n, err := ctl.Read(msg); err != nil || n != 80 {
		t.Fatalf("ibsim CONNECT: %d %v", n, err)
	}
	c.id = binary.LittleEndian.Uint32(msg[16:])
	return c
}

// smp sends a directed-route SMP to the switch (path 0,1: out of port 1)
// with OpenSM's M_Key and returns the response.
func (c *simClient) smp(t *testing.T, method uint8, attr uint16, mod uint32, data []byte) mad.MAD {
	t.Helper()
	mkey, _ := strconv.ParseUint(osmMKey, 0, 64)
	m := madtest.DRSMP(method, attr, mod, mkey, 1, 1)
	m[6] = 0 // as the SM sends it: hop pointer 0
	copy(m[64:128], data)
	req := make([]byte, 288) // sim_request: dlid, slid, dqp, sqp, status, length, the MAD
	binary.BigEndian.PutUint16(req[0:], 0xFFFF)
	binary.BigEndian.PutUint64(req[24:], 256)
	copy(req[32:], m[:])
	if _, err := c.data.WriteToUnix(req, simAddr(fmt.Sprintf("%s:out%d", c.sock, c.id))); err != nil {
		t.Fatal(err)
	}
	_ = c.data.SetReadDeadline(time.Now().Add(osmWait))
	if n, err := c.data.Read(req); err != nil || n != 288 || binary.BigEndian.Uint32(req[16:]) != 0 {
		t.Fatalf("SMP %#x to the switch: %d %v status %d", attr, n, err, binary.BigEndian.Uint32(req[16:]))
	}
	var out mad.MAD
	copy(out[:], req[32:])
	if st := out.Status() &^ mad.StatusDirection; st != 0 {
		t.Fatalf("SMP %#x to the switch: status %#x", attr, st)
	}
	return out
}

// pingpongLost runs the RC pingpong's client (VF 3, port 2) against a
// server (VF 1, port 1) whose LID the switch does not route to port 1: the
// client's first SEND is lost, it gets transport retry exceeded and fails.
// The server, which never hears from it, is then killed (VF 1 keeps the
// objects it left: no other run uses it).
func pingpongLost(t *testing.T, barPath string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	srv := exec.Command(filepath.Join(binDir, "vfctl"), "pingpong", "--bar", "file:"+barPath, "--vf", "1", "--ib-port", "1", "-p", port, "-n", "10")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	n, _ := strconv.Atoi(port)
	waitFor(t, "vfctl pingpong's server listening", func() bool { return tcpListening(n) })
	out, err := exec.Command("timeout", "60", filepath.Join(binDir, "vfctl"), "pingpong", "--bar", "file:"+barPath,
		"--vf", "3", "--ib-port", "2", "-p", port, "-n", "10", "127.0.0.1").CombinedOutput()
	if err == nil {
		t.Fatalf("pingpong with the server's LID misrouted succeeded:\n%s", out)
	}
	return string(out)
}

// checkTrafficAcross: after OpenSM swept the fresh fabric (the switch's
// LFT empty until then), RC and UD pingpong between a VF on port 1 and
// one on port 2 move their messages through the LFT OpenSM programmed,
// which ibroute shows routing each end's LID to its switch port; an LFT Set
// that sends one end's LID elsewhere stops the traffic, and one that
// sends it back restores it.
func checkTrafficAcross(t *testing.T, run func(...string) string, barPath, sock string) {
	t.Helper()
	srv, cli := pingpongAcross(t, barPath, false)
	t.Logf("vfctl pingpong, VF 2 on port 1 (server):\n%s\nVF 3 on port 2 (client):\n%s", srv, cli)
	lid := regexp.MustCompile(`local address:\s+LID 0x([0-9a-f]{4})`)
	ls, lc := lid.FindStringSubmatch(srv), lid.FindStringSubmatch(cli)
	if ls == nil || lc == nil || ls[1] == lc[1] {
		t.Fatalf("the ends' LIDs: %v %v", ls, lc)
	}
	for _, out := range []string{srv, cli} {
		if !regexp.MustCompile(`\d+ iters in [0-9.]+ seconds`).MatchString(out) {
			t.Errorf("no iters line:\n%s", out)
		}
	}
	routes := run("ibroute", "-D", "0,1")
	t.Logf("ibroute (the switch's LFT as OpenSM programmed it):\n%s", routes)
	for end, sp := range map[string]string{ls[1]: "001", lc[1]: "002"} {
		n, _ := strconv.ParseUint(end, 16, 16)
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^0x%04x %s :`, n, sp)).MatchString(routes) {
			t.Errorf("ibroute: LID %d not routed to switch port %s", n, sp)
		}
	}
	checkSwitchCounters(t, run, routes)
	// The HCA's port 2 (the client's) counts the same traffic in its PMA.
	cl, _ := strconv.ParseUint(lc[1], 16, 16)
	hp := run("perfquery", "-x", fmt.Sprint(cl), "2")
	t.Logf("perfquery -x %d 2 (the HCA's port 2):\n%s", cl, hp)
	if m := regexp.MustCompile(`(?m)^PortXmitPkts:\.+(\d+)$`).FindStringSubmatch(hp); m == nil || len(m[1]) < 3 {
		t.Errorf("the HCA's port 2 did not count the pingpong's 400 packets out")
	}
	srv, cli = pingpongAcross(t, barPath, true)
	t.Logf("vfctl pingpong --ud, VF 2 on port 1:\n%s\nVF 3 on port 2:\n%s", srv, cli)
	if !strings.Contains(srv+cli, "iters in") {
		t.Errorf("UD pingpong printed no iters line")
	}

	// The SM reprograms the server's LID to the peer CA's switch port 5:
	// the client's packets are lost in the fabric (transport retry
	// exceeded); programmed back to port 1, the traffic flows again.
	srvLID, _ := strconv.ParseUint(ls[1], 16, 16)
	sim := dialSim(t, sock)
	block, idx := uint32(srvLID/64), srvLID%64
	out := sim.smp(t, mad.MethodGet, mad.AttrLinearFwdTable, block, nil)
	lft := append([]byte(nil), out.SMPData()[:64]...)
	if lft[idx] != 1 {
		t.Fatalf("LFT[%d] = %d before the reroute, want 1", srvLID, lft[idx])
	}
	lft[idx] = 5
	sim.smp(t, mad.MethodSet, mad.AttrLinearFwdTable, block, lft)
	lost := pingpongLost(t, barPath)
	t.Logf("LFT[%d] = 5: the client:\n%s", srvLID, lost)
	if !strings.Contains(lost, "retry") {
		t.Errorf("the misrouted client did not fail on transport retries:\n%s", lost)
	}
	lft[idx] = 1
	sim.smp(t, mad.MethodSet, mad.AttrLinearFwdTable, block, lft)
	_, cli = pingpongAcross(t, barPath, false)
	t.Logf("LFT[%d] = 1 again: the client:\n%s", srvLID, cli)
}

// checkSwitchCounters reads the switch's port 2 counters with perfquery
// (the switch's PMA at its LID, which routes names) after the RC pingpong
// between the HCA's ports crossed it: at least the 200 SENDs each way and
// their ACKs, 7 words an ACK, the 200 client SENDs' words.
func checkSwitchCounters(t *testing.T, run func(...string) string, routes string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^0x([0-9a-f]{4}) 000 : \(Switch`).FindStringSubmatch(routes)
	if m == nil {
		t.Fatalf("no switch LID in ibroute:\n%s", routes)
	}
	lid, _ := strconv.ParseUint(m[1], 16, 16)
	out := run("perfquery", "-x", fmt.Sprint(lid), "2")
	t.Logf("perfquery -x %d 2 (the switch port cabled to HCA port 2):\n%s", lid, out)
	field := func(name string) uint64 {
		f := regexp.MustCompile(`(?m)^` + name + `:\.+(\d+)$`).FindStringSubmatch(out)
		if f == nil {
			t.Fatalf("perfquery printed no %s", name)
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		return v
	}
	if x, r := field("PortXmitPkts"), field("PortRcvPkts"); x < 400 || r < 400 {
		t.Errorf("switch port 2: %d packets out, %d in; the RC pingpong alone is 400 each way", x, r)
	}
	if d := field("PortXmitData"); d < 200*7 {
		t.Errorf("switch port 2: %d words out", d)
	}
}
