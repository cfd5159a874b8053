package main

import (
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
)

// --vf-bar and --guest: defaults next to a file control region, explicit
// specs, and the errors that say what to give.
func TestVFBARAndGuestFlags(t *testing.T) {
	ctrl, _ := bar.ParseSpec("file:/dev/shm/x")
	given := vfSpecs{}
	if err := given.Set("1=vfio:0000:00:01.0#region2@8M"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"1=file:/y", "x=file:/y", "200=file:/y", "2"} {
		if err := given.Set(bad); err == nil {
			t.Errorf("--vf-bar %s accepted", bad)
		}
	}
	specs, err := vfBARSpecs(ctrl, given, 3)
	if err != nil {
		t.Fatal(err)
	}
	if specs[0].String() != "file:/dev/shm/x.vf0" || specs[1].String() != "vfio:0000:00:01.0#region2@0x800000" || specs[2].Path != "/dev/shm/x.vf2" {
		t.Fatalf("VF BAR specs %v", specs)
	}
	if _, err := vfBARSpecs(ctrl, given, 1); err == nil || !strings.Contains(err.Error(), "only 1 VFs") {
		t.Errorf("--vf-bar beyond --num-vfs: %v", err)
	}
	dev, _ := bar.ParseSpec("vfio:0000:00:01.0#region2")
	if _, err := vfBARSpecs(dev, vfSpecs{}, 1); err == nil || !strings.Contains(err.Error(), "--vf-bar 0=SPEC is needed") {
		t.Errorf("device control region without --vf-bar: %v", err)
	}

	guests := vfSpecs{0: "/dev/shm/g0.ram,size=512M", 2: "/dev/shm/g2.ram,socket=/run/g2.sock"}
	gs, err := parseGuests(guests, ctrl, []bar.Spec{specs[0], specs[0], specs[2]})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		switch g.vf {
		case 0:
			if g.size != 512<<20 || g.socket != "/dev/shm/x.vf0.sock" || g.ram != "/dev/shm/g0.ram" {
				t.Errorf("guest 0: %+v", g)
			}
		case 2:
			if g.size != 0 || g.socket != "/run/g2.sock" {
				t.Errorf("guest 2: %+v", g)
			}
		}
	}
	for v, want := range map[string]string{"/r,size=12345": "multiple of 4K", "/r,foo=1": "unknown option", ",size=4K": "no RAM file"} {
		if _, err := parseGuests(vfSpecs{0: v}, ctrl, specs); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--guest 0=%s: %v, want %q", v, err, want)
		}
	}
	// QEMU maps the whole fd: VF 1's BAR region, a range of a device, cannot be handed over.
	if _, err := parseGuests(vfSpecs{1: "/r"}, ctrl, specs); err == nil || !strings.Contains(err.Error(), "not a whole file") {
		t.Errorf("--guest on a device VF BAR: %v", err)
	}
	if _, err := parseGuests(vfSpecs{5: "/r"}, ctrl, specs); err == nil {
		t.Error("--guest beyond --num-vfs accepted")
	}
}
