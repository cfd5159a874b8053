package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// TestWriterFormat: the file header and the records, byte by byte as the
// libpcap format has them; a record past SnapLen cut to it with its
// original length kept; nothing after Close.
func TestWriterFormat(t *testing.T) {
	var buf bytes.Buffer
	ts := time.Unix(1700000000, 123456789)
	w, err := NewWriter(&buf, LinkTypeEthernet, func() time.Time { return ts })
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("file header % x, want % x", buf.Bytes(), want)
	}
	if err := w.WriteRecord([]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, SnapLen+10)
	if err := w.WriteRecord(big); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()[24:]
	le := binary.LittleEndian
	rec := func(b []byte) (sec, usec, incl, orig uint32) {
		return le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:]), le.Uint32(b[12:])
	}
	if s, us, i, o := rec(b); s != 1700000000 || us != 123456 || i != 3 || o != 3 || !bytes.Equal(b[16:19], []byte{1, 2, 3}) {
		t.Fatalf("record 1: %d.%06d %d/%d % x", s, us, i, o, b[16:19])
	}
	b = b[19:]
	if _, _, i, o := rec(b); i != SnapLen || o != SnapLen+10 || len(b) != 16+SnapLen {
		t.Fatalf("record 2: %d of %d bytes, %d in the file", i, o, len(b)-16)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRecord([]byte{1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestWriteRecordAllocatesNothing(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, LinkTypeEthernet, nil)
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 60)
	buf.Grow(1 << 20)
	if a := testing.AllocsPerRun(100, func() { _ = w.WriteRecord(frame) }); a != 0 {
		t.Fatalf("%.1f allocations per record", a)
	}
}
