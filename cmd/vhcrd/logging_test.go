package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestLogFormat(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(&buf, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden")
	log.Info("vhcrd starting", "vfs", 8)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("json log line %q: %v", buf.String(), err)
	}
	if rec["msg"] != "vhcrd starting" || rec["vfs"] != float64(8) || rec["level"] != "INFO" {
		t.Errorf("json record %v", rec)
	}
	buf.Reset()
	if log, err = newLogger(&buf, "text", "debug"); err != nil {
		t.Fatal(err)
	}
	log.Debug("poller", "vf", 3)
	if got := buf.String(); !strings.Contains(got, "level=DEBUG msg=poller vf=3") {
		t.Errorf("text log line %q", got)
	}
	for _, bad := range [][2]string{{"logfmt", "info"}, {"json", "loud"}} {
		if _, err := newLogger(&buf, bad[0], bad[1]); err == nil {
			t.Errorf("--log-format %s --log-level %s accepted", bad[0], bad[1])
		}
	}
}
