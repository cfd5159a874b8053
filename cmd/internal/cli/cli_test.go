package cli

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Bool("json", false, "print JSON")
	fs.String("config", "", "configuration `FILE`")
	fs.Int("vf", -1, "VF index (required)")
	fs.Int("port", 1, "the VF's port")
	h := Help{Usage: "tool x [flags]", Subs: []Sub{{"a", "first"}, {"bb", "second"}}, SubsName: "actions",
		Flags: fs, Examples: []string{"tool x a", "tool x bb --json"}, Exit: "0 done, 2 usage"}
	var b bytes.Buffer
	h.Write(&b)
	want := `usage: tool x [flags]

actions:
  a   first
  bb  second

flags:
  --config FILE
    	configuration FILE
  --json
    	print JSON
  --port N
    	the VF's port (default: 1)
  --vf N
    	VF index (required)

examples:
  tool x a
  tool x bb --json

exit status: 0 done, 2 usage
`
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestParse(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Bool("json", false, "print JSON")
	err := Parse(fs, []string{"--nope"}, &Help{Usage: "tool x"})
	if err == nil || errors.Is(err, flag.ErrHelp) || !strings.Contains(err.Error(), "not defined: --nope") {
		t.Fatalf("bad flag: %v", err)
	}
	var b bytes.Buffer
	UsageError(&b, "tool x", err)
	if b.String() != "tool x: flag provided but not defined: --nope\nrun 'tool x --help' for usage\n" {
		t.Fatalf("usage error: %q", b.String())
	}
	if !IsHelp("--help") || !IsHelp("-h") || !IsHelp("help") || IsHelp("--helpx") {
		t.Fatal("IsHelp")
	}
}

type mapValue map[int]string

func (m mapValue) String() string     { return "" }
func (m mapValue) Set(s string) error { m[len(m)] = s; return nil }

// Flags show a placeholder, never the Go type the flag package names, and
// no default for a zero value (no "map[]", "0s", "false").
func TestFlagArgAndDefault(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("metrics-addr", "127.0.0.1:9464", "listener")
	fs.Int("num-vfs", 8, "VFs")
	fs.Duration("timeout", 0, "bound")
	fs.Var(mapValue{}, "link-state", "the link")
	fs.Var(mapValue{}, "guest", "`N=RAMFILE`: a guest")
	fs.Bool("json", false, "JSON")
	want := map[string][2]string{"metrics-addr": {"ADDR", "127.0.0.1:9464"}, "num-vfs": {"N", "8"}, "timeout": {"DURATION", ""},
		"link-state": {"STATE", ""}, "guest": {"N=RAMFILE", ""}, "json": {"", ""}}
	fs.VisitAll(func(f *flag.Flag) {
		arg, _ := FlagArg(f)
		if w := want[f.Name]; arg != w[0] || FlagDefault(f) != w[1] {
			t.Errorf("--%s: placeholder %q default %q, want %q %q", f.Name, arg, FlagDefault(f), w[0], w[1])
		}
	})
}

// An environment variable sets a flag's default; unset, the built-in one;
// set and empty, empty.
func TestDefault(t *testing.T) {
	t.Setenv(EnvBAR, "file:/tmp/x/bar")
	if d := Default(EnvBAR, "file:/dev/shm/vhcrd-bar"); d != "file:/tmp/x/bar" {
		t.Errorf("Default with %s set: %q", EnvBAR, d)
	}
	t.Setenv(EnvMetricsAddr, "")
	if d := Default(EnvMetricsAddr, "127.0.0.1:9464"); d != "" {
		t.Errorf("Default with %s empty: %q", EnvMetricsAddr, d)
	}
	if d := Default("VHCRD_NO_SUCH_VARIABLE", "builtin"); d != "builtin" {
		t.Errorf("Default unset: %q", d)
	}
}
