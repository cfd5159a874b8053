package vmtest

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The matrix's section of docs/faults.md (VHCRD_FAULTS_DOC): a table with
// a row per case and, under it, the source behind each expectation. A run
// of every case (make faults) rewrites the section; a run of some
// (make faults FAULTS=REGEXP) replaces those cases' rows and keeps the
// others, and each row names the run it comes from: the section lists the
// runs its rows come from (what ran, the commit, the date, the wall time).

// Markers of the generated section in docs/faults.md.
const (
	matrixBegin = "<!-- fault matrix: begin (make faults writes this part) -->"
	matrixEnd   = "<!-- fault matrix: end -->"
)

// matrixColumns are the table's columns (their keys; the header is
// matrixHeader).
var matrixColumns = []string{"case", "point", "injected", "expected", "observed", "time", "run", "lines"}

var matrixHeader = map[string]string{"injected": "injected (`vhcrd fault add ...`)", "lines": "the driver's lines"}

// matrixSources heads the list of the expectations' sources.
const matrixSources = "The source behind each expectation (Linux 6.1, drivers/net/ethernet/mellanox/mlx4 unless named):"

// matrixRun is one run of TestLinuxMLX4Faults, as the section names it.
type matrixRun struct {
	sel     string // VHCRD_FAULTS
	commit  string // the module's commit, and whether the tree had changes
	date    time.Time
	results []faultResult
	wall    time.Duration
}

func newMatrixRun(t *testing.T, root, sel string) *matrixRun {
	return &matrixRun{sel: sel, commit: gitCommit(t, root), date: time.Now().UTC()}
}

// gitCommit is root's HEAD, short, with "with uncommitted changes" if the
// tracked files differ from it (docs/faults.md aside, which a run writes).
func gitCommit(t *testing.T, root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		t.Logf("git rev-parse: %v: the table names no commit", err)
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs/faults.md").Output()
	switch {
	case err != nil:
		c += " (tree state unknown)"
	case len(bytesTrim(st)) > 0:
		c += " with uncommitted changes"
	}
	return c
}

func bytesTrim(b []byte) string { return strings.TrimSpace(string(b)) }

// describe is the run's line in the section's list of runs.
func (m *matrixRun) describe() string {
	var what string
	switch m.sel {
	case "all":
		what = "`make faults` (every case)"
	case "":
		what = "the CI subset (VHCRD_FAULTS unset)"
	default:
		what = "`make faults FAULTS='" + m.sel + "'`"
	}
	cases := "cases"
	if len(m.results) == 1 {
		cases = "case"
	}
	return fmt.Sprintf("%s, commit %s, %s: %d %s in %.0f s of wall time", what, m.commit, m.date.Format("2006-01-02 15:04 UTC"), len(m.results), cases, m.wall.Seconds())
}

// complete reports whether the run ran every case of the matrix.
func (m *matrixRun) complete() bool {
	ran := map[string]bool{}
	for _, r := range m.results {
		ran[r.c.Name] = true
	}
	for _, c := range faultCases {
		if !ran[c.Name] {
			return false
		}
	}
	return true
}

// matrixEntry is one case's part of the section: its row's cells (by
// column key; "run" the number in the section it was read from) and its
// source bullet's lines.
type matrixEntry struct {
	cells  map[string]string
	bullet []string
	run    int // the run's number where it was read; 0 for this run
}

