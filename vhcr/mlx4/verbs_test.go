package mlx4

import "testing"

// The verbs constants against the literals of their headers and drivers.
func TestVerbsConstantsGolden(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"SendWQEMinShift", SendWQEMinShift, 6},
		{"1<<SendWQEMinShift == WQEBasicBlock", 1 << SendWQEMinShift, WQEBasicBlock},
		{"RecvWQEMinShift", RecvWQEMinShift, 4},
		{"1<<RecvWQEMinShift == DataSegSize", 1 << RecvWQEMinShift, DataSegSize},
		{"BindSegSize", BindSegSize, 32},
		{"ReservedUARs", ReservedUARs, 128},
		{"AVPortShift", AVPortShift, 24},
		{"AVPDMask", AVPDMask, 0xffffff},
		{"AVGRH", AVGRH, 0x80},
		{"AVSLShift", AVSLShift, 28},
		{"AVVLANPresent", AVVLANPresent, 0x20000000}, {"AVEthSLShift", AVEthSLShift, 29}, {"CQEEthSLShift", CQEEthSLShift, 13},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
