package trace

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Filter selects records.
type Filter struct {
	// VF selects one VF's records; -1 selects every VF.
	VF int
	// ByOpcode selects only the VHCR_POST records of Opcode.
	ByOpcode bool
	Opcode   mlx4.Opcode
}

// All is the filter that selects every record.
var All = Filter{VF: -1}

// Match reports whether f selects rec.
func (f *Filter) Match(rec *Record) bool {
	if f.VF >= 0 && int(rec.VF) != f.VF {
		return false
	}
	return !f.ByOpcode || rec.Kind == KindPost && rec.Op == f.Opcode
}

// DefaultPoll is how often a caught-up stream looks for new records (a
// stream that keeps finding none backs off to idlePolls of them).
const DefaultPoll = 10 * time.Millisecond

// idlePolls bounds a caught-up stream's backoff, in polls.
const idlePolls = 20

// Options says what Stream writes.
type Options struct {
	Filter Filter
	JSON   bool // JSON lines (AppendJSON) instead of text (AppendText)
	// Follow keeps streaming until ctx is done; without it Stream returns
	// once it has caught up with the writer.
	Follow bool
	Poll   time.Duration // 0: DefaultPoll
}

// batch is how many records Stream copies per Read.
const batch = 256

// Stream writes the records rd reads, filtered, as text or JSON lines,
// and a "lost" line (text: "# lost N records"; JSON: {"kind":"lost",
// "lost":N}) wherever rd lost records (of any VF: the filter applies to the
// records read, not to the count of those lost). It looks for new records every Poll
// when caught up and flushes w then. With Follow it returns nil when ctx is
// done, after writing what the ring held at that moment; it returns the
// first write error.
func Stream(ctx context.Context, w io.Writer, rd *Reader, o Options) error {
	poll := o.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	clk := rd.Ring().Clock()
	bw := bufio.NewWriterSize(w, 64<<10)
	recs := make([]Record, batch)
	var line []byte
	var tick *time.Timer
	emit := func(e *Entry) error {
		if o.JSON {
			line = AppendJSON(line[:0], e)
		} else {
			line = AppendText(line[:0], e)
		}
		_, err := bw.Write(line)
		return err
	}
	// drain writes what the ring holds now: it stops at the cursor it
	// found, so that a writer faster than w cannot keep it going.
	drain := func() error {
		end := rd.Ring().Written()
		for {
			n, lost := rd.Read(recs)
			if lost > 0 {
				if err := emit(&Entry{Kind: KindLost, Lost: lost}); err != nil {
					return err
				}
			}
			for i := range recs[:n] {
				if !o.Filter.Match(&recs[i]) {
					continue
				}
				e := clk.EntryOf(&recs[i])
				if err := emit(&e); err != nil {
					return err
				}
			}
			if n < len(recs) || rd.Next() >= end {
				return bw.Flush()
			}
		}
	}
	// A caught-up stream looks again after poll, and after twice as long
	// each time it found nothing, up to idlePolls polls: an idle PF's
	// follower wakes 5 times a second rather than 100.
	wait := poll
	for {
		before := rd.Next()
		if err := drain(); err != nil {
			return err
		}
		if !o.Follow {
			return nil
		}
		if rd.Next() != before {
			wait = poll
		} else if wait < idlePolls*poll {
			wait = min(2*wait, idlePolls*poll)
		}
		if tick == nil {
			tick = time.NewTimer(wait)
			defer tick.Stop()
		} else {
			tick.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return drain()
		case <-tick.C:
		}
	}
}

// WriteFile copies r to the file at path (created mode 0600, or truncated), from the
// oldest record the ring holds, as Stream with Follow and o's format and
// filter, until ctx is done.
func WriteFile(ctx context.Context, path string, r *Ring, o Options) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("trace: %w", cerr)
		}
	}()
	o.Follow = true
	if err := Stream(ctx, f, r.NewReaderFromStart(), o); err != nil {
		return fmt.Errorf("trace: writing %s: %w", path, err)
	}
	return nil
}

