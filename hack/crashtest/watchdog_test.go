package crashtest

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/hack/testenv/sdnotify"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// TestWatchdogStarvedByAStuckPoller: vhcrd under a service manager with a
// watchdog feeds it while it serves; when its poller stops scanning (stalled
// at the reset-acked point, the rest of the process alive: the metrics
// listener and admin socket still answer), it stops feeding it and says so.
func TestWatchdogStarvedByAStuckPoller(t *testing.T) {
	if !hasHook {
		t.Skip("vhcrd without the crashpoint hook")
	}
	dir := t.TempDir()
	m := sdnotify.New(t)
	m.SetWatchdog(400 * time.Millisecond)
	cmd := m.Command(vhcrdBin, serveArgs(dir, nil)...)
	cmd.Env = append(cmd.Env, crashEnv+"=reset-acked", "VHCRD_CRASHPOINT_ACTION=stall")
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := m.Start(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); pw.Close(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	var mu sync.Mutex
	var log strings.Builder
	stalled := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !once && strings.Contains(sc.Text(), "poller has stopped scanning") {
				once = true
				close(stalled)
			}
		}
	}()
	m.WaitFor("READY", "1")
	m.WaitFor("WATCHDOG", "1") // fed while the poller scans
	a, err := vfclient.AttachFile(filepath.Join(dir, "bar"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v, err := a.VF(0)
	if err != nil {
		t.Fatal(err)
	}
	// RESET is acknowledged, then the poller stalls: the VF's VHCR0 is
	// never answered.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	initDone := make(chan struct{})
	go func() { defer close(initDone); _ = v.Init(ctx) }()
	defer func() { cancel(); <-initDone }() // before a.Close unmaps the regions
	select {
	case <-stalled:
	case <-exited:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("vhcrd exited:\n%s", log.String())
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no stall reported:\n%s", log.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(log.String(), "msg=watchdog") {
		t.Errorf("no watchdog line:\n%s", log.String())
	}
}
