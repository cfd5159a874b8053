package main

// What a PF leaves behind: a failed start nothing, a stopped PF its files
// until `vhcrd clean` (refused while one serves), a changed VF count one
// line that says so.

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirNames lists dir's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// A start that fails leaves no file it created: the metrics port in use
// fails before any region is claimed, an admin socket that cannot be made
// after the claims (the claimed files go), a --trace that cannot be
// written after the regions are made (they go too). A failed restart over a
// PF's files keeps them: they are its state.
func TestFailedStartLeavesNoFiles(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"metrics port in use", []string{"--metrics-addr", taken}, "address already in use"},
		{"admin socket cannot be made", []string{"--metrics-addr", "127.0.0.1:0", "--admin-socket", "/proc/vhcrd-test/admin.sock"}, "admin socket"},
		{"trace file not writable", []string{"--metrics-addr", "127.0.0.1:0", "--trace", "/nonexistent/dir/trace"}, "--trace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := shmDir(t)
			args := append([]string{"serve", "--bar", "file:" + filepath.Join(dir, "bar"), "--dma", "file:" + filepath.Join(dir, "dma"), "--num-vfs", "4", "--window", "256K"}, c.args...)
			out, code := vhcrdCmd(t, args...)
			if code != 1 || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, want 1 with %q\n%s", code, c.want, out)
			}
			if names := dirNames(t, dir); len(names) != 0 {
				t.Fatalf("a failed start left %v\n%s", names, out)
			}
		})
	}
	t.Run("restart over a killed PF's files", func(t *testing.T) {
		dir := shmDir(t)
		barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
		d := startDaemon(t, barPath, dmaPath)
		_ = d.cmd.Process.Kill()
		<-d.exited
		before := dirNames(t, dir)
		out, code := vhcrdCmd(t, "serve", "--bar", "file:"+barPath, "--dma", "file:"+dmaPath, "--num-vfs", "4", "--window", "256K", "--metrics-addr", taken)
		if code != 1 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if after := dirNames(t, dir); strings.Join(after, " ") != strings.Join(before, " ") {
			t.Fatalf("files before the failed restart %v, after %v", before, after)
		}
	})
}

// vhcrd clean refuses while a PF serves (nothing removed) and, once it has
// stopped, removes every file it and an earlier PF with more VFs left.
func TestCleanRefusesWhileServingAndRemovesAfter(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath, "--num-vfs", "6")
	if err := d.stop(t); err != nil {
		t.Fatal(err)
	}
	d = startDaemon(t, barPath, dmaPath) // 4 VFs: bar.vf4 and bar.vf5 are stale
	before := dirNames(t, dir)
	for _, want := range []string{"bar", "bar.pfstate", "bar.sock", "bar.vf5", "dma"} {
		if !strings.Contains(" "+strings.Join(before, " ")+" ", " "+want+" ") {
			t.Fatalf("no %s among %v", want, before)
		}
	}
	out, code := vhcrdCmd(t, "clean", "--bar", "file:"+barPath)
	if code != 1 || !strings.Contains(out, "a PF serves these regions, nothing removed") || !strings.Contains(out, "pid ") {
		t.Fatalf("clean while serving: exit %d\n%s", code, out)
	}
	if after := dirNames(t, dir); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("clean while serving removed files: before %v, after %v", before, after)
	}
	if err := d.stop(t); err != nil {
		t.Fatal(err)
	}
	out, code = vhcrdCmd(t, "clean", "--bar", "file:"+barPath)
	if code != 0 || !strings.Contains(out, "removed "+filepath.Join(dir, "bar.vf5")) || !strings.Contains(out, "removed "+dmaPath) {
		t.Fatalf("clean after the stop: exit %d\n%s", code, out)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("clean left %v\n%s", names, out)
	}
	if out, code := vhcrdCmd(t, "clean", "--bar", "file:"+barPath); code != 0 || !strings.Contains(out, "nothing to remove") {
		t.Fatalf("clean of nothing: exit %d\n%s", code, out)
	}
}

// A restart with another --num-vfs says so in one line, not as a state
// file or saved channels not trusted.
func TestVFCountChangeIsOneLine(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)
	if out, code := vfctl(t, barPath, "init", "--vf", "1"); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	if err := d.stop(t); err != nil {
		t.Fatal(err)
	}
	d = startDaemon(t, barPath, dmaPath, "--num-vfs", "2")
	log := d.stderr.String()
	if strings.Contains(log, "not trusted") {
		t.Fatalf("a changed VF count reported as distrust:\n%s", log)
	}
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "VF count changed") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "VF count changed from 4 to 2") || !strings.Contains(lines[0], "vfs=[1]") {
		t.Fatalf("want one line explaining the change (VF 1 reset):\n%s", log)
	}
}
