package mad

import (
	"encoding/binary"
	"fmt"
)

var be = binary.BigEndian

// MAD is one 256-byte management datagram as it crosses the wire. The
// accessors read and write the common header and the SMP-specific fields in
// place; they never allocate.
type MAD [Size]byte

// Byte offsets inside a MAD.
const (
	offMKey       = 24 // SMP M_Key
	offBKey       = 24 // BM B_Key
	offDrSLID     = 32
	offDrDLID     = 34
	offSMPData    = 64
	smpDataSize   = 64
	offInitPath   = 128
	offReturnPath = 192
	offGSData     = 64
	gsDataSize    = 192
	headerSize    = 24
)

// BaseVersion returns byte 0.
func (m *MAD) BaseVersion() uint8 { return m[0] }

// MgmtClass returns byte 1.
func (m *MAD) MgmtClass() uint8 { return m[1] }

// ClassVersion returns byte 2.
func (m *MAD) ClassVersion() uint8 { return m[2] }

// Method returns byte 3 including the response bit.
func (m *MAD) Method() uint8 { return m[3] }

// Status returns bytes 4-5 (for DR SMPs including the D bit).
func (m *MAD) Status() uint16 { return be.Uint16(m[4:]) }

// SetStatus writes bytes 4-5.
func (m *MAD) SetStatus(s uint16) { be.PutUint16(m[4:], s) }

// TID returns the transaction ID.
func (m *MAD) TID() uint64 { return be.Uint64(m[8:]) }

// AttrID returns the attribute ID.
func (m *MAD) AttrID() uint16 { return be.Uint16(m[16:]) }

// AttrMod returns the attribute modifier.
func (m *MAD) AttrMod() uint32 { return be.Uint32(m[20:]) }

// MKey returns the SMP M_Key (bytes 24-31).
func (m *MAD) MKey() uint64 { return be.Uint64(m[offMKey:]) }

// BKey returns the BM B_Key (bytes 24-31).
func (m *MAD) BKey() uint64 { return be.Uint64(m[offBKey:]) }

// HopPointer returns the DR SMP hop pointer (byte 6).
func (m *MAD) HopPointer() uint8 { return m[6] }

// HopCount returns the DR SMP hop count (byte 7).
func (m *MAD) HopCount() uint8 { return m[7] }

// Direction reports the DR SMP D bit.
func (m *MAD) Direction() bool { return m[4]&0x80 != 0 }

// DrSLID returns the DR SMP DrSLID.
func (m *MAD) DrSLID() uint16 { return be.Uint16(m[offDrSLID:]) }

// DrDLID returns the DR SMP DrDLID.
func (m *MAD) DrDLID() uint16 { return be.Uint16(m[offDrDLID:]) }

// SMPData returns the 64-byte SMP attribute area (bytes 64-127).
func (m *MAD) SMPData() []byte { return m[offSMPData : offSMPData+smpDataSize] }

// GSData returns the 192-byte GS data area (bytes 64-255).
func (m *MAD) GSData() []byte { return m[offGSData:] }

// IsResponse reports the response bit of the method.
func (m *MAD) IsResponse() bool { return m[3]&MethodResp != 0 }

// DecodeMAD copies b into a MAD. b must be exactly 256 bytes: a MAD on QP0 or
// QP1 is never shorter or longer.
func DecodeMAD(b []byte) (MAD, error) {
	var m MAD
	if len(b) != Size {
		return m, fmt.Errorf("mad: MAD of %d bytes, want %d: %w", len(b), Size, ErrSize)
	}
	copy(m[:], b)
	return m, nil
}

// Header is the common 24-byte MAD header.
type Header struct {
	BaseVersion   uint8
	MgmtClass     uint8
	ClassVersion  uint8
	Method        uint8 // including the response bit 0x80
	Status        uint16
	ClassSpecific uint16
	TID           uint64
	AttrID        uint16
	AttrMod       uint32
}

// HeaderSize is the size of Header on the wire.
const HeaderSize = headerSize

