package ivshmem

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// Client is the client end of a server's socket, as QEMU's ivshmem device
// is: it receives the setup. Tests and tools use it.
type Client struct {
	c     *net.UnixConn
	State *SetupState
}

// Dial connects to the server at path.
func Dial(path string) (*Client, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	return &Client{c: c, State: NewSetupState()}, nil
}

// Setup reads messages until the shared memory and n vectors have arrived
// (or timeout), as QEMU's device does.
func (cl *Client) Setup(n int, timeout time.Duration) error {
	_ = cl.c.SetReadDeadline(time.Now().Add(timeout))
	defer cl.c.SetReadDeadline(time.Time{})
	for !cl.State.Ready() || len(cl.State.Vectors) < n {
		m, err := cl.Next()
		if err != nil {
			return err
		}
		if err := cl.State.Apply(m); err != nil {
			if m.FD >= 0 {
				unix.Close(m.FD)
			}
			return err
		}
	}
	return nil
}

// Next reads one message.
func (cl *Client) Next() (Msg, error) {
	var b [msgSize]byte
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := cl.c.ReadMsgUnix(b[:], oob)
	if err != nil {
		return Msg{FD: -1}, err
	}
	fds, err := parseRights(oob[:oobn])
	if err != nil {
		return Msg{FD: -1}, err
	}
	if n < msgSize { // the rest of a message split by the stream
		if _, err := io.ReadFull(cl.c, b[n:]); err != nil {
			closeAll(fds)
			return Msg{FD: -1}, err
		}
	}
	return decodeMsg(b[:], fds)
}

// Close closes the connection (the server sees the client gone). It does
// not close the fds the state recorded.
func (cl *Client) Close() error { return cl.c.Close() }

// CloseFDs closes every fd the state recorded.
func (s *SetupState) CloseFDs() {
	if s.SHM >= 0 {
		unix.Close(s.SHM)
		s.SHM = -1
	}
	closeAll(s.Vectors)
	s.Vectors = nil
	for id, fds := range s.Peers {
		closeAll(fds)
		delete(s.Peers, id)
	}
}

// decodeMsg makes a message of 8 bytes and the fds that came with them: at
// most one (the extra ones are closed and the message refused).
func decodeMsg(b []byte, fds []int) (Msg, error) {
	if len(b) != msgSize {
		closeAll(fds)
		return Msg{FD: -1}, fmt.Errorf("%w: message of %d bytes", ErrProtocol, len(b))
	}
	if len(fds) > 1 {
		closeAll(fds)
		return Msg{FD: -1}, fmt.Errorf("%w: %d fds with one message", ErrProtocol, len(fds))
	}
	m := Msg{Val: int64(binary.LittleEndian.Uint64(b)), FD: -1}
	if len(fds) == 1 {
		m.FD = fds[0]
	}
	return m, nil
}

// parseRights returns the fds of the SCM_RIGHTS messages in oob; on an
// error it closes those it found.
func parseRights(oob []byte) ([]int, error) {
	fds, err := parseRightsNoClose(oob)
	if err != nil {
		closeAll(fds)
		return nil, err
	}
	return fds, nil
}

// parseRightsNoClose is parseRights without closing anything: on an error
// it returns the fds found before it.
func parseRightsNoClose(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	cms, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("%w: control message: %v", ErrProtocol, err)
	}
	var fds []int
	for _, cm := range cms {
		if cm.Header.Level != unix.SOL_SOCKET || cm.Header.Type != unix.SCM_RIGHTS {
			return fds, fmt.Errorf("%w: control message level %d type %d", ErrProtocol, cm.Header.Level, cm.Header.Type)
		}
		// ParseUnixRights indexes Data without checking it (an empty
		// SCM_RIGHTS message panics in x/sys): fds are 4 bytes each.
		if len(cm.Data) == 0 || len(cm.Data)%4 != 0 {
			return fds, fmt.Errorf("%w: SCM_RIGHTS of %d bytes", ErrProtocol, len(cm.Data))
		}
		f, err := unix.ParseUnixRights(&cm)
		if err != nil {
			return fds, fmt.Errorf("%w: control message: %v", ErrProtocol, err)
		}
		fds = append(fds, f...)
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// Control calls f with the connection's descriptor (to check its state;
// f must not close it).
func (cl *Client) Control(f func(fd uintptr)) error {
	rc, err := cl.c.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(f)
}
