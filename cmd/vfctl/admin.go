package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// adminSocket is the admin socket of vhcrd serving the BAR spec: its file's
// path with ".sock" appended (vhcrd's default for a file: region).
func adminSocket(flagValue, barSpec string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	path, ok := strings.CutPrefix(barSpec, "file:")
	if !ok {
		return "", usageErr(fmt.Errorf("--bar %q: not a file: region, give --admin-socket", barSpec))
	}
	return path + ".sock", nil
}

// postAdmin sends one request to vhcrd's admin socket (the protocol of
// cmd/vhcrd/admin.go: one JSON line each way, "# error: ..." for a
// refusal) and prints the answer.
func postAdmin(path string, req map[string]any, timeout time.Duration) error {
	conn, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return fmt.Errorf("admin socket: %w (is vhcrd serving? see --admin-socket)", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	line, err := bufio.NewReaderSize(conn, 1<<16).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return fmt.Errorf("admin socket: %w", err)
	}
	if msg, ok := strings.CutPrefix(line, "# error: "); ok {
		return errors.New("vhcrd: " + strings.TrimSpace(msg))
	}
	_, err = os.Stdout.WriteString(line)
	return err
}

// postAdminAt is postAdmin to the admin socket of --admin-socket or --bar.
func postAdminAt(sock, barSpec string, req map[string]any, timeout time.Duration) error {
	path, err := adminSocket(sock, barSpec)
	if err != nil {
		return err
	}
	return postAdmin(path, req, timeout)
}
