package adminc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/vhcr/irq"
)

// CallFDs is Call for an answer that carries descriptors (SCM_RIGHTS on
// its first bytes, as vf.irq's): it returns the answer line and up to max
// descriptors, which are the caller's to close. A refusal carries none.
func CallFDs(s Socket, req any, timeout time.Duration, max int) ([]byte, []int, error) {
	c, err := s.Dial(timeout)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	conn := c.(*net.UnixConn)
	_ = conn.SetDeadline(time.Now().Add(timeout))
	b, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return nil, nil, fmt.Errorf("admin socket: %w", err)
	}
	buf := make([]byte, 4096)
	n, fds, err := irq.RecvFDs(conn, buf, max)
	if err != nil {
		return nil, nil, fmt.Errorf("admin socket: %w", err)
	}
	closeAll := func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}
	line := buf[:n]
	if !bytes.HasSuffix(line, []byte("\n")) { // the rest of the line, without descriptors
		rest, err := bufio.NewReader(conn).ReadBytes('\n')
		if err != nil && !(errors.Is(err, io.EOF) && len(rest) > 0) {
			closeAll()
			return nil, nil, fmt.Errorf("admin socket: %w", err)
		}
		line = append(line, rest...)
	}
	if msg, ok := strings.CutPrefix(string(line), "# error: "); ok {
		closeAll()
		return nil, nil, fmt.Errorf("%w: %s", ErrRefused, strings.TrimSpace(msg))
	}
	return line, fds, nil
}
