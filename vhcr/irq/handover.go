package irq

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// SendFDs sends msg (at least one byte is sent: a zero byte if msg is
// empty) with fds as SCM_RIGHTS over c. The receiver gets its own copies;
// the caller's descriptors stay open.
func SendFDs(c *net.UnixConn, msg []byte, fds ...int) error {
	if len(msg) == 0 {
		msg = []byte{0}
	}
	n, oobn, err := c.WriteMsgUnix(msg, unix.UnixRights(fds...), nil)
	if err != nil {
		return fmt.Errorf("irq: send %d fds: %w", len(fds), err)
	}
	if n != len(msg) || oobn != len(unix.UnixRights(fds...)) {
		return fmt.Errorf("irq: send %d fds: %w", len(fds), unix.EMSGSIZE)
	}
	return nil
}

// RecvFDs receives one message of up to len(buf) bytes with up to max
// descriptors (SCM_RIGHTS) from c. The descriptors are close-on-exec and
// the caller's to close. More than max descriptors, or a truncated control
// message, is an error (the descriptors that did arrive are closed).
func RecvFDs(c *net.UnixConn, buf []byte, max int) (int, []int, error) {
	oob := make([]byte, unix.CmsgSpace(4*max))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return 0, nil, fmt.Errorf("irq: receive fds: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return 0, nil, fmt.Errorf("irq: receive fds: %w", err)
	}
	var fds []int
	for i := range msgs {
		f, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue // not SCM_RIGHTS
		}
		fds = append(fds, f...)
	}
	if flags&unix.MSG_CTRUNC != 0 || len(fds) > max {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		return 0, nil, fmt.Errorf("irq: receive fds: %w: more than %d descriptors", unix.EMSGSIZE, max)
	}
	return n, fds, nil
}
