package trace

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// serve starts ServeConn on one end of a pipe and returns the other end and
// ServeConn's result.
func serve(t *testing.T, ctx context.Context, r *Ring) (net.Conn, <-chan error) {
	t.Helper()
	srv, cli := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeConn(ctx, srv, r) }()
	return cli, done
}

func readLines(t *testing.T, br *bufio.Reader, n int) []string {
	t.Helper()
	var out []string
	for range n {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", out, err)
		}
		out = append(out, l)
	}
	return out
}

func TestServeConn(t *testing.T) {
	r := testRing(64)
	cli, done := serve(t, context.Background(), r)
	if _, err := io.WriteString(cli, `{"vf":3,"opcode":"SW2HW_MPT","json":true,"from_start":true}`+"\n"); err != nil {
		t.Fatal(err)
	}
	script(r)
	br := bufio.NewReader(cli)
	got := readLines(t, br, 1)
	e, err := ParseJSON([]byte(got[0]))
	if err != nil || e.Opcode != "SW2HW_MPT" || e.VF != 3 || e.Status != "BAD_RESOURCE" || e.Reason != "not_owner" {
		t.Errorf("%q: %+v, %v", got[0], e, err)
	}
	// More records: the stream follows.
	c := hca.Cmd{VF: 3, Op: mlx4.SW2HW_MPT, Token: 9}
	r.Post(0, 0, 0, &c, mlx4.OK)
	got = readLines(t, br, 1)
	if e, err := ParseJSON([]byte(got[0])); err != nil || e.Token != 9 || e.Status != "OK" {
		t.Errorf("%q: %+v, %v", got[0], e, err)
	}
	// The client leaves: the server returns nil.
	cli.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeConn: %v", err)
	}
}

func TestServeConnBadRequest(t *testing.T) {
	r := testRing(8)
	for _, req := range []string{`{"opcode":"NOPE"}`, `{"vf":-2}`, `{"vf":65536}`, `nonsense`,
		`{"vf":1,` + strings.Repeat(" ", MaxRequest) + `}`} {
		cli, done := serve(t, context.Background(), r)
		go func() {
			_, _ = io.WriteString(cli, req+"\n")
		}()
		l, _ := bufio.NewReader(cli).ReadString('\n')
		if !strings.HasPrefix(l, "# error: trace: bad request") {
			t.Errorf("%.40q: answered %q", req, l)
		}
		if err := <-done; !errors.Is(err, ErrRequest) {
			t.Errorf("%.40q: %v", req, err)
		}
		cli.Close()
	}
}

// TestFollow is the client against the server, text from the start of the
// ring; cancelling the client's context ends both sides.
func TestFollow(t *testing.T) {
	r := testRing(64)
	script(r)
	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	cli, done := serve(t, sctx, r)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	res := make(chan error, 1)
	go func() { res <- Follow(ctx, cli, Request{FromStart: true}, pw) }()
	got := readLines(t, bufio.NewReader(pr), len(wantScript))
	want := string(streamScript(t, Options{Filter: All}))
	if strings.Join(got, "") != want {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, ""), want)
	}
	cancel()
	if err := <-res; err != nil {
		t.Errorf("Follow: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("ServeConn: %v", err)
	}
}

// TestServeConnStops: the server's context ends a stream.
func TestServeConnStops(t *testing.T) {
	r := testRing(8)
	ctx, cancel := context.WithCancel(context.Background())
	cli, done := serve(t, ctx, r)
	if _, err := io.WriteString(cli, "{}\n"); err != nil {
		t.Fatal(err)
	}
	r.IRQ(0, 1, 1)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeConn: %v", err)
	}
	cli.Close()
}

func TestParseRequest(t *testing.T) {
	q, err := ParseRequest([]byte(`{"vf":2,"opcode":"0x31","json":true}`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := q.Options()
	if err != nil || o.Filter != (Filter{VF: 2, ByOpcode: true, Opcode: mlx4.NOP}) || !o.JSON || !o.Follow {
		t.Errorf("%+v, %v", o, err)
	}
	q, err = ParseRequest([]byte(`{}`))
	if o, _ := q.Options(); err != nil || o.Filter != All || o.JSON {
		t.Errorf("%+v, %v", o, err)
	}
}

// TestServeRequest: a request an admin socket parsed itself is checked
// again and refused with an error line.
func TestServeRequest(t *testing.T) {
	r := testRing(8)
	srv, cli := net.Pipe()
	vf := -5
	done := make(chan error, 1)
	go func() { done <- ServeRequest(context.Background(), srv, r, Request{VF: &vf}) }()
	l, _ := bufio.NewReader(cli).ReadString('\n')
	if !strings.HasPrefix(l, "# error: trace: bad request: vf -5") {
		t.Errorf("answered %q", l)
	}
	if err := <-done; !errors.Is(err, ErrRequest) {
		t.Errorf("ServeRequest: %v", err)
	}
	cli.Close()
}
