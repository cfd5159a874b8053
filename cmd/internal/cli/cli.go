package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// ExitUsage is the exit status of a usage error (1: refused or failed).
const ExitUsage = 2

// Environment variables that set the defaults of flags in both tools: an
// operator's (or a test's) other regions without a flag on every command.
// A flag given on the command line wins.
const (
	EnvBAR         = "VHCRD_BAR"          // --bar of every command of vhcrd and vfctl
	EnvDMA         = "VHCRD_DMA"          // --dma of vhcrd serve
	EnvMetricsAddr = "VHCRD_METRICS_ADDR" // --metrics-addr of vhcrd serve ("" set: off)
)

// Default is the default of a flag: the environment variable env where it
// is set, else builtin.
func Default(env, builtin string) string {
	if v, ok := os.LookupEnv(env); ok {
		return v
	}
	return builtin
}

// Sub is a subcommand or action in a --help listing.
type Sub struct{ Name, Summary string }

// Help is what --help prints at one level of a command tree.
type Help struct {
	Usage    string        // synopsis after "usage: ", e.g. "vfctl eq ACTION [flags]"
	About    string        // optional paragraph under the synopsis
	Subs     []Sub         // subcommands or actions
	SubsName string        // heading of Subs: "commands" unless set
	Flags    *flag.FlagSet // flags of this level, nil: none
	Examples []string      // at least one
	Exit     string        // exit statuses, e.g. "0 done, 1 refused or failed, 2 usage"
}

// Write writes h to w.
func (h *Help) Write(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n", h.Usage)
	if h.About != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(h.About, "\n"))
	}
	if len(h.Subs) > 0 {
		name := h.SubsName
		if name == "" {
			name = "commands"
		}
		width := 0
		for _, s := range h.Subs {
			width = max(width, len(s.Name))
		}
		fmt.Fprintf(&b, "\n%s:\n", name)
		for _, s := range h.Subs {
			fmt.Fprintf(&b, "  %-*s  %s\n", width, s.Name, s.Summary)
		}
	}
	if h.Flags != nil {
		n := 0
		h.Flags.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			b.WriteString("\nflags:\n")
			WriteFlags(&b, h.Flags)
		}
	}
	if len(h.Examples) > 0 {
		fmt.Fprintf(&b, "\nexamples:\n  %s\n", strings.Join(h.Examples, "\n  "))
	}
	if h.Exit != "" {
		fmt.Fprintf(&b, "\nexit status: %s\n", h.Exit)
	}
	_, _ = io.WriteString(w, b.String())
}

// WriteFlags lists fs's flags in the GNU form: "--name ARG", then the
// usage and the default on the next line.
func WriteFlags(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := FlagArg(f)
		fmt.Fprintf(&b, "  --%s", f.Name)
		if arg != "" {
			fmt.Fprintf(&b, " %s", arg)
		}
		b.WriteString("\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t"))
		if d := FlagDefault(f); d != "" && !strings.Contains(usage, "(required)") {
			fmt.Fprintf(&b, " (default: %s)", d)
		}
		b.WriteString("\n")
	})
	_, _ = io.WriteString(w, b.String())
}

// IsBool reports whether f is a boolean flag (it takes no argument).
func IsBool(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// FlagArg is the placeholder of f's argument ("" for a boolean flag) and
// its usage. A name in back quotes in the usage is the placeholder
// (`FILE`); else a number is N, a duration DURATION, and any other value
// the last word of the flag's name in capitals (--metrics-addr ADDR), never
// the Go type the flag package would name (string, int, value).
func FlagArg(f *flag.Flag) (arg, usage string) {
	arg, usage = flag.UnquoteUsage(f)
	if IsBool(f) {
		return "", usage
	}
	if strings.Contains(f.Usage, "`") {
		return arg, usage
	}
	switch arg {
	case "int", "uint", "int64", "uint64", "float":
		return "N", usage
	case "duration":
		return "DURATION", usage
	}
	name := f.Name
	if i := strings.LastIndexByte(name, '-'); i >= 0 {
		name = name[i+1:]
	}
	return strings.ToUpper(name), usage
}

// FlagDefault is f's default as help shows it: "" for the zero value (false,
// 0, empty, an empty list or map).
func FlagDefault(f *flag.Flag) string {
	switch d := f.DefValue; d {
	case "false", "0", "[]", "map[]", "0s":
		return ""
	default:
		return d
	}
}

// Parse parses args into fs. On -h or --help it writes h (with fs's
// flags) to stdout and returns flag.ErrHelp; a bad flag is returned as is
// (the caller's usage error). The flag package prints nothing.
func Parse(fs *flag.FlagSet, args []string, h *Help) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		hh := *h
		hh.Flags = fs
		hh.Write(os.Stdout)
		return err
	}
	if err != nil {
		// The flag package names flags with one dash: "-bogus".
		return errors.New(strings.Replace(err.Error(), ": -", ": --", 1))
	}
	return nil
}

// IsHelp reports whether arg asks for help (help, -h, -help, --help).
func IsHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}

// UsageError writes a usage error to w: one line, "PATH: ERR", and a
// pointer to PATH --help.
func UsageError(w io.Writer, path string, err error) {
	fmt.Fprintf(w, "%s: %s\nrun '%s --help' for usage\n", path, strings.ReplaceAll(err.Error(), "\n", " "), path)
}
