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

// Owner is an exclusive claim on the file behind a region: flock(2) with
// LOCK_EX on a descriptor the Owner keeps open. The kernel drops the claim
// when the descriptor is closed, so a process that dies (kill -9, OOM)
// releases it with no clean-up; a second claim while the first holds fails at
// once with ErrOwned. flock locks belong to the open file description, not to
// the process: opening and closing the same file elsewhere in the process
// (a VF tool in a test, a reattach) does not drop the claim, as it would with
// fcntl record locks.
type Owner struct {
	f    *os.File
	path string
}

// Own claims path, creating an empty file (mode 0660) if there is none, so
// that a region file is claimed before anything sizes or maps it. A claim
// held elsewhere fails with an error wrapping ErrOwned that names the
// holder's pid where /proc/locks shows it.
func Own(path string) (*Owner, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o660)
	if err != nil {
		return nil, fmt.Errorf("own %s: %w", path, err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err == nil {
		return &Owner{f: f, path: path}, nil
	}
	defer f.Close()
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return nil, fmt.Errorf("own %s: flock: %w", path, err)
	}
	if pid, ok := flockHolder(f); ok {
		return nil, fmt.Errorf("%s: %w (pid %d holds it)", path, ErrOwned, pid)
	}
	return nil, fmt.Errorf("%s: %w", path, ErrOwned)
}

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
