package mad_test

import (
	"bytes"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

// TestSMAModifierBeforeHandlers checks the order of the checks in front of
// the SMA's attribute handlers: a Set of a read-only attribute is
// UnsupportedAttr before its modifier is looked at; any other attribute's
// out-of-range modifier is InvalidField before its Set handler runs (even
// NodeDescription's, whose Set the node does not support); and a refused
// SMP leaves the attribute and the echoed data unchanged.
func TestSMAModifierBeforeHandlers(t *testing.T) {
	data := bytes.Repeat([]byte{0xA5}, 64)
	for _, c := range []struct {
		name   string
		attr   uint16
		mod    uint32
		status uint16
	}{
		{"NodeDescription", mad.AttrNodeDescription, 1, mad.StatusInvalidField},
		{"NodeInfo", mad.AttrNodeInfo, 1, mad.StatusUnsupportedAttr},
		{"GUIDInfo", mad.AttrGUIDInfo, 100, mad.StatusInvalidField},
		{"PortInfo", mad.AttrPortInfo, 3, mad.StatusInvalidField},
		{"PKeyTable", mad.AttrPKeyTable, 0xFFFF, mad.StatusInvalidField},
		{"SLtoVLTable", mad.AttrSLtoVLTable, 1, mad.StatusInvalidField},
		{"VLArbTable", mad.AttrVLArbTable, 5 << 16, mad.StatusInvalidField},
		{"MLNXExtPortInfo", mad.AttrMLNXExtPortInfo, 3, mad.StatusInvalidField},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, nil)
			before, _ := f.e.ProcessMAD(mad.IgnoreMKey, 1, nil, nil, madtest.SMP(mad.MethodGet, c.attr, 0, 0, nil))
			out, res := f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodSet, c.attr, c.mod, 0, data))
			wantReply(t, res, &out, c.status)
			if !bytes.Equal(out.SMPData(), data) {
				t.Fatalf("refused Set answered data % x", out.SMPData())
			}
			after, _ := f.e.ProcessMAD(mad.IgnoreMKey, 1, nil, nil, madtest.SMP(mad.MethodGet, c.attr, 0, 0, nil))
			if !bytes.Equal(before.SMPData(), after.SMPData()) {
				t.Fatalf("refused Set changed the attribute:\n% x\n% x", before.SMPData(), after.SMPData())
			}
		})
	}
}

// TestSwitchModifierBeforeHandlers is the same order for the switch: a
// Set of a read-only attribute is UnsupportedAttr whatever its modifier,
// an out-of-range modifier fails before the Set handler runs, and the
// refused SMP changes nothing and echoes its data.
func TestSwitchModifierBeforeHandlers(t *testing.T) {
	data := bytes.Repeat([]byte{0x01}, 64)
	for _, c := range []struct {
		name   string
		attr   uint16
		mod    uint32
		status uint16
	}{
		{"NodeDescription", mad.AttrNodeDescription, 1, mad.StatusUnsupportedAttr},
		{"NodeInfo", mad.AttrNodeInfo, 1, mad.StatusUnsupportedAttr},
		{"PortInfo", mad.AttrPortInfo, 9, mad.StatusInvalidField},
		{"PortInfo high byte", mad.AttrPortInfo, 1 << 8, mad.StatusInvalidField},
		{"PKeyTable", mad.AttrPKeyTable, 1, mad.StatusInvalidField},
		{"SLtoVLTable", mad.AttrSLtoVLTable, 9 << 8, mad.StatusInvalidField},
		{"VLArbTable second block", mad.AttrVLArbTable, 2 << 16, mad.StatusInvalidField},
		{"VLArbTable no table", mad.AttrVLArbTable, 5 << 16, mad.StatusInvalidField},
		{"LinearFwdTable", mad.AttrLinearFwdTable, 1 << 20, mad.StatusInvalidField},
		{"MulticastFwdTable position", mad.AttrMulticastFwdTable, 1 << 28, mad.StatusInvalidField},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSwitch(t)
			get := uint32(0)
			if c.attr == mad.AttrVLArbTable {
				get = 1 << 16
			}
			before, _ := s.ProcessSMP(0, madtest.SMP(mad.MethodGet, c.attr, get, 0, nil))
			out, res := s.ProcessSMP(0, madtest.SMP(mad.MethodSet, c.attr, c.mod, 0, data))
			wantReply(t, res, &out, c.status)
			if !bytes.Equal(out.SMPData(), data) {
				t.Fatalf("refused Set answered data % x", out.SMPData())
			}
			after, _ := s.ProcessSMP(0, madtest.SMP(mad.MethodGet, c.attr, get, 0, nil))
			if !bytes.Equal(before.SMPData(), after.SMPData()) {
				t.Fatalf("refused Set changed the attribute:\n% x\n% x", before.SMPData(), after.SMPData())
			}
		})
	}
}
