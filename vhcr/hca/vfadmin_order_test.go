package hca

import (
	"errors"
	"strings"
	"testing"
)

// SetVF's checks run in mlx4's order of errnos: with every field of a change
// wrong, each error names the first check still failing, and none of them
// changes the VF.
func TestSetVFCheckOrder(t *testing.T) {
	r := vstRig(t, 100)
	on := true
	if _, err := r.h.SetVF(1, VFSettingsChange{SpoofCheck: &on}); err != nil { // VF 1: spoof check on, VGT
		t.Fatal(err)
	}
	rate, big, bigQoS, qos, bad := 100, 4096, 9, 3, "up"
	multicast, zero := uint64(0x010203040506), uint64(0)
	ch := VFSettingsChange{Trust: &on, MaxTxRate: &rate, Phys: 3, MAC: &multicast, VLAN: &big, QoS: &bigQoS, LinkState: &bad}
	before, _ := r.h.VFSettings(1)
	for _, step := range []struct {
		want error
		msg  string
		next func() // clears this check's fault, leaving the next one's
	}{
		{ErrVFSettingNotSupported, "trust", func() { ch.Trust = nil }},
		{ErrVFSettingNotSupported, "rate", func() { ch.MaxTxRate = nil }},
		{ErrVFSettingInvalid, "no physical port 3", func() { ch.Phys = 0 }},
		{ErrVFSettingInvalid, "multicast", func() { ch.MAC = &zero }},
		{ErrVFSettingPerm, "with spoof check on", func() { ch.MAC = nil }},
		{ErrVFSettingInvalid, "vlan 4096", func() { ch.VLAN = nil }},
		{ErrVFSettingInvalid, "qos 9", func() { ch.QoS = &qos }},
		{ErrVFSettingInvalid, "qos without vlan", func() { ch.QoS = nil }},
		{ErrVFSettingInvalid, `link-state "up"`, func() { ch.LinkState, ch.MAC, ch.SpoofCheck = nil, &zero, &on }},
		{ErrVFSettingPerm, "Illegal MAC with spoofchk", nil},
	} {
		_, err := r.h.SetVF(1, ch)
		if !errors.Is(err, step.want) || err == nil || !strings.Contains(err.Error(), step.msg) {
			t.Fatalf("%+v: %v, want %v (%s)", ch, err, step.want, step.msg)
		}
		if after, _ := r.h.VFSettings(1); after.MAC[1] != before.MAC[1] || after.VLAN != before.VLAN ||
			after.QoS != before.QoS || after.LinkState != before.LinkState || after.SpoofCheck != before.SpoofCheck {
			t.Fatalf("refused change (%s) changed VF 1: %+v", step.msg, after)
		}
		if step.next != nil {
			step.next()
		}
	}
}
