package metrics_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vhcrtest"
)

func TestCollectorLintsAndCounts(t *testing.T) {
	r := vhcrtest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 1)
	for _, op := range []mlx4.Opcode{mlx4.NOP, mlx4.NOP, mlx4.QUERY_FW, mlx4.INIT_HCA, mlx4.MAD_DEMUX} {
		if _, err := v.Post(context.Background(), &vhcr.Request{Op: op}); err != nil {
			t.Fatal(err)
		}
	}
	c := metrics.NewPFCollector(r.PF)
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	want := `
# HELP vhcrd_opcode_commands_total Commands posted through the vHCR by all VFs, by opcode and completion status.
# TYPE vhcrd_opcode_commands_total counter
vhcrd_opcode_commands_total{opcode="MAD_DEMUX",status="BAD_OP"} 1
vhcrd_opcode_commands_total{opcode="NOP",status="OK"} 2
vhcrd_opcode_commands_total{opcode="QUERY_FW",status="OK"} 1
vhcrd_opcode_commands_total{opcode="unknown",status="BAD_PARAM"} 1
# HELP vhcrd_vf_commands_total Commands a VF posted through the vHCR, by completion status.
# TYPE vhcrd_vf_commands_total counter
vhcrd_vf_commands_total{status="BAD_OP",vf="1"} 1
vhcrd_vf_commands_total{status="BAD_PARAM",vf="1"} 1
vhcrd_vf_commands_total{status="OK",vf="1"} 3
# HELP vhcrd_vf_active 1 while a VF's channel is up (VHCR_EN accepted, no reset since), else 0.
# TYPE vhcrd_vf_active gauge
vhcrd_vf_active{vf="0"} 0
vhcrd_vf_active{vf="1"} 1
# HELP vhcrd_vf_channel_state The last comm command the PF served for a VF (RESET, VHCR0..2, VHCR_EN, VHCR_POST; FLR while one runs): one series per VF, value 1.
# TYPE vhcrd_vf_channel_state gauge
vhcrd_vf_channel_state{state="RESET",vf="0"} 1
vhcrd_vf_channel_state{state="VHCR_POST",vf="1"} 1
# HELP vhcrd_vf_completion_mode How a VF's commands complete: event (it mapped an EQ for command completions; the seed's accept-early EQE), event_mlx4 (the same, its last 'e' command completed as Linux's PF does) or poll; one series per VF, value 1.
# TYPE vhcrd_vf_completion_mode gauge
vhcrd_vf_completion_mode{mode="poll",vf="0"} 1
vhcrd_vf_completion_mode{mode="poll",vf="1"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "vhcrd_vf_commands_total", "vhcrd_opcode_commands_total",
		"vhcrd_vf_active", "vhcrd_vf_channel_state", "vhcrd_vf_completion_mode"); err != nil {
		t.Error(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "vhcrd_command_refusals_total"); err != nil || n != 2 {
		t.Errorf("refusal series %d (%v), want 2 (unknown_opcode, privileged)", n, err)
	}
}
