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
			if before.SMPData() == nil || !bytes.Equal(before.SMPData(), after.SMPData()) {
				t.Fatalf("refused Set changed the attribute:\n% x\n% x", before.SMPData(), after.SMPData())
			}
		})
	}
}