// entry is r's part of the section.
func (r faultResult) entry() matrixEntry {
	obs := r.class
	if r.class != r.c.want() {
		obs = "**" + r.class + "**"
	}
	exp := r.c.Expect
	if r.c.Against != "" {
		exp += " (against vhcrd: " + r.c.Against + ")"
	}
	var rules []string
	for _, l := range r.rules {
		rules = append(rules, "`"+strings.TrimPrefix(l, "vhcrd fault add ")+"`")
	}
	ev := append(append([]string{}, r.evidence...), r.notes...)
	for i := range ev {
		ev[i] = strings.ReplaceAll(ev[i], "|", "\\|")
	}
	e := matrixEntry{cells: map[string]string{
		"case": r.c.Name, "point": r.c.Point, "injected": strings.Join(rules, "<br>"),
		"expected": exp, "observed": obs, "time": fmt.Sprintf("%.1f s", r.took.Seconds()),
		"lines": strings.Join(ev, "<br>"),
	}}
	e.bullet = []string{fmt.Sprintf("- **%s** (%s): %s", r.c.Name, r.c.Expect, r.c.Why)}
	if r.c.Against != "" {
		e.bullet = append(e.bullet, fmt.Sprintf("  Against vhcrd today, %s: %s", r.c.Against, r.c.AgainstWhy))
	}
	return e
}

// matrixSection is a section as read back: its runs by number and its
// entries by case.
type matrixSection struct {
	runs    map[int]string
	entries map[string]matrixEntry
}

var (
	runLine    = regexp.MustCompile(`^- run (\d+): (.+)$`)
	bulletLine = regexp.MustCompile(`^- \*\*([^*]+)\*\* \(`)
)

// parseSection reads a section that section (or an earlier version of
// the harness, whose rows name no run) wrote. Rows of a section without a
// list of runs are run 0's, described by the section's first paragraph.
func parseSection(s string) (matrixSection, error) {
	p := matrixSection{runs: map[int]string{}, entries: map[string]matrixEntry{}}
	lines := strings.Split(s, "\n")
	var cols []string
	var intro []string
	inIntro, inSources := true, false
	var cur string // the case whose bullet is being read
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case inIntro && t == "" && len(intro) > 0:
			inIntro = false
		case inIntro && !strings.HasPrefix(t, "|") && t != "":
			intro = append(intro, t)
		}
		if m := runLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			p.runs[n] = m[2]
			continue
		}
		if strings.HasPrefix(t, "|") {
			inIntro = false
			cells := splitRow(t)
			switch {
			case cols == nil:
				for _, h := range cells {
					cols = append(cols, columnKey(h))
				}
			case strings.Trim(t, "|- ") == "":
			default:
				if len(cells) != len(cols) {
					return p, fmt.Errorf("the row %q has %d cells, the header %d", t, len(cells), len(cols))
				}
				e := matrixEntry{cells: map[string]string{}}
				for i, c := range cells {
					e.cells[cols[i]] = c
				}
				if r, ok := e.cells["run"]; ok {
					n, err := strconv.Atoi(r)
					if err != nil {
						return p, fmt.Errorf("the row of %s names run %q", e.cells["case"], r)
					}
					e.run = n
				}
				delete(e.cells, "run")
				p.entries[e.cells["case"]] = e
			}
			continue
		}
		if strings.HasPrefix(t, "The source behind each expectation") {
			inSources = true
			continue
		}
		if !inSources {
			continue
		}
		if m := bulletLine.FindStringSubmatch(l); m != nil {
			cur = m[1]
			if e, ok := p.entries[cur]; ok {
				e.bullet = []string{l}
				p.entries[cur] = e
			}
			continue
		}
		if strings.HasPrefix(l, "  ") && cur != "" {
			if e, ok := p.entries[cur]; ok {
				e.bullet = append(e.bullet, l)
				p.entries[cur] = e
			}
			continue
		}
		cur = ""
	}
	if len(p.runs) == 0 && len(p.entries) > 0 {
		p.runs[0] = "an earlier run, whose rows name no run: " + strings.Join(intro, " ")
	}
	for name, e := range p.entries {
		if _, ok := p.runs[e.run]; !ok {
			return p, fmt.Errorf("the row of %s names run %d, which the section does not list", name, e.run)
		}
	}
	return p, nil
}

// columnKey is a header cell's column key.
func columnKey(h string) string {
	for k, v := range matrixHeader {
		if h == v || strings.HasPrefix(h, k) {
			return k
		}
	}
	return h
}

