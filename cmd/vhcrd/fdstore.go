package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// The service manager's protocol (systemd: sd_notify(3), sd_listen_fds(3),
// "File Descriptor Store"), spoken directly with golang.org/x/sys/unix.

// listenFDsStart is SD_LISTEN_FDS_START: the first passed descriptor.
const listenFDsStart = 3

// errNotify is returned, wrapped, when a message to the service manager
// cannot be sent.
var errNotify = errors.New("sd_notify")

// notifier sends sd_notify messages to $NOTIFY_SOCKET. A nil *notifier
// (no NOTIFY_SOCKET) sends nothing: every method is a no-op.
type notifier struct {
	mu   sync.Mutex
	fd   int
	addr unix.SockaddrUnix
	log  *slog.Logger
}

// newNotifier opens the datagram socket to $NOTIFY_SOCKET, or returns nil
// when it is not set. An address that starts with '@' is in the abstract
// namespace (x/sys/unix writes the leading NUL). The variable is unset,
// so that children do not inherit it.
func newNotifier(log *slog.Logger) (*notifier, error) {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return nil, nil
	}
	os.Unsetenv("NOTIFY_SOCKET")
	if addr[0] != '/' && addr[0] != '@' {
		return nil, fmt.Errorf("%w: NOTIFY_SOCKET=%q: want a path or an @abstract name", errNotify, addr)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNotify, err)
	}
	return &notifier{fd: fd, addr: unix.SockaddrUnix{Name: addr}, log: log}, nil
}

// send sends one message, with fds as SCM_RIGHTS.
func (n *notifier) send(msg string, fds ...int) error {
	if n == nil {
		return nil
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd < 0 {
		return fmt.Errorf("%w: closed", errNotify)
	}
	if err := unix.Sendmsg(n.fd, []byte(msg), oob, &n.addr, 0); err != nil {
		return fmt.Errorf("%w: %q: %w", errNotify, strings.ReplaceAll(msg, "\n", " "), err)
	}
	return nil
}

// state sends a state change (READY=1, STOPPING=1, STATUS=...); a failure
// is logged: the service runs on.
func (n *notifier) state(msg string) {
	if err := n.send(msg); err != nil {
		n.log.Warn("service manager notification", "err", err)
	}
}

// store keeps fds in the manager's file-descriptor store under name
// (FDSTORE=1, FDNAME=); the manager holds its own copies. A failure is
// logged: what is not stored does not survive a restart, nothing else.
func (n *notifier) store(name string, fds ...int) {
	if n == nil {
		return
	}
	if err := n.send("FDSTORE=1\nFDNAME="+name, fds...); err != nil {
		n.log.Warn("file-descriptor store: not kept across a restart", "name", name, "err", err)
	}
}

// remove drops every descriptor stored under name (FDSTOREREMOVE=1).
func (n *notifier) remove(name string) {
	if n == nil {
		return
	}
	if err := n.send("FDSTOREREMOVE=1\nFDNAME=" + name); err != nil {
		n.log.Warn("file-descriptor store: not removed", "name", name, "err", err)
	}
}

func (n *notifier) close() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd >= 0 {
		_ = unix.Close(n.fd)
		n.fd = -1
	}
}

// passedFDs are the descriptors the service manager passed at start
// (sd_listen_fds_with_names), by name; each is close-on-exec. take hands
// one name's out (the caller owns them then); closeRest closes the rest.
type passedFDs map[string][]int

// takePassedFDs reads $LISTEN_PID, $LISTEN_FDS and $LISTEN_FDNAMES as
// sd_listen_fds_with_names does: nothing unless LISTEN_PID is this
// process (the variables were meant for another), the descriptors from 3
// on, a descriptor without a name "unknown". The variables are unset.
func takePassedFDs() (passedFDs, error) {
	pid, fds, names := os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES")
	os.Unsetenv("LISTEN_PID")
	os.Unsetenv("LISTEN_FDS")
	os.Unsetenv("LISTEN_FDNAMES")
	if pid == "" || fds == "" {
		return nil, nil
	}
	if p, err := strconv.Atoi(pid); err != nil || p != os.Getpid() {
		return nil, nil
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 0 || n > 1<<16 {
		return nil, fmt.Errorf("LISTEN_FDS=%q: not a descriptor count", fds)
	}
	var nameList []string
	if names != "" {
		nameList = strings.Split(names, ":")
	}
	out := passedFDs{}
	for i := range n {
		fd := listenFDsStart + i
		unix.CloseOnExec(fd)
		name := "unknown"
		if i < len(nameList) && nameList[i] != "" {
			name = nameList[i]
		}
		out[name] = append(out[name], fd)
	}
	return out, nil
}

// take returns and forgets the descriptors passed under name.
func (p passedFDs) take(name string) []int {
	fds := p[name]
	delete(p, name)
	return fds
}

// closeRest closes every descriptor not taken, returning their names.
func (p passedFDs) closeRest() []string {
	var names []string
	for name, fds := range p {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		names = append(names, name)
		delete(p, name)
	}
	return names
}
