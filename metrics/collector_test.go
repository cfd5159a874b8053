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
# HELP vhcrd_commands_total Commands posted through the vHCR, by VF, opcode and completion status.
# TYPE vhcrd_commands_total counter
vhcrd_commands_total{opcode="MAD_DEMUX",status="BAD_OP",vf="1"} 1
vhcrd_commands_total{opcode="NOP",status="OK",vf="1"} 2
vhcrd_commands_total{opcode="QUERY_FW",status="OK",vf="1"} 1
vhcrd_commands_total{opcode="unknown",status="BAD_PARAM",vf="1"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "vhcrd_commands_total"); err != nil {
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
