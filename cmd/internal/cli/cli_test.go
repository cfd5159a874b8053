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
  --port int
    	the VF's port (default: 1)
  --vf int
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
