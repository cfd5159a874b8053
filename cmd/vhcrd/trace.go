package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

func init() {
	register("trace", "stream the command trace of a running vhcrd (admin socket)", runTrace)
}

// runTrace is `vhcrd trace`: it asks the daemon's admin socket for the
// trace and copies the stream to stdout until interrupted (exit 0) or the
// daemon ends it. Usage errors exit 2, a daemon that cannot be reached or
// refuses the request 1.
func runTrace(args []string) error {
	fs := clidoc.NewFlagSet("trace", flag.ContinueOnError)
	vf := fs.Int("vf", -1, "only this VF's records (-1: every VF)")
	opcode := fs.String("opcode", "", "only the VHCR_POSTs of this opcode (mlx4 name, e.g. QUERY_FUNC_CAP, or number)")
	jsonOut := fs.Bool("json", false, "JSON lines instead of text")
	fromStart := fs.Bool("from-start", false, "begin with the oldest record the daemon's ring holds, not with the next one")
	sock := fs.String("admin-socket", "", "the daemon's admin socket (default: derived from --bar)")
	barSpec := fs.String("bar", DefaultBAR, "the daemon's BAR region, to find its admin socket")
	h := &cli.Help{Usage: "vhcrd trace [flags]", About: commands["trace"].summary,
		Examples: []string{"vhcrd trace", "vhcrd trace --vf 2 --opcode QUERY_QP", "vhcrd trace --json --from-start"},
		Exit:     "0 interrupted or ended by the daemon, 1 refused or unreachable, 2 usage"}
	if err := parseNoArgs(fs, args, h); err != nil {
		return err
	}
	both := 0
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "admin-socket" || f.Name == "bar" {
			both++
		}
	})
	if both == 2 {
		return usageError{errors.New("--admin-socket and --bar: give one")}
	}
	q := trace.Request{Opcode: *opcode, JSON: *jsonOut, FromStart: *fromStart}
	if *vf != -1 {
		q.VF = vf
	}
	if _, err := q.Options(); err != nil {
		return usageError{err}
	}
	if *opcode != "" {
		if _, err := mlx4.ParseOpcode(*opcode); err != nil {
			return usageError{fmt.Errorf("--opcode: %w", err)}
		}
	}
	s := adminc.Socket{Path: *sock}
	if s.Path == "" {
		var err error
		if s.Path, err = adminc.DefaultSocket(*barSpec); err != nil {
			return usageError{err}
		}
		s.BAR = *barSpec // explains a socket nobody listens on (a dead PF)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE)
	defer stop()
	return followTrace(ctx, s, q, os.Stdout)
}

// followTrace sends q to the admin socket s and copies the reply to out
// line by line until ctx is done or the daemon closes the stream (nil), or
// the daemon answers with an error line (returned).
func followTrace(ctx context.Context, s adminc.Socket, q trace.Request, out io.Writer) error {
	conn, err := s.Dial(adminTimeout)
	if err != nil {
		return err
	}
	stopClose := context.AfterFunc(ctx, func() { conn.Close() })
	defer stopClose()
	defer conn.Close()
	req, err := json.Marshal(adminRequest{Cmd: "trace", Request: q})
	if err != nil {
		return err
	}
	if _, err := conn.Write(append(req, '\n')); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("admin socket: sending the request: %w", err)
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	bw := bufio.NewWriterSize(out, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && err == nil {
			if msg, ok := strings.CutPrefix(string(line), "# error: "); ok {
				_ = bw.Flush()
				return errors.New("vhcrd: " + strings.TrimSpace(msg))
			}
			if _, werr := bw.Write(line); werr != nil {
				return outErr(ctx, werr)
			}
		}
		if br.Buffered() == 0 || err != nil {
			if ferr := bw.Flush(); ferr != nil {
				return outErr(ctx, ferr)
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than the buffer: not a trace line; pass it on.
			if _, werr := bw.Write(line); werr != nil {
				return outErr(ctx, werr)
			}
		case ctx.Err() != nil, errors.Is(err, io.EOF):
			_ = bw.Flush()
			return nil
		default:
			return fmt.Errorf("admin socket: %w", err)
		}
	}
}

// outErr is a failed write to the output: none when interrupted or when
// the reader of a pipe went away (`vhcrd trace | head`).
func outErr(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}
