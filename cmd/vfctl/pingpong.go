package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"

	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/perftest"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

func init() {
	register("pingpong", "ibv_rc_pingpong (--ud: ibv_ud_pingpong) between two VFs: --peer-vf for both ends here, or one end per process over TCP (server: no HOST; client: HOST)", runPingPong)
	register("bw", "ib_write_bw between two VFs: RDMA_WRITE of --size bytes, --tx-depth in flight (--peer-vf, or server and client over TCP)", runBW)
}

// ppFlags are the flags pingpong and bw share, named as ibv_rc_pingpong
// and ib_write_bw name them (each long name has its one-letter alias).
type ppFlags struct {
	bar             *string
	vf, peer        *int
	port, ibPort    *int
	size, iters, rx *int
	events, ud, chk *bool
	sl              *uint
	eqn             *int
	txDepth, cqMod  *int
}

// intVar adds an int flag with a long name and a one-letter alias.
func intVar(fs *flag.FlagSet, p *int, long, short string, def int, usage string) {
	fs.IntVar(p, long, def, usage)
	if short != "" {
		fs.IntVar(p, short, def, "same as --"+long)
	}
}

func boolVar(fs *flag.FlagSet, p *bool, long, short string, usage string) {
	fs.BoolVar(p, long, false, usage)
	if short != "" {
		fs.BoolVar(p, short, false, "same as --"+long)
	}
}

func newPPFlags(fs *flag.FlagSet, bw bool) *ppFlags {
	f := &ppFlags{bar: barFlag(fs), vf: vfFlag(fs)}
	f.peer = fs.Int("peer-vf", -1, "the other end's VF, both ends in this process (no TCP)")
	f.port, f.ibPort, f.size, f.iters, f.rx = new(int), new(int), new(int), new(int), new(int)
	f.events, f.ud, f.chk = new(bool), new(bool), new(bool)
	f.txDepth, f.cqMod = new(int), new(int)
	intVar(fs, f.port, "port", "p", 18515, "the TCP port of the out-of-band exchange")
	intVar(fs, f.ibPort, "ib-port", "i", 1, "the VF's port")
	f.sl = fs.Uint("sl", 0, "service level")
	f.eqn = fs.Int("eqn", 1, "the EQ the CQ reports to")
	if bw {
		intVar(fs, f.size, "size", "s", 65536, "message bytes")
		intVar(fs, f.iters, "iters", "n", 5000, "messages")
		intVar(fs, f.txDepth, "tx-depth", "t", 128, "RDMA_WRITEs in flight")
		intVar(fs, f.cqMod, "cq-mod", "Q", 64, "signal one RDMA_WRITE in this many")
		return f
	}
	intVar(fs, f.size, "size", "s", 4096, "message bytes")
	intVar(fs, f.iters, "iters", "n", 1000, "messages each way")
	intVar(fs, f.rx, "rx-depth", "r", 500, "receives posted")
	boolVar(fs, f.events, "events", "e", "sleep on CQ events (the CQ armed, completion EQEs; the VF's MSI-X vector 0 when vhcrd hands it over)")
	boolVar(fs, f.chk, "chk", "c", "check every received message")
	fs.BoolVar(f.ud, "ud", false, "UD (ibv_ud_pingpong) instead of RC")
	return f
}

// wireDest is ibv_rc_pingpong's exchange message: "LID:QPN:PSN:GID"
// (%04x:%06x:%06x: and 32 hex digits of GID), bw's with ":RKEY:ADDR".
func wireDest(d perftest.Dest, bw bool) string {
	s := fmt.Sprintf("%04x:%06x:%06x:%032x", d.LID, d.QPN, d.PSN, 0)
	if bw {
		s += fmt.Sprintf(":%08x:%016x", d.RKey, d.Addr)
	}
	return s
}

