package ivshmem

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrInUse is returned, wrapped, by Listen when another server answers on
// the socket path.
var ErrInUse = errors.New("ivshmem: socket in use by another server")

// Options configure a Server.
type Options struct {
	// SHM is the shared memory handed to every client (QEMU maps the whole
	// file as BAR2 of ivshmem-doorbell; its size must be a power of two).
	SHM *os.File
	// Vectors returns the eventfds handed to a client as its interrupt
	// vectors 0..n-1, in order. The server sends duplicates; the caller
	// keeps the fds.
	Vectors func() []int
	// OnConnect is called once a client has received its setup; OnDisconnect
	// once its connection has ended (the client is gone). Both run on the
	// client's goroutine, one client at a time.
	OnConnect    func(id int64)
	OnDisconnect func(id int64)
	// OnClient, if set, is called with a client's connection once it has
	// its setup (or was adopted), before OnConnect: to keep the connection
	// outside the process (systemd's file-descriptor store).
	OnClient func(id int64, c *net.UnixConn)
	// Logger receives a line per connect, refusal and disconnect (nil:
	// slog.Default()).
	Logger *slog.Logger
	// SetupTimeout bounds the writes of one client's setup (default 5 s).
	SetupTimeout time.Duration
}

// Server is an ivshmem server for one device: one client at a time.
type Server struct {
	ln   *net.UnixListener
	path string
	o    Options

	mu      sync.Mutex
	cur     *net.UnixConn // the connected client, or nil
	ending  chan struct{} // closed when the ending client's OnDisconnect has run; nil while it is connected
	closed  bool
	nextID  int64
	clients int
	refused int
	wg      sync.WaitGroup
}

// Listen creates the server's socket at path, mode 0600 (a stale socket
// there, one nobody answers on, is replaced). Serve accepts clients.
func Listen(path string, o Options) (*Server, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("ivshmem socket %s: exists and is not a socket", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", path, ErrInUse)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("ivshmem socket %s: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("ivshmem socket %s: removing the stale socket: %w", path, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("ivshmem socket: %w", err)
	}
	// Created 0600: no window in which another user could connect and get
	// the VF's BAR. The umask is the process's, restored at once.
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("ivshmem socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("ivshmem socket: %w", err)
	}
	return &Server{ln: ln, path: path, o: o}, nil
}

func (o *Options) defaults() error {
	if o.SHM == nil || o.Vectors == nil {
		return errors.New("ivshmem: Options need SHM and Vectors")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SetupTimeout <= 0 {
		o.SetupTimeout = 5 * time.Second
	}
	return nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Serve accepts clients until Close. A client that connects while another
// is connected is refused: it gets RefusedVersion instead of its setup and
// its connection is closed (QEMU exits with "server sent version -1,
// expecting 0"). One that
// connects while the previous one's end is being handled (OnDisconnect:
// the VF's reset) is served once that is done.
func (s *Server) Serve() error {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return fmt.Errorf("ivshmem %s: accept: %w", s.path, err)
		}
		s.mu.Lock()
		if ch := s.ending; s.cur != nil && ch != nil {
			s.mu.Unlock()
			<-ch
			s.mu.Lock()
		}
		if s.closed || s.cur != nil {
			s.refused++
			s.mu.Unlock()
			s.o.Logger.Warn("ivshmem client refused: the device already has one (one QEMU per VF)", "socket", s.path)
			refuse(c, s.o.SetupTimeout)
			continue
		}
		id := s.nextID
		s.nextID = (s.nextID + 1) % MaxPeers
		s.cur = c
		s.wg.Add(1)
		s.mu.Unlock()
		go s.client(c, id, false)
	}
}

// client sends c its setup (unless adopted: it has it) and waits for its
// end.
func (s *Server) client(c *net.UnixConn, id int64, adopted bool) {
	defer s.wg.Done()
	ending := make(chan struct{})
	defer func() {
		c.Close()
		s.mu.Lock()
		s.cur, s.ending = nil, nil
		s.mu.Unlock()
		close(ending)
	}()
	if !adopted {
		_ = c.SetWriteDeadline(time.Now().Add(s.o.SetupTimeout))
		vec := s.o.Vectors()
		if err := SendSetup(c, id, int(s.o.SHM.Fd()), vec); err != nil {
			s.o.Logger.Warn("ivshmem client setup failed", "socket", s.path, "id", id, "err", err)
			return
		}
		_ = c.SetWriteDeadline(time.Time{})
		s.o.Logger.Info("ivshmem client connected", "socket", s.path, "id", id, "vectors", len(vec))
	} else {
		s.o.Logger.Info("ivshmem client adopted: served on without a new setup", "socket", s.path, "id", id)
	}
	s.mu.Lock()
	s.clients++
	s.mu.Unlock()
	if s.o.OnClient != nil {
		s.o.OnClient(id, c)
	}
	if s.o.OnConnect != nil {
		s.o.OnConnect(id)
	}
	// The protocol is one-way: the client never writes. A read returns at
	// its end (EOF), or when Close closes the connection.
	var b [64]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.o.Logger.Info("ivshmem client connection error", "socket", s.path, "id", id, "err", err)
			}
			break
		}
	}
	s.mu.Lock()
	s.ending = ending
	s.mu.Unlock()
	s.o.Logger.Info("ivshmem client gone", "socket", s.path, "id", id)
	if s.o.OnDisconnect != nil {
		s.o.OnDisconnect(id)
	}
}

// Stats are the server's counts: clients served (set up or adopted), clients refused, and
// whether one is connected now.
func (s *Server) Stats() (clients, refused int, connected bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients, s.refused, s.cur != nil
}

// Close stops accepting, closes the connected client's connection (its
// OnDisconnect runs), waits for it, and removes the socket.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	c := s.cur
	s.mu.Unlock()
	err := s.ln.Close() // removes the socket file
	if c != nil {
		c.Close()
	}
	s.wg.Wait()
	return err
}

// refuse answers a client that is not served with RefusedVersion, within
// timeout, and closes its connection. A client already gone is no error.
func refuse(c *net.UnixConn, timeout time.Duration) {
	c.SetWriteDeadline(time.Now().Add(timeout))
	Send(c, Msg{Val: RefusedVersion, FD: -1})
	c.Close()
}

// SendSetup sends a new client its setup, in the spec's order: the
// protocol version, its ID, -1 with the shared memory fd, then its ID once
// per vector with that vector's eventfd (no other peers).
func SendSetup(c *net.UnixConn, id int64, shm int, vectors []int) error {
	msgs := make([]Msg, 0, 3+len(vectors))
	msgs = append(msgs, Msg{Val: ProtocolVersion, FD: -1}, Msg{Val: id, FD: -1}, Msg{Val: -1, FD: shm})
	for _, fd := range vectors {
		msgs = append(msgs, Msg{Val: id, FD: fd})
	}
	for _, m := range msgs {
		if err := Send(c, m); err != nil {
			return err
		}
	}
	return nil
}

// Send writes one message: its 8 bytes, with its fd as SCM_RIGHTS.
func Send(c *net.UnixConn, m Msg) error {
	b := m.encode()
	var oob []byte
	if m.FD >= 0 {
		oob = unix.UnixRights(m.FD)
	}
	n, oobn, err := c.WriteMsgUnix(b[:], oob, nil)
	if err != nil {
		return fmt.Errorf("ivshmem: sending %d: %w", m.Val, err)
	}
	if n != len(b) || oobn != len(oob) {
		return fmt.Errorf("ivshmem: sending %d: short write (%d+%d bytes)", m.Val, n, oobn)
	}
	return nil
}
