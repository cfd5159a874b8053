package mad_test

import (
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/capture"
)

// A packet capture.Encode builds (an independent encoder of the same IBA
// headers, checked against tshark in its own tests) decodes to its fields,
// with and without a GRH; a non-IBA LNH and a BTH that is not UD SEND are
// refused, a short header is ErrShort.
func TestDecodeUDHeader(t *testing.T) {
	var m mad.MAD
	m[0] = 0x42
	for _, g := range []*mad.GRH{nil, {IPVer: 6, NextHeader: 0x1b, HopLimit: 1, DGID: [16]byte{0xfe, 0x80}}} {
		p := capture.Packet{SLID: 0x11, DLID: 0x22, SL: 3, VL: 15, PKey: 0xffff, DestQP: 0x123456, SrcQP: 0x52, QKey: 0x80010000, GRH: g, MAD: &m}
		b := make([]byte, capture.MaxPacket)
		if _, err := capture.Encode(&p, b); err != nil {
			t.Fatal(err)
		}
		h, n, err := mad.DecodeUDHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		want := mad.LRHSize + mad.BTHSize + mad.DETHSize
		if g != nil {
			want += mad.GRHSize
		}
		if n != want || b[n] != 0x42 || h.DLID != 0x22 || h.SLID != 0x11 || h.SL != 3 || h.VL != 15 || h.PKey != 0xffff ||
			h.DestQP != 0x123456 || h.SrcQP != 0x52 || h.QKey != 0x80010000 || h.HasGRH != (g != nil) {
			t.Fatalf("decoded %+v, %d", h, n)
		}
		if g != nil && h.GRH.DGID != g.DGID {
			t.Fatalf("GRH %+v", h.GRH)
		}
		if _, _, err := mad.DecodeUDHeader(b[:n-1]); !errors.Is(err, mad.ErrShort) {
			t.Fatalf("short: %v", err)
		}
		bad := append([]byte(nil), b...)
		bad[1] = bad[1]&^3 | 1
		if _, _, err := mad.DecodeUDHeader(bad); !errors.Is(err, mad.ErrInvalid) {
			t.Fatalf("LNH 1: %v", err)
		}
		bad = append([]byte(nil), b...)
		bad[n-mad.BTHSize-mad.DETHSize] = 0x04 // RC SEND only
		if _, _, err := mad.DecodeUDHeader(bad); !errors.Is(err, mad.ErrInvalid) {
			t.Fatalf("RC opcode: %v", err)
		}
	}
}

// FuzzDecodeUDHeader: every input decodes or fails without panicking, and a
// header that decodes fits in the input.
func FuzzDecodeUDHeader(f *testing.F) {
	var m mad.MAD
	b := make([]byte, capture.MaxPacket)
	n, _ := capture.Encode(&capture.Packet{DLID: 1, MAD: &m}, b)
	f.Add(b[:n])
	f.Add([]byte{0, 3, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, n, err := mad.DecodeUDHeader(b); err == nil && n > len(b) {
			t.Fatalf("header of %d bytes in %d", n, len(b))
		}
	})
}