func parseDest(s string, bw bool) (perftest.Dest, error) {
	var d perftest.Dest
	var gid string
	var n int
	var err error
	if bw {
		n, err = fmt.Sscanf(s, "%04x:%06x:%06x:%32s", &d.LID, &d.QPN, &d.PSN, &gid)
		if err == nil {
			_, err = fmt.Sscanf(s[4+1+6+1+6+1+32:], ":%08x:%016x", &d.RKey, &d.Addr)
		}
	} else {
		n, err = fmt.Sscanf(s, "%04x:%06x:%06x:%32s", &d.LID, &d.QPN, &d.PSN, &gid)
	}
	if err != nil || n != 4 {
		return d, fmt.Errorf("peer's address %q: %v", s, err)
	}
	return d, nil
}

// end is one end of a run in this process.
type end struct {
	a   *vfclient.Attachment
	e   *perftest.Endpoint
	irq *os.File
}

func (x *end) close(ctx context.Context) {
	if x.e != nil {
		_ = x.e.Close(ctx)
	}
	if x.a != nil {
		x.a.Close()
	}
	if x.irq != nil {
		x.irq.Close()
	}
}

// openEnd attaches VF vf and builds its end. The channel is brought up
// with RESET whatever its state, as a driver's load does (mlx4_init_slave):
// the end is a new driver, and the PF releases what a previous one (a
// killed vfctl) left.
func openEnd(ctx context.Context, f *ppFlags, vf int, cfg perftest.Config) (*end, error) {
	a, v, err := openVF(*f.bar, vf, true)
	if err != nil {
		return nil, err
	}
	x := &end{a: a}
	opt := vfdrv.Options{BAR: a.VFBARs[vf]}
	if cfg.Events {
		// the vector's eventfd if vhcrd hands it over; else the driver
		// polls the EQ for the completion EQEs
		if x.irq, err = vfIRQ(*f.bar, vf); err == nil {
			opt.IRQ = x.irq
		}
	}
	d, err := vfdrv.New(v, opt)
	if err != nil {
		x.close(ctx)
		return nil, err
	}
	lid, err := perftest.LocalLID(ctx, d, cfg.Port)
	if err != nil {
		x.close(ctx)
		return nil, fmt.Errorf("VF %d: %w", vf, err)
	}
	cfg.PSN = rand.Uint32() & 0xffffff
	if x.e, err = perftest.NewEndpoint(ctx, d, cfg, lid); err != nil {
		x.close(ctx)
		return nil, fmt.Errorf("VF %d: %w", vf, err)
	}
	return x, nil
}

// exchange is the out-of-band exchange of ibv_rc_pingpong: the client
// connects to host:port, writes its address, reads the server's and then
// connects its QP; the server accepts one client, reads its address,
// connects its QP and only then writes its own, so that the client's
// first message finds it ready. After the run the client writes "done"
// and the server waits for it (pp_client_exch_dest, pp_server_exch_dest).
func exchange(ctx context.Context, host string, port int, local perftest.Dest, bw bool, connect func(perftest.Dest) error) (perftest.Dest, net.Conn, error) {
	var c net.Conn
	var err error
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if host != "" {
		var dl net.Dialer
		if c, err = dl.DialContext(ctx, "tcp", addr); err != nil {
			return perftest.Dest{}, nil, fmt.Errorf("couldn't connect to %s: %w", addr, err)
		}
	} else {
		l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
		if err != nil {
			return perftest.Dest{}, nil, err
		}
		// On stderr, so that stdout stays ibv_rc_pingpong's: a script
		// (or a test) starts the client once the server listens; with
		// --port 0 this line says which port the system chose.
		fmt.Fprintf(os.Stderr, "vfctl: waiting for the client on port %d\n", l.Addr().(*net.TCPAddr).Port)
		stop := context.AfterFunc(ctx, func() { l.Close() })
		c, err = l.Accept()
		stop()
		l.Close()
		if err != nil {
			return perftest.Dest{}, nil, err
		}
	}
	r := bufio.NewReader(c)
	send := func() error { _, err := io.WriteString(c, wireDest(local, bw)+"\n"); return err }
	if host != "" {
		err = send()
	}
	line, rerr := r.ReadString('\n')
	if err == nil && rerr != nil {
		err = fmt.Errorf("couldn't read remote address: %w", rerr)
	}
	var rem perftest.Dest
	if err == nil {
		rem, err = parseDest(line[:len(line)-1], bw)
	}
	if err == nil {
		if err = connect(rem); err != nil {
			err = fmt.Errorf("couldn't connect to remote QP: %w", err)
		}
	}
	if err == nil && host == "" {
		err = send()
	}
	if err != nil {
		c.Close()
		return perftest.Dest{}, nil, err
	}
	return rem, c, nil
}