// Decode reads a header from the first 24 bytes of b. Bytes 18-19 are
// reserved.
func (h *Header) Decode(b []byte) error {
	if len(b) < HeaderSize {
		return fmt.Errorf("mad: header: %d bytes, want %d: %w", len(b), HeaderSize, ErrShort)
	}
	h.BaseVersion, h.MgmtClass, h.ClassVersion, h.Method = b[0], b[1], b[2], b[3]
	h.Status = be.Uint16(b[4:])
	h.ClassSpecific = be.Uint16(b[6:])
	h.TID = be.Uint64(b[8:])
	h.AttrID = be.Uint16(b[16:])
	h.AttrMod = be.Uint32(b[20:])
	return nil
}

// Encode writes the header into the first 24 bytes of b.
func (h *Header) Encode(b []byte) error {
	if len(b) < HeaderSize {
		return fmt.Errorf("mad: header: buffer of %d bytes, want %d: %w", len(b), HeaderSize, ErrShort)
	}
	b[0], b[1], b[2], b[3] = h.BaseVersion, h.MgmtClass, h.ClassVersion, h.Method
	be.PutUint16(b[4:], h.Status)
	be.PutUint16(b[6:], h.ClassSpecific)
	be.PutUint64(b[8:], h.TID)
	be.PutUint16(b[16:], h.AttrID)
	b[18], b[19] = 0, 0
	be.PutUint32(b[20:], h.AttrMod)
	return nil
}

// SMP is a LID-routed subnet management packet (class 0x01).
type SMP struct {
	Header
	MKey uint64
	Data [smpDataSize]byte
}

// Decode reads a LID-routed SMP from a 256-byte MAD. Bytes 32-63 and 128-255
// are reserved.
func (s *SMP) Decode(b []byte) error {
	if len(b) != Size {
		return fmt.Errorf("mad: SMP of %d bytes, want %d: %w", len(b), Size, ErrSize)
	}
	if err := s.Header.Decode(b); err != nil {
		return err
	}
	if s.MgmtClass != ClassSubnLID {
		return fmt.Errorf("mad: SMP class 0x%02x, want 0x01: %w", s.MgmtClass, ErrClass)
	}
	s.MKey = be.Uint64(b[offMKey:])
	copy(s.Data[:], b[offSMPData:])
	return nil
}

// Encode writes the SMP into a 256-byte buffer, zeroing reserved bytes.
func (s *SMP) Encode(b []byte) error {
	if len(b) != Size {
		return fmt.Errorf("mad: SMP buffer of %d bytes, want %d: %w", len(b), Size, ErrSize)
	}
	clear(b)
	if err := s.Header.Encode(b); err != nil {
		return err
	}
	be.PutUint64(b[offMKey:], s.MKey)
	copy(b[offSMPData:], s.Data[:])
	return nil
}

// DRSMP is a directed-route subnet management packet (class 0x81).
type DRSMP struct {
	BaseVersion  uint8
	MgmtClass    uint8
	ClassVersion uint8
	Method       uint8
	Direction    bool   // the D bit: set on the returning path
	Status       uint16 // the 15 status bits below the D bit
	HopPointer   uint8
	HopCount     uint8
	TID          uint64
	AttrID       uint16
	AttrMod      uint32
	MKey         uint64
	DrSLID       uint16
	DrDLID       uint16
	Data         [smpDataSize]byte
	InitialPath  [MaxHops]byte
	ReturnPath   [MaxHops]byte
}

