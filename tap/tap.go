package tap

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Errors of Open, wrapped with the device's name and the cause.
var (
	// ErrName is a device name the kernel cannot take: empty, too long
	// (IFNAMSIZ-1 bytes at most) or with a '/', a space or a colon.
	ErrName = errors.New("tap: bad interface name")
	// ErrNetNS is a network namespace that cannot be entered (no such
	// file, not a namespace, no CAP_SYS_ADMIN).
	ErrNetNS = errors.New("tap: cannot enter the network namespace")
	// ErrCreate is a device the kernel refused to make or bring up (no
	// /dev/net/tun, no CAP_NET_ADMIN, a name in use by another kind of
	// device).
	ErrCreate = errors.New("tap: cannot create the device")
)

// Device is an open TAP device. Read and Write move one frame each, from
// its destination MAC to the end of its payload (no preamble, no FCS).
// Read blocks until a frame arrives, the read deadline passes or Close is
// called; Read and Write may run on different goroutines.
type Device struct {
	f    *os.File
	name string
}

// Open makes the TAP device name (up, with no address) in the network
// namespace at path netns, or in the caller's if netns is "". The device is
// persistent: it stays when its descriptor closes (Close, or its process
// killed), without carrier, until Remove. A device of that name that is
// already a TAP nobody holds (a killed process's) is taken over, as
// TUNSETIFF does, with what the host configured on it.
func Open(name, netns string) (*Device, error) {
	if !validName(name) {
		return nil, fmt.Errorf("%w: %q", ErrName, name)
	}
	var d *Device
	err := inNetNS(netns, func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("%w %s: /dev/net/tun: %w", ErrCreate, name, err)
		}
		ifr, err := unix.NewIfreq(name)
		if err == nil {
			ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
			err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
		}
		if err == nil {
			// Persistent: a daemon killed leaves the device, and what the
			// host's side built on it (VLANs, addresses), for its restart
			// to attach to again; Remove ends it.
			err = unix.IoctlSetInt(fd, unix.TUNSETPERSIST, 1)
		}
		if err == nil {
			err = setUp(name)
		}
		if err != nil {
			_ = unix.Close(fd)
			return fmt.Errorf("%w %s: %w", ErrCreate, name, err)
		}
		// A non-blocking descriptor: os.File polls it (Read parks the
		// goroutine, Close and deadlines wake it).
		d = &Device{f: os.NewFile(uintptr(fd), "tap:"+name), name: name}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// validName is the kernel's dev_valid_name.
func validName(s string) bool {
	if s == "" || len(s) >= unix.IFNAMSIZ || s == "." || s == ".." {
		return false
	}
	for i := range len(s) {
		if c := s[i]; c == '/' || c == ':' || c <= ' ' {
			return false
		}
	}
	return true
}

// setUp sets IFF_UP on interface name, in the calling thread's namespace.
func setUp(name string) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS: %w", err)
	}
	return nil
}

// inNetNS runs f on a thread of its own in the network namespace at path
// (the caller's when path is ""). The thread goes back to its namespace
// after f; if it cannot, it dies with its goroutine (locked), so that no
// other goroutine runs in the wrong namespace.
func inNetNS(path string, f func() error) error {
	if path == "" {
		return f()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- fmt.Errorf("%w: this thread's: %w", ErrNetNS, err)
			return
		}
		defer unix.Close(orig)
		ns, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("%w %s: %w", ErrNetNS, path, err)
			return
		}
		err = unix.Setns(ns, unix.CLONE_NEWNET)
		_ = unix.Close(ns)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("%w %s: %w", ErrNetNS, path, err)
			return
		}
		ferr := f()
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- ferr
	}()
	return <-done
}

// Name is the device's interface name.
func (d *Device) Name() string { return d.name }

// Read reads one frame into b; a frame longer than b is cut to len(b).
func (d *Device) Read(b []byte) (int, error) { return d.f.Read(b) }

// Write sends frame b into the host's stack as received on the device.
func (d *Device) Write(b []byte) (int, error) { return d.f.Write(b) }

// SetReadDeadline bounds the Read in progress and later ones.
func (d *Device) SetReadDeadline(t time.Time) error { return d.f.SetReadDeadline(t) }

// Close closes the descriptor: a Read in progress returns os.ErrClosed,
// and the device stays, without carrier, for a later Open to attach to.
func (d *Device) Close() error { return d.f.Close() }

// Remove makes the device non-persistent and closes it: the device goes.
func (d *Device) Remove() error {
	c, err := d.f.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	if err := c.Control(func(fd uintptr) { perr = unix.IoctlSetInt(int(fd), unix.TUNSETPERSIST, 0) }); err != nil {
		return err
	}
	if err := d.f.Close(); err != nil {
		return err
	}
	return perr
}
