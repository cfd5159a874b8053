package ivshmem

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotAdoptable is returned, wrapped, by ListenFD and Adopt for a
// descriptor that is not what they take over.
var ErrNotAdoptable = errors.New("ivshmem: descriptor cannot be adopted")

// ListenFD is Listen on a socket a previous server process left (kept in
// systemd's file-descriptor store): fd must be a unix stream socket,
// listening, bound to path. Clients waiting in its backlog are served by
// Serve. fd is the server's from the call on: closed on an error, by
// Close (which also removes the socket file) otherwise.
func ListenFD(fd int, path string, o Options) (srv *Server, err error) {
	defer func() {
		if err != nil && fd >= 0 {
			_ = unix.Close(fd)
		}
	}()
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if err := unixStream(fd); err != nil {
		return nil, err
	}
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || v != 1 {
		return nil, fmt.Errorf("%w: descriptor %d does not listen", ErrNotAdoptable, fd)
	}
	sa, err := unix.Getsockname(fd)
	if un, ok := sa.(*unix.SockaddrUnix); err != nil || !ok || un.Name != path {
		return nil, fmt.Errorf("%w: descriptor %d is not bound to %s", ErrNotAdoptable, fd, path)
	}
	f := os.NewFile(uintptr(fd), path)
	fd = -1 // f's now
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("ivshmem socket %s: %w", path, err)
	}
	// FileListener made its own descriptor: the one handed over is closed
	// (through f, whose finalizer must not close the number again later).
	uln := ln.(*net.UnixListener)
	uln.SetUnlinkOnClose(true)
	return &Server{ln: uln, path: path, o: o}, nil
}

// Adopt serves a client connection a previous server process set up
// (kept in systemd's file-descriptor store) as the connected client,
// without a new setup: the client, QEMU, never sees a disconnect and keeps
// the shared memory and vectors it has. Call it before Serve. fd is the
// server's from the call on; on an error (not a unix stream socket, a
// client already connected, the server closed) it is closed, and the
// client sees its connection end.
func (s *Server) Adopt(fd int) (id int64, err error) {
	defer func() {
		if err != nil && fd >= 0 {
			_ = unix.Close(fd)
		}
	}()
	if err := unixStream(fd); err != nil {
		return 0, err
	}
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || v != 0 {
		return 0, fmt.Errorf("%w: descriptor %d is a listening socket, not a client's connection", ErrNotAdoptable, fd)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.cur != nil {
		return 0, fmt.Errorf("%w: %s already has a client or is closed", ErrNotAdoptable, s.path)
	}
	f := os.NewFile(uintptr(fd), s.path+" client")
	fd = -1         // f's now
	defer f.Close() // FileConn made its own descriptor
	c, err := net.FileConn(f)
	if err != nil {
		return 0, fmt.Errorf("ivshmem %s: adopting a client: %w", s.path, err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return 0, fmt.Errorf("%w: not a unix connection", ErrNotAdoptable)
	}
	id = s.nextID
	s.nextID = (s.nextID + 1) % MaxPeers
	s.cur = uc
	s.wg.Add(1)
	go s.client(uc, id, true)
	return id, nil
}

// unixStream checks that fd is a unix-domain stream socket.
func unixStream(fd int) error {
	d, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	t, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err1 != nil || err2 != nil || d != unix.AF_UNIX || t != unix.SOCK_STREAM {
		return fmt.Errorf("%w: descriptor %d is not a unix stream socket", ErrNotAdoptable, fd)
	}
	return nil
}

// ControlListener calls f with the listening socket's descriptor (to
// store a duplicate outside the process). The descriptor stays the
// server's: f must not close it or keep it past its return.
func (s *Server) ControlListener(f func(fd uintptr)) error {
	rc, err := s.ln.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(f)
}
