package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"time"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/pcap"
)

// LinkTypeUpperPDU is LINKTYPE_WIRESHARK_UPPER_PDU.
const LinkTypeUpperPDU = pcap.LinkTypeUpperPDU

// Sizes of the parts of a captured packet.
const (
	LRHSize  = mad.LRHSize
	BTHSize  = mad.BTHSize
	DETHSize = mad.DETHSize
	ICRCSize = 4
	VCRCSize = 2
	// exported-PDU header: tag 12 (protocol name) "infiniband" padded to
	// 12 bytes, then the end tag.
	pduHeaderSize = 4 + 12 + 4
	// MaxPacket is the largest packet (with a GRH) without the PDU header.
	MaxPacket = LRHSize + mad.GRHSize + BTHSize + DETHSize + mad.Size + ICRCSize + VCRCSize
)

// ErrClosed is returned by a Writer after an I/O error or Close.
var ErrClosed = pcap.ErrClosed

var pduHeader = [pduHeaderSize]byte{0, 12, 0, 12, 'i', 'n', 'f', 'i', 'n', 'i', 'b', 'a', 'n', 'd', 0, 0, 0, 0, 0, 0}

// Packet is one UD packet carrying a MAD.
type Packet struct {
	SLID, DLID uint16
	SL         uint8
	VL         uint8 // 15 for QP0
	PKey       uint16
	DestQP     uint32
	SrcQP      uint32
	QKey       uint32
	PSN        uint32
	GRH        *mad.GRH // optional; LNH 3 when set
	MAD        *mad.MAD
}

// Encode writes the packet (LRH … VCRC) into b, which must hold
// MaxPacket bytes, and returns its length.
func Encode(p *Packet, b []byte) (int, error) {
	if len(b) < MaxPacket {
		return 0, fmt.Errorf("capture: buffer of %d bytes, want %d", len(b), MaxPacket)
	}
	if p.MAD == nil {
		return 0, errors.New("capture: packet without a MAD")
	}
	be := binary.BigEndian
	n := LRHSize
	lnh := byte(2)
	if p.GRH != nil {
		lnh = 3
		_ = p.GRH.Encode(b[n:])
		n += mad.GRHSize
	}
	bth := n
	b[n] = 0x64 // UD SEND only
	b[n+1] = 0  // SE, M, PadCnt, TVer
	be.PutUint16(b[n+2:], p.PKey)
	be.PutUint32(b[n+4:], p.DestQP&0xFFFFFF)
	be.PutUint32(b[n+8:], p.PSN&0xFFFFFF)
	n += BTHSize
	be.PutUint32(b[n:], p.QKey)
	be.PutUint32(b[n+4:], p.SrcQP&0xFFFFFF)
	n += DETHSize
	n += copy(b[n:], p.MAD[:])
	words := (n + ICRCSize) / 4
	b[0] = p.VL << 4 // LVer 0
	b[1] = p.SL<<4 | lnh
	be.PutUint16(b[2:], p.DLID)
	be.PutUint16(b[4:], uint16(words)&0x7FF)
	be.PutUint16(b[6:], p.SLID)
	be.PutUint32(b[n:], icrc(b[:n], bth, p.GRH != nil))
	n += ICRCSize
	be.PutUint16(b[n:], vcrc(b[:n]))
	n += VCRCSize
	return n, nil
}

// icrc is CRC-32 over the packet with the variant fields set to ones: the
// LRH's VL, the GRH's traffic class, flow label and hop limit, and the
// BTH's reserved byte after the P_Key.
func icrc(pkt []byte, bth int, grh bool) uint32 {
	var head [LRHSize + mad.GRHSize + BTHSize]byte
	n := copy(head[:], pkt[:bth+BTHSize])
	head[0] |= 0xF0
	if grh {
		head[LRHSize] |= 0x0F
		head[LRHSize+1], head[LRHSize+2], head[LRHSize+3] = 0xFF, 0xFF, 0xFF
		head[LRHSize+7] = 0xFF
	}
	head[bth+4] = 0xFF
	c := crc32.Update(0, crc32.IEEETable, head[:n])
	return crc32.Update(c, crc32.IEEETable, pkt[bth+BTHSize:])
}

// vcrc is CRC-16 with polynomial 0x100B, initial value 0xFFFF, over LRH
// through ICRC.
func vcrc(pkt []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, c := range pkt {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x100B
			} else {
				crc <<= 1
			}
		}
	}
	return crc ^ 0xFFFF
}

// Writer writes a pcap stream of MAD packets (pcap.LinkTypeUpperPDU). It
// is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	pw  *pcap.Writer
	buf [pduHeaderSize + MaxPacket]byte
}

// NewWriter writes the pcap file header to w and returns a Writer. now
// stamps the records (nil means time.Now). If w is an io.Closer, Close
// closes it.
func NewWriter(w io.Writer, now func() time.Time) (*Writer, error) {
	pw, err := pcap.NewWriter(w, LinkTypeUpperPDU, now)
	if err != nil {
		return nil, err
	}
	return &Writer{pw: pw}, nil
}

// WritePacket appends one record.
func (w *Writer) WritePacket(p *Packet) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := Encode(p, w.buf[pduHeaderSize:])
	if err != nil {
		return err
	}
	copy(w.buf[:], pduHeader[:])
	return w.pw.WriteRecord(w.buf[:pduHeaderSize+n])
}

// SendTrap implements mad.TrapSink: it records the trap as sent. Errors
// are kept and returned by Flush and Close.
func (w *Writer) SendTrap(t mad.Trap) {
	p := Packet{SLID: t.SLID, DLID: t.DLID, SL: t.SL, PKey: t.PKey, DestQP: t.DestQP, SrcQP: t.SrcQP, QKey: t.QKey, MAD: &t.MAD}
	if t.Class == mad.ClassSubnLID || t.Class == mad.ClassSubnDirected {
		p.VL = 15
	}
	_ = w.WritePacket(&p)
}

// Flush writes buffered records.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pw.Flush()
}

// Close flushes and, if the underlying writer is a Closer, closes it.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pw.Close()
}
