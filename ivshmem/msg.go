package ivshmem

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ProtocolVersion is IVSHMEM_PROTOCOL_VERSION.
const ProtocolVersion = 0

// RefusedVersion is the only message a refused client gets, in the place of
// the version: no client accepts it, so QEMU's ivshmem_recv_setup fails the
// device's realize ("server sent version -1, expecting 0") and QEMU exits
// with that message. A refusal that only closed the connection would leave
// QEMU 7.2 spinning in ivshmem_recv_msg, which retries a read that returns
// end-of-file for ever.
const RefusedVersion = -1

// ErrRefused is wrapped by the error of a client the server refused (it
// sent RefusedVersion).
var ErrRefused = errors.New("ivshmem: refused by the server: the device already has a client")

// MaxPeers is the largest client ID + 1: the doorbell register has 16 bits
// for it (IVSHMEM_MAX_PEERS is 65536).
const MaxPeers = 1 << 16

// MaxVectors bounds the vectors of one client a decoder accepts (QEMU's
// ivshmem takes up to 1024, the MSI-X table's limit of 2048 halved).
const MaxVectors = 1024

// msgSize is the size of one message: a little-endian int64.
const msgSize = 8

// ErrProtocol is wrapped by every decoding error.
var ErrProtocol = errors.New("ivshmem: protocol error")

// Msg is one message: a value and at most one file descriptor (-1: none).
type Msg struct {
	Val int64
	FD  int
}

// encode is the message's 8 bytes.
func (m Msg) encode() [msgSize]byte {
	var b [msgSize]byte
	binary.LittleEndian.PutUint64(b[:], uint64(m.Val))
	return b
}

// SetupState is the client side's state machine over the server's
// messages, as QEMU's ivshmem device runs it (ivshmem_recv_setup, then
// process_msg): version, own ID, the shared memory, then connect
// notifications of peers and its own vectors, and disconnect
// notifications. It owns no descriptor: it records them; the caller closes
// them.
type SetupState struct {
	Version int64 // -1 until received
	ID      int64 // -1 until received
	SHM     int   // the shared-memory fd, -1 until received
	Vectors []int // own vectors' eventfds, in order
	// Peers are the other clients' vectors' eventfds, by ID.
	Peers map[int64][]int
	// Gone are the IDs whose disconnect notification arrived.
	Gone []int64
	step int
}

// NewSetupState returns a state that expects the version.
func NewSetupState() *SetupState { return &SetupState{Version: -1, ID: -1, SHM: -1} }

// Ready reports whether the shared memory has arrived (QEMU's realize
// completes then; vectors may follow).
func (s *SetupState) Ready() bool { return s.step >= 3 }

// Apply takes the next message. An error wraps ErrProtocol; after one the
// state is not to be used further (QEMU closes the connection).
func (s *SetupState) Apply(m Msg) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, a...))
	}
	switch s.step {
	case 0:
		if m.FD >= 0 {
			return bad("version message carries an fd")
		}
		if m.Val == RefusedVersion {
			return fmt.Errorf("%w (%w: version %d)", ErrRefused, ErrProtocol, m.Val)
		}
		if m.Val != ProtocolVersion {
			return bad("protocol version %d, want %d", m.Val, ProtocolVersion)
		}
		s.Version, s.step = m.Val, 1
		return nil
	case 1:
		if m.FD >= 0 || m.Val < 0 || m.Val >= MaxPeers {
			return bad("malformed ID message (value %d, fd %d)", m.Val, m.FD)
		}
		s.ID, s.step = m.Val, 2
		return nil
	}
	if m.Val == -1 {
		if m.FD < 0 {
			return bad("shared memory message without an fd")
		}
		if s.SHM >= 0 {
			return bad("second shared memory message")
		}
		s.SHM, s.step = m.FD, 3
		return nil
	}
	if m.Val < 0 || m.Val >= MaxPeers {
		return bad("peer ID %d outside 0..%d", m.Val, MaxPeers-1)
	}
	if m.FD < 0 { // a disconnect
		if m.Val == s.ID {
			return bad("disconnect notification for the client itself")
		}
		if _, ok := s.Peers[m.Val]; !ok {
			return bad("disconnect of unknown peer %d", m.Val)
		}
		delete(s.Peers, m.Val)
		s.Gone = append(s.Gone, m.Val)
		return nil
	}
	if m.Val == s.ID {
		if len(s.Vectors) >= MaxVectors {
			return bad("more than %d vectors", MaxVectors)
		}
		s.Vectors = append(s.Vectors, m.FD)
		return nil
	}
	if s.Peers == nil {
		s.Peers = map[int64][]int{}
	}
	if len(s.Peers[m.Val]) >= MaxVectors {
		return bad("peer %d: more than %d vectors", m.Val, MaxVectors)
	}
	if len(s.Peers) >= MaxPeers {
		return bad("too many peers")
	}
	s.Peers[m.Val] = append(s.Peers[m.Val], m.FD)
	return nil
}
