package mad

import "testing"

// TestSMAAttrTable pins the SMA's attribute table against the attributes
// the SMA answers: every one has a row, with a modifier rule and a Get
// handler, a Set handler exactly where SubnSet is supported, and only
// PortInfo checks the M_Key of the port its modifier names.
func TestSMAAttrTable(t *testing.T) {
	want := map[uint16]struct{ set, portKey bool }{
		AttrNodeDescription: {set: true}, // refused unless CapabilityMask2 allows it
		AttrNodeInfo:        {},
		AttrGUIDInfo:        {set: true},
		AttrPortInfo:        {set: true, portKey: true},
		AttrPKeyTable:       {set: true},
		AttrSLtoVLTable:     {set: true},
		AttrVLArbTable:      {set: true},
		AttrMLNXExtPortInfo: {set: true},
	}
	seen := map[uint16]bool{}
	for _, a := range smaAttrs {
		w, ok := want[a.id]
		if !ok {
			t.Errorf("row for attribute 0x%04x the SMA does not answer", a.id)
			continue
		}
		if seen[a.id] {
			t.Errorf("attribute 0x%04x has two rows", a.id)
		}
		seen[a.id] = true
		if a.mod == nil || a.get == nil {
			t.Errorf("attribute 0x%04x: row without a modifier rule or a Get handler", a.id)
		}
		if (a.set != nil) != w.set || a.portKey != w.portKey {
			t.Errorf("attribute 0x%04x: Set handler %v portKey %v, want %v %v", a.id, a.set != nil, a.portKey, w.set, w.portKey)
		}
		if smaRowFor(a.id) != &smaAttrs[len(seen)-1] {
			t.Errorf("attribute 0x%04x: lookup does not find its row", a.id)
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("attribute 0x%04x has no row", id)
		}
	}
	if smaRowFor(AttrSMInfo) != nil || smaRowFor(AttrNotice) != nil {
		t.Error("SMInfo or Notice has an SMA attribute row")
	}
}

// TestSwitchAttrTable pins the switch's attribute table the same way: a row
// for every attribute the switch answers, each with a modifier rule and a
// Get handler, a Set handler exactly where SubnSet is supported.
func TestSwitchAttrTable(t *testing.T) {
	want := map[uint16]bool{ // attribute → Set supported
		AttrNodeDescription: false, AttrNodeInfo: false, AttrSwitchInfo: true, AttrPortInfo: true,
		AttrPKeyTable: true, AttrSLtoVLTable: true, AttrVLArbTable: true,
		AttrLinearFwdTable: true, AttrMulticastFwdTable: true,
	}
	seen := map[uint16]bool{}
	for i, a := range swAttrs {
		set, ok := want[a.id]
		if !ok {
			t.Errorf("row for attribute 0x%04x the switch does not answer", a.id)
			continue
		}
		if seen[a.id] {
			t.Errorf("attribute 0x%04x has two rows", a.id)
		}
		seen[a.id] = true
		if a.mod == nil || a.get == nil {
			t.Errorf("attribute 0x%04x: row without a modifier rule or a Get handler", a.id)
		}
		if (a.set != nil) != set {
			t.Errorf("attribute 0x%04x: Set handler %v, want %v", a.id, a.set != nil, set)
		}
		if swRowFor(a.id) != &swAttrs[i] {
			t.Errorf("attribute 0x%04x: lookup does not find its row", a.id)
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("attribute 0x%04x has no row", id)
		}
	}
}
