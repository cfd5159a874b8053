package main

import (
	"bufio"
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPingPongAcrossProcesses: vfctl pingpong and bw with one end per
// process, as ibv_rc_pingpong and ib_write_bw run on two hosts: a vhcrd
// process serves four VFs, a vfctl server on VF 0 listens (on a port the
// system picks, named on its stderr) and a vfctl client on VF 1 connects
// to it; both print ibv_rc_pingpong's lines, and vhcrd's /metrics counts
// each VF's WQEs and CQEs.
func TestPingPongAcrossProcesses(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath, "--window", "2M")
	const iters = "200"
	// A server SIGKILLed while it waits leaves VF 0 with its EQ, CQ, QP
	// and MR; the next vfctl on VF 0 starts with RESET, as a driver's
	// load does (mlx4_init_slave), and the PF releases them.
	killed := startPPServer(t, barPath, []string{"pingpong"})
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-killed.done
	for _, c := range []struct {
		name string
		args []string
		want []*regexp.Regexp // in each end's output
	}{
		{"rc", []string{"pingpong", "-n", iters, "-s", "1024", "-r", "64", "-c"}, []*regexp.Regexp{
			regexp.MustCompile(`local address:  LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}`),
			regexp.MustCompile(`409600 bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec`),
			regexp.MustCompile(iters + ` iters in [0-9.]+ seconds = [0-9.]+ usec/iter`)}},
		{"ud", []string{"pingpong", "--ud", "-n", iters, "-s", "512", "-r", "64", "-c"}, []*regexp.Regexp{
			regexp.MustCompile(`204800 bytes in [0-9.]+ seconds`)}},
		{"bw", []string{"bw", "-n", "500", "-s", "8192", "-t", "16", "-Q", "8"}, []*regexp.Regexp{
			regexp.MustCompile(`remote address: LID 0x[0-9a-f]{4}`)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := startPPServer(t, barPath, c.args)
			sout, serr, port, done := &srv.out, &srv.err, srv.port, srv.done
			out, code := vfctl(t, barPath, append(c.args, "--vf", "1", "--port", port, "127.0.0.1")...)
			if err := <-done; err != nil || code != 0 {
				t.Fatalf("server: %v, client exit %d\nclient:\n%s\nserver:\n%s%s", err, code, out, sout.String(), serr.String())
			}
			for _, re := range c.want {
				if !re.MatchString(out) {
					t.Errorf("client output lacks %s:\n%s", re, out)
				}
				if c.name != "bw" && !re.MatchString(sout.String()) {
					t.Errorf("server output lacks %s:\n%s", re, sout.String())
				}
			}
			if c.name == "bw" && !strings.Contains(sout.String(), "RDMA_Write BW: server done") {
				t.Errorf("bw server:\n%s", sout.String())
			}
			t.Logf("client:\n%s", out)
		})
	}
	// 200 + 200 sends of the ping-pongs and 500 RDMA_WRITEs from VF 1, the
	// ping-pongs' sends from VF 0; each VF's receives and sends completed.
	for _, vf := range []string{"0", "1"} {
		if n := metricValue(t, d.metrics, "vhcrd_wqes_total", `vf="`+vf+`"`); n < 400 {
			t.Errorf("vhcrd_wqes_total{vf=%q} = %d, want at least 400", vf, n)
		}
		if n := metricValue(t, d.metrics, "vhcrd_cqes_total", `vf="`+vf+`"`); n < 800 {
			t.Errorf("vhcrd_cqes_total{vf=%q} = %d, want at least 800", vf, n)
		}
	}
	if n := metricValue(t, d.metrics, "vhcrd_error_cqes_total", `vf="`); n != -1 {
		t.Errorf("vhcrd_error_cqes_total: %d, want no series", n)
	}
}

// ppServer is a vfctl server end on VF 0 (pingpong or bw) listening on a
// port the system picked.
type ppServer struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	err  strings.Builder
	port string
	done chan error
}

// startPPServer starts vfctl ARGS as the server on VF 0 and waits until
// it names its port.
func startPPServer(t *testing.T, barPath string, args []string) *ppServer {
	t.Helper()
	s := &ppServer{done: make(chan error, 1)}
	s.cmd = exec.Command(filepath.Join(binDir, "vfctl"), append(args, "--bar", "file:"+barPath, "--vf", "0", "--port", "0")...)
	s.cmd.Stdout = &s.out
	pr, pw := io.Pipe()
	s.cmd.Stderr = pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait(); pw.Close() }()
	sc := bufio.NewScanner(pr)
	for s.port == "" && sc.Scan() {
		s.err.WriteString(sc.Text() + "\n")
		if m := regexp.MustCompile(`waiting for the client on port (\d+)`).FindStringSubmatch(sc.Text()); m != nil {
			s.port = m[1]
		}
	}
	go io.Copy(io.Discard, pr)
	if s.port == "" {
		<-s.done
		t.Fatalf("the server did not listen:\n%s%s", s.out.String(), s.err.String())
	}
	return s
}
