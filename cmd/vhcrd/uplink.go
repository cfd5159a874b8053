package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/vhcrd/vhcrd/pcap"
	"github.com/vhcrd/vhcrd/tap"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/hca"
)

// uplinks are the Ethernet ports' ways out of the device (hca.Uplink): per
// port, a capture file that gets every frame leaving it, a TAP device that
// carries them to the host and brings the host's frames in, or both. Send
// runs on the poller and makes no system call: the capture's records are
// buffered (Flush at the poller's idle chores writes them), a TAP's frames
// are queued for its writer goroutine.
type uplinks struct {
	h     *hca.HCA
	ports []portUplink // per physical port - 1
	log   *slog.Logger
	errs  atomic.Int32
	stop  chan struct{}
}

type portUplink struct {
	w    *pcap.Writer // nil: no capture
	file *os.File
	tap  *tapLink // nil: no TAP
}

// startUplinks opens the uplink of every Ethernet port that has one and
// hands them to the HCA (before the poller runs); their stop (closing the
// files, removing the TAPs) runs after the poller stops.
func (s *server) startUplinks(cfg *config.Config, log *slog.Logger) error {
	u := &uplinks{h: s.hca, ports: make([]portUplink, len(cfg.Ports)), log: log, stop: make(chan struct{})}
	n := 0
	for i, p := range cfg.Ports {
		if p.Uplink == nil {
			continue
		}
		if err := u.open(i+1, p.Uplink); err != nil {
			u.close()
			return err
		}
		n++
	}
	if n == 0 {
		return nil
	}
	s.hca.SetUplink(u)
	for i := range u.ports {
		if t := u.ports[i].tap; t != nil {
			go t.write(u)
			go t.read(u)
		}
	}
	s.stopMAD = append(s.stopMAD, u.close)
	return nil
}

// open opens port phys's capture file and TAP device.
func (u *uplinks) open(phys int, c *config.Uplink) error {
	pu := &u.ports[phys-1]
	if c.PCAP != "" {
		f, err := os.Create(c.PCAP)
		if err != nil {
			return fmt.Errorf("port %d uplink: %w", phys, err)
		}
		pu.file = f
		if pu.w, err = pcap.NewWriter(f, pcap.LinkTypeEthernet, time.Now); err != nil {
			return fmt.Errorf("port %d uplink %s: %w", phys, c.PCAP, err)
		}
		u.log.Info("uplink", "port", phys, "pcap", c.PCAP)
	}
	if c.TAP != "" {
		d, err := tap.Open(c.TAP, c.NetNS)
		if err != nil {
			return fmt.Errorf("port %d uplink: %w", phys, err)
		}
		pu.tap = &tapLink{dev: d, phys: phys, kick: make(chan struct{}, 1), access: eswitch.Access{VID: uint16(c.VLAN)}}
		u.log.Info("uplink", "port", phys, "tap", c.TAP, "netns", c.NetNS, "access_vlan", c.VLAN)
	}
	return nil
}

// Send implements hca.Uplink.
func (u *uplinks) Send(phys int, b []byte) {
	if phys < 1 || phys > len(u.ports) {
		return
	}
	pu := &u.ports[phys-1]
	if pu.w != nil {
		if err := pu.w.WriteRecord(b); err != nil {
			u.failed(phys, "capture", err)
		}
	}
	if pu.tap != nil && !pu.tap.put(b) {
		u.h.UplinkStats(phys).OutQueueFull.Add(1)
	}
}

// Flush implements hca.Uplink.
func (u *uplinks) Flush() {
	for i := range u.ports {
		if w := u.ports[i].w; w != nil {
			if err := w.Flush(); err != nil {
				u.failed(i+1, "capture", err)
			}
		}
	}
}

// failed logs an uplink's first error: a capture's writer keeps returning
// it (the port's frames are no longer captured); a TAP's failed write loses
// that frame and the next is written.
func (u *uplinks) failed(phys int, what string, err error) {
	if u.errs.Add(1) == 1 {
		u.log.Error("uplink failed; later errors are not logged", "port", phys, "uplink", what, "err", err)
	}
}

func (u *uplinks) close() {
	close(u.stop)
	for i := range u.ports {
		pu := &u.ports[i]
		if pu.w != nil {
			_ = pu.w.Close()
		}
		if pu.file != nil {
			_ = pu.file.Close()
		}
		if pu.tap != nil {
			// A clean stop removes the device; a killed daemon leaves it
			// (persistent) for its restart.
			_ = pu.tap.dev.Remove()
		}
	}
}

// tapQueue bounds the frames waiting for a TAP's writer: a port sending
// faster than the host's stack takes them loses the excess, counted
// (UplinkStats.OutQueueFull), as a congested link drops.
const tapQueue = 256

// tapSlot holds one frame: the largest a port sends (PortEthMTU, a header,
// a VF's tag and VST's).
const tapSlot = 2048

// tapLink is one port's TAP: a single-producer ring the poller fills and
// the writer goroutine drains, and a reader goroutine that hands the host's
// frames to the HCA (hca.HCA.ReceiveFrame copies them).
type tapLink struct {
	dev        *tap.Device
	phys       int
	access     eswitch.Access // VID 0: a trunk
	head, tail atomic.Uint32  // head: the writer's, tail: the poller's
	kick       chan struct{}
	lens       [tapQueue]uint16
	slots      [tapQueue][tapSlot]byte
}

// put queues frame b for the writer (false: the ring is full, or b longer
// than a slot).
func (t *tapLink) put(b []byte) bool {
	tl := t.tail.Load()
	if tl-t.head.Load() == tapQueue || len(b) > tapSlot {
		return false
	}
	i := tl % tapQueue
	if t.access.VID == 0 {
		t.lens[i] = uint16(copy(t.slots[i][:], b))
	} else if n, ok := t.access.Out(t.slots[i][:], b); ok {
		t.lens[i] = uint16(n)
	} else {
		return true // not the access port's VLAN: not its host's
	}
	t.tail.Store(tl + 1)
	select {
	case t.kick <- struct{}{}:
	default:
	}
	return true
}

// write drains the ring into the device until the uplinks stop.
func (t *tapLink) write(u *uplinks) {
	for {
		for hd := t.head.Load(); hd != t.tail.Load(); hd++ {
			i := hd % tapQueue
			if _, err := t.dev.Write(t.slots[i][:t.lens[i]]); err != nil && !errors.Is(err, os.ErrClosed) {
				u.failed(t.phys, "tap", err)
			}
			t.head.Store(hd + 1)
		}
		select {
		case <-t.kick:
		case <-u.stop:
			return
		}
	}
}

// read hands the host's frames to the port's switch until the device is
// closed.
func (t *tapLink) read(u *uplinks) {
	b, tagged := make([]byte, tapSlot), make([]byte, tapSlot+eswitch.TagLen)
	for {
		n, err := t.dev.Read(b)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				u.failed(t.phys, "tap", err)
			}
			return
		}
		if t.access.VID == 0 {
			u.h.ReceiveFrame(t.phys, b[:n])
		} else {
			u.h.ReceiveFrame(t.phys, tagged[:t.access.In(tagged, b[:n])])
		}
	}
}