// finish is the end of the exchange: the client writes "done", the server
// reads it.
func finish(c net.Conn, client bool) error {
	defer c.Close()
	if client {
		_, err := io.WriteString(c, "done\n")
		return err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

func printAddrs(local, rem perftest.Dest) {
	fmt.Printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID ::\n", local.LID, local.QPN, local.PSN)
	fmt.Printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID ::\n", rem.LID, rem.QPN, rem.PSN)
}

// runEnds runs f on both ends of a --peer-vf run concurrently (each
// driver on its goroutine), the client being --vf.
func runEnds[T any](ctx context.Context, f *ppFlags, cfg perftest.Config, run func(e *perftest.Endpoint, server bool) (T, error)) (client, server *end, rc, rs T, err error) {
	if *f.peer == *f.vf || *f.peer < 0 {
		return nil, nil, rc, rs, usageErr(errors.New("--peer-vf: another VF than --vf"))
	}
	if client, err = openEnd(ctx, f, *f.vf, cfg); err != nil {
		return nil, nil, rc, rs, err
	}
	if server, err = openEnd(ctx, f, *f.peer, cfg); err != nil {
		client.close(ctx)
		return nil, nil, rc, rs, err
	}
	for _, p := range [][2]*end{{client, server}, {server, client}} {
		if err = p[0].e.Connect(ctx, p[1].e.Local); err != nil {
			return client, server, rc, rs, fmt.Errorf("failed to modify QP to RTR/RTS: %w", err)
		}
	}
	var ec, es error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); rs, es = run(server.e, true) }()
	go func() { defer wg.Done(); rc, ec = run(client.e, false) }()
	wg.Wait()
	if err = errors.Join(ec, es); err != nil {
		return client, server, rc, rs, err
	}
	return client, server, rc, rs, nil
}

func runPingPong(args []string) error {
	fs := clidoc.NewFlagSet("pingpong", flag.ContinueOnError)
	f := newPPFlags(fs, false)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || (len(pos) == 1 && *f.peer >= 0) {
		return usageErr(fmt.Errorf("want at most one HOST (the server's), and none with --peer-vf: %q", pos))
	}
	if *f.size < 1 || *f.iters < 1 || *f.rx < 1 {
		return usageErr(errors.New("--size, --iters and --rx-depth must be positive"))
	}
	cfg := perftest.Config{UD: *f.ud, Size: *f.size, RxDepth: *f.rx, Port: *f.ibPort, SL: uint8(*f.sl), EQN: *f.eqn, Events: *f.events, Check: *f.chk}
	ctx := context.Background()
	pp := func(e *perftest.Endpoint, server bool) (perftest.Result, error) {
		return e.PingPong(ctx, *f.iters, server)
	}
	if *f.peer >= 0 {
		c, s, rc, rs, err := runEnds(ctx, f, cfg, pp)
		if c != nil {
			defer c.close(ctx)
			defer s.close(ctx)
		}
		if err != nil {
			return err
		}
		fmt.Printf("VF %d (client):\n", *f.vf)
		printAddrs(c.e.Local, s.e.Local)
		fmt.Print(rc.Lines())
		fmt.Printf("VF %d (server):\n", *f.peer)
		printAddrs(s.e.Local, c.e.Local)
		fmt.Print(rs.Lines())
		return nil
	}
	x, conn, host, err := openRemote(ctx, f, cfg, pos, false)
	if err != nil {
		return err
	}
	defer x.close(ctx)
	r, err := x.e.PingPong(ctx, *f.iters, host == "")
	if err != nil {
		conn.Close()
		return err
	}
	if err := finish(conn, host != ""); err != nil {
		return err
	}
	fmt.Print(r.Lines())
	return nil
}

