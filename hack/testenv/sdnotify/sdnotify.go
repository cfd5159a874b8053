package sdnotify

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Manager plays systemd for one service. LISTEN_PID is set in the child
// itself, as systemd sets it between fork and exec: Command runs a shell
// that exports its own pid and execs the service, so the pid the manager
// knows is the service's.
type Manager struct {
	t    testing.TB
	addr string // @name
	conn *net.UnixConn

	mu  sync.Mutex
	pid int // the main process: messages from another are refused
	// watchdog is WatchdogSec (0: none): Command passes WATCHDOG_USEC and
	// WATCHDOG_PID; pings counts the WATCHDOG=1 messages received
	watchdog time.Duration
	pings    int
	store    []storedFD
	msgs     chan map[string]string
	bad      []string
}

type storedFD struct {
	name string
	fd   int
}

// New listens on a fresh abstract NOTIFY_SOCKET; t's cleanup closes it and
// the stored descriptors.
func New(t testing.TB) *Manager {
	t.Helper()
	m := &Manager{t: t, addr: fmt.Sprintf("@vhcrd-test-notify-%d-%d", os.Getpid(), time.Now().UnixNano()), msgs: make(chan map[string]string, 1024)}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: m.addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	m.conn = c
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil || serr != nil {
		t.Fatalf("SO_PASSCRED on the notify socket: %v %v", err, serr)
	}
	done := make(chan struct{})
	go m.receive(done)
	t.Cleanup(func() {
		c.Close()
		<-done
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, s := range m.store {
			unix.Close(s.fd)
		}
		m.store = nil
	})
	return m
}

// Addr is the NOTIFY_SOCKET value ("@name").
func (m *Manager) Addr() string { return m.addr }

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

func (m *Manager) receive(done chan struct{}) {
	defer close(done)
	defer close(m.msgs)
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*64)+unix.CmsgSpace(unix.SizeofUcred))
	for {
		n, oobn, _, _, err := m.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		cms, _ := unix.ParseSocketControlMessage(oob[:oobn])
		var fds []int
		pid := -1
		for i := range cms {
			if f, err := unix.ParseUnixRights(&cms[i]); err == nil {
				for _, fd := range f {
					unix.CloseOnExec(fd) // as systemd receives them (MSG_CMSG_CLOEXEC)
				}
				fds = append(fds, f...)
			} else if cr, err := unix.ParseUnixCredentials(&cms[i]); err == nil {
				pid = int(cr.Pid)
			}
		}
		kv := map[string]string{}
		for _, l := range strings.Split(string(buf[:n]), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				kv[k] = v
			}
		}
		m.mu.Lock()
		switch {
		case pid != m.pid:
			m.bad = append(m.bad, fmt.Sprintf("%q from pid %d, not the main process %d", buf[:n], pid, m.pid))
			closeFDs(fds)
		case kv["FDSTORE"] == "1" && kv["FDNAME"] != "":
			for _, fd := range fds {
				m.store = append(m.store, storedFD{kv["FDNAME"], fd})
			}
		case kv["WATCHDOG"] == "1":
			m.pings++
			closeFDs(fds)
		case kv["FDSTOREREMOVE"] == "1":
			m.store = slices.DeleteFunc(m.store, func(s storedFD) bool {
				if s.name == kv["FDNAME"] {
					unix.Close(s.fd)
					return true
				}
				return false
			})
			closeFDs(fds)
		default:
			closeFDs(fds)
		}
		m.mu.Unlock()
		m.msgs <- kv
	}
}

// Names are the stored descriptors' names, sorted.
func (m *Manager) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, s := range m.store {
		out = append(out, s.name)
	}
	slices.Sort(out)
	return out
}

// SetWatchdog makes the service's watchdog timeout d (systemd's
// WatchdogSec=): the next Command passes WATCHDOG_USEC, and WATCHDOG_PID
// set by the shell that execs the service, as systemd sets them.
func (m *Manager) SetWatchdog(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watchdog = d
}

// Pings is the number of WATCHDOG=1 messages the main process sent.
func (m *Manager) Pings() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pings
}

// Bad are the messages refused for not coming from the main process.
func (m *Manager) Bad() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.bad)
}

// WaitFor reads the service's messages until one has key=val (a minute at
// most: the service's start-up, not a timed assertion).
func (m *Manager) WaitFor(key, val string) {
	m.t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case kv, ok := <-m.msgs:
			if !ok {
				m.t.Fatalf("notify socket closed waiting for %s=%s", key, val)
			}
			if kv[key] == val {
				return
			}
		case <-timeout:
			m.t.Fatalf("no %s=%s from the service (store: %v)", key, val, m.Names())
		}
	}
}

// StoredFD returns a duplicate (close-on-exec) of the one descriptor
// stored under name.
func (m *Manager) StoredFD(name string) int {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.store {
		if s.name == name {
			d, err := unix.Dup(s.fd)
			if err != nil {
				m.t.Fatal(err)
			}
			unix.CloseOnExec(d)
			return d
		}
	}
	m.t.Fatalf("nothing stored as %s", name)
	return -1
}

// Command is bin with args as the manager runs it: NOTIFY_SOCKET set, the
// store passed (duplicates as ExtraFiles, LISTEN_FDS, LISTEN_FDNAMES) and
// LISTEN_PID set by the shell that execs bin. Start it with Start.
func (m *Manager) Command(bin string, args ...string) *exec.Cmd {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	var files []*os.File
	for _, s := range m.store {
		d, err := unix.Dup(s.fd)
		if err != nil {
			m.t.Fatal(err)
		}
		files = append(files, os.NewFile(uintptr(d), s.name))
		names = append(names, s.name)
	}
	script := `LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"`
	env := append(os.Environ(), "NOTIFY_SOCKET="+m.addr)
	if m.watchdog > 0 {
		script = `WATCHDOG_PID=$$; export WATCHDOG_PID; ` + script
		env = append(env, "WATCHDOG_USEC="+strconv.FormatInt(m.watchdog.Microseconds(), 10))
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, bin}, args...)...)
	cmd.Env = env
	if len(files) > 0 {
		cmd.Env = append(cmd.Env, "LISTEN_FDS="+strconv.Itoa(len(files)), "LISTEN_FDNAMES="+strings.Join(names, ":"))
	}
	cmd.ExtraFiles = files
	return cmd
}

// Start starts cmd (from Command), closes the parent's copies of the
// passed descriptors and takes its pid as the main process's. Wait for
// READY=1 with WaitFor.
func (m *Manager) Start(cmd *exec.Cmd) error {
	err := cmd.Start()
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.pid = cmd.Process.Pid // sh execs the service: the same pid
	m.mu.Unlock()
	return nil
}
