package metrics_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/metrics/buildinfo"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// scrape is what a pedantic registry gathers from cs: per family, its
// series (a histogram's buckets, +Inf, _sum and _count), each metric's
// labels, and each histogram's sample count.
type scrape map[string]*family

type family struct {
	series  int
	labels  []map[string]string
	values  []float64 // a gauge's or counter's value, by metric
	samples []uint64
}

func gather(t *testing.T, cs ...prometheus.Collector) scrape {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := scrape{}
	for _, mf := range mfs {
		f := &family{}
		for _, m := range mf.Metric {
			l := map[string]string{}
			for _, lp := range m.Label {
				l[lp.GetName()] = lp.GetValue()
			}
			f.labels = append(f.labels, l)
			f.values = append(f.values, m.GetGauge().GetValue()+m.GetCounter().GetValue())
			if h := m.GetHistogram(); h != nil {
				f.series += len(h.Bucket) + 1 + 2
				f.samples = append(f.samples, h.GetSampleCount())
				continue
			}
			f.series++
		}
		out[mf.GetName()] = f
	}
	return out
}

// Every family the collectors export has a written-down bound, and a live
// PF with traffic of every kind stays within it; the documented worst case
// for the largest layout is the sum of the bounds.
func TestCardinalityBounded(t *testing.T) {
	const vfs = 3
	r := mastertest.New(t, vfs)
	r.Start(t)
	for vf := 0; vf < vfs; vf++ {
		v := r.InitVF(t, vf)
		for op := 0; op < 0x100; op++ {
			if _, err := v.Post(context.Background(), &vfclient.Request{Op: mlx4.Opcode(op), OpMod: uint8(op)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	bounds := map[string]metrics.Family{}
	for _, f := range metrics.Families(vfs) {
		bounds[f.Name] = f
	}
	got := gather(t, metrics.NewPFCollector(r.PF), metrics.NewHCACollector(r.PF, r.HCA, nil), metrics.NewDataPathCollector(r.HCA), metrics.NewFaultCollector(r.PF))
	described := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		metrics.NewPFCollector(r.PF).Describe(ch)
		metrics.NewHCACollector(r.PF, r.HCA, nil).Describe(ch)
		metrics.NewDataPathCollector(r.HCA).Describe(ch)
		metrics.NewAdminCounter().Describe(ch)
		metrics.NewFaultCollector(r.PF).Describe(ch)
		close(ch)
	}()
	for d := range ch {
		s := d.String()
		i := strings.Index(s, `fqName: "`) + len(`fqName: "`)
		name := s[i : i+strings.IndexByte(s[i:], '"')]
		described[name] = true
		if _, ok := bounds[name]; !ok {
			t.Errorf("%s: exported without a bound in metrics.Families", name)
		}
	}
	for name := range bounds {
		if !described[name] {
			t.Errorf("%s: bounded in metrics.Families but not exported", name)
		}
	}
	for name, f := range got {
		if n := f.series; n > bounds[name].Series {
			t.Errorf("%s: %d series with %d VFs, bound %d (%s)", name, n, vfs, bounds[name].Series, bounds[name].Bound)
		}
	}
	if n := got["vhcrd_opcode_commands_total"].series; n < 60 {
		t.Errorf("vhcrd_opcode_commands_total: %d series after every opcode was posted; the test did not exercise the table", n)
	}
	worst := strconv.Itoa(metrics.WorstCase(wire.MaxVFs))
	for _, file := range []string{"doc.go", "../docs/operating.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), worst+" series") {
			t.Errorf("%s does not state the worst case per PF, %s series (%d VFs)", file, worst, wire.MaxVFs)
		}
	}
}

// Sampled commands land in the histogram of their class: 16 consecutive
// QUERY_FWs are 2 sampled commands, both in "mailbox".
func TestLatencyByClass(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	v := r.InitVF(t, 0)
	c := metrics.NewPFCollector(r.PF)
	counts := func() map[string]uint64 {
		out := map[string]uint64{}
		f := gather(t, c)["vhcrd_command_duration_seconds"]
		for i, l := range f.labels {
			out[l["class"]] = f.samples[i]
		}
		return out
	}
	before := counts()
	if len(before) != 6 {
		t.Fatalf("classes %v, want 6", before)
	}
	for i := 0; i < 16; i++ {
		if _, err := v.Post(context.Background(), &vfclient.Request{Op: mlx4.QUERY_FW}); err != nil {
			t.Fatal(err)
		}
	}
	after := counts()
	for cl, n := range after {
		want := before[cl]
		if cl == "mailbox" {
			want += 2
		}
		if n != want {
			t.Errorf("class %s: %d samples, want %d", cl, n, want)
		}
	}
}

// build_info carries the module version and the VCS revision labels.
func TestBuildInfo(t *testing.T) {
	r := mastertest.New(t, 1)
	f := gather(t, metrics.NewPFCollector(r.PF))["vhcrd_build_info"]
	if f == nil || len(f.labels) != 1 {
		t.Fatal("no vhcrd_build_info")
	}
	labels := f.labels[0]
	v, rev, mod := buildinfo.Read()
	if labels["version"] != v || labels["revision"] != rev || labels["modified"] != strconv.FormatBool(mod) || labels["goversion"] == "" {
		t.Errorf("build_info labels %v, want version %q revision %q modified %v", labels, v, rev, mod)
	}
}

// A VF that maps an EQ for command completions (mlx4_cmd_use_events) shows
// completion mode "event"; the others "poll".
func TestCompletionModeGauge(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	d, err := vfdrv.New(r.InitVF(t, 1), vfdrv.Options{BAR: r.VFBARs[1]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.EnableEvents(context.Background(), 4, 7); err != nil {
		t.Fatal(err)
	}
	got := current(t, gather(t, metrics.NewPFCollector(r.PF))["vhcrd_vf_completion_mode"], "mode", 2, len(metrics.CompletionModes))
	if got["0"] != "poll" || got["1"] != "event" {
		t.Errorf("completion modes %v, want VF 0 poll, VF 1 event", got)
	}
}

// A VF whose 'e' commands complete as Linux's PF completes them (token
// 0xffff under auto) shows completion mode "event_mlx4"; an early-completion VF "event";
// still one current mode per VF.
func TestCompletionModeGaugeMlx4(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	ctx := context.Background()
	for i, mode := range []vfdrv.Completions{vfdrv.CompletionsEarly, vfdrv.CompletionsMlx4} {
		d, err := vfdrv.New(r.InitVF(t, i), vfdrv.Options{BAR: r.VFBARs[i], Completions: mode})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.EnableEvents(ctx, 4, 7); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Do(ctx, &vfclient.Request{Op: mlx4.NOP}); err != nil {
			t.Fatal(err)
		}
	}
	got := current(t, gather(t, metrics.NewPFCollector(r.PF))["vhcrd_vf_completion_mode"], "mode", 2, len(metrics.CompletionModes))
	if got["0"] != "event" || got["1"] != "event_mlx4" {
		t.Errorf("completion modes %v, want VF 0 event, VF 1 event_mlx4", got)
	}
}

// current checks that f is a state set over numVFs VFs with n states each
// (node_exporter's convention: every state exported, value 0 or 1, one 1
// per VF) and returns each VF's current state, the label key's value.
func current(t *testing.T, f *family, key string, numVFs, n int) map[string]string {
	t.Helper()
	if f == nil || len(f.labels) != numVFs*n {
		t.Fatalf("state set %s: want %d series (%d VFs × %d states), have %v", key, numVFs*n, numVFs, n, f)
	}
	cur := map[string]string{}
	seen := map[string]int{}
	for i, l := range f.labels {
		seen[l["vf"]]++
		switch f.values[i] {
		case 0:
		case 1:
			if prev, dup := cur[l["vf"]]; dup {
				t.Errorf("VF %s: %s both %s and %s", l["vf"], key, prev, l[key])
			}
			cur[l["vf"]] = l[key]
		default:
			t.Errorf("VF %s %s=%s: value %v, want 0 or 1", l["vf"], key, l[key], f.values[i])
		}
	}
	for vf, k := range seen {
		if k != n {
			t.Errorf("VF %s: %d %s series, want %d", vf, k, key, n)
		}
		if _, ok := cur[vf]; !ok {
			t.Errorf("VF %s: no current %s", vf, key)
		}
	}
	return cur
}

// vhcrd_vf_channel_state is a state set: every state of every VF, one 1
// per VF, which follows the channel (RESET, then VHCR_POST once up).
func TestChannelStateSet(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	c := metrics.NewPFCollector(r.PF)
	got := current(t, gather(t, c)["vhcrd_vf_channel_state"], "state", 2, 7)
	if got["0"] != "RESET" || got["1"] != "RESET" {
		t.Errorf("fresh VFs: %v, want RESET", got)
	}
	v := r.InitVF(t, 1)
	if _, err := v.Post(context.Background(), &vfclient.Request{Op: mlx4.NOP}); err != nil {
		t.Fatal(err)
	}
	got = current(t, gather(t, c)["vhcrd_vf_channel_state"], "state", 2, 7)
	if got["0"] != "RESET" || got["1"] != "VHCR_POST" {
		t.Errorf("after VF 1 posted: %v, want VF 0 RESET, VF 1 VHCR_POST", got)
	}
	if err := r.PF.BeginFLR(1); err != nil {
		t.Fatal(err)
	}
	if got = current(t, gather(t, c)["vhcrd_vf_channel_state"], "state", 2, 7); got["1"] != "FLR" {
		t.Errorf("during VF 1's FLR: %v", got)
	}
}
