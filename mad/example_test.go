package mad_test

import (
	"fmt"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

// A MAD_IFC executor hands the command's modifiers and inbox to
// ProcessMADIFC with a view of the calling function.
func ExampleEngine_ProcessMADIFC() {
	e, err := mad.New(madtest.Node(), mad.Options{})
	if err != nil {
		panic(err)
	}
	vf := &mad.StaticVF{Node: 0x0002c90300ffff00, Ports: []mad.VFPort{{
		Phys: 1, PKeyMap: []uint16{0}, State: mad.PortActive, CapMask: 0x02010048, GUID: 0x0002c90300ffff01,
	}}}
	inbox := make([]byte, 4096) // the command's mailbox
	get := &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodGet, mad.AttrGUIDInfo, 0, 0, nil), Port: 1, Flags: mad.IgnoreAll}
	opMod, inMod, _ := mad.EncodeMADIFCInbox(get, inbox)

	var out mad.MAD
	r := e.ProcessMADIFC(vf, opMod, inMod, inbox, &out)
	var gi mad.GUIDInfo
	_ = gi.Decode(out.SMPData())
	fmt.Printf("%v, GUID 0x%016x\n", r, gi[0])

	set := &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, nil), Port: 1}
	opMod, inMod, _ = mad.EncodeMADIFCInbox(set, inbox)
	fmt.Printf("VF Set: %v\n", e.ProcessMADIFC(vf, opMod, inMod, inbox, &out))
	// Output:
	// ok, GUID 0x0002c90300ffff01
	// VF Set: refused
}
