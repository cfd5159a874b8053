package guestinit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Say writes a "vmtest: " line to the console.
func Say(format string, args ...any) { fmt.Printf("vmtest: "+format+"\n", args...) }

// Main runs run as the machine's /init. As PID 1 it first mounts /dev,
// /proc and /sys and makes /dev/console its standard input, output and
// error; it ends with "vmtest: PASS" or "vmtest: FAIL: ..." and, as PID 1,
// syncs and powers the machine off. Run as any other process, it returns,
// or exits 1 when run failed.
func Main(run func() error) {
	if os.Getpid() == 1 {
		setup()
	}
	err := run()
	if err != nil {
		Say("FAIL: %v", err)
	} else {
		Say("PASS")
	}
	if os.Getpid() != 1 {
		if err != nil {
			os.Exit(1)
		}
		return
	}
	unix.Sync()
	unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	select {} // PID 1 must not exit
}

func setup() {
	for _, m := range [][3]string{{"devtmpfs", "/dev", "devtmpfs"}, {"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"}} {
		os.MkdirAll(m[1], 0o755)
		if err := unix.Mount(m[0], m[1], m[2], 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			Say("mount %s: %v", m[1], err)
		}
	}
	if fd, err := unix.Open("/dev/console", unix.O_RDWR, 0); err == nil {
		unix.Dup2(fd, 0)
		unix.Dup2(fd, 1)
		unix.Dup2(fd, 2)
	}
}

// Uptime is the first field of /proc/uptime with its unit ("?" without
// one).
func Uptime() string {
	b, _ := os.ReadFile("/proc/uptime")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0] + "s"
}

// Lines returns a channel that receives a value for each line of standard
// input (the console, for PID 1) that is word, blanks aside; when the input
// ends it says so on the console.
func Lines(word string) <-chan struct{} {
	ch := make(chan struct{}, 4)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == word {
				ch <- struct{}{}
			}
		}
		Say("console closed: %v", sc.Err())
	}()
	return ch
}
