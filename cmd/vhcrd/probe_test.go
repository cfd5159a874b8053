package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/bar/pci/pcitest"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// probeGet answers GET path from the metrics listener's mux, in this
// goroutine.
func probeGet(s *server, path string) (int, string) {
	rec := httptest.NewRecorder()
	s.mux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// /healthz and /readyz say what they claim: before the poller starts the
// process is live and not ready; serving, both answer 200; a poller stuck
// in a request (it scans no more) fails both; after the stop both fail.
func TestHealthAndReadiness(t *testing.T) {
	dir := shmDir(t)
	f := serveFlags{bar: "file:" + filepath.Join(dir, "bar"), dma: "file:" + filepath.Join(dir, "dma"), vfs: 2,
		vfBARs: vfSpecs{}, guests: vfSpecs{}, vectors: 8}
	s, err := openServer(f, config.Default(), 64<<10, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.probeWait = time.Minute // a live poller answers long before; only a stuck one waits it out
	check := func(when string, wantHealth, wantReady int, body string) {
		t.Helper()
		for path, want := range map[string]int{"/healthz": wantHealth, "/readyz": wantReady} {
			code, out := probeGet(s, path)
			if code != want {
				t.Errorf("%s: GET %s: %d %q, want %d", when, path, code, out, want)
			}
			if want != 200 && !strings.Contains(out, body) {
				t.Errorf("%s: GET %s: %q does not say %q", when, path, out, body)
			}
		}
	}
	check("before the poller starts", 200, 503, "PF_STATE starting")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.pf.Run(ctx) }()
	until(t, "the PF serving", func() bool { return s.pf.PFState() == wire.PFStateServing })
	check("serving", 200, 200, "")

	entered, release := make(chan struct{}), make(chan struct{})
	go func() { _ = s.pf.Do(func() { close(entered); <-release }) }()
	<-entered
	s.probeWait = 50 * time.Millisecond
	check("the poller stuck in a request", 503, 503, "the poller did not answer within 50ms")
	close(release)
	s.probeWait = time.Minute
	check("the poller free again", 200, 200, "")

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	check("stopped", 503, 503, "PF_STATE stopped")
}

// sysfsPF adds a PCI device with a 1 MiB BAR 2 (a regular file) to tr and
// returns the serve flags of a PF with 2 VFs on it: the control region is
// the device's BAR, the DMA region and the VF BAR regions files in dir.
func sysfsPF(tr *pcitest.Tree, addr, dir string) serveFlags {
	tr.Add(pcitest.Dev{Addr: addr, Vendor: 0x15b3, Device: 0x1003, Group: 1,
		BARs: []pcitest.BAR{{Index: 2, Size: 1 << 20, File: true}}})
	return serveFlags{bar: "sysfs:" + addr + "#resource2", dma: "file:" + filepath.Join(dir, "dma"), vfs: 2, vectors: 8, guests: vfSpecs{},
		vfBARs: vfSpecs{0: "file:" + filepath.Join(dir, "vf0"), 1: "file:" + filepath.Join(dir, "vf1")}}
}

// A device BAR (sysfs:, vfio:) has a PF state file by default, in
// vfclient.RunDir and named after the device, so two PFs on one host have two;
// it is claimed as a file BAR's regions are: a second vhcrd on the same
// device is refused before it touches the first one's state. --pfstate off
// still means none, and --pfstate PATH is claimed too.
func TestDeviceBARStateFile(t *testing.T) {
	for spec, want := range map[string]string{
		"vfio:0000:03:00.0#region2":    "/run/vhcrd/vfio-0000:03:00.0-2.pfstate",
		"vfio:0000:03:00.0":            "/run/vhcrd/vfio-0000:03:00.0.pfstate",
		"sysfs:0000:03:00.1#resource2": "/run/vhcrd/sysfs-0000:03:00.1-2.pfstate",
		"file:/dev/shm/x":              "/dev/shm/x.pfstate",
	} {
		sp, err := bar.ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := stateFilePath("", sp, vfclient.RunDir); got != want {
			t.Errorf("--bar %s: state file %q, want %q", spec, got, want)
		}
		if got := stateFilePath("off", sp, vfclient.RunDir); got != "" {
			t.Errorf("--bar %s --pfstate off: state file %q", spec, got)
		}
	}

	tr := pcitest.New(t)
	defer func(old, oldRun string) { sysfsRoot, runDir = old, oldRun }(sysfsRoot, runDir)
	sysfsRoot = tr.Root
	runDir = filepath.Join(t.TempDir(), "run", "vhcrd") // created by serve
	open := func(f serveFlags) (*server, string, error) {
		var logs bytes.Buffer
		s, err := openServer(f, config.Default(), 64<<10, slog.New(slog.NewTextHandler(&logs, nil)))
		return s, logs.String(), err
	}
	a := sysfsPF(tr, "0000:00:01.0", t.TempDir())
	s, logs, err := open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if strings.Contains(logs, "no PF state file") {
		t.Errorf("a device BAR served without a state file:\n%s", logs)
	}
	path := filepath.Join(runDir, "sysfs-0000:00:01.0-2.pfstate")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("device BAR: %v", err)
	}
	if want := master.StateFileSize(s.pf.Layout(), s.hca.Res.Config().EQsPerVF); st.Size() != want {
		t.Errorf("%s: %d bytes, want %d", path, st.Size(), want)
	}

	// The same device, other VF BAR files: only the state file's claim
	// stands between the two (a sysfs BAR maps in any number of processes).
	again := sysfsPF(tr, "0000:00:01.0", t.TempDir())
	if s2, _, err := open(again); err == nil || !errors.Is(err, bar.ErrOwned) || !strings.Contains(err.Error(), path) {
		if s2 != nil {
			s2.close()
		}
		t.Fatalf("a second PF on the same device: %v, want refused on the claim of %s", err, path)
	}
	// Another device on the same host: its own file.
	other, _, err := open(sysfsPF(tr, "0000:00:02.0", t.TempDir()))
	if err != nil {
		t.Fatalf("a PF on another device: %v", err)
	}
	if _, err := os.Stat(filepath.Join(runDir, "sysfs-0000:00:02.0-2.pfstate")); err != nil {
		t.Errorf("the second device's state file: %v", err)
	}
	other.close()

	// --pfstate PATH is claimed as well: two PFs on two devices given one
	// state file are refused.
	shared := filepath.Join(t.TempDir(), "shared.pfstate")
	b := sysfsPF(tr, "0000:00:03.0", t.TempDir())
	b.pfstate = shared
	sb, _, err := open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.close()
	c := sysfsPF(tr, "0000:00:04.0", t.TempDir())
	c.pfstate = shared
	if sc, _, err := open(c); !errors.Is(err, bar.ErrOwned) {
		if sc != nil {
			sc.close()
		}
		t.Errorf("two PFs on one --pfstate file: %v, want refused", err)
	}

	off := sysfsPF(tr, "0000:00:05.0", t.TempDir())
	off.pfstate = "off"
	so, logs, err := open(off)
	if err != nil {
		t.Fatal(err)
	}
	so.close()
	if !strings.Contains(logs, "no PF state file (--pfstate off)") {
		t.Errorf("--pfstate off: no warning:\n%s", logs)
	}
	if _, err := os.Stat(filepath.Join(runDir, "sysfs-0000:00:05.0-2.pfstate")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--pfstate off made a state file: %v", err)
	}
}
