package master

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

var updateREADME = flag.Bool("update-readme", false, "rewrite docs/opcodes.md's opcode list from the command table")

const (
	readmePath = "../../docs/opcodes.md"
	// differencesPath is the page of the documented differences from mlx4.
	differencesPath = "../../docs/differences.md"
	readmeBegin     = "<!-- opcode list: generated from master.NewTable by go test ./vhcr/master -update-readme -->\n"
	readmeEnd       = "<!-- end of opcode list -->\n"
)

// opcodeList renders the command table as docs/opcodes.md's opcode list: the
// mailbox facts of each row, its effects (with a QP command's transition)
// and latency class, and what the PF checks before the executor runs, with
// the status a VF gets on refusal.
func opcodeList(t *Table) string {
	var b strings.Builder
	b.WriteString("| opcode | value | inbox | outbox | imm | effects | latency class | checked by the PF first (status on refusal) | executor |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	mark := func(v bool) string {
		if v {
			return "✓"
		}
		return ""
	}
	for _, e := range t.Entries() {
		var checks []string
		exec := "-"
		if e.EPERM {
			checks = append(checks, "refused: `mlx4_CMD_EPERM_wrapper` (`BAD_OP`)")
		} else {
			if e.OpMods != 0 {
				var legal []string
				for m := 0; m < 16; m++ {
					if e.OpMods&(1<<m) != 0 {
						legal = append(legal, fmt.Sprint(m))
					}
				}
				checks = append(checks, "op_modifier in {"+strings.Join(legal, ", ")+"} (`BAD_PARAM`)")
			}
			if e.HasOutbox {
				checks = append(checks, "outbox 4 KiB aligned and writable (else the VF is reset)")
			}
			if e.HasInbox {
				checks = append(checks, "inbox 4 KiB aligned and readable (`INTERNAL_ERR`)")
			}
			exec = "`hca." + goName(e.Op) + "`"
		}
		if len(checks) == 0 {
			checks = append(checks, "-")
		}
		eff := e.Effects.String()
		if e.QP.From != 0 {
			var from []string
			for s := mlx4.QPState(0); int(s) < mlx4.QPNumStates; s++ {
				if e.QP.Has(s) {
					from = append(from, s.String())
				}
			}
			if len(from) == mlx4.QPNumStates {
				from = []string{"any"}
			}
			eff += fmt.Sprintf(" (%s → %v)", strings.Join(from, ", "), e.QP.To)
		}
		fmt.Fprintf(&b, "| %s | %#03x | %s | %s | %s | %s | %v | %s | %s |\n", e.Op, uint16(e.Op), mark(e.HasInbox), mark(e.HasOutbox), mark(e.OutIsImm), eff, e.class, strings.Join(checks, "; "), exec)
	}
	return b.String()
}

// goName is the executor's method name: mlx4's name, with 2ERR_QP and
// 2RST_QP spelled TWO_ERR_QP and TWO_RST_QP.
func goName(op mlx4.Opcode) string {
	n := op.String()
	if strings.HasPrefix(n, "2") {
		n = "TWO_" + n[1:]
	}
	return n
}

// TestREADMEOpcodeList: docs/opcodes.md's opcode list is the command table's.
func TestREADMEOpcodeList(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i, j := strings.Index(s, readmeBegin), strings.Index(s, readmeEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no opcode list between %q and %q", readmePath, readmeBegin, readmeEnd)
	}
	want := opcodeList(NewTable())
	got := s[i+len(readmeBegin) : j]
	if got == want {
		return
	}
	if !*updateREADME {
		t.Fatalf("docs/opcodes.md's opcode list differs from the command table; run go test ./vhcr/master -run TestREADMEOpcodeList -update-readme")
	}
	if err := os.WriteFile(readmePath, []byte(s[:i+len(readmeBegin)]+want+s[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestREADMEDifferencesNameTheirTests: every bullet of docs/differences.md's "Where
// vhcrd differs from mlx4" names at least one test, and every test it names
// is defined somewhere in the repository, so a difference the README claims
// is one a test proves.
func TestREADMEDifferencesNameTheirTests(t *testing.T) {
	b, err := os.ReadFile(differencesPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "# Where vhcrd differs from mlx4\n") {
		t.Fatalf(`%s does not start with "# Where vhcrd differs from mlx4"`, differencesPath)
	}
	defined := map[string]bool{}
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFuncRE.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bullets := strings.Split(s, "\n- ")[1:]
	if len(bullets) == 0 {
		t.Fatal("the section has no bullets")
	}
	for _, bl := range bullets {
		head, _, _ := strings.Cut(bl, "\n")
		names := testNameRE.FindAllStringSubmatch(bl, -1)
		if len(names) == 0 {
			t.Errorf("bullet %q names no test", head)
		}
		for _, n := range names {
			if !defined[n[1]] {
				t.Errorf("bullet %q names %s, which no _test.go file defines", head, n[1])
			}
		}
	}
}

var (
	testFuncRE = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)\w+)\(`)
	testNameRE = regexp.MustCompile("`((?:Test|Fuzz)[A-Z]\\w*)`")
)
