package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/ivshmem"
	"github.com/vhcrd/vhcrd/vhcr/irq"
	"github.com/vhcrd/vhcrd/vhcr/wire"
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
			g.socket = wire.VFBARPath(ctrl.Path, vf) + ".sock"
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
	vf  int
	srv *ivshmem.Server
	shm *os.File
}

// Names in the service manager's file-descriptor store, per guest VF: the
// ivshmem server's listening socket, QEMU's connection, and vector i's
// eventfd (one name each: the store need not keep an order).
func fdNameListen(vf int) string      { return fmt.Sprintf("vf%d-listen", vf) }
func fdNameConn(vf int) string        { return fmt.Sprintf("vf%d-conn", vf) }
func fdNameIRQ(vf, vector int) string { return fmt.Sprintf("vf%d-irq%d", vf, vector) }

// adoptVectors takes back, from what the service manager passed, the
// eventfds of each guest VF's vectors a previous vhcrd stored (QEMU holds
// them: the guest's MSI-X vectors). A VF whose set is not whole, or not
// --vectors long, gets new ones (its stored connection is then dropped in
// startGuests: QEMU could not be interrupted through it).
func adoptVectors(passed passedFDs, guests []guestSpec, perVF int, log *slog.Logger) map[int]*irq.Vectors {
	out := map[int]*irq.Vectors{}
	for _, g := range guests {
		var fds []int
		for i := 0; i < irq.MaxVectors; i++ {
			f := passed.take(fdNameIRQ(g.vf, i))
			if len(f) == 0 {
				break
			}
			fds = append(fds, f...)
		}
		if len(fds) == 0 {
			continue
		}
		var v *irq.Vectors
		err := fmt.Errorf("%d stored vectors, --vectors %d", len(fds), perVF)
		if len(fds) == perVF {
			v, err = irq.Adopt(fds)
		}
		if err != nil {
			for _, fd := range fds {
				_ = unix.Close(fd)
			}
			log.Warn("stored MSI-X eventfds not adopted: the VF gets new ones", "vf", g.vf, "err", err)
			continue
		}
		out[g.vf] = v
		log.Info("MSI-X eventfds adopted from the file-descriptor store", "vf", g.vf, "vectors", len(fds))
	}
	return out
}

// storeGuest keeps VF vf's connection and vectors in the service
// manager's store (vectors first: a stored connection implies them).
func (s *server) storeGuest(vf int, c *net.UnixConn) {
	for i, fd := range s.irq.VF(vf).FDs() {
		s.notify.store(fdNameIRQ(vf, i), fd)
	}
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { s.notify.store(fdNameConn(vf), int(fd)) })
	}
}

// forgetGuest removes VF vf's connection and vectors from the store
// (connection first: a stale connection is never adopted).
func (s *server) forgetGuest(vf int) {
	s.notify.remove(fdNameConn(vf))
	for i := range s.irq.VF(vf).Len() {
		s.notify.remove(fdNameIRQ(vf, i))
	}
}

// startGuests runs one ivshmem server per --guest: it hands QEMU the VF's
// BAR region file and its MSI-X vectors' eventfds. A client that goes
// (QEMU killed, the device unplugged) is that VF's function-level reset,
// as an FLR: its objects released, nothing of another VF touched; the next
// QEMU is served. While any guest is connected the poller's sleeps are
// bounded (master.Idle.GuestSleep): a guest cannot ring the futex doorbell.
//
// Under a service manager (NOTIFY_SOCKET) the listening socket, QEMU's
// connection and the vectors are kept in its file-descriptor store; a
// vhcrd restarted after a crash is passed them back and serves the same
// connection on (QEMU reads its setup once and cannot be set up again),
// the VF's state coming from the PF state file. adoptedIRQ are the VFs
// whose vectors were adopted (adoptVectors): only their connection can be.
func (s *server) startGuests(guests []guestSpec, vfBARs []bar.Spec, passed passedFDs, adoptedIRQ map[int]*irq.Vectors, log *slog.Logger) error {
	for _, g := range guests {
		if err := s.startGuest(g, vfBARs[g.vf].Path, passed, adoptedIRQ, log); err != nil {
			return err
		}
	}
	if names := passed.closeRest(); len(names) > 0 {
		log.Warn("passed descriptors not adopted (closed)", "names", names)
	}
	return nil
}

