package main

// --help at every level of both tools' command trees, and their usage
// errors. The tree and every command's flags come from `TOOL completion
// fish`, which records the flags each command parses (cmd/internal/clidoc).

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// level is one level of a command tree: its words and the flags it parses.
type level struct {
	words []string
	flags []string
	subs  []string
}

// fishLine is a flag or action line of the fish completion gen writes.
var fishLine = regexp.MustCompile(`^complete -c \S+ -n '([^']*)' (?:-l (\S+)|-a (\S+))`)

// tree reads tool's command tree from the fish completion `tool completion
// fish` prints.
func tree(t *testing.T, tool string) []*level {
	t.Helper()
	fish, err := exec.Command(filepath.Join(binDir, tool), "completion", "fish").Output()
	if err != nil {
		t.Fatalf("%s completion fish: %v", tool, err)
	}
	f := bytes.NewReader(fish)
	top := &level{}
	byKey := map[string]*level{"": top}
	levels := []*level{top}
	get := func(words ...string) *level {
		k := strings.Join(words, " ")
		if l := byKey[k]; l != nil {
			return l
		}
		l := &level{words: words}
		byKey[k] = l
		levels = append(levels, l)
		return l
	}
	topCmd := regexp.MustCompile(`^complete -c \S+ -n __fish_use_subcommand -a (\S+)`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := topCmd.FindStringSubmatch(line); m != nil {
			top.subs = append(top.subs, m[1])
			get(m[1])
			continue
		}
		m := fishLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var words []string
		for _, part := range strings.Split(m[1], "; and ") {
			if w, ok := strings.CutPrefix(part, "__fish_seen_subcommand_from "); ok && !strings.Contains(w, " ") {
				words = append(words, w)
			}
		}
		switch {
		case m[2] != "":
			l := get(words...)
			l.flags = append(l.flags, m[2])
		case m[3] != "" && len(words) == 1:
			p := get(words...)
			p.subs = append(p.subs, m[3])
			get(words[0], m[3])
		}
	}
	if len(top.subs) < 3 {
		t.Fatalf("%s: %d commands in the tree", tool, len(top.subs))
	}
	return levels
}

func runTool(t *testing.T, tool string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, tool), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return o.String(), e.String(), code
}

var singleDashFlag = regexp.MustCompile(`(?m)^\s+-[a-z]`)

// TestHelpEveryLevel: TOOL [COMMAND [ACTION]] --help exits 0, prints to
// stdout only, lists the subcommands or actions and every flag the level
// parses in the --flag form, and shows examples.
func TestHelpEveryLevel(t *testing.T) {
	for _, tool := range []string{"vhcrd", "vfctl"} {
		levels := tree(t, tool)
		levels = append(levels, &level{words: []string{"version"}})
		for _, l := range levels {
			name := strings.TrimSpace(tool + " " + strings.Join(l.words, " "))
			out, errOut, code := runTool(t, tool, append(append([]string(nil), l.words...), "--help")...)
			if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: "+name) {
				t.Errorf("%s --help: exit %d, stderr %q, stdout:\n%s", name, code, errOut, out)
				continue
			}
			if !strings.Contains(out, "\nexamples:\n  "+tool+" ") {
				t.Errorf("%s --help: no examples:\n%s", name, out)
			}
			if singleDashFlag.MatchString(out) {
				t.Errorf("%s --help: a flag in the -flag form:\n%s", name, out)
			}
			for _, f := range l.flags {
				if !regexp.MustCompile(`(?m)^  --` + regexp.QuoteMeta(f) + `\b`).MatchString(out) {
					t.Errorf("%s --help: flag --%s it parses is not listed:\n%s", name, f, out)
				}
			}
			for _, s := range l.subs {
				if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(s) + `\s`).MatchString(out) {
					t.Errorf("%s --help: %q is not listed:\n%s", name, s, out)
				}
			}
		}
	}
}

// TestUsageErrors: a bad flag, a missing or unknown command or action is
// exit 2 with one error line and a pointer to --help on stderr, nothing
// on stdout.
func TestUsageErrors(t *testing.T) {
	for _, tool := range []string{"vhcrd", "vfctl"} {
		cases := [][]string{{"no-such-command"}, {"version", "extra"}}
		for _, l := range tree(t, tool) {
			if len(l.words) == 0 {
				continue
			}
			if len(l.subs) > 0 {
				cases = append(cases, l.words, append(append([]string(nil), l.words...), "no-such-action"))
				continue
			}
			cases = append(cases, append(append([]string(nil), l.words...), "--no-such-flag"))
		}
		if tool == "vfctl" {
			cases = append(cases, nil)
		}
		for _, args := range cases {
			out, errOut, code := runTool(t, tool, args...)
			lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			if code != 2 || out != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], tool) ||
				!regexp.MustCompile(`^run '`+tool+`( [a-z-]+)* --help' for usage$`).MatchString(lines[1]) {
				t.Errorf("%s %q: exit %d, stdout %q, stderr:\n%s", tool, args, code, out, errOut)
			}
		}
	}
}

// goHelp is what the flag package and fmt print that a help should not: a
// Go type as a flag's placeholder, a Go map, slice or nil, an empty default.
var goHelp = regexp.MustCompile(`(?m)^  --\S+ (value|string|int|uint|int64|uint64|float64|duration)$|map\[|<nil>|\[\d+( \d+)+\]|\(default: \)|%!`)

// TestHelpHasNoGoValues: no level of either tool's help shows Go's syntax
// (`--link-state value`, `(default: map[])`, `[1 2]`, `<nil>`).
func TestHelpHasNoGoValues(t *testing.T) {
	for _, tool := range []string{"vhcrd", "vfctl"} {
		for _, l := range append(tree(t, tool), &level{words: []string{"version"}}) {
			out, _, _ := runTool(t, tool, append(append([]string(nil), l.words...), "--help")...)
			if m := goHelp.FindString(out); m != "" {
				t.Errorf("%s %s --help shows %q:\n%s", tool, strings.Join(l.words, " "), m, out)
			}
		}
	}
}
