package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"time"
)

// Link types (tcpdump.org's LINKTYPE_* list).
const (
	LinkTypeEthernet = 1   // LINKTYPE_ETHERNET: IEEE 802.3 frames without FCS
	LinkTypeUpperPDU = 252 // LINKTYPE_WIRESHARK_UPPER_PDU
)

// The file format's constants.
const (
	magicMicro   = 0xa1b2c3d4 // microsecond timestamps, written little endian
	versionMajor = 2
	versionMinor = 4
	fileHdrLen   = 24
	recHdrLen    = 16
	// SnapLen is the longest record the files say they hold; longer ones
	// are cut to it (their original length is kept in the record header).
	SnapLen = 65535
)

// ErrClosed is returned by a Writer after an I/O error or Close.
var ErrClosed = errors.New("pcap: writer closed")

// Writer writes a pcap stream of one link type. It is not safe for
// concurrent use: its callers serialise (mad/capture's Writer holds a
// lock; the eSwitch writes from the poller).
type Writer struct {
	bw  *bufio.Writer
	c   io.Closer
	now func() time.Time
	err error
	hdr [recHdrLen]byte
}

// NewWriter writes the file header for linkType to w and returns a
// Writer. now stamps the records (nil means time.Now). If w is an
// io.Closer, Close closes it.
func NewWriter(w io.Writer, linkType uint32, now func() time.Time) (*Writer, error) {
	if now == nil {
		now = time.Now
	}
	pw := &Writer{bw: bufio.NewWriter(w), now: now}
	if c, ok := w.(io.Closer); ok {
		pw.c = c
	}
	var h [fileHdrLen]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], magicMicro)
	le.PutUint16(h[4:], versionMajor)
	le.PutUint16(h[6:], versionMinor)
	le.PutUint32(h[16:], SnapLen)
	le.PutUint32(h[20:], linkType)
	if _, err := pw.bw.Write(h[:]); err != nil {
		return nil, err
	}
	return pw, pw.bw.Flush()
}

// WriteRecord appends one record of b, stamped now, buffered until Flush
// (or the buffer fills). It allocates nothing.
func (w *Writer) WriteRecord(b []byte) error {
	if w.err != nil {
		return w.err
	}
	incl := min(len(b), SnapLen)
	ts := w.now()
	le := binary.LittleEndian
	le.PutUint32(w.hdr[0:], uint32(ts.Unix()))
	le.PutUint32(w.hdr[4:], uint32(ts.Nanosecond()/1000))
	le.PutUint32(w.hdr[8:], uint32(incl))
	le.PutUint32(w.hdr[12:], uint32(len(b)))
	if _, err := w.bw.Write(w.hdr[:]); err != nil {
		w.err = err
		return err
	}
	if _, err := w.bw.Write(b[:incl]); err != nil {
		w.err = err
		return err
	}
	return nil
}

// Flush writes the buffered records.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.err = w.bw.Flush()
	return w.err
}

// Close flushes and, if the underlying writer is a Closer, closes it.
// The Writer then returns ErrClosed.
func (w *Writer) Close() error {
	err := w.Flush()
	if w.c != nil {
		if cerr := w.c.Close(); err == nil {
			err = cerr
		}
		w.c = nil
	}
	if w.err == nil {
		w.err = ErrClosed
	}
	return err
}
