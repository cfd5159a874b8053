package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/hack/vmtest"
)

// faultPingpong is the data-path point of a fault round (vmtest's
// faults_dp.go): port 1 ACTIVE, then fp's pingpong with both ends on this
// VF, killed at fp's bound; each end's outcome, the kernel's driver lines
// of the run and the verdict on "vmtest: fault: pingpong:" lines.
func (g *guest) faultPingpong(fp *vmtest.FaultPingpong) {
	if g.driver() != "mlx4_core" {
		say("fault: pingpong: not bound")
		say("%sfailed", strings.TrimPrefix(vmtest.FaultPingpongDone, "vmtest: "))
		return
	}
	done := func(verdict string) { say("%s%s", strings.TrimPrefix(vmtest.FaultPingpongDone, "vmtest: "), verdict) }
	if err := waitActive(1); err != nil {
		say("fault: pingpong: %v", err)
		done("failed")
		return
	}
	if _, err := os.Stat("/dev/infiniband/uverbs0"); err != nil {
		say("fault: pingpong: %v", err)
		done("failed")
		return
	}
	k, err := openKmsg()
	if err != nil {
		say("fault: pingpong: %v", err)
	}
	limit := time.Duration(fp.LimitMS) * time.Millisecond
	pp := fp.Pingpong
	pp.Name = vmtest.FaultPingpongTool
	tr, err := startTransfer(pp, fp.Iters, limit)
	if err != nil {
		say("fault: pingpong: %v", err)
		g.kernelLines(k)
		done("failed")
		return
	}
	for _, r := range tr.ends {
		<-r.done
	}
	tr.cancel()
	verdict := "ok"
	for _, r := range tr.ends {
		end := strings.TrimPrefix(r.name, pp.Name+" ")
		prefix := strings.TrimPrefix(vmtest.FaultPingpongEnd, "vmtest: ") + end + ": "
		switch {
		case r.hung:
			say("%s%s%v bound after %v, last lines: %s", prefix, vmtest.FaultPingpongHung, limit, r.took.Round(time.Millisecond), strings.Join(r.last, " | "))
			verdict = "hung"
		default:
			say("%s%s in %v", prefix, exitText(r.err), r.took.Round(time.Millisecond))
			if r.err != nil && verdict == "ok" {
				verdict = "failed"
			}
		}
	}
	g.kernelLines(k)
	done(verdict)
}

// kernelLines reports the kernel's records since k was opened that are
// mlx4_core's, mlx4_ib's, ib_core's or ib_uverbs', and closes k.
func (g *guest) kernelLines(k *kmsg) {
	if k == nil {
		return
	}
	defer k.Close()
	buf := make([]byte, 8192)
	fd := int(k.f.Fd())
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EPIPE) { // overwritten records: read on
			continue
		}
		if err != nil {
			return // EAGAIN: no more
		}
		_, text, _ := strings.Cut(string(buf[:n]), ";")
		text, _, _ = strings.Cut(text, "\n")
		for _, w := range []string{"mlx4", "infiniband", "uverbs", "ib_"} {
			if strings.Contains(text, w) {
				say("%s%s", strings.TrimPrefix(vmtest.FaultPingpongDmesg, "vmtest: "), text)
				break
			}
		}
	}
}

// faultsNeedLo brings lo up for the rounds' pingpongs (their TCP exchange
// of addresses goes to 127.0.0.1), if a round has one.
func (g *guest) faultsNeedLo() {
	for _, c := range g.cfg.Faults {
		if c.Pingpong != nil {
			if err := ifUp("lo", nil, 0); err != nil {
				say("fault: pingpong: %v", fmt.Errorf("lo: %w", err))
			}
			return
		}
	}
}
