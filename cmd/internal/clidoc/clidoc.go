package clidoc

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/cli"
)

// Flag is one flag of a command.
type Flag struct {
	Name, Usage, Default, Arg string
	Bool                      bool
}

// Command is one command of a tool: its actions (subcommands, each with
// its own flags) or its flags.
type Command struct {
	Name, Summary string
	Flags         []Flag
	Subs          []Command
}

// Tool is a command tree.
type Tool struct {
	Name, Summary, Description string
	Commands                   []Command
	Examples                   []string
	ExitStatus                 string
}

var (
	mu  sync.Mutex
	rec *[]*flag.FlagSet
)

// NewFlagSet is flag.NewFlagSet that Record can see.
func NewFlagSet(name string, h flag.ErrorHandling) *flag.FlagSet {
	fs := flag.NewFlagSet(name, h)
	mu.Lock()
	defer mu.Unlock()
	if rec != nil {
		fs.SetOutput(io.Discard)
		*rec = append(*rec, fs)
	}
	return fs
}

// Record runs run(args) (a command's entry with "--help" at the end of
// args) and returns the flags of the last FlagSet it made with NewFlagSet.
// The command's own help output (stdout and stderr) is discarded.
func Record(run func([]string) error, args ...string) []Flag {
	var sets []*flag.FlagSet
	mu.Lock()
	rec = &sets
	mu.Unlock()
	stdout, stderr := os.Stdout, os.Stderr
	if devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		os.Stdout, os.Stderr = devnull, devnull
		defer devnull.Close()
	}
	_ = run(append(args, "--help"))
	os.Stdout, os.Stderr = stdout, stderr
	mu.Lock()
	rec = nil
	mu.Unlock()
	if len(sets) == 0 {
		return nil
	}
	var out []Flag
	sets[len(sets)-1].VisitAll(func(f *flag.Flag) {
		arg, usage := cli.FlagArg(f)
		out = append(out, Flag{Name: f.Name, Usage: usage, Default: cli.FlagDefault(f), Arg: arg, Bool: cli.IsBool(f)})
	})
	return out
}

// Shells are the shells Completion writes a script for.
var Shells = []string{"bash", "zsh", "fish"}

// ErrShell is returned, wrapped, by Completion for a shell not in Shells.
var ErrShell = errors.New("clidoc: no completion for this shell")

// Completion writes t's completion script for shell (one of Shells) to w:
// what `TOOL completion SHELL` prints.
func Completion(w io.Writer, t *Tool, shell string) error {
	switch shell {
	case "bash":
		return Bash(w, t)
	case "zsh":
		return Zsh(w, t)
	case "fish":
		return Fish(w, t)
	}
	return fmt.Errorf("%w: %q (want %s)", ErrShell, shell, strings.Join(Shells, ", "))
}

// ManPages writes the man pages of t into dir: NAME.1 and NAME-COMMAND.1.
func ManPages(t *Tool, dir string, date time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, f func(io.Writer) error) error {
		fh, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := f(fh); err != nil {
			fh.Close()
			return err
		}
		return fh.Close()
	}
	if err := write(t.Name+".1", func(w io.Writer) error { return Man(w, t, nil, date) }); err != nil {
		return err
	}
	for i := range t.Commands {
		c := &t.Commands[i]
		if err := write(t.Name+"-"+c.Name+".1", func(w io.Writer) error { return Man(w, t, c, date) }); err != nil {
			return err
		}
	}
	return nil
}

func flagWords(fl []Flag) string {
	var w []string
	for _, f := range fl {
		w = append(w, "--"+f.Name)
	}
	return strings.Join(w, " ")
}

func names(cs []Command) string {
	var w []string
	for _, c := range cs {
		w = append(w, c.Name)
	}
	return strings.Join(w, " ")
}

