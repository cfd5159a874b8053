package mad

import "fmt"

// Notice sizes: an SMP carries bytes 0-63; GS classes also carry the 16-byte
// IssuerGID (bytes 64-79).
const (
	NoticeSize       = 64
	NoticeGSSize     = 80
	DataDetailsSize  = 54
	noticeDetailsOff = 10
)

// Notice (0x0002), the attribute of every Trap and TrapRepress.
type Notice struct {
	IsGeneric bool
	Type      uint8  // 7 bits
	Producer  uint32 // 24 bits: ProducerType (generic) or VendorID
	TrapNum   uint16 // TrapNumber (generic) or DeviceID
	IssuerLID uint16
	Toggle    bool
	Count     uint16 // 15 bits
	Details   [DataDetailsSize]byte
	IssuerGID [16]byte // GS classes only
}

func (n *Notice) decode(b []byte) error {
	typ := b[0] & 0x7F
	if typ > NoticeInformational && typ != NoticeEmpty {
		return fmt.Errorf("mad: Notice: type %d: %w", typ, ErrInvalid)
	}
	n.IsGeneric = b[0]&0x80 != 0
	n.Type = typ
	n.Producer = uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	n.TrapNum = be.Uint16(b[4:])
	n.IssuerLID = be.Uint16(b[6:])
	tc := be.Uint16(b[8:])
	n.Toggle = tc&0x8000 != 0
	n.Count = tc & 0x7FFF
	copy(n.Details[:], b[noticeDetailsOff:NoticeSize])
	return nil
}

// Decode reads the 64-byte Notice of an SMP; IssuerGID is cleared. Types 5
// to 0x7E are reserved and rejected.
func (n *Notice) Decode(b []byte) error {
	if len(b) < NoticeSize {
		return short("Notice", len(b), NoticeSize)
	}
	n.IssuerGID = [16]byte{}
	return n.decode(b)
}

// DecodeGS reads the 80-byte Notice of a GS class, with IssuerGID.
func (n *Notice) DecodeGS(b []byte) error {
	if len(b) < NoticeGSSize {
		return short("Notice (GS)", len(b), NoticeGSSize)
	}
	if err := n.decode(b); err != nil {
		return err
	}
	copy(n.IssuerGID[:], b[NoticeSize:NoticeGSSize])
	return nil
}

// Encode writes the 64-byte SMP form.
func (n *Notice) Encode(b []byte) error {
	if len(b) < NoticeSize {
		return short("Notice buffer", len(b), NoticeSize)
	}
	b[0] = bit(n.IsGeneric, 0x80) | n.Type&0x7F
	b[1], b[2], b[3] = byte(n.Producer>>16), byte(n.Producer>>8), byte(n.Producer)
	be.PutUint16(b[4:], n.TrapNum)
	be.PutUint16(b[6:], n.IssuerLID)
	tc := n.Count & 0x7FFF
	if n.Toggle {
		tc |= 0x8000
	}
	be.PutUint16(b[8:], tc)
	copy(b[noticeDetailsOff:NoticeSize], n.Details[:])
	return nil
}

// EncodeGS writes the 80-byte GS form.
func (n *Notice) EncodeGS(b []byte) error {
	if len(b) < NoticeGSSize {
		return short("Notice (GS) buffer", len(b), NoticeGSSize)
	}
	if err := n.Encode(b); err != nil {
		return err
	}
	copy(b[NoticeSize:NoticeGSSize], n.IssuerGID[:])
	return nil
}

// Details offsets below are Notice byte offsets minus 10.
const dd = noticeDetailsOff

// Trap256 is the DataDetails of trap 256, Bad M_Key.
type Trap256 struct {
	LIDAddr         uint16
	DRSLID          uint16
	Method          uint8
	AttrID          uint16
	AttrMod         uint32
	MKey            uint64
	DRNotice        bool
	DRPathTruncated bool
	DRHopCount      uint8 // at most 30
	DRReturnPath    [30]byte
}

