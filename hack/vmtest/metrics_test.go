package vmtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// sample is one series of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape is one read of vhcrd's /metrics.
type scrape []sample

// parseMetrics reads the text exposition format (the lines promhttp
// writes: name{k="v",...} value); comments and blank lines are skipped.
func parseMetrics(r io.Reader) (scrape, error) {
	var out scrape
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.name = line[:i]
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return nil, fmt.Errorf("metrics: unterminated labels: %q", line)
			}
			if err := parseLabels(line[i+1:j], s.labels); err != nil {
				return nil, fmt.Errorf("metrics: %q: %w", line, err)
			}
			rest = line[j+1:]
		} else if i >= 0 {
			s.name, rest = line[:i], line[i:]
		}
		f := strings.Fields(rest)
		if s.name == "" || len(f) == 0 {
			return nil, fmt.Errorf("metrics: malformed line %q", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: %q: %w", line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseLabels parses k="v",k2="v2" with Prometheus' escapes (\\, \", \n).
func parseLabels(s string, into map[string]string) error {
	for s != "" {
		k, rest, ok := strings.Cut(s, "=")
		if !ok || len(rest) < 2 || rest[0] != '"' {
			return fmt.Errorf("bad label list at %q", s)
		}
		var v strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				switch rest[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(rest[i])
				}
				continue
			}
			v.WriteByte(rest[i])
		}
		if i >= len(rest) {
			return fmt.Errorf("unterminated label value at %q", s)
		}
		into[strings.TrimSpace(k)] = v.String()
		s = strings.TrimPrefix(rest[i+1:], ",")
	}
	return nil
}

// sum adds the series of name whose labels include match; a label value
// "!X" matches any value but X.
func (m scrape) sum(name string, match map[string]string) float64 {
	var t float64
next:
	for _, s := range m {
		if s.name != name {
			continue
		}
		for k, want := range match {
			got := s.labels[k]
			if neg, ok := strings.CutPrefix(want, "!"); ok {
				if got == neg {
					continue next
				}
			} else if got != want {
				continue next
			}
		}
		t += s.value
	}
	return t
}

// has reports whether any series of name exists.
func (m scrape) has(name string) bool {
	for _, s := range m {
		if s.name == name {
			return true
		}
	}
	return false
}

// byLabel returns name's series matching match, summed by the value of
// label (e.g. resources by type).
func (m scrape) byLabel(name, label string, match map[string]string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			ok = ok && s.labels[k] == v
		}
		if ok {
			out[s.labels[label]] += s.value
		}
	}
	return out
}

func getMetrics(ctx context.Context, url string) (scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

func TestParseMetrics(t *testing.T) {
	in := `# HELP vhcrd_resources Objects a VF holds.
# TYPE vhcrd_resources gauge
vhcrd_resources{type="eq",vf="0"} 3
vhcrd_resources{type="cq",vf="0"} 2
vhcrd_resources{type="eq",vf="1"} 1
vhcrd_opcode_commands_total{opcode="SW2HW_EQ",status="OK"} 12
vhcrd_opcode_commands_total{opcode="SW2HW_EQ",status="BAD_PARAM"} 1
vhcrd_odd{v="a\"b\\c,d=e"} 1e+06
vhcrd_vfs 2
`
	m, err := parseMetrics(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.sum("vhcrd_resources", map[string]string{"vf": "0"}); got != 5 {
		t.Errorf("resources vf 0 = %v, want 5", got)
	}
	if got := m.sum("vhcrd_opcode_commands_total", map[string]string{"opcode": "SW2HW_EQ", "status": "!OK"}); got != 1 {
		t.Errorf("SW2HW_EQ not OK = %v, want 1", got)
	}
	if got := m.byLabel("vhcrd_resources", "type", map[string]string{"vf": "0"}); got["eq"] != 3 || got["cq"] != 2 || len(got) != 2 {
		t.Errorf("byLabel = %v", got)
	}
	if got := m.sum("vhcrd_odd", map[string]string{"v": `a"b\c,d=e`}); got != 1e6 {
		t.Errorf("escaped label: %v (%+v)", got, m)
	}
	if !m.has("vhcrd_vfs") || m.sum("vhcrd_vfs", nil) != 2 {
		t.Errorf("unlabelled series: %+v", m)
	}
	for _, bad := range []string{"x{a=\"b} 1\n", "x{a=b} 1\n", "x{a=\"b\"} one\n", "x\n"} {
		if _, err := parseMetrics(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
