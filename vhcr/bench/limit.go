package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// The two limits vhcrd's NOP is set against. Both are bare responder
// processes that serve vhcrd's own layout (wire contract v2: a control
// region, a separate DMA file, VF 0's BAR region in a file of its own,
// each mapped by the responder as vhcrd maps them) and answer the comm
// channel's bring-up, so that the VF side of every figure is the same
// vfclient.VF (Init, then Post of a NOP) talking to a separate process over
// the same regions; only the responder differs.
const (
	// LimitToggle answers a VHCR_POST by loading slave_write and toggling
	// slave_read: the cache-line round trip between the two processes,
	// nothing of the command read. The VF finds the status it wrote (OK).
	LimitToggle = "toggle"
	// LimitMinimum does the protocol's minimum for a NOP: it loads
	// slave_write, reads the 32-byte vHCR from the VF's DMA window at the
	// address VHCR0..VHCR_EN gave, writes the vHCR's status word (OK for a
	// NOP, BAD_PARAM otherwise, with the VF's flags and opcode kept as
	// vhcrd writes it) and toggles slave_read.
	LimitMinimum = "minimum"
)

// limitWindow is the DMA window of the limits' one VF: what vfctl bench
// gives vhcrd (--window 64K).
const limitWindow = 64 << 10

// limitPeer is a running limit responder and VF 0 attached to it.
type limitPeer struct {
	cmd *exec.Cmd
	dir string
	att *vfclient.Attachment
	vf  *vfclient.VF
}

// startLimit starts a limit responder of mode for posts VHCR_POSTs in a
// directory of its own under o.Dir, attaches to it as to a vhcrd and
// brings VF 0 up.
func startLimit(ctx context.Context, o Options, mode string, posts int) (*limitPeer, error) {
	dir, err := os.MkdirTemp(o.Dir, "vhcrbench-limit-")
	if err != nil {
		return nil, err
	}
	p := &limitPeer{dir: dir}
	ctrl := filepath.Join(dir, "bar")
	p.cmd = exec.CommandContext(ctx, o.Self, o.PeerArg, "limit", mode, ctrl, strconv.Itoa(posts))
	p.cmd.Stderr = os.Stderr
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if p.att, err = attachServing(ctrl, p.cmd); err != nil {
		p.close()
		return nil, fmt.Errorf("%s responder: %w", mode, err)
	}
	if p.vf, err = p.att.VF(0); err == nil {
		err = p.vf.Init(ctx)
	}
	if err != nil {
		p.close()
		return nil, fmt.Errorf("%s responder: %w", mode, err)
	}
	return p, nil
}