// Decode reads trap 256 details from the 54-byte DataDetails. A hop count
// above 30 (the size of the return path) is inconsistent.
func (t *Trap256) Decode(d []byte) error {
	if len(d) < DataDetailsSize {
		return short("trap 256 details", len(d), DataDetailsSize)
	}
	if hc := d[33-dd] & 0x3F; hc > 30 {
		return fmt.Errorf("mad: trap 256: DRHopCount %d > 30: %w", hc, ErrInvalid)
	}
	t.LIDAddr = be.Uint16(d[12-dd:])
	t.DRSLID = be.Uint16(d[14-dd:])
	t.Method = d[16-dd]
	t.AttrID = be.Uint16(d[18-dd:])
	t.AttrMod = be.Uint32(d[20-dd:])
	t.MKey = be.Uint64(d[24-dd:])
	t.DRNotice = d[33-dd]&0x80 != 0
	t.DRPathTruncated = d[33-dd]&0x40 != 0
	t.DRHopCount = d[33-dd] & 0x3F
	copy(t.DRReturnPath[:], d[34-dd:])
	return nil
}

// Encode writes trap 256 details into a 54-byte DataDetails.
func (t *Trap256) Encode(d []byte) error {
	if len(d) < DataDetailsSize {
		return short("trap 256 details buffer", len(d), DataDetailsSize)
	}
	clear(d[:DataDetailsSize])
	be.PutUint16(d[12-dd:], t.LIDAddr)
	be.PutUint16(d[14-dd:], t.DRSLID)
	d[16-dd] = t.Method
	be.PutUint16(d[18-dd:], t.AttrID)
	be.PutUint32(d[20-dd:], t.AttrMod)
	be.PutUint64(d[24-dd:], t.MKey)
	d[33-dd] = bit(t.DRNotice, 0x80) | bit(t.DRPathTruncated, 0x40) | t.DRHopCount&0x3F
	copy(d[34-dd:], t.DRReturnPath[:])
	return nil
}

// Trap257 is the DataDetails of trap 257 (Bad P_Key) and 258 (Bad Q_Key).
type Trap257 struct {
	LIDAddr1 uint16 // source LID
	LIDAddr2 uint16 // destination LID
	Key      uint32 // P_Key (low 16 bits) for 257, Q_Key for 258
	SL       uint8  // 4 bits
	QP1      uint32 // source QP, 24 bits
	QP2      uint32 // destination QP, 24 bits
	GIDAddr1 [16]byte
	GIDAddr2 [16]byte
}

// Decode reads trap 257/258 details.
func (t *Trap257) Decode(d []byte) error {
	if len(d) < DataDetailsSize {
		return short("trap 257/258 details", len(d), DataDetailsSize)
	}
	t.LIDAddr1 = be.Uint16(d[12-dd:])
	t.LIDAddr2 = be.Uint16(d[14-dd:])
	t.Key = be.Uint32(d[16-dd:])
	t.SL = d[20-dd] >> 4
	t.QP1 = be.Uint32(d[20-dd:]) & 0xFFFFFF
	t.QP2 = be.Uint32(d[24-dd:]) & 0xFFFFFF
	copy(t.GIDAddr1[:], d[28-dd:])
	copy(t.GIDAddr2[:], d[44-dd:])
	return nil
}

// Encode writes trap 257/258 details.
func (t *Trap257) Encode(d []byte) error {
	if len(d) < DataDetailsSize {
		return short("trap 257/258 details buffer", len(d), DataDetailsSize)
	}
	clear(d[:DataDetailsSize])
	be.PutUint16(d[12-dd:], t.LIDAddr1)
	be.PutUint16(d[14-dd:], t.LIDAddr2)
	be.PutUint32(d[16-dd:], t.Key)
	be.PutUint32(d[20-dd:], uint32(t.SL&0xF)<<28|t.QP1&0xFFFFFF)
	be.PutUint32(d[24-dd:], t.QP2&0xFFFFFF)
	copy(d[28-dd:], t.GIDAddr1[:])
	copy(d[44-dd:], t.GIDAddr2[:])
	return nil
}

// Trap259Switch is the DataDetails of the SMP-class trap 259, Bad P_Key at
// a switch external port.
type Trap259Switch struct {
	DataValid uint16
	LID1      uint16
	LID2      uint16
	PKey      uint16
	SL        uint8  // 4 bits
	QP1       uint32 // 24 bits
	QP2       uint32 // 24 bits
	GID1      [16]byte
	GID2      [16]byte
	SWLIDAddr uint16
	PortNo    uint8
}

