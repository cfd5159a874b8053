package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/hack/vmtest"
)

// The verbs scenario: Debian's rdma-core userspace in the image (libc, the
// loader, libibverbs and its mlx4 provider at their Debian paths) against
// mlx4_0.

const (
	// activeTime bounds the wait for port 1 to be ACTIVE with a LID after
	// the bind (mlx4_ib reports the port's state from a MAD_IFC).
	activeTime = 10 * time.Second
	// pingpongPort is the rdma-core pingpongs' default TCP port (18515),
	// 0x4853 in /proc/net/tcp.
	pingpongPort = 18515
	// lastLines is how many of a tool's lines a hung report quotes.
	lastLines = 4
)

func (g *guest) verbs() error {
	vc := g.cfg.Verbs
	if err := ifUp("lo", nil, 0); err != nil {
		return err
	}
	if vc.Net != nil {
		if err := g.netUp(vc.Net); err != nil {
			return err
		}
	}
	if err := g.bindVerbs("verbs"); err != nil {
		return err
	}
	if vc.Devinfo {
		r := runTool(context.Background(), "ibv_devinfo", "/usr/bin/ibv_devinfo", "-v")
		if r.err != nil {
			return fmt.Errorf("ibv_devinfo -v: %w; last lines: %s", r.err, strings.Join(r.last, " | "))
		}
		wait("devinfo")
	}
	if len(vc.Diags) > 0 || vc.BM != nil {
		g.diags(vc)
		if vc.BM != nil {
			g.bmRun(vc.BM)
		}
		wait("diags")
	}
	if vc.Net != nil {
		if err := tcpCheck(vc); err != nil {
			return err
		}
		wait("tcp")
	}
	if vc.IPoIB != nil {
		if err := g.ipoib(vc); err != nil {
			return err
		}
		for _, c := range vc.CM {
			g.cmRun(c, vc)
		}
	}
	limit := time.Duration(vc.TimeLimitMS) * time.Millisecond
	for _, pp := range vc.Pingpongs {
		if err := g.pingpong(pp, vc, limit); err != nil {
			return err
		}
	}
	wait("pingpongs")
	if err := g.unbind(1); err != nil {
		return err
	}
	wait("unbound 1")
	return nil
}

// diags runs the management tools, each to its end or the time limit,
// and reports each one's result (the host judges the output).
func (g *guest) diags(vc vmtest.VerbsConfig) {
	limit := time.Duration(vc.TimeLimitMS) * time.Millisecond
	for _, d := range vc.Diags {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		r := runTool(ctx, "diag "+d.Name, d.Tool, d.Args...)
		cancel()
		sayResult("diag "+d.Name, r, limit)
	}
}

// ipoib brings ib0 (ib_ipoib's interface on port 1) up with its address;
// once the host has both guests there, the client pings the peer's.
func (g *guest) ipoib(vc vmtest.VerbsConfig) error {
	ic := vc.IPoIB
	end := time.Now().Add(activeTime)
	for {
		if _, err := os.Stat("/sys/class/net/ib0"); err == nil {
			break
		}
		if time.Now().After(end) {
			return fmt.Errorf("ipoib: no ib0 after %v (ib_ipoib loaded?)", activeTime)
		}
		time.Sleep(50 * time.Millisecond) // the driver creates ib0 on its own work queue
	}
	if err := ifUp("ib0", net.ParseIP(ic.Addr).To4(), ic.Prefix); err != nil {
		return fmt.Errorf("ipoib: %w", err)
	}
	say("ib0 up: %s/%d, hardware address %s", ic.Addr, ic.Prefix, readFile("/sys/class/net/ib0/address"))
	wait("ipoib up")
	if vc.Role == "client" {
		limit := time.Duration(vc.TimeLimitMS) * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		r := runTool(ctx, "ipoib ping", "/bin/ping", "-c", "3", "-W", "5", "-I", "ib0", ic.Peer)
		cancel()
		sayResult("ipoib ping", r, limit)
	}
	wait("ipoib")
	return nil
}