// startGuest starts the ivshmem server of one --guest VF, over the VF BAR
// file at path, adopting the socket and connection passed back.
func (s *server) startGuest(g guestSpec, path string, passed passedFDs, adoptedIRQ map[int]*irq.Vectors, log *slog.Logger) error {
	shm, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("--guest %d: %w", g.vf, err)
	}
	vf := g.vf
	var adopting atomic.Bool // the adopted connection is stored already
	o := ivshmem.Options{
		SHM:     shm,
		Vectors: func() []int { return s.irq.VF(vf).FDs() },
		OnClient: func(_ int64, c *net.UnixConn) {
			if !adopting.Swap(false) {
				s.storeGuest(vf, c)
			}
		},
		OnConnect: func(id int64) {
			s.pf.GuestAttached(true)
			log.Info("guest attached", "vf", vf, "ivshmem_id", id)
		},
		OnDisconnect: func(id int64) {
			s.pf.GuestAttached(false)
			if s.guestsStopping.Load() {
				return // vhcrd stops: the VF's state stays for the next PF
			}
			if err := s.pf.FLR(vf); err != nil {
				log.Warn("guest gone: the VF's FLR failed", "vf", vf, "ivshmem_id", id, "err", err)
			} else {
				log.Info("guest gone: VF reset as an FLR", "vf", vf, "ivshmem_id", id)
			}
			s.forgetGuest(vf)
		},
		Logger: log,
	}
	var srv *ivshmem.Server
	if fds := passed.take(fdNameListen(vf)); len(fds) == 1 {
		if srv, err = ivshmem.ListenFD(fds[0], g.socket, o); err != nil {
			log.Warn("stored ivshmem socket not adopted: listening anew", "vf", vf, "err", err)
		} else {
			log.Info("ivshmem socket adopted from the file-descriptor store", "vf", vf, "socket", g.socket)
		}
	} else {
		closeFDs(fds)
	}
	if srv == nil {
		if srv, err = ivshmem.Listen(g.socket, o); err != nil {
			shm.Close()
			return fmt.Errorf("--guest %d: %w", g.vf, err)
		}
		if err := srv.ControlListener(func(fd uintptr) { s.notify.store(fdNameListen(vf), int(fd)) }); err != nil {
			log.Warn("ivshmem socket not stored", "vf", vf, "err", err)
		}
	}
	s.guests = append(s.guests, guestServer{vf: vf, srv: srv, shm: shm})
	s.adoptGuestConn(srv, vf, passed.take(fdNameConn(vf)), adoptedIRQ[vf] != nil, &adopting, log)
	go func() {
		if err := srv.Serve(); err != nil {
			log.Error("ivshmem server", "vf", vf, "err", err)
		}
	}()
	log.Info("ivshmem server", "vf", vf, "socket", g.socket, "bar", path, "ram", g.ram, "vectors", s.irq.VF(vf).Len())
	return nil
}

// adoptGuestConn serves on the guest connection passed back (fds; none: no
// connection stored) when there is one and the VF's vectors were adopted;
// otherwise the connection ends and the VF is reset as an FLR, as when a
// guest goes.
func (s *server) adoptGuestConn(srv *ivshmem.Server, vf int, fds []int, vectorsAdopted bool, adopting *atomic.Bool, log *slog.Logger) {
	if len(fds) == 0 {
		return
	}
	ok := len(fds) == 1 && vectorsAdopted
	var id int64
	if ok {
		adopting.Store(true)
		var err error
		if id, err = srv.Adopt(fds[0]); err != nil { // closed it
			adopting.Store(false)
			log.Warn("stored guest connection not adopted", "vf", vf, "err", err)
			ok = false
		}
	} else {
		closeFDs(fds)
	}
	if ok {
		log.Info("guest connection adopted: served on without a new ivshmem setup", "vf", vf, "ivshmem_id", id)
	} else {
		// The guest cannot be interrupted or served on: its
		// connection ends (QEMU sees the server gone), the VF is
		// reset as when a guest goes.
		s.forgetGuest(vf)
		if err := s.pf.FLR(vf); err != nil {
			log.Warn("stored guest connection dropped: the VF's FLR failed", "vf", vf, "vectors_adopted", vectorsAdopted, "err", err)
		} else {
			log.Warn("stored guest connection dropped: VF reset as an FLR", "vf", vf, "vectors_adopted", vectorsAdopted)
		}
	}
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// stopGuests closes the ivshmem servers (their clients see the server
// gone; QEMU keeps running on what it has) after removing what they
// stored: a stopped vhcrd's connections are closed, not to be adopted.
func (s *server) stopGuests() {
	s.guestsStopping.Store(true)
	for _, g := range s.guests {
		s.forgetGuest(g.vf)
		s.notify.remove(fdNameListen(g.vf))
		_ = g.srv.Close()
		g.shm.Close()
	}
	s.guests = nil
}
