package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/hack/testenv"
)

// Shell completion and man pages generate from both tools' command trees:
// `TOOL completion SHELL` prints a script on stdout (nothing on stderr) that
// parses in its shell, bash completes a flag of a nested command, and
// `TOOL man DIR` writes pages groff reads without a warning.
func TestCompletionAndMan(t *testing.T) {
	dir := t.TempDir()
	for _, tool := range []string{"vhcrd", "vfctl"} {
		for shell, file := range map[string]string{"bash": tool + ".bash", "zsh": "_" + tool, "fish": tool + ".fish"} {
			out, errOut, code := runTool(t, tool, "completion", shell)
			if code != 0 || errOut != "" || !strings.Contains(out, "completion for "+tool) {
				t.Fatalf("%s completion %s: exit %d, stderr %q, stdout:\n%.300s", tool, shell, code, errOut, out)
			}
			if err := os.WriteFile(filepath.Join(dir, file), []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command(filepath.Join(binDir, tool), "man", dir).CombinedOutput(); err != nil || len(out) != 0 {
			t.Fatalf("%s man: %v\n%s", tool, err, out)
		}
	}
	bash := testenv.LookPath(t, "bash", "bash")
	groff := testenv.LookPath(t, "groff", "groff-base")
	zsh := testenv.LookPath(t, "zsh", "zsh")
	fish := testenv.LookPath(t, "fish", "fish")
	for _, tool := range []string{"vhcrd", "vfctl"} {
		for _, c := range [][]string{
			{bash, "-n", filepath.Join(dir, tool+".bash")},
			{zsh, "-n", filepath.Join(dir, "_"+tool)},
			{fish, "--no-execute", filepath.Join(dir, tool+".fish")},
		} {
			if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				t.Errorf("%v: %v\n%s", c, err, out)
			}
		}
	}
	// bash: `vhcrd vf set 3 --vl<TAB>` and `vfctl qp modify --t<TAB>`.
	for _, c := range []struct{ tool, line, want string }{
		{"vhcrd", "vhcrd vf set 3 --vl", "--vlan"},
		{"vhcrd", "vhcrd v", "vf version"},
		{"vhcrd", "vhcrd comp", "completion"},
		{"vfctl", "vfctl completion ''", "bash zsh fish --help"},
		{"vhcrd", "vhcrd config --c", "--check"},
		{"vfctl", "vfctl qp modify --t", "--timeout --to --type"},
	} {
		script := `source "$1"; COMP_WORDS=(` + c.line + `); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _` + c.tool + `; echo "${COMPREPLY[*]}"`
		out, err := exec.Command(bash, "-c", script, "bash", filepath.Join(dir, c.tool+".bash")).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("bash completion of %q: %q, want %q (%v)", c.line, out, c.want, err)
		}
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	if len(pages) < 20 {
		t.Fatalf("%d man pages: %v", len(pages), pages)
	}
	for _, p := range pages {
		out, err := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", p).CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Errorf("groff %s: %v\n%s", filepath.Base(p), err, out)
		}
	}
	// The pages carry the flags the commands parse.
	for page, want := range map[string]string{"vhcrd-serve.1": `\-\-num\-vfs`, "vhcrd-vf.1": `\-\-link\-state`, "vfctl-port.1": `\-\-phys\-port`} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s (%v)", page, want, err)
		}
	}
}

// `TOOL help [COMMAND [ACTION]]` prints what `TOOL [COMMAND [ACTION]]
// --help` prints, at every level of both trees; help of what does not
// exist is a usage error.
func TestHelpSubcommand(t *testing.T) {
	for _, tool := range []string{"vhcrd", "vfctl"} {
		for _, l := range append(tree(t, tool), &level{words: []string{"version"}}) {
			want, _, _ := runTool(t, tool, append(append([]string(nil), l.words...), "--help")...)
			got, errOut, code := runTool(t, tool, append([]string{"help"}, l.words...)...)
			if code != 0 || errOut != "" || got != want {
				t.Errorf("%s help %v: exit %d, stderr %q; stdout differs from --help:\n%s", tool, l.words, code, errOut, got)
			}
		}
		for _, args := range [][]string{{"help", "no-such-command"}, {"completion", "tcsh"}, {"completion"}} {
			out, errOut, code := runTool(t, tool, args...)
			if code != 2 || out != "" || !strings.Contains(errOut, "run '"+tool) {
				t.Errorf("%s %v: exit %d, stdout %q, stderr %q; want a usage error", tool, args, code, out, errOut)
			}
		}
	}
}
