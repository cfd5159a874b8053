package ivshmem

import (
	"encoding/binary"
	"errors"
	"testing"
)

// FuzzSetupState: any sequence of messages (9 bytes each: the value, then
// a flag byte whose bit 0 says an fd comes with it) is accepted or refused
// with ErrProtocol (ErrRefused too for the server's refusal: version -1
// first), never a panic; what is accepted keeps the invariants
// QEMU relies on (the ID in 0..65535, at most one shared memory, bounded
// vectors). The fds are made up and never closed.
func FuzzSetupState(f *testing.F) {
	msg := func(v int64, fd bool) []byte {
		var b [9]byte
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		if fd {
			b[8] = 1
		}
		return b[:]
	}
	var good []byte
	for _, m := range []struct {
		v  int64
		fd bool
	}{{0, false}, {5, false}, {-1, true}, {5, true}, {5, true}, {2, true}, {2, false}} {
		good = append(good, msg(m.v, m.fd)...)
	}
	f.Add(good)
	f.Add(append(msg(1, false), msg(0, false)...))
	f.Fuzz(func(t *testing.T, in []byte) {
		s := NewSetupState()
		fd := 1000
		for len(in) >= 9 {
			m := Msg{Val: int64(binary.LittleEndian.Uint64(in)), FD: -1}
			if in[8]&1 != 0 {
				m.FD = fd
				fd++
			}
			in = in[9:]
			if err := s.Apply(m); err != nil {
				if !errors.Is(err, ErrProtocol) {
					t.Fatalf("refusal %v does not wrap ErrProtocol", err)
				}
				if errors.Is(err, ErrRefused) != (s.step == 0 && m.Val == RefusedVersion && m.FD < 0) {
					t.Fatalf("ErrRefused %v for %+v at step %d: only the server's refusal (version %d) is one", err, m, s.step, RefusedVersion)
				}
				return
			}
			if s.ID >= MaxPeers || (s.step >= 2 && s.ID < 0) || len(s.Vectors) > MaxVectors {
				t.Fatalf("accepted state out of bounds: %+v", s)
			}
			if s.Ready() && s.SHM < 0 {
				t.Fatal("ready without shared memory")
			}
		}
	})
}

// FuzzDecodeMsg: any bytes and control data decode to one message or an
// error, never a panic. (Control data here carries no real fds: whatever
// ParseUnixRights makes of it is not closed.)
func FuzzDecodeMsg(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0}, []byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, []byte{20, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b, oob []byte) {
		fds, err := parseRightsNoClose(oob)
		if err != nil {
			return
		}
		if len(b) != msgSize || len(fds) > 1 {
			return // decodeMsg would close them: not with made-up numbers
		}
		m, err := decodeMsg(b, fds)
		if err != nil || (len(fds) == 1 && m.FD != fds[0]) || (len(fds) == 0 && m.FD != -1) {
			t.Fatalf("decode %x with %v: %+v, %v", b, fds, m, err)
		}
	})
}