// attachServing attaches to the control region at path once the process
// serving it says it serves.
func attachServing(path string, cmd *exec.Cmd) (*vfclient.Attachment, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := vfclient.AttachFile(path)
		if err == nil && a.PFState() == wire.PFStateServing {
			return a, nil
		}
		if a != nil {
			a.Close()
		}
		if exited(cmd) {
			return nil, fmt.Errorf("%w before it served (%v)", errPeerExited, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("did not start serving: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// errPeerExited is attachServing's error for a process that ended first.
var errPeerExited = errors.New("the process exited")

// exited reports whether cmd's process has ended, without reaping it
// (WNOWAIT), so that the caller's cmd.Wait still collects it and its exit
// status. (cmd.ProcessState is set only by Wait.)
func exited(cmd *exec.Cmd) bool {
	if cmd.Process == nil {
		return true
	}
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != nil || info.Signo != 0
}

func (p *limitPeer) round(ctx context.Context, iters int) ([]float64, error) {
	return nopRound(ctx, p.vf, iters)
}

// close waits for the responder, which exits after its posts (or is
// killed if it cannot have them), and removes its files.
func (p *limitPeer) close() error {
	if p.att != nil {
		p.att.Close()
	}
	err := p.cmd.Wait()
	os.RemoveAll(p.dir)
	return err
}

// limit is the responder process: it creates vhcrd's regions for one VF at
// ctrl (the DMA file ctrl.dma, VF 0's BAR region wire.VFBARPath), says it
// serves, answers the comm channel until it has answered posts VHCR_POSTs
// the way mode says, and returns.
func limit(mode, ctrl string, posts int) error {
	if mode != LimitToggle && mode != LimitMinimum {
		return fmt.Errorf("bench-peer limit: mode %q, want %s or %s", mode, LimitToggle, LimitMinimum)
	}
	runtime.LockOSThread()
	l, err := wire.NewLayout(1, limitWindow, false, 0, 0, ctrl+".dma")
	if err != nil {
		return err
	}
	var regions []*bar.File
	defer func() {
		for _, r := range regions {
			r.Close()
		}
	}()
	create := func(path string, size int64, lazy bool) (*bar.File, error) {
		f, _, err := bar.CreateFile(path, size)
		if lazy {
			f, _, err = bar.CreateFileLazy(path, size)
		}
		if err == nil {
			regions = append(regions, f)
		}
		return f, err
	}
	c, err := create(ctrl, l.ControlSize(), false)
	if err != nil {
		return err
	}
	d, err := create(l.DMAPath, l.DMASize, false)
	if err != nil {
		return err
	}
	vb, err := create(wire.VFBARPath(ctrl, 0), l.VFBARSize, true)
	if err != nil {
		return err
	}
	space, err := dma.NewSpace(d, l.DMABase, l.Window, l.NumVFs)
	if err != nil {
		return err
	}
	win, _ := space.Window(0)
	mem, err := win.Bytes()
	if err != nil {
		return err
	}
	sw, _ := bar.NewReg(vb, mlx4.CommSlaveWrite)
	sr, _ := bar.NewReg(vb, mlx4.CommSlaveRead)
	if err := l.Write(c); err != nil {
		return err
	}
	if err := c.Store32(wire.HdrPFState, wire.PFStateServing); err != nil {
		return err
	}
	return respond(mode == LimitMinimum, sw, sr, mem, posts, time.Minute)
}

// errNoPost is respond's error when the VF stops posting.
var errNoPost = errors.New("bench-peer limit: no command within the deadline")

// respond is the limit's loop over VF 0's registers and DMA window mem:
// the bring-up (RESET answered with the version, VHCR0..VHCR_EN setting
// the vHCR's address) and posts VHCR_POSTs, each answered by the toggle
// alone or, if minimum, by reading the vHCR and writing its status word
// first. It returns errNoPost if idle longer than idle.
func respond(minimum bool, sw, sr bar.Reg, mem []byte, posts int, idle time.Duration) error {
	ack := sr.Load() & mlx4.CommToggle
	var addr uint64
	var shadow [mlx4.VHCRSize]byte
	for posts > 0 {
		w := sw.Load()
		var since time.Time // the clock is read only after a long spin, not per command
		for n := 1; w&mlx4.CommToggle == ack; n++ {
			bar.Pause()
			if n&0xfffff == 0 {
				if since.IsZero() {
					since = time.Now()
				} else if time.Since(since) > idle {
					return errNoPost
				}
			}
			w = sw.Load()
		}
		ack = w & mlx4.CommToggle
		cmd, param := mlx4.SplitCommWord(w)
		reply := ack
		switch cmd {
		case mlx4.MLX4_COMM_CMD_VHCR_POST:
			posts--
			if minimum {
				if addr+mlx4.VHCRSize > uint64(len(mem)) {
					return fmt.Errorf("bench-peer limit: vHCR at %#x outside the %#x-byte window", addr, len(mem))
				}
				copy(shadow[:], mem[addr:addr+mlx4.VHCRSize])
				// The status depends on the copy, so the copy (and the
				// read of the vHCR's cache line) is really made.
				w3 := binary.BigEndian.Uint64(shadow[mlx4.OffToken:])
				status := mlx4.BAD_PARAM
				if mlx4.Opcode(binary.BigEndian.Uint16(shadow[mlx4.OffOpcode:])&0xfff) == mlx4.NOP {
					status = mlx4.OK
				}
				binary.BigEndian.PutUint32(mem[addr+mlx4.OffStatus:], mlx4.StatusWord(status, w3))
			}
		case mlx4.MLX4_COMM_CMD_RESET:
			addr, reply = 0, ack|mlx4.CommVersion
		case mlx4.MLX4_COMM_CMD_VHCR0:
			addr = uint64(param) << 48
		case mlx4.MLX4_COMM_CMD_VHCR1:
			addr |= uint64(param) << 32
		case mlx4.MLX4_COMM_CMD_VHCR2:
			addr |= uint64(param) << 16
		case mlx4.MLX4_COMM_CMD_VHCR_EN:
			addr |= uint64(param)
		}
		sr.Store(reply)
	}
	return nil
}
