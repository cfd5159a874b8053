package bar

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrOwned means another process (or another Owner in this one) holds the
// region: one PF owns a set of regions at a time.
var ErrOwned = errors.New("bar: region is owned by another process")

// ErrUnowned means that no process holds the owner claim of a region file:
// no PF serves it, or the one that did died (kill -9, a crash) and the
// kernel dropped its claim.
var ErrUnowned = errors.New("bar: no process holds the region's owner claim")

// Owner is an exclusive claim on the file behind a region: an open file
// description lock (fcntl F_OFD_SETLK, a write lock on the whole file) and
// flock(2) with LOCK_EX, both on a descriptor the Owner keeps open. The
// kernel drops them when the descriptor is closed, so a process that dies
// (kill -9, OOM) releases the claim with no clean-up; a second claim while
// the first holds fails at once with ErrOwned. Both kinds of lock belong
// to the open file description, not to the process: opening and closing
// the same file elsewhere in the process (a VF tool in a test, a reattach)
// does not drop the claim, as it would with POSIX record locks. The OFD
// lock is what Probe tests without taking anything (F_OFD_GETLK, which has
// no flock counterpart); the flock is what /proc/locks names the holder's
// pid by (it shows -1 for OFD locks).
type Owner struct {
	f    *os.File
	path string
}

// Own claims path, creating an empty file (mode 0660) if there is none, so
// that a region file is claimed before anything sizes or maps it. A claim
// held elsewhere fails with an error wrapping ErrOwned that names the
// holder's pid where /proc/locks shows it. The OFD lock is taken first: a
// Probe sees the claim from the moment the flock can be held.
func Own(path string) (*Owner, error) {
	o, _, err := own(path)
	return o, err
}

// OwnNew is Own that also reports whether it created the file (a start
// that fails removes the files it created, and only those).
func OwnNew(path string) (o *Owner, created bool, err error) {
	return own(path)
}

func own(path string) (*Owner, bool, error) {
	created := false
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o660)
	if err == nil {
		created = true
	} else if errors.Is(err, os.ErrExist) {
		f, err = os.OpenFile(path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, false, fmt.Errorf("own %s: %w", path, err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	for {
		err = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err == nil {
		for {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		if err == nil {
			return &Owner{f: f, path: path}, created, nil
		}
	}
	defer f.Close()
	if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EACCES) {
		return nil, false, fmt.Errorf("own %s: lock: %w", path, err)
	}
	if pid, ok := flockHolder(f); ok {
		return nil, false, fmt.Errorf("%s: %w (pid %d holds it)", path, ErrOwned, pid)
	}
	return nil, false, fmt.Errorf("%s: %w", path, ErrOwned)
}

// Probe tests a region file's owner claim without taking it, for a VF-side
// tool that must tell a PF that died from one that is busy or starting.
type Probe struct{ f *os.File }

// NewProbe opens path read-only for Owned. The descriptor holds no lock,
// and closing it drops none (OFD locks belong to their own descriptions).
func NewProbe(path string) (*Probe, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &Probe{f: f}, nil
}

// Owned returns nil while a process holds the owner claim of the probed
// file (its inode: a file since put in its place is not looked at), and an
// error wrapping ErrUnowned when none does. It asks the kernel which lock
// would conflict with a write lock (F_OFD_GETLK) and takes nothing, so a
// PF claiming the file at the same moment is not disturbed.
func (p *Probe) Owned() error {
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	var err error
	for {
		err = unix.FcntlFlock(p.f.Fd(), unix.F_OFD_GETLK, &lk)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("probe %s: %w", p.f.Name(), err)
	}
	if lk.Type == unix.F_UNLCK {
		return fmt.Errorf("%s: %w", p.f.Name(), ErrUnowned)
	}
	return nil
}

// Close closes the probe's descriptor.
func (p *Probe) Close() error { return p.f.Close() }

// Path is the claimed file.
func (o *Owner) Path() string { return o.path }

// Release gives the claim up. It is safe to call more than once.
func (o *Owner) Release() error {
	if o == nil || o.f == nil {
		return nil
	}
	err := o.f.Close() // closing the descriptor drops the flock
	o.f = nil
	return err
}

// flockHolder finds the pid holding an exclusive flock on f's inode in
// /proc/locks ("1: FLOCK  ADVISORY  WRITE 1234 00:1a:16 0 EOF", device as
// hex major:minor, inode in decimal).
func flockHolder(f *os.File) (int, bool) {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return 0, false
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0, false
	}
	defer locks.Close()
	return parseLocks(bufio.NewScanner(locks), uint64(unix.Major(uint64(st.Dev))), uint64(unix.Minor(uint64(st.Dev))), st.Ino)
}

// parseLocks returns the pid of the first granted FLOCK WRITE entry for the
// inode (lines with "->" are waiters).
func parseLocks(s *bufio.Scanner, major, minor, ino uint64) (int, bool) {
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, ino)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[3] != "WRITE" || fields[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && pid > 0 {
			return pid, true
		}
	}
	return 0, false
}