// Request is what a trace client sends to the server: one JSON object on
// one line, e.g. {"vf":3,"opcode":"QUERY_FUNC_CAP","json":true}.
type Request struct {
	VF        *int   `json:"vf,omitempty"`         // one VF's records; absent: every VF
	Opcode    string `json:"opcode,omitempty"`     // VHCR_POSTs of this opcode (mlx4 name or number)
	JSON      bool   `json:"json,omitempty"`       // JSON lines instead of text
	FromStart bool   `json:"from_start,omitempty"` // from the oldest record the ring holds, not from now
}

// MaxRequest bounds a request line.
const MaxRequest = 1024

// ErrRequest is returned, wrapped, for a request the server cannot serve.
var ErrRequest = errors.New("trace: bad request")

// ParseRequest decodes and checks a request line.
func ParseRequest(line []byte) (Request, error) {
	var q Request
	if len(line) > MaxRequest {
		return Request{}, fmt.Errorf("%w: %d bytes", ErrRequest, len(line))
	}
	if err := json.Unmarshal(line, &q); err != nil {
		return Request{}, fmt.Errorf("%w: %v", ErrRequest, err)
	}
	if _, err := q.Options(); err != nil {
		return Request{}, err
	}
	return q, nil
}

// Options turns q into stream options (following, polling every
// DefaultPoll).
func (q *Request) Options() (Options, error) {
	o := Options{Filter: All, JSON: q.JSON, Follow: true}
	if q.VF != nil {
		if *q.VF < 0 || *q.VF > 0xffff {
			return Options{}, fmt.Errorf("%w: vf %d", ErrRequest, *q.VF)
		}
		o.Filter.VF = *q.VF
	}
	if q.Opcode != "" {
		op, err := mlx4.ParseOpcode(q.Opcode)
		if err != nil {
			return Options{}, fmt.Errorf("%w: %w", ErrRequest, err)
		}
		o.Filter.ByOpcode, o.Filter.Opcode = true, op
	}
	return o, nil
}

// ServeConn serves one trace client on conn: it reads the client's
// Request line, then streams as ServeRequest does. A bad request is answered
// with "# error: …" and returned (wrapping ErrRequest). ServeConn closes
// conn.
func ServeConn(ctx context.Context, conn net.Conn, r *Ring) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	br := bufio.NewReaderSize(conn, MaxRequest+1)
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		err = fmt.Errorf("%w: longer than %d bytes", ErrRequest, MaxRequest)
		fmt.Fprintf(conn, "# error: %v\n", err)
		return err
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w: %w", ErrRequest, err)
	}
	q, err := ParseRequest(line)
	if err != nil {
		fmt.Fprintf(conn, "# error: %v\n", err)
		return err
	}
	return ServeRequest(ctx, conn, r, q)
}

// ServeRequest streams r to a client whose request q has been read (by
// ServeConn, or by an admin socket that reads its own command line): it
// streams records from now on (or from the oldest the ring holds, as
// asked: the ring records whether or not anyone reads it) until the client closes its end (a read on conn returns)
// or ctx is done; both return nil. ServeRequest closes conn.
func ServeRequest(ctx context.Context, conn net.Conn, r *Ring, q Request) error {
	o, err := q.Options()
	if err != nil {
		fmt.Fprintf(conn, "# error: %v\n", err)
		conn.Close()
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	rd := r.NewReader()
	if q.FromStart {
		rd = r.NewReaderFromStart()
	}
	go func() {
		// The client sends nothing more: a read returns when it closes
		// its end (or conn is closed here).
		_, _ = io.Copy(io.Discard, conn)
		cancel()
	}()
	err = Stream(ctx, conn, rd, o)
	if ctx.Err() != nil {
		return nil // the client left, or the server is stopping
	}
	return err
}

// Follow is the client side: it sends q on conn and copies the stream to
// out until the server ends it, ctx is done (nil error) or writing out
// fails. Follow closes conn.
func Follow(ctx context.Context, conn net.Conn, q Request, out io.Writer) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	b, err := json.Marshal(q)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("trace: sending the request: %w", err)
	}
	if _, err := io.Copy(out, conn); err != nil && ctx.Err() == nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}
