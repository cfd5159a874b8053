package ibsim

import (
	"fmt"
	"os"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

func forwardSeed(dlid uint16, qp uint32, m *mad.MAD) []byte {
	req := make([]byte, requestSize)
	be.PutUint16(req[0:], dlid)
	be.PutUint32(req[8:], qp)
	be.PutUint32(req[12:], qp)
	be.PutUint64(req[24:], mad.Size)
	copy(req[32:], m[:])
	return req
}

// FuzzForward feeds arbitrary datagrams from a tool (client 1) and from the
// SM (client 0) to the server's routing: it must not panic; a MAD goes to
// the sender or to a connected client; a request forwarded to the SM
// carries the sender's index in TID bits 63:48 and keeps the rest of its
// TID; a response goes to the client its TID names, unchanged.
func FuzzForward(f *testing.F) {
	sminfo := madtest.SMP(mad.MethodGet, mad.AttrSMInfo, 0, 0, nil)
	f.Add(forwardSeed(5, 0, sminfo), false)
	sa := madtest.SMP(0x12, 0x0011, 0, 0, nil)
	sa[1], sa[2] = mad.ClassSubnAdm, 2
	f.Add(forwardSeed(5, 1, sa), false)
	resp := *sa
	resp[3] = 0x92
	be.PutUint64(resp[8:], 1<<48|0x1234)
	f.Add(forwardSeed(5, 1, &resp), true)
	dr := madtest.DRSMP(mad.MethodGet, mad.AttrSMInfo, 0, 0, 0)
	dr[6] = 0
	f.Add(forwardSeed(0xFFFF, 0, dr), false)
	e, err := mad.New(madtest.Node(), mad.Options{})
	if err != nil {
		f.Fatal(err)
	}
	s, err := Listen(fmt.Sprintf("vhcrdfuzzfwd%d", os.Getpid()), e, Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	s.mu.Lock()
	s.clients[0] = client{used: true, issm: true, pid: 1}
	s.clients[1] = client{used: true, pid: 2}
	s.mu.Unlock()
	f.Fuzz(func(t *testing.T, req []byte, fromSM bool) {
		sender := 1
		if fromSM {
			sender = 0
		}
		orig := append([]byte(nil), req...)
		dest, send := s.handle(sender, req)
		if !send || dest == sender {
			return
		}
		if len(req) != requestSize || (dest != 0 && dest != 1) {
			t.Fatalf("forwarded %d bytes to client %d", len(req), dest)
		}
		tid, otid := be.Uint64(req[40:]), be.Uint64(orig[40:])
		if orig[35]&mad.MethodResp == 0 {
			if dest != 0 || tid>>48 != uint64(sender) || tid&(1<<48-1) != otid&(1<<48-1) {
				t.Fatalf("request from %d forwarded to %d with TID %#x (sent %#x)", sender, dest, tid, otid)
			}
		} else if tid != otid || int(tid>>48) != dest {
			t.Fatalf("response forwarded to %d with TID %#x (sent %#x)", dest, tid, otid)
		}
	})
}
