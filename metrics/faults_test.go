package metrics_test

import (
	"context"
	"testing"

	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// TestFaultsInjectedCounter: vhcrd_faults_injected_total has every kind,
// zeros too, and counts a fault that fired under its kind only.
func TestFaultsInjectedCounter(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 1)
	one := 1
	if _, err := r.PF.AddFault(faultinj.Spec{Kind: "status", VF: &one, Op: "QUERY_FUNC_CAP", Args: map[string]string{"status": "BAD_OP"}}); err != nil {
		t.Fatal(err)
	}
	res, err := v.Post(context.Background(), &vfclient.Request{Op: mlx4.QUERY_FUNC_CAP})
	if err != nil || res.Status != mlx4.BAD_OP {
		t.Fatalf("QUERY_FUNC_CAP: %v %v", res.Status, err)
	}
	f := gather(t, metrics.NewFaultCollector(r.PF))["vhcrd_faults_injected_total"]
	if f == nil || f.series != len(faultinj.Kinds()) {
		t.Fatalf("%+v", f)
	}
	for i, l := range f.labels {
		want := 0.0
		if l["kind"] == "status" {
			want = 1
		}
		if f.values[i] != want {
			t.Errorf("kind %s: %v, want %v", l["kind"], f.values[i], want)
		}
	}
}
