package main

// A PF that stops or dies, seen by the VF side: SIGHUP stops vhcrd as
// SIGTERM does; a SIGKILLed PF is reported dead by vfctl and vhcrd vf at
// once; a PF that holds the claim and is starting is waited for.

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// pfState reads PF_STATE from the control file at path.
func pfState(t *testing.T, path string) uint32 {
	t.Helper()
	f, err := bar.OpenFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := f.Load32(wire.HdrPFState)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// SIGHUP (the terminal of `make run` closed) is an orderly stop, as SIGTERM
// is: exit 0, the header STOPPED, the admin socket removed, the claim
// given up.
func TestHangupStopsAsTerminateDoes(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := shmDir(t)
			barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
			d := startDaemon(t, barPath, dmaPath)
			if err := d.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := <-d.exited; err != nil {
				t.Fatalf("vhcrd after %v: %v\n%s", sig, err, d.stderr)
			}
			if st := pfState(t, barPath); st != wire.PFStateStopped {
				t.Errorf("PF_STATE after %v: %s, want stopped", sig, vfclient.PFStateName(st))
			}
			if _, err := os.Stat(barPath + ".sock"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("admin socket after %v: %v, want removed", sig, err)
			}
			if err := vfclient.CheckPF(barPath); !errors.Is(err, vfclient.ErrNoPF) {
				t.Errorf("CheckPF after %v: %v, want ErrNoPF (stopped)", sig, err)
			}
		})
	}
}

// A SIGKILLed PF leaves SERVING in the header and its admin socket behind;
// vfctl and vhcrd vf tell from the free owner claim that it is dead and say
// so at once (not after --timeout: the error is not a deadline); so does
// vhcrd trace.
func TestKilledPFIsReportedDead(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)
	if out, code := vfctl(t, barPath, "cmd", "--vf", "3", "NOP"); code != 0 {
		t.Fatalf("NOP: exit %d\n%s", code, out)
	}
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	out, code := vfctl(t, barPath, "cmd", "--vf", "3", "NOP", "--timeout", "60s")
	if code != 1 || !strings.Contains(out, "the PF is dead") || !strings.Contains(out, "PF_STATE still says serving") || strings.Contains(out, "deadline") {
		t.Fatalf("vfctl cmd against a killed PF: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"vf", "list", "--bar", "file:" + barPath}, {"vf", "flr", "1", "--bar", "file:" + barPath}, {"trace", "--bar", "file:" + barPath}} {
		out, code := vhcrdCmd(t, args...)
		if code != 1 || !strings.Contains(out, "the PF is dead") {
			t.Errorf("vhcrd %v against a killed PF: exit %d\n%s", args, code, out)
		}
	}
	out, code = vfctl(t, barPath, "flr", "--vf", "1")
	if code != 1 || !strings.Contains(out, "the PF is dead") {
		t.Errorf("vfctl flr against a killed PF: exit %d\n%s", code, out)
	}
}

// A process that holds the claim while the header is not SERVING is a PF
// starting: vfctl waits for it (here until its --timeout) and says so,
// where a stopped PF without a holder is refused at once.
func TestStartingPFIsWaitedFor(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)
	if err := d.stop(t); err != nil {
		t.Fatal(err)
	}
	out, code := vfctl(t, barPath, "cmd", "--vf", "0", "NOP", "--timeout", "10m")
	if code != 1 || !strings.Contains(out, "no PF is serving the region: PF_STATE stopped") {
		t.Fatalf("vfctl against a stopped PF: exit %d\n%s", code, out)
	}
	o, err := bar.Own(barPath) // as a starting PF holds it
	if err != nil {
		t.Fatal(err)
	}
	defer o.Release()
	out, code = vfctl(t, barPath, "cmd", "--vf", "0", "NOP", "--timeout", "200ms")
	if code != 1 || !strings.Contains(out, "context deadline exceeded while the PF holding") || !strings.Contains(out, "was starting") {
		t.Fatalf("vfctl against a starting PF: exit %d\n%s", code, out)
	}
}