// cmRun runs c between the pair of guests over ib0: the server here
// (Role "server") and, once it prints c.Ready (rping's rdma_listen line
// is printed as it calls rdma_listen, perftest's banner after; the
// client's guest needs a host round trip, an ARP and a PathRecord query
// before its REQ can arrive), the host lets the client's guest start its
// end. Each end's result is one CMPrefix line; the host judges the tool's
// lines.
func (g *guest) cmRun(c vmtest.CMRun, vc vmtest.VerbsConfig) {
	limit := time.Duration(vc.TimeLimitMS) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	addrs := strings.NewReplacer("{addr}", vc.IPoIB.Addr, "{peer}", vc.IPoIB.Peer)
	args := func(a []string) []string {
		out := make([]string, len(a))
		for i, s := range a {
			out[i] = addrs.Replace(s)
		}
		return out
	}
	var r toolResult
	if vc.Role == "server" {
		ready := make(chan struct{})
		var once sync.Once
		done := make(chan struct{})
		go func() {
			defer close(done)
			r = runToolLines(ctx, c.Name, c.Tool, func(l string) {
				if strings.Contains(l, c.Ready) {
					once.Do(func() { close(ready) })
				}
			}, args(c.Server)...)
		}()
		select {
		case <-ready:
		case <-done: // it ended first: the client's end fails, and the lines tell why
		}
		wait("cm listening " + c.Name)
		<-done
	} else {
		wait("cm connect " + c.Name)
		r = runTool(ctx, c.Name, c.Tool, args(c.Client)...)
	}
	sayResult("cm "+c.Name, r, limit)
	wait("cm " + c.Name)
}

// sayResult prints what's result line: "WHAT: ok in ...", "WHAT: failed:
// ..." or "WHAT: hung ...", with the tool's last lines.
func sayResult(what string, r toolResult, limit time.Duration) {
	switch {
	case r.hung:
		say("%s: hung (time limit %v), last lines: %s", what, limit, strings.Join(r.last, " | "))
	case r.err != nil:
		say("%s: failed: %v, last lines: %s", what, r.err, strings.Join(r.last, " | "))
	default:
		say("%s: ok in %v", what, r.took.Round(time.Millisecond))
	}
}

// waitActive waits for port's state "4: ACTIVE" and a nonzero LID.
func waitActive(port int) error {
	dir := filepath.Join(ibClass, "mlx4_0/ports", fmt.Sprint(port))
	end := time.Now().Add(activeTime)
	for {
		st, lid := readFile(dir+"/state"), readFile(dir+"/lid")
		if st == "4: ACTIVE" && lid != "" && lid != "0x0" {
			say("mlx4_0 port %d: %s, lid %s, sm_lid %s", port, st, lid, readFile(dir+"/sm_lid"))
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("mlx4_0 port %d: state %q lid %q after %v, want ACTIVE with a LID", port, st, lid, activeTime)
		}
		time.Sleep(50 * time.Millisecond) // the port's state is the driver's, read through sysfs
	}
}

// pingpong runs one rdma-core pingpong: both ends here (Role ""), or this
// guest's end, the host telling the client's guest when the server listens.
func (g *guest) pingpong(pp vmtest.Pingpong, vc vmtest.VerbsConfig, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	bin := "/usr/bin/" + pp.Tool
	var ends []*toolRun
	var mu sync.Mutex
	start := func(end string, args ...string) {
		r := &toolRun{name: pp.Name + " " + end, done: make(chan struct{})}
		mu.Lock()
		ends = append(ends, r)
		mu.Unlock()
		go func() {
			defer close(r.done)
			res := runTool(ctx, r.name, bin, args...)
			r.last, r.err, r.hung, r.took = res.last, res.err, res.hung, res.took
		}()
	}
	// The host notes where vhcrd's trace is before each pingpong: its
	// commands are the pingpong's.
	wait("pingpong " + pp.Name)
	t0 := time.Now()
	if vc.Role != "client" {
		start("server", pp.Args...)
		if err := awaitListen(ctx, pingpongPort); err != nil {
			cancel()
			<-ends[0].done
			report(pp.Name, time.Since(t0), limit, ends, "the server never listened on its TCP port: "+err.Error())
			return nil
		}
		if vc.Role == "server" {
			wait("listening " + pp.Name)
		}
	}
	if vc.Role != "server" {
		peer := "127.0.0.1"
		if vc.Role == "client" {
			wait("connect " + pp.Name)
			peer = vc.Net.Peer
		}
		start("client", append(append([]string{}, pp.Args...), peer)...)
	}
	for _, r := range ends {
		<-r.done
	}
	report(pp.Name, time.Since(t0), limit, ends, "")
	return nil
}