// openRemote opens the end of a run with its peer in another process: the
// server without a HOST in pos, else the client of pos[0]; the two ends'
// addresses exchanged over TCP (bw: with the buffer's) and printed. The
// caller closes the end.
func openRemote(ctx context.Context, f *ppFlags, cfg perftest.Config, pos []string, bw bool) (*end, net.Conn, string, error) {
	host := ""
	if len(pos) == 1 {
		host = pos[0]
	}
	x, err := openEnd(ctx, f, *f.vf, cfg)
	if err != nil {
		return nil, nil, "", err
	}
	rem, conn, err := exchange(opCtx(), host, *f.port, x.e.Local, bw, func(d perftest.Dest) error { return x.e.Connect(ctx, d) })
	if err != nil {
		x.close(ctx)
		return nil, nil, "", err
	}
	printAddrs(x.e.Local, rem)
	return x, conn, host, nil
}

// bwHeader and bwLine are ib_write_bw's result table.
const bwHeader = " #bytes     #iterations    BW average[MB/sec]   MsgRate[Mpps]   msg/s"

func printBW(r perftest.BWResult) {
	fmt.Println(bwHeader)
	fmt.Printf(" %-10d %-14d %-20.2f %-15.6f %.0f\n", r.Size, r.Iters, r.MBps(), r.MsgRate()/1e6, r.MsgRate())
}

func runBW(args []string) error {
	fs := clidoc.NewFlagSet("bw", flag.ContinueOnError)
	f := newPPFlags(fs, true)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || (len(pos) == 1 && *f.peer >= 0) {
		return usageErr(fmt.Errorf("want at most one HOST (the server's), and none with --peer-vf: %q", pos))
	}
	if *f.size < 1 || *f.iters < 1 || *f.txDepth < 1 || *f.cqMod < 1 {
		return usageErr(errors.New("--size, --iters, --tx-depth and --cq-mod must be positive"))
	}
	cfg := perftest.Config{Size: *f.size, RxDepth: 1, TxDepth: *f.txDepth, Port: *f.ibPort, SL: uint8(*f.sl), EQN: *f.eqn, Selective: true}
	ctx := context.Background()
	if *f.peer >= 0 {
		c, s, rc, _, err := runEnds(ctx, f, cfg, func(e *perftest.Endpoint, server bool) (perftest.BWResult, error) {
			if server {
				return perftest.BWResult{}, nil // ib_write_bw's server only waits
			}
			return e.WriteBW(ctx, *f.iters, *f.cqMod)
		})
		if c != nil {
			defer c.close(ctx)
			defer s.close(ctx)
		}
		if err != nil {
			return err
		}
		fmt.Printf("RDMA_Write BW: VF %d → VF %d\n", *f.vf, *f.peer)
		printBW(rc)
		return nil
	}
	x, conn, host, err := openRemote(ctx, f, cfg, pos, true)
	if err != nil {
		return err
	}
	defer x.close(ctx)
	if host == "" {
		// the server's buffer is written; it waits for the client's done
		if err := finish(conn, false); err != nil {
			return err
		}
		fmt.Println("RDMA_Write BW: server done")
		return nil
	}
	r, err := x.e.WriteBW(ctx, *f.iters, *f.cqMod)
	if err != nil {
		conn.Close()
		return err
	}
	if err := finish(conn, true); err != nil {
		return err
	}
	printBW(r)
	return nil
}
