package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/hack/testenv"
)

// dashboardQueries returns every PromQL query of the Grafana dashboard:
// panel targets and query variables, with Grafana's variables replaced by
// values Prometheus accepts.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../hack/deploy/grafana/vhcrd.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/vhcrd.json: %v", err)
	}
	vars := strings.NewReplacer(`$instance`, `.*`, `$__rate_interval`, `1m`)
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, vars.Replace(tg.Expr))
		}
	}
	labelValues := regexp.MustCompile(`^label_values\(([a-z_]+), *[a-z_]+\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)["query"].(string)
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("template query %q: want label_values(METRIC, LABEL)", q)
		}
		out = append(out, m[1])
	}
	return out
}

// TestDashboardAgainstLiveScrape: promtool parses every query of the
// Grafana dashboard (as recording rules), and every vhcrd metric a query
// names is in a scrape of a running vhcrd that served a command, a refused
// command, a MAD_IFC and a VF reset.
func TestDashboardAgainstLiveScrape(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool", "prometheus")
	queries := dashboardQueries(t)
	dir := shmDir(t)

	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range queries {
		qj, _ := json.Marshal(q)
		fmt.Fprintf(&rules, "      - record: dashboard_query_%d\n        expr: %s\n", i, qj)
	}
	rf := filepath.Join(dir, "dashboard-rules.yml")
	if err := os.WriteFile(rf, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", rf).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}

	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)
	for _, args := range [][]string{
		{"cmd", "--vf", "0", "QUERY_FW"},
		{"mad", "--vf", "0", "get", "pkeys"},
		{"init", "--vf", "1"}, // RESET first: a reset of VF 1
	} {
		if out, code := vfctl(t, barPath, args...); code != 0 {
			t.Fatalf("vfctl %v: %s", args, out)
		}
	}
	if out, code := vfctl(t, barPath, "cmd", "--vf", "0", "MAD_DEMUX"); code == 0 {
		t.Fatalf("MAD_DEMUX was not refused: %s", out)
	}
	scrape := get(t, d.metrics+"/metrics")
	have := map[string]bool{}
	for _, line := range strings.Split(scrape, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		have[line[:strings.IndexAny(line, "{ ")]] = true
	}
	name := regexp.MustCompile(`\bvhcrd_[a-z0-9_]+`)
	for _, q := range queries {
		names := name.FindAllString(q, -1)
		if len(names) == 0 {
			t.Errorf("query %q names no vhcrd metric", q)
		}
		for _, n := range names {
			if !have[n] {
				t.Errorf("query %q: %s is not in the scrape", q, n)
			}
		}
	}
	t.Logf("%d dashboard queries, all parsed by promtool, all metrics in a live scrape", len(queries))
}

// TestDashboardGroupsByInstance: a query that keeps VFs apart keeps PFs
// apart too (VF 3 of two hosts are two VFs: every by (...) with vf has
// instance), per-PF figures (the poller's) are not summed across PFs, and
// a state set (every state exported, 0 or 1) is shown by its current
// state (== 1).
func TestDashboardGroupsByInstance(t *testing.T) {
	by := regexp.MustCompile(`\bby *\(([^)]*)\)`)
	stateSets := regexp.MustCompile(`\b(vhcrd_vf_channel_state|vhcrd_vf_completion_mode|vhcrd_pf_state)\b`)
	for _, q := range dashboardQueries(t) {
		for _, m := range by.FindAllStringSubmatch(q, -1) {
			labels := map[string]bool{}
			for _, l := range strings.Split(m[1], ",") {
				labels[strings.TrimSpace(l)] = true
			}
			if labels["vf"] && !labels["instance"] {
				t.Errorf("query %q: by (%s) adds the same VF number of different PFs together: want by (instance, ...)", q, m[1])
			}
		}
		if strings.Contains(q, "vhcrd_poller_") && !strings.Contains(q, "by (instance)") {
			t.Errorf("query %q: sums the pollers of different PFs", q)
		}
		if stateSets.MatchString(q) && !strings.Contains(q, "== 1") {
			t.Errorf("query %q: a state set shows every state; want its current one (== 1)", q)
		}
	}
}
