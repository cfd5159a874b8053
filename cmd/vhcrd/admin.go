package main

// The admin socket: a local unix socket (mode 0600, next to the BAR file by
// default) that operators' tools talk to, separate from the metrics
// listener. The protocol is line-oriented JSON: a client sends one request
// object on one line, {"cmd":"trace","vf":3,"json":true}, and reads the
// reply as lines until the server closes the connection (or, for a stream
// such as trace, until it closes its own end). An error is one line
// "# error: MESSAGE", after which the server closes the connection. Every
// command has one handler in adminHandlers; the fields of a request other
// than "cmd" are the handler's.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/irq"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
)

// Admin socket limits: a request line, the time a client has to send it,
// and the connections served at once (a stream holds one for its life).
const (
	maxAdminRequest = 4096
	adminReadWait   = 10 * time.Second
	maxAdminConns   = 16
)

// errAdminRequest is returned, wrapped, for a request the server refuses.
var errAdminRequest = errors.New("admin: bad request")

// adminRequest is every admin request: the command and the fields of every
// command's request (trace's: vf, opcode, json, from_start).
type adminRequest struct {
	Cmd string `json:"cmd"`
	trace.Request
	// vf.set's settings; port's port number and state (adminvf.go).
	Set   *vfSetRequest `json:"set,omitempty"`
	Port  int           `json:"port,omitempty"`
	State string        `json:"state,omitempty"`
	// fault.add's rule; fault.clear's rule id (0 or absent: every rule)
	// (adminfault.go).
	Fault *faultinj.Spec `json:"fault,omitempty"`
	ID    int            `json:"id,omitempty"`
}

// adminHandler serves request q on conn, whose request line has been read.
// It closes conn.
type adminHandler func(ctx context.Context, a *adminServer, conn net.Conn, q *adminRequest) error

// adminHandlers dispatches requests by their "cmd".
var adminHandlers = map[string]adminHandler{
	"trace": func(ctx context.Context, a *adminServer, conn net.Conn, q *adminRequest) error {
		return trace.ServeRequest(ctx, conn, a.ring, q.Request)
	},
}

// adminServer serves the admin socket.
type adminServer struct {
	ln    *net.UnixListener
	path  string
	ring  *trace.Ring
	log   *slog.Logger
	slots chan struct{}
	// the PF and its HCA that the vf and port commands change (nil: those
	// commands answer that no PF is served), and their counter
	pf      *master.PF
	hca     *hca.HCA
	changes *metrics.AdminCounter
	irq     *irq.Set // the VFs' MSI-X vectors vf.irq hands over (adminirq.go)
	wg      sync.WaitGroup
}

// ErrAdminSocketInUse is returned, wrapped, when a live server answers on
// the admin socket's path.
var ErrAdminSocketInUse = errors.New("admin socket in use by a running vhcrd")

// listenAdmin listens on path with mode 0600. A socket file left by a
// process that died (nothing accepts on it) is replaced; a live one, or a
// file that is not a socket, is refused.
func listenAdmin(path string, ring *trace.Ring, log *slog.Logger) (*adminServer, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("admin socket %s: exists and is not a socket", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", path, ErrAdminSocketInUse)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("admin socket %s: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("admin socket %s: removing the stale socket: %w", path, err)
		}
		log.Info("replaced a stale admin socket", "path", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	// The socket is created 0600: no window in which another user could
	// connect. The umask is the process's, restored at once; nothing else
	// creates files while the daemon starts.
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	return &adminServer{ln: ln, path: path, ring: ring, log: log, slots: make(chan struct{}, maxAdminConns)}, nil
}

// serve accepts clients until ctx is done, then closes the listener (which
// removes the socket file) and waits for the clients' handlers.
func (a *adminServer) serve(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { a.ln.Close() })
	defer stop()
	for {
		conn, err := a.ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("admin socket: accept", "err", err)
			}
			break
		}
		select {
		case a.slots <- struct{}{}:
		default:
			fmt.Fprintf(conn, "# error: %d admin connections already open\n", maxAdminConns)
			conn.Close()
			continue
		}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			defer func() { <-a.slots }()
			if err := a.serveConn(ctx, conn); err != nil {
				a.log.Debug("admin request", "err", err)
			}
		}()
	}
	a.ln.Close()
	a.wg.Wait()
}

// serveConn reads one request line from conn and dispatches it.
func (a *adminServer) serveConn(ctx context.Context, conn net.Conn) error {
	fail := func(err error) error {
		fmt.Fprintf(conn, "# error: %v\n", err)
		conn.Close()
		return err
	}
	_ = conn.SetReadDeadline(time.Now().Add(adminReadWait))
	br := bufio.NewReaderSize(conn, maxAdminRequest)
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return fail(fmt.Errorf("%w: longer than %d bytes", errAdminRequest, maxAdminRequest))
	}
	if err != nil {
		conn.Close()
		return fmt.Errorf("%w: %w", errAdminRequest, err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	q, err := parseAdminRequest(line)
	if err != nil {
		return fail(err)
	}
	return adminHandlers[q.Cmd](ctx, a, conn, &q)
}

// parseAdminRequest decodes a request line and checks its command and the
// command's fields.
func parseAdminRequest(line []byte) (adminRequest, error) {
	var q adminRequest
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		return adminRequest{}, fmt.Errorf("%w: %v", errAdminRequest, err)
	}
	if _, ok := adminHandlers[q.Cmd]; !ok {
		cmds := make([]string, 0, len(adminHandlers))
		for c := range adminHandlers {
			cmds = append(cmds, c)
		}
		return adminRequest{}, fmt.Errorf("%w: unknown cmd %q (want one of %s)", errAdminRequest, q.Cmd, strings.Join(cmds, ", "))
	}
	if _, err := q.Request.Options(); err != nil {
		return adminRequest{}, err
	}
	if err := checkAdminFields(&q); err != nil {
		return adminRequest{}, err
	}
	if err := checkFaultFields(&q); err != nil {
		return adminRequest{}, err
	}
	if q.Fault != nil && len(q.Fault.Args) == 0 {
		q.Fault.Args = nil // "args":{} says what no args says
	}
	return q, nil
}