// toolRun is one end of a pingpong.
type toolRun struct {
	name string
	done chan struct{}
	last []string
	err  error
	hung bool
	took time.Duration
}

// report prints the pingpong's result line.
func report(name string, took, limit time.Duration, ends []*toolRun, why string) {
	var hung, failed []string
	for _, r := range ends {
		last := strings.Join(r.last, " | ")
		switch {
		case r.hung:
			hung = append(hung, fmt.Sprintf("%s after %v, last lines: %s", r.name, r.took.Round(time.Millisecond), last))
		case r.err != nil:
			failed = append(failed, fmt.Sprintf("%s: %v, last lines: %s", r.name, r.err, last))
		}
	}
	switch {
	case len(hung) > 0:
		say("pingpong %s: hung (time limit %v, both ends killed): %s", name, limit, strings.Join(append(hung, failed...), "; "))
	case len(failed) > 0 || why != "":
		if why != "" {
			failed = append(failed, why)
		}
		say("pingpong %s: failed: %s", name, strings.Join(failed, "; "))
	default:
		say("pingpong %s: ok in %v", name, took.Round(time.Millisecond))
	}
}

type toolResult struct {
	last []string
	err  error
	hung bool // killed at the context's deadline
	took time.Duration
}

// runTool runs bin with args, printing each line of its output as
// "vmtest: NAME| LINE", and kills it when ctx ends.
func runTool(ctx context.Context, name, bin string, args ...string) toolResult {
	return runToolLines(ctx, name, bin, nil, args...)
}

// runToolLines is runTool that also hands each line of the tool's output
// to onLine (if not nil), on the goroutine that reads them, before it
// returns.
func runToolLines(ctx context.Context, name, bin string, onLine func(string), args ...string) toolResult {
	say("run %s: %s %s", name, bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	// A terminal, so that the tool's stdio is line-buffered: a tool killed
	// at the time limit has its lines out, not in its buffer.
	pr, pw, err := openPTY()
	if err != nil {
		return toolResult{err: err}
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		return toolResult{err: err}
	}
	pw.Close()
	var res toolResult
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			fmt.Printf("vmtest: %s| %s\n", name, line)
			if onLine != nil {
				onLine(line)
			}
			res.last = append(res.last, line)
			if len(res.last) > lastLines {
				res.last = res.last[1:]
			}
		}
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		cmd.Process.Kill()
		err = <-waited
		res.hung = true
	}
	res.took = time.Since(t0)
	<-lines
	pr.Close()
	res.err = err
	if !res.hung {
		say("run %s: %v in %v", name, exitText(err), res.took.Round(time.Millisecond))
	}
	return res
}

// openPTY opens a pseudo-terminal pair (devpts mounted on /dev/pts on
// first use) with output processing and echo off.
func openPTY() (master, slave *os.File, err error) {
	if err := os.MkdirAll("/dev/pts", 0o755); err != nil {
		return nil, nil, err
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", 0, "ptmxmode=0666"); err != nil && !errors.Is(err, unix.EBUSY) {
		return nil, nil, fmt.Errorf("mount devpts: %w", err)
	}
	m, err := os.OpenFile("/dev/pts/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(m.Fd())
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("ptmx: %w", err)
	}
	sl, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	if tio, err := unix.IoctlGetTermios(int(sl.Fd()), unix.TCGETS); err == nil {
		tio.Oflag &^= unix.OPOST
		tio.Lflag &^= unix.ECHO
		unix.IoctlSetTermios(int(sl.Fd()), unix.TCSETS, tio)
	}
	return m, sl, nil
}

