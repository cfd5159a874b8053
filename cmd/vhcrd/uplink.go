package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/vhcrd/vhcrd/pcap"
	"github.com/vhcrd/vhcrd/vhcr/config"
)

// pcapUplink is the ports' uplink as capture files: the frames each
// Ethernet port's switch sends out of the device, one pcap file per port
// that has an uplink. It runs on the poller (hca.Uplink); Flush at the
// poller's idle chores puts the buffered frames into the files.
type pcapUplink struct {
	w     []*pcap.Writer // per physical port - 1, nil: none
	files []*os.File
	log   *slog.Logger
	errs  int
}

// startUplinks opens the uplink of every Ethernet port that has one and
// hands them to the HCA (before the poller runs); stop closes them after
// it stops.
func (s *server) startUplinks(cfg *config.Config, log *slog.Logger) error {
	u := &pcapUplink{w: make([]*pcap.Writer, len(cfg.Ports)), log: log}
	n := 0
	for i, p := range cfg.Ports {
		if p.Uplink == nil {
			continue
		}
		f, err := os.Create(p.Uplink.PCAP)
		if err != nil {
			u.close()
			return fmt.Errorf("port %d uplink: %w", i+1, err)
		}
		u.files = append(u.files, f)
		if u.w[i], err = pcap.NewWriter(f, pcap.LinkTypeEthernet, time.Now); err != nil {
			u.close()
			return fmt.Errorf("port %d uplink %s: %w", i+1, p.Uplink.PCAP, err)
		}
		log.Info("uplink", "port", i+1, "pcap", p.Uplink.PCAP)
		n++
	}
	if n == 0 {
		return nil
	}
	s.hca.SetUplink(u)
	s.stopMAD = append(s.stopMAD, u.close)
	return nil
}

// Send implements hca.Uplink.
func (u *pcapUplink) Send(phys int, b []byte) {
	if phys < 1 || phys > len(u.w) || u.w[phys-1] == nil {
		return
	}
	if err := u.w[phys-1].WriteRecord(b); err != nil {
		u.failed(phys, err)
	}
}

// Flush implements hca.Uplink.
func (u *pcapUplink) Flush() {
	for i, w := range u.w {
		if w != nil {
			if err := w.Flush(); err != nil {
				u.failed(i+1, err)
			}
		}
	}
}

// failed logs a capture file's first error (the writer keeps returning
// it: the port's frames are no longer captured).
func (u *pcapUplink) failed(phys int, err error) {
	if u.errs++; u.errs == 1 {
		u.log.Error("uplink capture failed; frames are no longer written", "port", phys, "err", err)
	}
}

func (u *pcapUplink) close() {
	for _, w := range u.w {
		if w != nil {
			_ = w.Close()
		}
	}
	for _, f := range u.files {
		_ = f.Close()
	}
}