// splitRow splits a table row at its unescaped pipes.
func splitRow(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, "\\|") {
		row = row[:len(row)-1]
	}
	var cells []string
	var b strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			b.WriteString("\\|")
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(b.String()))
}

// section is the matrix section of m's run over old (nil: none): every
// case m ran has its row from m; the others keep old's row (and name its
// run) unless m ran every case, which rewrites the section.
func (m *matrixRun) section(old *matrixSection) (string, error) {
	fresh := map[string]matrixEntry{}
	for _, r := range m.results {
		fresh[r.c.Name] = r.entry()
	}
	if old == nil || m.complete() {
		old = &matrixSection{}
	}
	type row struct {
		e   matrixEntry
		new bool
	}
	var rows []row
	var missing []string
	used := map[int]bool{}
	for _, c := range faultCases {
		if e, ok := fresh[c.Name]; ok {
			rows = append(rows, row{e, true})
		} else if e, ok := old.entries[c.Name]; ok {
			rows = append(rows, row{e, false})
			used[e.run] = true
		} else {
			missing = append(missing, c.Name)
		}
	}
	// The runs the rows name, renumbered in their order; this run last.
	var nums []int
	for n := range used {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	renum := map[int]int{}
	var b strings.Builder
	b.WriteString("Every case that has run, from the runs listed (`make faults` runs every case and rewrites this part; `make faults FAULTS=REGEXP` runs the cases whose names match and replaces their rows). Bold: a reaction other than the one its run expected. One guest runs the cases one after the other, rebooted after a hung or BUG case; a case armed by the configuration has a vhcrd and a guest of its own.\n\n")
	for i, n := range nums {
		renum[n] = i + 1
		fmt.Fprintf(&b, "- run %d: %s\n", i+1, old.runs[n])
	}
	this := len(nums) + 1
	fmt.Fprintf(&b, "- run %d: %s\n", this, m.describe())
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\nNot run yet (%d of %d cases): %s.\n", len(missing), len(faultCases), strings.Join(missing, ", "))
	}
	b.WriteString("\n|")
	for _, k := range matrixColumns {
		h := k
		if v, ok := matrixHeader[k]; ok {
			h = v
		}
		b.WriteString(" " + h + " |")
	}
	b.WriteString("\n|" + strings.Repeat("---|", len(matrixColumns)) + "\n")
	for _, r := range rows {
		run := this
		if !r.new {
			run = renum[r.e.run]
		}
		b.WriteString("|")
		for _, k := range matrixColumns {
			v := r.e.cells[k]
			if k == "run" {
				v = strconv.Itoa(run)
			}
			b.WriteString(" " + v + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n" + matrixSources + "\n\n")
	for _, r := range rows {
		for _, l := range r.e.bullet {
			b.WriteString(l + "\n")
		}
	}
	return b.String(), nil
}

// spliceMatrix writes m's section (section, over the one there) between
// the markers of path.
func spliceMatrix(path string, m *matrixRun) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, matrixBegin), strings.Index(s, matrixEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %q ... %q markers", path, matrixBegin, matrixEnd)
	}
	old, err := parseSection(s[i+len(matrixBegin) : j])
	if err != nil {
		return fmt.Errorf("%s: the matrix section: %w", path, err)
	}
	sec, err := m.section(&old)
	if err != nil {
		return err
	}
	s = s[:i+len(matrixBegin)] + "\n" + sec + "\n" + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

// TestSpliceMatrix: a partial run replaces its cases' rows and keeps the
// others with the runs they came from (a section of an earlier harness,
// whose rows name no run, included); a run of every case rewrites the
// section; the text around the markers stays.
func TestSpliceMatrix(t *testing.T) {
	byName := map[string]faultCase{}
	for _, c := range faultCases {
		byName[c.Name] = c
	}
	result := func(name, class string, took time.Duration, lines ...string) faultResult {
		c, ok := byName[name]
		if !ok {
			t.Fatalf("no case %s", name)
		}
		return faultResult{c: c, class: class, evidence: lines, took: took, rules: []string{"vhcrd fault add --kind x --vf 0"}}
	}
	// The section as the harness before runs were named wrote it (by hand
	// from two runs), with a row of a case since removed.
	legacy := "The last run (two parts): every case once.\n\n" +
		"| case | point | injected (`vhcrd fault add ...`) | expected | observed | time | the driver's lines |\n" +
		"|---|---|---|---|---|---|---|\n" +
		"| baseline | steady |  | unaffected | unaffected | 4.1 s | <br>clean: ok |\n" +
		"| gone-case | steady | `--kind y` | unaffected | unaffected | 1.0 s | |\n" +
		"| internal-err | steady | `--kind internal_err --vf 0` | recovered | **hung** | 22.7 s | a \\| b<br>clean: ok |\n" +
		"| status-query-func-cap | bind | `--kind status` | probe failed | probe failed | 1.7 s | old line |\n" +
		"\n" + matrixSources + "\n\n" +
		"- **baseline** (unaffected): no fault\n" +
		"- **internal-err** (recovered): old why\n  Against vhcrd today, hung: old against\n" +
		"- **status-query-func-cap** (probe failed): old why\n"
	path := t.TempDir() + "/faults.md"
	head, tail := "# Fault injection\n\nbefore\n\n", "\nafter\n"
	if err := os.WriteFile(path, []byte(head+matrixBegin+"\n"+legacy+matrixEnd+tail), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() (string, matrixSection) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.HasPrefix(s, head+matrixBegin+"\n") || !strings.HasSuffix(s, matrixEnd+tail) {
			t.Fatalf("the text around the markers changed:\n%s", s)
		}
		p, err := parseSection(s[strings.Index(s, matrixBegin)+len(matrixBegin) : strings.Index(s, matrixEnd)])
		if err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
		return s, p
	}
	run := func(sel string, at time.Time, rs ...faultResult) {
		t.Helper()
		m := &matrixRun{sel: sel, commit: "abc1234", date: at, results: rs, wall: 90 * time.Second}
		if err := spliceMatrix(path, m); err != nil {
			t.Fatal(err)
		}
	}
	row := func(p matrixSection, name string) (matrixEntry, string) {
		t.Helper()
		e, ok := p.entries[name]
		if !ok {
			t.Fatalf("no row of %s", name)
		}
		return e, p.runs[e.run]
	}
	t1 := time.Date(2026, 12, 2, 6, 10, 0, 0, time.UTC)

	// A run of one case over the legacy section.
	run("^status-query-func-cap$", t1, result("status-query-func-cap", classProbeFailed, 1200*time.Millisecond, "new line"))
	s, p := read()
	if e, run := row(p, "status-query-func-cap"); e.cells["lines"] != "new line" || e.cells["time"] != "1.2 s" ||
		run != "`make faults FAULTS='^status-query-func-cap$'`, commit abc1234, 2026-12-02 06:10 UTC: 1 case in 90 s of wall time" ||
		!strings.HasPrefix(e.bullet[0], "- **status-query-func-cap** (probe failed): "+byName["status-query-func-cap"].Why) {
		t.Errorf("the run's row: %v, run %q\n%s", e, run, s)
	}
	if e, run := row(p, "internal-err"); e.cells["observed"] != "**hung**" || e.cells["lines"] != `a \| b<br>clean: ok` || e.cells["time"] != "22.7 s" ||
		!strings.HasPrefix(run, "an earlier run, whose rows name no run: The last run (two parts): every case once.") ||
		!slices.Equal(e.bullet, []string{"- **internal-err** (recovered): old why", "  Against vhcrd today, hung: old against"}) {
		t.Errorf("a kept row: %v, run %q\n%s", e, run, s)
	}
	if _, ok := p.entries["gone-case"]; ok {
		t.Errorf("the row of a case no longer in the matrix was kept\n%s", s)
	}
	if len(p.runs) != 2 || !strings.Contains(s, "- run 1: an earlier run") || !strings.Contains(s, "- run 2: `make faults FAULTS=") {
		t.Errorf("runs %v\n%s", p.runs, s)
	}
	if want := fmt.Sprintf("Not run yet (%d of %d cases): ", len(faultCases)-3, len(faultCases)); !strings.Contains(s, want) {
		t.Errorf("no %q\n%s", want, s)
	}
	// Rows in the matrix's order.
	if i, j, k := strings.Index(s, "| baseline |"), strings.Index(s, "| status-query-func-cap |"), strings.Index(s, "| internal-err |"); i < 0 || !(i < j && j < k) {
		t.Errorf("rows out of faultCases' order\n%s", s)
	}

	// A second partial run: the first partial run's row keeps its run,
	// renumbered once the legacy run has no row left.
	run("^(baseline|internal-err)$", t1.Add(time.Hour), result("baseline", classUnaffected, time.Second), result("internal-err", classRecovered, 20*time.Second, "VF Reset succeed"))
	s, p = read()
	if e, run := row(p, "status-query-func-cap"); e.cells["lines"] != "new line" || !strings.Contains(run, "06:10 UTC") || e.run != 1 {
		t.Errorf("the first partial run's row: %v, run %d %q\n%s", e, e.run, run, s)
	}
	if e, run := row(p, "internal-err"); e.cells["observed"] != classRecovered || !strings.Contains(run, "07:10 UTC: 2 cases") || e.run != 2 {
		t.Errorf("the second partial run's row: %v, run %d %q\n%s", e, e.run, run, s)
	}
	if len(p.runs) != 2 || strings.Contains(s, "earlier run") {
		t.Errorf("runs %v: the legacy run has no row left\n%s", p.runs, s)
	}
	// Parsing what section wrote and writing it again changes nothing but
	// the run's own rows.
	again := &matrixRun{sel: "x", commit: "abc1234", date: t1}
	sec, _ := again.section(&p)
	if p2, err := parseSection(sec); err != nil || len(p2.entries) != len(p.entries) {
		t.Fatalf("the section read back: %v, %d entries", err, len(p2.entries))
	} else {
		for name, e := range p.entries {
			if e2 := p2.entries[name]; fmt.Sprint(e2.cells, e2.bullet) != fmt.Sprint(e.cells, e.bullet) {
				t.Errorf("%s: %v %v read back as %v %v", name, e.cells, e.bullet, e2.cells, e2.bullet)
			}
		}
	}

	// A run of every case rewrites the section: one run, every row its own.
	var all []faultResult
	for _, c := range faultCases {
		all = append(all, result(c.Name, c.want(), time.Second))
	}
	run("all", t1.Add(2*time.Hour), all...)
	s, p = read()
	if len(p.runs) != 1 || len(p.entries) != len(faultCases) || strings.Contains(s, "Not run yet") || strings.Contains(s, "new line") {
		t.Errorf("a full run kept old rows: runs %v, %d entries\n%s", p.runs, len(p.entries), s)
	}
	if !strings.Contains(s, fmt.Sprintf("- run 1: `make faults` (every case), commit abc1234, 2026-12-02 08:10 UTC: %d cases in 90 s of wall time", len(faultCases))) {
		t.Errorf("the full run's line\n%s", s)
	}
}

// TestMatrixSectionParses: docs/faults.md's section is one a partial run
// can merge into (make faults FAULTS=... would fail on it otherwise).
func TestMatrixSectionParses(t *testing.T) {
	b, err := os.ReadFile(moduleRoot(t) + "/docs/faults.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, matrixBegin), strings.Index(s, matrixEnd)
	if i < 0 || j < i {
		t.Fatal("docs/faults.md has no matrix markers")
	}
	p, err := parseSection(s[i+len(matrixBegin) : j])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.entries) == 0 {
		t.Fatal("docs/faults.md's matrix section has no rows")
	}
	for name, e := range p.entries {
		if len(e.bullet) == 0 {
			t.Errorf("%s: a row without its source", name)
		}
	}
	t.Logf("%d rows from %d runs", len(p.entries), len(p.runs))
}
