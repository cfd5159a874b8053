package ibsim_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/ibsim"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

func request(dlid uint16, dqp uint32, m *mad.MAD) []byte {
	req := make([]byte, 288)
	be.PutUint16(req[0:], dlid)
	be.PutUint32(req[8:], dqp)
	be.PutUint32(req[12:], dqp)
	be.PutUint64(req[24:], 256)
	copy(req[32:], m[:])
	return req
}

// FuzzHandle feeds arbitrary sim_request datagrams to the server: it must
// not panic, a request it does not answer is left as it was, and a reply
// carries status 0 or 110 and the request's TID.
func FuzzHandle(f *testing.F) {
	f.Add(request(5, 0, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil)))
	dr := madtest.DRSMP(mad.MethodGet, mad.AttrNodeDescription, 0, 0, 0)
	dr[6] = 0
	f.Add(request(0xFFFF, 0, dr))
	f.Add(request(5, 1, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0)))
	f.Add(request(5, 1, madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 1, nil)))
	f.Add([]byte{1, 2, 3})
	cfg := madtest.Node()
	cfg.Ports[0].MKey, cfg.Ports[0].MKeyProtect = 3, 2
	e, err := mad.New(cfg, mad.Options{})
	if err != nil {
		f.Fatal(err)
	}
	s, err := ibsim.Listen(fmt.Sprintf("vhcrdfuzz%d", os.Getpid()), e, ibsim.Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, req []byte) {
		orig := append([]byte(nil), req...)
		if !s.Handle(req) {
			// Malformed, or a MAD that expects no response (a response,
			// TrapRepress): nothing is sent and nothing is written.
			if string(req) != string(orig) {
				t.Fatal("a request without a reply was modified")
			}
			return
		}
		if len(req) != 288 {
			t.Fatalf("a reply to a %d-byte request", len(req))
		}
		if st := be.Uint32(req[16:]); st != 0 && st != ibsim.StatusDropped {
			t.Fatalf("status %d", st)
		}
		if string(req[40:48]) != string(orig[40:48]) {
			t.Fatal("TID changed")
		}
	})
}