func exitText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// awaitListen waits until a socket listens on TCP port (a LISTEN row of
// /proc/net/tcp or tcp6), or ctx ends.
func awaitListen(ctx context.Context, port int) error {
	local := fmt.Sprintf(":%04X", port)
	for {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			for _, l := range strings.Split(readFile(f), "\n") {
				fl := strings.Fields(l)
				if len(fl) > 3 && strings.HasSuffix(fl[1], local) && fl[3] == "0A" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond): // the kernel's socket table, polled
		}
	}
}

// netUp configures the first interface other than lo (virtio-net).
func (g *guest) netUp(nc *vmtest.NetConfig) error {
	ents, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == "lo" {
			continue
		}
		ip := net.ParseIP(nc.Addr).To4()
		if ip == nil {
			return fmt.Errorf("net: address %q is not IPv4", nc.Addr)
		}
		if err := ifUp(e.Name(), ip, nc.Prefix); err != nil {
			return err
		}
		say("net: %s (%s) up with %s/%d, peer %s", e.Name(), filepath.Base(readLink("/sys/class/net/"+e.Name()+"/device/driver")), nc.Addr, nc.Prefix, nc.Peer)
		return nil
	}
	return errors.New("net: no network interface but lo (is virtio_net loaded and -device virtio-net-pci on the QEMU command line?)")
}

func readLink(p string) string {
	l, _ := os.Readlink(p)
	return l
}

// ifUp sets name's IPv4 address (if ip is not nil) and brings it up, with
// the ioctls of ifconfig.
func ifUp(name string, ip net.IP, prefix int) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: socket: %w", name, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if ip != nil {
		if err := ifr.SetInet4Addr(ip); err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFADDR, ifr); err != nil {
			return fmt.Errorf("%s: SIOCSIFADDR %v: %w", name, ip, err)
		}
		if err := ifr.SetInet4Addr(net.CIDRMask(prefix, 32)); err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFNETMASK, ifr); err != nil {
			return fmt.Errorf("%s: SIOCSIFNETMASK /%d: %w", name, prefix, err)
		}
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("%s: SIOCGIFFLAGS: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("%s: SIOCSIFFLAGS up: %w", name, err)
	}
	return nil
}

// tcpCheck exchanges a line over TCP with the peer guest: the server
// listens (and the host lets the client dial once it does), the client
// dials, each sends its address and reads the other's.
func tcpCheck(vc vmtest.VerbsConfig) error {
	exchange := func(c net.Conn) error {
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := fmt.Fprintf(c, "hello from %s\n", vc.Net.Addr); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		say("tcp: %s <-> %s: got %q", c.LocalAddr(), c.RemoteAddr(), strings.TrimSpace(line))
		return nil
	}
	switch vc.Role {
	case "server":
		ln, err := net.Listen("tcp4", fmt.Sprintf("%s:%d", vc.Net.Addr, vmtest.TCPPort))
		if err != nil {
			return fmt.Errorf("tcp: %w", err)
		}
		defer ln.Close()
		wait("tcp listening")
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("tcp: accept: %w", err)
		}
		if err := exchange(c); err != nil {
			return fmt.Errorf("tcp: %w", err)
		}
	case "client":
		wait("tcp dial")
		c, err := net.DialTimeout("tcp4", fmt.Sprintf("%s:%d", vc.Net.Peer, vmtest.TCPPort), 20*time.Second)
		if err != nil {
			return fmt.Errorf("tcp: %w", err)
		}
		if err := exchange(c); err != nil {
			return fmt.Errorf("tcp: %w", err)
		}
	}
	return nil
}

// bindVerbs binds mlx4_core (and mlx4_ib) once, waits for port 1 to be
// Active and for the uverbs device, and tells the host ("bound 1").
func (g *guest) bindVerbs(scenario string) error {
	if err := g.bind(1); err != nil {
		return err
	}
	if err := waitActive(1); err != nil {
		return err
	}
	if _, err := os.Stat("/dev/infiniband/uverbs0"); err != nil {
		return fmt.Errorf("%s: %w (devtmpfs on /dev?)", scenario, err)
	}
	wait("bound 1")
	return nil
}
