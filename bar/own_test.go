package bar_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
)

// ownHelperEnv makes the test binary a process that claims a file, says so
// on stdout and holds the claim until killed.
const ownHelperEnv = "BAR_TEST_OWN_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(ownHelperEnv); path != "" {
		o, err := bar.Own(path)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("owned")
		_, _ = os.Stdin.Read(make([]byte, 1)) // until the parent kills us or closes stdin
		_ = o.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestOwnRefusesASecondClaimInTheSameProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bar")
	if err := os.WriteFile(path, make([]byte, bar.PageSize), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := bar.Own(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bar.Own(path); !errors.Is(err, bar.ErrOwned) {
		t.Fatalf("second claim: %v, want ErrOwned", err)
	} else if want := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("second claim: %q does not name the holder (%s)", err, want)
	}
	// Mapping, opening and closing the file elsewhere does not drop the claim.
	f, err := bar.OpenFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if _, err := bar.Own(path); !errors.Is(err, bar.ErrOwned) {
		t.Fatalf("claim after another open/close: %v, want ErrOwned", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	b, err := bar.Own(path)
	if err != nil {
		t.Fatalf("claim after Release: %v", err)
	}
	_ = b.Release()
}

func TestOwnIsReleasedWhenTheHolderIsKilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bar")
	if err := os.WriteFile(path, make([]byte, bar.PageSize), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ownHelperEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "owned\n" {
		_ = cmd.Process.Kill()
		t.Fatalf("helper: %q, %v", line, err)
	}
	probe, err := bar.NewProbe(path)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if err := probe.Owned(); err != nil {
		t.Fatalf("probe while another process holds the claim: %v", err)
	}
	_, err = bar.Own(path)
	if !errors.Is(err, bar.ErrOwned) {
		t.Fatalf("claim while another process holds it: %v, want ErrOwned", err)
	}
	if want := fmt.Sprintf("pid %d", cmd.Process.Pid); !strings.Contains(err.Error(), want) {
		t.Errorf("%q does not name the holder (%s)", err, want)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // the kernel has closed the dead process's descriptors
	if err := probe.Owned(); !errors.Is(err, bar.ErrUnowned) {
		t.Fatalf("probe after the holder was killed: %v, want ErrUnowned", err)
	}
	o, err := bar.Own(path)
	if err != nil {
		t.Fatalf("claim after the holder was killed: %v", err)
	}
	_ = o.Release()
}

func TestOwnCreatesAMissingFileAndRefusesADirectory(t *testing.T) {
	dir := t.TempDir()
	o, err := bar.Own(filepath.Join(dir, "new"))
	if err != nil {
		t.Fatalf("Own(absent): %v", err)
	}
	_ = o.Release()
	if st, err := os.Stat(filepath.Join(dir, "new")); err != nil || st.Size() != 0 {
		t.Fatalf("Own did not leave an empty file: %v", err)
	}
	if _, err := bar.Own(filepath.Join(dir, "missing", "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Own in a missing directory: %v, want ErrNotExist", err)
	}
}

// A probe takes nothing: a claim succeeds while a probe is open (and has
// just tested the file), the probe sees a claim of this process made through
// another descriptor, and closing the probe does not drop it.
func TestProbeTakesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bar")
	if err := os.WriteFile(path, make([]byte, bar.PageSize), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := bar.NewProbe(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Owned(); !errors.Is(err, bar.ErrUnowned) {
		t.Fatalf("probe of an unclaimed file: %v, want ErrUnowned", err)
	}
	o, err := bar.Own(path)
	if err != nil {
		t.Fatalf("claim beside an open probe: %v", err)
	}
	if err := p.Owned(); err != nil {
		t.Fatalf("probe of a claimed file: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := bar.Own(path); !errors.Is(err, bar.ErrOwned) {
		t.Fatalf("claim after the probe closed: %v, want ErrOwned (the first claim holds)", err)
	}
	_ = o.Release()
	p2, err := bar.NewProbe(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if err := p2.Owned(); !errors.Is(err, bar.ErrUnowned) {
		t.Fatalf("probe after Release: %v, want ErrUnowned", err)
	}
}

func TestOwnNewReportsCreation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bar")
	o, created, err := bar.OwnNew(path)
	if err != nil || !created {
		t.Fatalf("OwnNew(absent) = created %v, %v", created, err)
	}
	_ = o.Release()
	o, created, err = bar.OwnNew(path)
	if err != nil || created {
		t.Fatalf("OwnNew(present) = created %v, %v", created, err)
	}
	_ = o.Release()
}