// Bash writes a bash completion script: commands, then actions, then flags.
func Bash(w io.Writer, t *Tool) error {
	fn := "_" + strings.ReplaceAll(t.Name, "-", "_")
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s (generated from its command tree)\n%s() {\n", t.Name, fn)
	b.WriteString("\tlocal cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} sub=${COMP_WORDS[2]}\n")
	fmt.Fprintf(&b, "\tif [[ $COMP_CWORD -eq 1 ]]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", names(t.Commands)+" version --help --version")
	b.WriteString("\tcase $cmd in\n")
	for _, c := range t.Commands {
		fmt.Fprintf(&b, "\t%s)\n", c.Name)
		if len(c.Subs) > 0 {
			fmt.Fprintf(&b, "\t\tif [[ $COMP_CWORD -eq 2 ]]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", names(c.Subs)+" --help")
			b.WriteString("\t\tcase $sub in\n")
			for _, s := range c.Subs {
				fmt.Fprintf(&b, "\t\t%s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", s.Name, flagWords(s.Flags)+" --help")
			}
			b.WriteString("\t\tesac ;;\n")
			continue
		}
		fmt.Fprintf(&b, "\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", flagWords(c.Flags)+" --help")
	}
	b.WriteString("\tesac\n}\n")
	fmt.Fprintf(&b, "complete -o default -F %s %s\n", fn, t.Name)
	_, err := io.WriteString(w, b.String())
	return err
}

// Zsh writes a zsh completion function (#compdef) with descriptions.
func Zsh(w io.Writer, t *Tool) error {
	var b strings.Builder
	q := func(s string) string {
		return strings.NewReplacer("'", "'\\''", ":", "\\:", "[", "\\[", "]", "\\]").Replace(s)
	}
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s (generated from its command tree)\n", t.Name, t.Name)
	flagSpecs := func(fl []Flag) string {
		var s []string
		for _, f := range fl {
			spec := fmt.Sprintf("'--%s[%s]", f.Name, q(firstLine(f.Usage)))
			if !f.Bool {
				spec += ":" + q(f.Arg) + ":_default"
			}
			s = append(s, spec+"'")
		}
		return strings.Join(s, " ")
	}
	describe := func(cs []Command) string {
		var s []string
		for _, c := range cs {
			s = append(s, "'"+c.Name+":"+q(firstLine(c.Summary))+"'")
		}
		return strings.Join(s, " ")
	}
	fmt.Fprintf(&b, "_%s() {\n\tlocal -a cmds\n\tcmds=(%s)\n", t.Name, describe(t.Commands))
	b.WriteString("\tif (( CURRENT == 2 )); then _describe command cmds; return; fi\n\tcase $words[2] in\n")
	for _, c := range t.Commands {
		if len(c.Subs) > 0 {
			fmt.Fprintf(&b, "\t%s)\n\t\tlocal -a subs\n\t\tsubs=(%s)\n\t\tif (( CURRENT == 3 )); then _describe action subs; return; fi\n\t\tcase $words[3] in\n", c.Name, describe(c.Subs))
			for _, s := range c.Subs {
				fmt.Fprintf(&b, "\t\t%s) _arguments %s '*:argument:_default' ;;\n", s.Name, flagSpecs(s.Flags))
			}
			b.WriteString("\t\tesac ;;\n")
			continue
		}
		fmt.Fprintf(&b, "\t%s) _arguments %s '*:argument:_default' ;;\n", c.Name, flagSpecs(c.Flags))
	}
	fmt.Fprintf(&b, "\tesac\n}\n_%s \"$@\"\n", t.Name)
	_, err := io.WriteString(w, b.String())
	return err
}

// Fish writes fish completions.
func Fish(w io.Writer, t *Tool) error {
	var b strings.Builder
	q := func(s string) string {
		return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(firstLine(s)) + "'"
	}
	fmt.Fprintf(&b, "# fish completion for %s (generated from its command tree)\ncomplete -c %s -f\n", t.Name, t.Name)
	for _, c := range t.Commands {
		fmt.Fprintf(&b, "complete -c %s -n __fish_use_subcommand -a %s -d %s\n", t.Name, c.Name, q(c.Summary))
		flags := func(cond string, fl []Flag) {
			for _, f := range fl {
				r := " -r"
				if f.Bool {
					r = ""
				}
				fmt.Fprintf(&b, "complete -c %s -n %s -l %s%s -d %s\n", t.Name, q(cond), f.Name, r, q(f.Usage))
			}
		}
		if len(c.Subs) == 0 {
			flags("__fish_seen_subcommand_from "+c.Name, c.Flags)
			continue
		}
		for _, s := range c.Subs {
			fmt.Fprintf(&b, "complete -c %s -n %s -a %s -d %s\n", t.Name,
				q("__fish_seen_subcommand_from "+c.Name+"; and not __fish_seen_subcommand_from "+names(c.Subs)), s.Name, q(s.Summary))
			flags("__fish_seen_subcommand_from "+c.Name+"; and __fish_seen_subcommand_from "+s.Name, s.Flags)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// roff escapes text for a man page line.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// Man writes the man page of t (c nil) or of its command c.
func Man(w io.Writer, t *Tool, c *Command, date time.Time) error {
	var b strings.Builder
	title, name, summary := t.Name, t.Name, t.Summary
	if c != nil {
		title, name, summary = t.Name+"-"+c.Name, t.Name+" "+c.Name, c.Summary
	}
	fmt.Fprintf(&b, ".TH %s 1 %q %q \"User Commands\"\n", strings.ToUpper(title), date.Format("2006-01-02"), t.Name)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(title), roff(summary))
	b.WriteString(".SH SYNOPSIS\n")
	if c == nil {
		fmt.Fprintf(&b, ".B %s\n.I COMMAND\n[\\fIflags\\fR]\n", t.Name)
		fmt.Fprintf(&b, ".SH DESCRIPTION\n%s\n.SH COMMANDS\n", roff(t.Description))
		for _, c := range t.Commands {
			fmt.Fprintf(&b, ".TP\n.B %s\n%s (see \\fB%s\\-%s\\fR(1))\n", roff(c.Name), roff(c.Summary), roff(t.Name), roff(c.Name))
		}
		fmt.Fprintf(&b, ".TP\n.B version\nprint the module version and VCS revision (also \\fB\\-\\-version\\fR)\n")
	} else {
		if len(c.Subs) == 0 {
			fmt.Fprintf(&b, ".B %s\n[\\fIflags\\fR]\n", roff(name))
			manFlags(&b, c.Flags)
		} else {
			for _, s := range c.Subs {
				fmt.Fprintf(&b, ".br\n.B %s %s\n[\\fIflags\\fR]\n", roff(name), roff(s.Name))
			}
			for _, s := range c.Subs {
				fmt.Fprintf(&b, ".SH %s\n%s\n", strings.ToUpper(roff(c.Name+" "+s.Name)), roff(s.Summary))
				manFlags(&b, s.Flags)
			}
		}
	}
	if c == nil && len(t.Examples) > 0 {
		b.WriteString(".SH EXAMPLES\n.nf\n")
		for _, e := range t.Examples {
			b.WriteString(roff(e) + "\n")
		}
		b.WriteString(".fi\n")
	}
	fmt.Fprintf(&b, ".SH EXIT STATUS\n%s\n", roff(t.ExitStatus))
	if c != nil {
		fmt.Fprintf(&b, ".SH SEE ALSO\n\\fB%s\\fR(1)\n", roff(t.Name))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func manFlags(b *strings.Builder, fl []Flag) {
	if len(fl) == 0 {
		return
	}
	sorted := append([]Flag(nil), fl...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	b.WriteString(".SS OPTIONS\n")
	for _, f := range sorted {
		fmt.Fprintf(b, ".TP\n\\fB\\-\\-%s\\fR", roff(f.Name))
		if !f.Bool {
			fmt.Fprintf(b, " \\fI%s\\fR", roff(f.Arg))
		}
		b.WriteString("\n" + roff(f.Usage))
		if f.Default != "" {
			fmt.Fprintf(b, " (default: %s)", roff(f.Default))
		}
		b.WriteString("\n")
	}
}

// Entry is one command of a tool's table as Add reads it: its summary, the
// function that parses and runs it, and its actions (name, summary), if it
// has any.
type Entry struct {
	Summary string
	Run     func([]string) error
	Actions [][2]string
}

// Add appends the entries to t's commands in name order, each with the
// flags its Run (or each action's) really parses, and returns t.
func (t *Tool) Add(entries map[string]Entry) *Tool {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := entries[n]
		c := Command{Name: n, Summary: e.Summary}
		if len(e.Actions) > 0 {
			for _, s := range e.Actions {
				c.Subs = append(c.Subs, Command{Name: s[0], Summary: s[1], Flags: Record(e.Run, s[0])})
			}
		} else {
			c.Flags = Record(e.Run)
		}
		t.Commands = append(t.Commands, c)
	}
	return t
}
