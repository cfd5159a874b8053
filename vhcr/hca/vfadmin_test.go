package hca

import (
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// An operator's VLAN on a VGT VF is admin state until the VF's next
// activation (VHCR_EN after a reset), then its INIT2RTR contexts carry it.
func TestSetVFVLANAtNextReset(t *testing.T) {
	r := vstRig(t, 100)
	vlan, qos := 42, 3
	done, err := r.h.SetVF(1, VFSettingsChange{VLAN: &vlan, QoS: &qos})
	if err != nil || len(done) != 1 {
		t.Fatalf("SetVF: %v %q", err, done)
	}
	s, _ := r.h.VFSettings(1)
	if s.VLAN != 42 || s.QoS != 3 || len(s.Oper) != 2 || s.Oper[0].VST {
		t.Fatalf("before the reset: %+v", s)
	}
	r.h.DeactivateVF(1)
	if err := r.h.ActivateVF(1); err != nil {
		t.Fatal(err)
	}
	s, _ = r.h.VFSettings(1)
	if len(s.Oper) != 2 || !s.Oper[0].VST || s.Oper[0].VLAN != 42 || s.Oper[0].QoS != 3 {
		t.Fatalf("after the reset: %+v", s)
	}
	_, ctx := udToRTR(t, r.vf(1), nil)
	idx := r.h.fw.vfs[1].Vport[0].VLANIdx
	if idx < 0 || r.h.fw.ports[0].VLAN[idx].Value != 42 || int(ctx[mlx4.QPMailboxPriPath+mlx4.PathVLANIndex]) != idx ||
		ctx[mlx4.QPMailboxPriPath+mlx4.PathSchedQueue]>>3&7 != 3 {
		t.Fatalf("INIT2RTR context: vlan_index %d (table %d), sched_queue %#x", ctx[mlx4.QPMailboxPriPath+mlx4.PathVLANIndex], idx, ctx[mlx4.QPMailboxPriPath+mlx4.PathSchedQueue])
	}
}

// Settings mlx4 refuses are refused with its errno, and nothing changes.
func TestSetVFRefusals(t *testing.T) {
	r := vstRig(t, 100)
	on, bad, big, multicast, zero := true, "up", 4096, uint64(0x010203040506), uint64(0)
	rate := 100
	for name, c := range map[string]struct {
		ch   VFSettingsChange
		vf   int
		want error
	}{
		"trust":             {VFSettingsChange{Trust: &on}, 0, ErrVFSettingNotSupported},
		"rate":              {VFSettingsChange{MaxTxRate: &rate}, 0, ErrVFSettingNotSupported},
		"vlan 4096":         {VFSettingsChange{VLAN: &big}, 0, ErrVFSettingInvalid},
		"link-state up":     {VFSettingsChange{LinkState: &bad}, 0, ErrVFSettingInvalid},
		"multicast mac":     {VFSettingsChange{MAC: &multicast}, 0, ErrVFSettingInvalid},
		"zero mac spoofchk": {VFSettingsChange{MAC: &zero}, 0, ErrVFSettingPerm},
		"no such port":      {VFSettingsChange{Phys: 3, MAC: &multicast}, 0, ErrVFSettingInvalid},
		"no such VF":        {VFSettingsChange{VLAN: &big}, 9, ErrVFSettingInvalid},
	} {
		before, _ := r.h.VFSettings(0)
		if _, err := r.h.SetVF(c.vf, c.ch); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
		if after, _ := r.h.VFSettings(0); after.VLAN != before.VLAN || after.MAC[1] != before.MAC[1] {
			t.Errorf("%s changed VF 0: %+v", name, after)
		}
	}
}

// Link state applies at once: the VF's view of the link follows it.
func TestSetVFLinkStateNow(t *testing.T) {
	r := vstRig(t, 100)
	dis := "disable"
	done, err := r.h.SetVF(0, VFSettingsChange{LinkState: &dis})
	if err != nil || r.h.VFLinkUp(0, 1) {
		t.Fatalf("link-state disable: %v %q, link up %v", err, done, r.h.VFLinkUp(0, 1))
	}
	if s, _ := r.h.VFSettings(0); s.LinkState != "disable" {
		t.Fatalf("link state %q", s.LinkState)
	}
}

// What a MAC change reports names its ports in words ("on ports 1, 2"),
// not as a Go slice.
func TestSetVFMACReport(t *testing.T) {
	r := vstRig(t, 100)
	mac := uint64(0x02c903aabbcc)
	done, err := r.h.SetVF(1, VFSettingsChange{MAC: &mac})
	if err != nil || len(done) != 1 {
		t.Fatalf("SetVF: %v %q", err, done)
	}
	if want := "mac 02:c9:03:aa:bb:cc on ports 1, 2: at the VF's next reset"; done[0] != want {
		t.Errorf("SetVF reported %q, want %q", done[0], want)
	}
	done, err = r.h.SetVF(1, VFSettingsChange{Phys: 2, MAC: &mac})
	if err != nil || len(done) != 1 || done[0] != "mac 02:c9:03:aa:bb:cc on port 2: at the VF's next reset" {
		t.Errorf("SetVF on port 2: %v %q", err, done)
	}
}