// Decode reads a directed-route SMP from a 256-byte MAD. The hop count must
// be below 64 and the hop pointer at most HopCount+1 (C14-6, C14-9).
func (s *DRSMP) Decode(b []byte) error {
	if len(b) != Size {
		return fmt.Errorf("mad: DR SMP of %d bytes, want %d: %w", len(b), Size, ErrSize)
	}
	if b[1] != ClassSubnDirected {
		return fmt.Errorf("mad: DR SMP class 0x%02x, want 0x81: %w", b[1], ErrClass)
	}
	hp, hc := b[6], b[7]
	if hc >= MaxHops {
		return fmt.Errorf("mad: DR SMP hop count %d > 63: %w", hc, ErrHops)
	}
	if int(hp) > int(hc)+1 {
		return fmt.Errorf("mad: DR SMP hop pointer %d > hop count %d + 1: %w", hp, hc, ErrHops)
	}
	s.BaseVersion, s.MgmtClass, s.ClassVersion, s.Method = b[0], b[1], b[2], b[3]
	st := be.Uint16(b[4:])
	s.Direction = st&StatusDirection != 0
	s.Status = st &^ StatusDirection
	s.HopPointer, s.HopCount = hp, hc
	s.TID = be.Uint64(b[8:])
	s.AttrID = be.Uint16(b[16:])
	s.AttrMod = be.Uint32(b[20:])
	s.MKey = be.Uint64(b[offMKey:])
	s.DrSLID = be.Uint16(b[offDrSLID:])
	s.DrDLID = be.Uint16(b[offDrDLID:])
	copy(s.Data[:], b[offSMPData:])
	copy(s.InitialPath[:], b[offInitPath:])
	copy(s.ReturnPath[:], b[offReturnPath:])
	return nil
}

// Encode writes the DR SMP into a 256-byte buffer, zeroing reserved bytes.
func (s *DRSMP) Encode(b []byte) error {
	if len(b) != Size {
		return fmt.Errorf("mad: DR SMP buffer of %d bytes, want %d: %w", len(b), Size, ErrSize)
	}
	clear(b)
	b[0], b[1], b[2], b[3] = s.BaseVersion, s.MgmtClass, s.ClassVersion, s.Method
	st := s.Status &^ StatusDirection
	if s.Direction {
		st |= StatusDirection
	}
	be.PutUint16(b[4:], st)
	b[6], b[7] = s.HopPointer, s.HopCount
	be.PutUint64(b[8:], s.TID)
	be.PutUint16(b[16:], s.AttrID)
	be.PutUint32(b[20:], s.AttrMod)
	be.PutUint64(b[offMKey:], s.MKey)
	be.PutUint16(b[offDrSLID:], s.DrSLID)
	be.PutUint16(b[offDrDLID:], s.DrDLID)
	copy(b[offSMPData:], s.Data[:])
	copy(b[offInitPath:], s.InitialPath[:])
	copy(b[offReturnPath:], s.ReturnPath[:])
	return nil
}

// GSMAD is a general-services MAD with the 64-byte header of PerfMgt and BM:
// the common header, 40 class-specific bytes (reserved for PerfMgt; for BM
// the B_Key in the first 8 and 32 reserved bytes) and 192 bytes of data.
type GSMAD struct {
	Header
	// BKey is the BM B_Key (bytes 24-31); zero for other classes.
	BKey uint64
	Data [gsDataSize]byte
}

// Decode reads a GS MAD of class PerfMgt (0x04) or BM (0x05). For PerfMgt
// bytes 24-63 are reserved; for BM bytes 32-63.
func (g *GSMAD) Decode(b []byte) error {
	if len(b) != Size {
		return fmt.Errorf("mad: GS MAD of %d bytes, want %d: %w", len(b), Size, ErrSize)
	}
	if err := g.Header.Decode(b); err != nil {
		return err
	}
	switch g.MgmtClass {
	case ClassPerfMgt:
		g.BKey = 0
	case ClassBM:
		g.BKey = be.Uint64(b[offBKey:])
	default:
		return fmt.Errorf("mad: GS MAD class 0x%02x, want 0x04 or 0x05: %w", g.MgmtClass, ErrClass)
	}
	copy(g.Data[:], b[offGSData:])
	return nil
}

// Encode writes the GS MAD into a 256-byte buffer, zeroing reserved bytes.
func (g *GSMAD) Encode(b []byte) error {
	if len(b) != Size {
		return fmt.Errorf("mad: GS MAD buffer of %d bytes, want %d: %w", len(b), Size, ErrSize)
	}
	clear(b)
	if err := g.Header.Encode(b); err != nil {
		return err
	}
	if g.MgmtClass == ClassBM {
		be.PutUint64(b[offBKey:], g.BKey)
	}
	copy(b[offGSData:], g.Data[:])
	return nil
}
