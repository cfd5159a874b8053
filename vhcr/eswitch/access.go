package eswitch

// Access is an access port of VLAN VID on a switch beyond an uplink: the
// upstream switch's port to a host whose stack takes untagged frames (a
// TAP device's host without 802.1Q). What the device sends on the uplink
// as it is on the wire (a VST VF's with VST's tag) reaches the host only if
// it is of VID, untagged; what the host sends enters the device tagged VID,
// priority 0, as that switch forwards it on its trunk to the device.
type Access struct {
	VID uint16 // 1..4094
}

// Out is frame in, sent out of the device, as the access port gives it to
// its host: a C-VLAN tag of VID removed (its length in out, true), anything
// else (untagged, another VLAN, priority-tagged, an S-VLAN, a runt) not
// given (false). out must hold len(in) bytes.
func (a Access) Out(out, in []byte) (int, bool) {
	h, err := ParseHeader(in)
	if err != nil || !h.Tagged || h.TPID != TPIDCVLAN || h.VID != a.VID {
		return 0, false
	}
	return stripTag(out, in), true
}

// In is the host's frame in as the access port forwards it to the device:
// a C-VLAN tag of VID, priority 0, after its MACs (its length in out).
// A runt (shorter than its MACs and EtherType) is returned as it is. out
// must hold len(in)+TagLen bytes.
func (a Access) In(out, in []byte) int {
	if len(in) < HeaderLen {
		return copy(out, in)
	}
	copy(out[:offType], in[:offType])
	n := putTag(out, offType, TPIDCVLAN, TCI(0, false, a.VID))
	return n + copy(out[n:], in[offType:])
}
