package main

import (
	"os"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
)

// postAdminAt sends one request to the admin socket of --admin-socket, or
// of the vhcrd serving --bar, and prints the answer.
func postAdminAt(sock, barSpec string, req map[string]any, timeout time.Duration) error {
	path := sock
	if path == "" {
		var err error
		if path, err = adminc.DefaultSocket(barSpec); err != nil {
			return usageErr(err)
		}
	}
	line, err := adminc.Call(path, req, timeout)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(line)
	return err
}
