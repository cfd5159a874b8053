package mad_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

// FuzzSwitchSMP feeds arbitrary SMPs to a switch's SMA, arriving on any
// port: it must not panic, a reply is a response with the request's TID,
// and whatever the Sets did, the LFT names only existing ports (or none)
// and every port's state is a valid one.
func FuzzSwitchSMP(f *testing.F) {
	lft := make([]byte, 64)
	for i := range lft {
		lft[i] = byte(i % 9)
	}
	f.Add(madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil)[:], uint8(1))
	f.Add(madtest.SMP(mad.MethodSet, mad.AttrLinearFwdTable, 0, 0, lft)[:], uint8(2))
	f.Add(madtest.DRSMP(mad.MethodSet, mad.AttrPortInfo, 3, 0, 1, 1)[:], uint8(3))
	f.Add(madtest.SMP(mad.MethodSet, mad.AttrMulticastFwdTable, 1<<28|2, 0, lft)[:], uint8(0))
	f.Add(madtest.SMP(mad.MethodSet, mad.AttrSwitchInfo, 0, 0, lft)[:], uint8(4))
	f.Fuzz(func(t *testing.T, b []byte, arrival uint8) {
		s, err := mad.NewSwitch(mad.SwitchConfig{NodeGUID: 1, NumPorts: 8})
		if err != nil {
			t.Fatal(err)
		}
		_ = s.SetLink(1, true)
		var in mad.MAD
		copy(in[:], b)
		for range 2 { // twice: a Set, then what it left
			out, res := s.ProcessSMP(arrival, &in)
			if res&mad.Reply != 0 && (!out.IsResponse() || out.TID() != in.TID()) {
				t.Fatalf("reply method 0x%x TID %x", out.Method(), out.TID())
			}
		}
		for lid := uint16(0); lid < 64*2; lid++ {
			if p := s.Forward(lid); p > 8 && p != 0xFF {
				t.Fatalf("LFT[%d] = %d on an 8-port switch", lid, p)
			}
		}
		for p := 0; p <= 8; p++ {
			pi, _ := s.PortInfo(p)
			if pi.PortState < mad.PortDown || pi.PortState > mad.PortActive {
				t.Fatalf("port %d state %d", p, pi.PortState)
			}
		}
	})
}

// FuzzSwitchInfo: Decode never fails on 19 bytes and Encode gives them back
// but for the reserved bits.
func FuzzSwitchInfo(f *testing.F) {
	f.Add(make([]byte, mad.SwitchInfoSize))
	f.Add([]byte("\xc0\x00\x00\x00\x04\x00\x00\x46\x01\xff\xff\x94\x00\x00\x00\x00\x00\xc3\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s mad.SwitchInfo
		if err := s.Decode(b); err != nil {
			if len(b) >= mad.SwitchInfoSize {
				t.Fatal(err)
			}
			return
		}
		out := make([]byte, mad.SwitchInfoSize)
		if err := s.Encode(out); err != nil {
			t.Fatal(err)
		}
		for i := range out {
			mask := byte(0xFF)
			if i == 16 {
				mask = 0xF8 // bits 2:0 reserved
			}
			if out[i] != b[i]&mask {
				t.Fatalf("byte %d: 0x%02x, want 0x%02x", i, out[i], b[i]&mask)
			}
		}
	})
}

// FuzzSwitchGMP feeds arbitrary GMPs to the switch's PMA after some
// traffic: it must not panic, a reply is a response with the request's TID,
// and a Get of every port's counters still decodes afterwards.
func FuzzSwitchGMP(f *testing.F) {
	f.Add(madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0)[:])
	f.Add(madtest.Perf(mad.MethodSet, mad.AttrPortCountersExtended, 0xFF, 0xFFFF)[:])
	f.Add(madtest.Perf(mad.MethodGet, mad.AttrClassPortInfo, 0, 0)[:])
	f.Add(madtest.Perf(mad.MethodSet, mad.AttrPortCounters, 0, 0x1000)[:])
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := mad.NewSwitch(mad.SwitchConfig{NodeGUID: 1, NumPorts: 8})
		if err != nil {
			t.Fatal(err)
		}
		s.Count(1, 2, 3, 300, false)
		var in mad.MAD
		copy(in[:], b)
		out, res := s.ProcessGMP(&in)
		if res&mad.Reply != 0 && (!out.IsResponse() || out.TID() != in.TID()) {
			t.Fatalf("reply method 0x%x TID %x", out.Method(), out.TID())
		}
		out, res = s.ProcessGMP(madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 0xFF, 0))
		var pc mad.PortCounters
		if res != mad.Success|mad.Reply || out.Status() != 0 || pc.Decode(out.GSData()) != nil {
			t.Fatalf("all-port Get after the fuzzed MAD: result %d status 0x%x", res, out.Status())
		}
	})
}
