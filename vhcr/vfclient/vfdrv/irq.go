package vfdrv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/irq"
)

// irqSlice bounds one sleep on the eventfd, so that a cancelled context is
// seen within it. It is not a poll interval: an interrupt ends the sleep.
const irqSlice = 20 * time.Millisecond

// rawFD returns f's descriptor without switching it to blocking mode
// (os.File.Fd would).
func rawFD(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return -1, err
	}
	return fd, nil
}

// idle waits for the next EQE: the waiter's spin, then, with an IRQ
// eventfd, a sleep on it. The EQ is armed whenever the driver waits: the
// context arms it at SW2HW_EQ and pump re-arms it (doorbell bit 31) after
// every EQE it consumes, so an EQE posted after the last pump raises the
// vector, and one raised before the sleep is still counted in the eventfd.
func (d *Driver) idle(ctx context.Context, w *waiter) error {
	if d.irq < 0 || w.n < spinWaits {
		return w.wait(ctx, d.VF.Timeouts.Post)
	}
	if w.start.IsZero() {
		w.start = time.Now()
	}
	left := d.VF.Timeouts.Post - time.Since(w.start)
	if left <= 0 {
		return ErrCompletionTimeout
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	n, err := irq.Wait(d.irq, min(left, irqSlice))
	switch {
	case err == nil:
		if n > 0 {
			d.Stats.Interrupts++
		}
	case errors.Is(err, irq.ErrTimeout):
	default:
		return fmt.Errorf("IRQ: %w", err)
	}
	return nil
}