// Decode reads SMP-class trap 259 details.
func (t *Trap259Switch) Decode(d []byte) error {
	if len(d) < DataDetailsSize {
		return short("trap 259 (switch) details", len(d), DataDetailsSize)
	}
	t.DataValid = be.Uint16(d[10-dd:])
	t.LID1 = be.Uint16(d[12-dd:])
	t.LID2 = be.Uint16(d[14-dd:])
	t.PKey = be.Uint16(d[16-dd:])
	t.SL = d[18-dd] >> 4
	t.QP1 = uint32(d[19-dd])<<16 | uint32(d[20-dd])<<8 | uint32(d[21-dd])
	t.QP2 = uint32(d[23-dd])<<16 | uint32(d[24-dd])<<8 | uint32(d[25-dd])
	copy(t.GID1[:], d[26-dd:])
	copy(t.GID2[:], d[42-dd:])
	t.SWLIDAddr = be.Uint16(d[58-dd:])
	t.PortNo = d[60-dd]
	return nil
}

// Encode writes SMP-class trap 259 details.
func (t *Trap259Switch) Encode(d []byte) error {
	if len(d) < DataDetailsSize {
		return short("trap 259 (switch) details buffer", len(d), DataDetailsSize)
	}
	clear(d[:DataDetailsSize])
	be.PutUint16(d[10-dd:], t.DataValid)
	be.PutUint16(d[12-dd:], t.LID1)
	be.PutUint16(d[14-dd:], t.LID2)
	be.PutUint16(d[16-dd:], t.PKey)
	d[18-dd] = t.SL << 4
	d[19-dd], d[20-dd], d[21-dd] = byte(t.QP1>>16), byte(t.QP1>>8), byte(t.QP1)
	d[23-dd], d[24-dd], d[25-dd] = byte(t.QP2>>16), byte(t.QP2>>8), byte(t.QP2)
	copy(d[26-dd:], t.GID1[:])
	copy(d[42-dd:], t.GID2[:])
	be.PutUint16(d[58-dd:], t.SWLIDAddr)
	d[60-dd] = t.PortNo
	return nil
}

// Trap259BKey is the DataDetails of the BM-class trap 259, Bad B_Key: "Bad
// B_Key, <B_Key> from <LIDADDR>/<GIDADDR>/<QP> attempted <METHOD> with
// <ATTRIBUTEID> and <ATTRIBUTEMODIFIER>".
type Trap259BKey struct {
	LIDAddr uint16
	Method  uint8
	AttrID  uint16
	AttrMod uint32
	QP      uint32 // 24 bits
	BKey    uint64
	GIDAddr [16]byte
}

// Decode reads BM trap 259 details.
func (t *Trap259BKey) Decode(d []byte) error {
	if len(d) < DataDetailsSize {
		return short("trap 259 (B_Key) details", len(d), DataDetailsSize)
	}
	t.LIDAddr = be.Uint16(d[10-dd:])
	t.Method = d[12-dd]
	t.AttrID = be.Uint16(d[14-dd:])
	t.AttrMod = be.Uint32(d[16-dd:])
	t.QP = be.Uint32(d[20-dd:]) & 0xFFFFFF
	t.BKey = be.Uint64(d[24-dd:])
	copy(t.GIDAddr[:], d[32-dd:])
	return nil
}

// Encode writes BM trap 259 details.
func (t *Trap259BKey) Encode(d []byte) error {
	if len(d) < DataDetailsSize {
		return short("trap 259 (B_Key) details buffer", len(d), DataDetailsSize)
	}
	clear(d[:DataDetailsSize])
	be.PutUint16(d[10-dd:], t.LIDAddr)
	d[12-dd] = t.Method
	be.PutUint16(d[14-dd:], t.AttrID)
	be.PutUint32(d[16-dd:], t.AttrMod)
	be.PutUint32(d[20-dd:], t.QP&0xFFFFFF)
	be.PutUint64(d[24-dd:], t.BKey)
	copy(d[32-dd:], t.GIDAddr[:])
	return nil
}
