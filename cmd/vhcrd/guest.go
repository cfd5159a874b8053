package main

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/ivshmem"
	"github.com/vhcrd/vhcrd/vhcr"
)

// guestSpec is one --guest N=RAMFILE[,size=SIZE][,socket=PATH]: VF N is a
// QEMU guest's, its DMA memory the guest's RAM file, its BAR region and
// MSI-X vectors handed to QEMU by an ivshmem server on the socket.
type guestSpec struct {
	vf     int
	ram    string
	size   int64 // 0: the file must exist
	socket string
}

// parseGuests checks every --guest (in VF order) against the VF count and the VF BAR
// regions: QEMU maps the whole file it is handed, so VF N's BAR region must
// be a whole file.
func parseGuests(given vfSpecs, ctrl bar.Spec, vfBARs []bar.Spec) ([]guestSpec, error) {
	var out []guestSpec
	for vf, v := range given {
		if vf >= len(vfBARs) {
			return nil, fmt.Errorf("--guest %d=...: only %d VFs are served (--num-vfs)", vf, len(vfBARs))
		}
		parts := strings.Split(v, ",")
		g := guestSpec{vf: vf, ram: parts[0]}
		for _, p := range parts[1:] {
			k, val, _ := strings.Cut(p, "=")
			switch k {
			case "size":
				n, err := bar.ParseSize(val)
				if err != nil || n <= 0 || n%bar.PageSize != 0 {
					return nil, fmt.Errorf("--guest %d: size %q: want the guest's RAM size (-m), a multiple of 4K", vf, val)
				}
				g.size = n
			case "socket":
				g.socket = val
			default:
				return nil, fmt.Errorf("--guest %d: unknown option %q (want size= or socket=)", vf, p)
			}
		}
		if g.ram == "" {
			return nil, fmt.Errorf("--guest %d: no RAM file", vf)
		}
		if sp := vfBARs[vf]; sp.Scheme != "file" || sp.Offset != 0 {
			return nil, fmt.Errorf("--guest %d: VF %d's BAR region %s is not a whole file, which QEMU's ivshmem-doorbell needs", vf, vf, sp)
		}
		if g.socket == "" {
			if ctrl.Scheme != "file" {
				return nil, fmt.Errorf("--guest %d: give socket=PATH (no default next to a device --bar)", vf)
			}
			g.socket = vhcr.VFBARPath(ctrl.Path, vf) + ".sock"
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b guestSpec) int { return a.vf - b.vf })
	return out, nil
}

// openGuestRAM maps a guest's RAM file lazily (its pages are the guest's):
// created and sized when size= is given, else as it is.
func openGuestRAM(g guestSpec) (bar.Region, error) {
	if g.size > 0 {
		r, _, err := bar.CreateFileLazy(g.ram, g.size)
		return r, err
	}
	return bar.OpenFileLazy(g.ram, false)
}

// guestServer is VF vf's ivshmem server and the BAR file it hands over.
type guestServer struct {
	srv *ivshmem.Server
	shm *os.File
}

// startGuests runs one ivshmem server per --guest: it hands QEMU the VF's
// BAR region file and its MSI-X vectors' eventfds. A client that goes
// (QEMU killed, the device unplugged) is that VF's function-level reset,
// as an FLR: its objects released, nothing of another VF touched; the next
// QEMU is served. While any guest is connected the poller's sleeps are
// bounded (master.Idle.GuestSleep): a guest cannot ring the futex doorbell.
func (s *server) startGuests(guests []guestSpec, vfBARs []bar.Spec, log *slog.Logger) error {
	for _, g := range guests {
		shm, err := os.OpenFile(vfBARs[g.vf].Path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("--guest %d: %w", g.vf, err)
		}
		vf := g.vf
		srv, err := ivshmem.Listen(g.socket, ivshmem.Options{
			SHM:     shm,
			Vectors: func() []int { return s.irq.VF(vf).FDs() },
			OnConnect: func(id int64) {
				s.pf.GuestAttached(true)
				log.Info("guest attached", "vf", vf, "ivshmem_id", id)
			},
			OnDisconnect: func(id int64) {
				s.pf.GuestAttached(false)
				if s.guestsStopping.Load() {
					return // vhcrd stops: the VF's state stays for the next PF
				}
				err := s.pf.FLR(vf)
				log.Info("guest gone: VF reset as an FLR", "vf", vf, "ivshmem_id", id, "err", err)
			},
			Logger: log,
		})
		if err != nil {
			shm.Close()
			return fmt.Errorf("--guest %d: %w", g.vf, err)
		}
		s.guests = append(s.guests, guestServer{srv: srv, shm: shm})
		go func() {
			if err := srv.Serve(); err != nil {
				log.Error("ivshmem server", "vf", vf, "err", err)
			}
		}()
		log.Info("ivshmem server", "vf", vf, "socket", g.socket, "bar", vfBARs[vf].Path, "ram", g.ram, "vectors", s.irq.VF(vf).Len())
	}
	return nil
}

// stopGuests closes the ivshmem servers (their clients see the server
// gone; QEMU keeps running on what it has).
func (s *server) stopGuests() {
	s.guestsStopping.Store(true)
	for _, g := range s.guests {
		_ = g.srv.Close()
		g.shm.Close()
	}
	s.guests = nil
}
