package vmtest

import "testing"

// TestConsoleFailures pins which guest console lines end a Linux-driver run:
// the driver's failures (from the lab's logs and the 6.1 source), and not
// its expected lines.
func TestConsoleFailures(t *testing.T) {
	for _, c := range []struct {
		line string
		fail bool
	}{
		{"[   14.1] mlx4_core 0000:00:01.0: Completion event for bogus CQ 00000000", true},
		{"[   81.1] mlx4_core 0000:00:01.0: communication channel command 0x5 (op=0x31) timed out", true},
		{"[   12.0] mlx4_core 0000:00:01.0: NOP command failed to generate MSI-X interrupt IRQ 24", true},
		{"[   14.5] mlx4_core 0000:00:01.0: slave is currently in the middle of FLR - Deferring probe", true},
		{"[    3.5] infiniband mlx4_0: Couldn't change QP0 state to RTS: -22", true},
		{"[    2.4] mlx4_core 0000:00:01.0: Failed to map blue flame area", false},
		{"[    2.5] mlx4_core 0000:00:01.0: NOP command IRQ test passed", false},
		{"[    2.6] mlx4_core 0000:00:01.0: mlx4_ib: multi-function enabled", false},
	} {
		got := consoleFailures.MatchString(c.line) && !expectedLine(c.line)
		if got != c.fail {
			t.Errorf("%q: failure %v, want %v", c.line, got, c.fail)
		}
	}
	if k := dmesgKey("[    4.137624] mlx4_core 0000:00:01.0: NOP command IRQ test passed"); k != "mlx4_core 0000:00:01.0: NOP command IRQ test passed" {
		t.Errorf("dmesgKey = %q", k)
	}
}

// TestGuestInterrupts sums the guest's /proc/interrupts rows as the guest
// prints them, since the last step.
func TestGuestInterrupts(t *testing.T) {
	v := &vm{said: []string{
		"vmtest: bound 1: 0000:00:01.0 to mlx4_core in 288ms",
		"vmtest: interrupts: 24: 84 PCI-MSI 16384-edge mlx4-async@pci:0000:00:01.0",
		"vmtest: interrupts: 25: 0 PCI-MSI 16385-edge mlx4-1@0000:00:01.0",
		"vmtest: interrupts: 26: 3 PCI-MSI 16386-edge mlx4-2@0000:00:01.0",
		"vmtest: interrupts: garbled",
	}}
	if n, rows := v.guestInterrupts(); n != 87 || rows != 3 {
		t.Errorf("guestInterrupts = %d on %d rows, want 87 on 3", n, rows)
	}
}
