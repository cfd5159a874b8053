package main

// The admin socket's vf.irq: {"cmd":"vf.irq","vf":N} is answered with one
// JSON line, {"vf":N,"vectors":K}, carrying VF N's K MSI-X eventfds as
// SCM_RIGHTS, in vector order. The receiver gets its own descriptors (the
// daemon keeps raising the same eventfds) and reads interrupts from them:
// vfctl --irq waits for its completions on vector 0. Every holder of a
// vector's eventfd reads from the same counter, so whoever reads first
// takes an interrupt (QEMU, when vhcrd serves a guest, and a tool).

import (
	"context"
	"encoding/json"
	"fmt"
	"net"

	"github.com/vhcrd/vhcrd/vhcr/irq"
)

func init() { adminHandlers["vf.irq"] = serveVFIRQ }

// vfIRQAnswer is vf.irq's answer line.
type vfIRQAnswer struct {
	VF      int `json:"vf"`
	Vectors int `json:"vectors"`
}

func serveVFIRQ(_ context.Context, a *adminServer, conn net.Conn, q *adminRequest) error {
	defer conn.Close()
	fail := func(err error) error {
		fmt.Fprintf(conn, "# error: %v\n", err)
		return err
	}
	if q.VF == nil {
		return fail(fmt.Errorf("%w: vf.irq needs vf", errAdminRequest))
	}
	if a.irq == nil {
		return fail(fmt.Errorf("%w: no MSI-X vectors are served", errAdminRequest))
	}
	v := a.irq.VF(*q.VF)
	if v == nil {
		return fail(fmt.Errorf("%w: no VF %d (%d VFs)", errAdminRequest, *q.VF, a.irq.NumVFs()))
	}
	fds := v.FDs()
	if len(fds) == 0 {
		return fail(fmt.Errorf("VF %d: %w", *q.VF, irq.ErrClosed))
	}
	line, err := json.Marshal(vfIRQAnswer{VF: *q.VF, Vectors: len(fds)})
	if err != nil {
		return fail(err)
	}
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return fail(fmt.Errorf("%w: vf.irq needs a unix socket", errAdminRequest))
	}
	return irq.SendFDs(uc, append(line, '\n'), fds...)
}
