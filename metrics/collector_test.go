package metrics_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

func TestCollectorLintsAndCounts(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 1)
	for _, op := range []mlx4.Opcode{mlx4.NOP, mlx4.NOP, mlx4.QUERY_FW, mlx4.INIT_HCA, mlx4.MAD_DEMUX} {
		if _, err := v.Post(context.Background(), &vfclient.Request{Op: op}); err != nil {
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
# HELP vhcrd_vf_channel_state The last comm command the PF served for a VF (RESET, VHCR0..2, VHCR_EN, VHCR_POST; FLR while one runs): a state set, every state per VF, 1 for the current one, else 0.
# TYPE vhcrd_vf_channel_state gauge
vhcrd_vf_channel_state{state="FLR",vf="0"} 0
vhcrd_vf_channel_state{state="FLR",vf="1"} 0
vhcrd_vf_channel_state{state="RESET",vf="0"} 1
vhcrd_vf_channel_state{state="RESET",vf="1"} 0
vhcrd_vf_channel_state{state="VHCR0",vf="0"} 0
vhcrd_vf_channel_state{state="VHCR0",vf="1"} 0
vhcrd_vf_channel_state{state="VHCR1",vf="0"} 0
vhcrd_vf_channel_state{state="VHCR1",vf="1"} 0
vhcrd_vf_channel_state{state="VHCR2",vf="0"} 0
vhcrd_vf_channel_state{state="VHCR2",vf="1"} 0
vhcrd_vf_channel_state{state="VHCR_EN",vf="0"} 0
vhcrd_vf_channel_state{state="VHCR_EN",vf="1"} 0
vhcrd_vf_channel_state{state="VHCR_POST",vf="0"} 0
vhcrd_vf_channel_state{state="VHCR_POST",vf="1"} 1
# HELP vhcrd_vf_completion_mode How a VF's commands complete: event (it mapped an EQ for command completions; the accept-early EQE), event_mlx4 (the same, its last 'e' command completed as Linux's PF does) or poll: a state set, every mode per VF, 1 for the current one, else 0.
# TYPE vhcrd_vf_completion_mode gauge
vhcrd_vf_completion_mode{mode="event",vf="0"} 0
vhcrd_vf_completion_mode{mode="event",vf="1"} 0
vhcrd_vf_completion_mode{mode="event_mlx4",vf="0"} 0
vhcrd_vf_completion_mode{mode="event_mlx4",vf="1"} 0
vhcrd_vf_completion_mode{mode="poll",vf="0"} 1
vhcrd_vf_completion_mode{mode="poll",vf="1"} 1
# HELP vhcrd_pf_state PF_STATE in the region's header: starting (the state file loading, the poller not yet started), serving (the poller serves the VFs) or stopped: a state set, 1 for the current state, else 0.
# TYPE vhcrd_pf_state gauge
vhcrd_pf_state{state="serving"} 1
vhcrd_pf_state{state="starting"} 0
vhcrd_pf_state{state="stopped"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "vhcrd_vf_commands_total", "vhcrd_opcode_commands_total",
		"vhcrd_vf_active", "vhcrd_vf_channel_state", "vhcrd_vf_completion_mode", "vhcrd_pf_state"); err != nil {
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

// vhcrd_pf_state follows PF_STATE through the PF's life: starting before
// the poller runs, serving, stopped; always all three series.
func TestPFStateGauge(t *testing.T) {
	r := mastertest.New(t, 1)
	c := metrics.NewPFCollector(r.PF)
	want := func(cur string) string {
		out := "# HELP vhcrd_pf_state PF_STATE in the region's header: starting (the state file loading, the poller not yet started), serving (the poller serves the VFs) or stopped: a state set, 1 for the current state, else 0.\n# TYPE vhcrd_pf_state gauge\n"
		for _, st := range []string{"serving", "starting", "stopped"} {
			v := "0"
			if st == cur {
				v = "1"
			}
			out += `vhcrd_pf_state{state="` + st + `"} ` + v + "\n"
		}
		return out
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want("starting")), "vhcrd_pf_state"); err != nil {
		t.Errorf("before Run: %v", err)
	}
	r.Start(t)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want("serving")), "vhcrd_pf_state"); err != nil {
		t.Errorf("serving: %v", err)
	}
	r.Stop(t)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want("stopped")), "vhcrd_pf_state"); err != nil {
		t.Errorf("after Run: %v", err)
	}
}
