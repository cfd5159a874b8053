package mad

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// codec is what every fixed-size wire structure implements.
type codec interface {
	Decode([]byte) error
	Encode([]byte) error
}

var sentinels = []error{ErrShort, ErrSize, ErrVersion, ErrClass, ErrHops, ErrInvalid}

func isSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// checkRoundTrip decodes b into a fresh value from mk; on success it checks
// that encoding reproduces b (reserved bits cleared) and that decoding the
// encoding gives the same value. On failure the error must wrap a sentinel.
func checkRoundTrip(t *testing.T, mk func() codec, size int, reserved []byte, b []byte) {
	t.Helper()
	v := mk()
	err := v.Decode(b)
	if err != nil {
		if !isSentinel(err) {
			t.Fatalf("Decode error %v wraps no sentinel", err)
		}
		if len(b) >= size && errors.Is(err, ErrShort) {
			t.Fatalf("Decode of %d bytes says short (size %d): %v", len(b), size, err)
		}
		return
	}
	if len(b) < size {
		t.Fatalf("Decode accepted %d bytes, size %d", len(b), size)
	}
	enc := make([]byte, size)
	if err := v.Encode(enc); err != nil {
		t.Fatalf("Encode: %v", err)
	}
	want := bytes.Clone(b[:size])
	for i := range reserved {
		want[i] &^= reserved[i]
	}
	if !bytes.Equal(enc, want) {
		t.Fatalf("encode(decode(x)) != x\n got %x\nwant %x", enc, want)
	}
	v2 := mk()
	if err := v2.Decode(enc); err != nil {
		t.Fatalf("Decode(Encode(v)): %v", err)
	}
	if !reflect.DeepEqual(v, v2) {
		t.Fatalf("decode(encode(v)) != v\n got %+v\nwant %+v", v2, v)
	}
	if err := v.Encode(make([]byte, size-1)); !errors.Is(err, ErrShort) && !errors.Is(err, ErrSize) {
		t.Fatalf("Encode into a short buffer: %v", err)
	}
}

type wireCase struct {
	mk       func() codec
	size     int
	reserved []byte
	seeds    [][]byte
}

func maskOf(n int, set map[int]byte) []byte {
	m := make([]byte, n)
	for i, v := range set {
		m[i] = v
	}
	return m
}

func rangeMask(n int, ranges ...[2]int) []byte {
	m := make([]byte, n)
	for _, r := range ranges {
		for i := r[0]; i < r[1]; i++ {
			m[i] = 0xFF
		}
	}
	return m
}

// sample builds a byte pattern i*k+c of length n.
func sample(n int, k, c byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)*k + c
	}
	return b
}

func withBytes(b []byte, kv ...int) []byte {
	b = bytes.Clone(b)
	for i := 0; i+1 < len(kv); i += 2 {
		b[kv[i]] = byte(kv[i+1])
	}
	return b
}

func smpSeed(class uint8) []byte {
	var m MAD
	m[0], m[1], m[2], m[3] = 1, class, 1, MethodGet
	be.PutUint64(m[8:], 0x1122334455667788)
	be.PutUint16(m[16:], AttrPortInfo)
	be.PutUint32(m[20:], 1)
	be.PutUint64(m[24:], 0xAABBCCDD00112233)
	if class == ClassSubnDirected {
		be.PutUint16(m[32:], 0xFFFF)
		be.PutUint16(m[34:], 0xFFFF)
		m[6], m[7] = 1, 2
		m[129], m[130] = 1, 3
	}
	copy(m[64:], sample(64, 3, 1))
	return m[:]
}

var wireCases = map[string]wireCase{
	"FuzzMADHeader": {func() codec { return new(Header) }, HeaderSize, maskOf(HeaderSize, map[int]byte{18: 0xFF, 19: 0xFF}),
		[][]byte{smpSeed(1)[:24], sample(24, 7, 3), sample(10, 1, 1)}},
	"FuzzSMP": {func() codec { return new(SMP) }, Size, rangeMask(Size, [2]int{18, 20}, [2]int{32, 64}, [2]int{128, 256}),
		[][]byte{smpSeed(ClassSubnLID), sample(256, 1, 0), sample(255, 1, 0)}},
	"FuzzDRSMP": {func() codec { return new(DRSMP) }, Size, rangeMask(Size, [2]int{18, 20}, [2]int{36, 64}),
		[][]byte{smpSeed(ClassSubnDirected), withBytes(smpSeed(ClassSubnDirected), 7, 64), withBytes(smpSeed(ClassSubnDirected), 6, 4)}},
	"FuzzGSMAD": {func() codec { return new(GSMAD) }, Size, rangeMask(Size, [2]int{18, 20}, [2]int{32, 64}),
		[][]byte{withBytes(smpSeed(ClassSubnLID), 1, int(ClassBM)), withBytes(sample(256, 1, 0), 1, 5)}},
	"FuzzNodeDescription": {func() codec { return new(NodeDescription) }, NodeDescriptionSize, nil,
		[][]byte{append([]byte("vhcrd model hca"), make([]byte, 49)...), bytes.Repeat([]byte("x"), 64), append([]byte("a\x00b"), make([]byte, 61)...)}},
	"FuzzNodeInfo": {func() codec { return new(NodeInfo) }, NodeInfoSize, nil,
		[][]byte{withBytes(sample(40, 5, 1), 2, 1), withBytes(sample(40, 5, 1), 2, 9)}},
	"FuzzGUIDInfo": {func() codec { return new(GUIDInfo) }, GUIDInfoSize, nil, [][]byte{sample(64, 9, 2)}},
	"FuzzPortInfo": {func() codec { return new(PortInfo) }, PortInfoSize, portInfoReserved[:],
		[][]byte{withBytes(sample(64, 13, 7), 32, 0x74, 33, 0x52), withBytes(sample(64, 1, 0), 32, 0x0F)}},
	"FuzzPKeyTable":  {func() codec { return new(PKeyTable) }, PKeyTableSize, nil, [][]byte{sample(64, 17, 0xFF)}},
	"FuzzSLtoVL":     {func() codec { return new(SLtoVL) }, SLtoVLSize, nil, [][]byte{sample(8, 0x11, 0)}},
	"FuzzVLArbTable": {func() codec { return new(VLArbTable) }, VLArbSize, vlArbReserved[:], [][]byte{sample(64, 3, 0)}},
	"FuzzSMInfo": {func() codec { return new(SMInfo) }, SMInfoSize, nil,
		[][]byte{withBytes(sample(21, 3, 0), 20, 0x53), withBytes(sample(21, 3, 0), 20, 0x57)}},
	"FuzzNotice": {func() codec { return new(Notice) }, NoticeSize, nil,
		[][]byte{withBytes(sample(64, 3, 1), 0, 0x82, 4, 1, 5, 0), withBytes(sample(64, 3, 1), 0, 0x09)}},
	"FuzzTrap256": {func() codec { return new(Trap256) }, DataDetailsSize, maskOf(DataDetailsSize, map[int]byte{0: 0xFF, 1: 0xFF, 7: 0xFF, 22: 0xFF}),
		[][]byte{withBytes(sample(54, 7, 1), 23, 0xC5), withBytes(sample(54, 7, 1), 23, 0x3F)}},
	"FuzzTrap257": {func() codec { return new(Trap257) }, DataDetailsSize, maskOf(DataDetailsSize, map[int]byte{0: 0xFF, 1: 0xFF, 10: 0x0F, 14: 0xFF, 50: 0xFF, 51: 0xFF, 52: 0xFF, 53: 0xFF}),
		[][]byte{sample(54, 11, 3)}},
	"FuzzTrap259Switch": {func() codec { return new(Trap259Switch) }, DataDetailsSize, maskOf(DataDetailsSize, map[int]byte{8: 0x0F, 12: 0xFF, 51: 0xFF, 52: 0xFF, 53: 0xFF}),
		[][]byte{sample(54, 5, 9)}},
	"FuzzTrap259BKey": {func() codec { return new(Trap259BKey) }, DataDetailsSize, rangeMask(DataDetailsSize, [2]int{3, 4}, [2]int{10, 11}, [2]int{38, 54}),
		[][]byte{sample(54, 5, 9)}},
	"FuzzClassPortInfo": {func() codec { return new(ClassPortInfo) }, ClassPortInfoSize, classPortInfoReserved[:], [][]byte{sample(72, 7, 5)}},
	"FuzzPortCounters":  {func() codec { return new(PortCounters) }, PortCountersSize, portCountersReserved[:], [][]byte{sample(44, 3, 1)}},
	"FuzzPortCountersExtended": {func() codec { return new(PortCountersExtended) }, PortCountersExtendedSize, portCountersExtReserved[:],
		[][]byte{sample(72, 3, 1)}},
	"FuzzBKeyInfo": {func() codec { return new(BKeyInfo) }, BKeyInfoSize, bkeyInfoReserved[:], [][]byte{sample(14, 0x21, 0x80)}},
	"FuzzGRH": {func() codec { return new(GRH) }, GRHSize, nil,
		[][]byte{withBytes(sample(40, 3, 0), 0, 0x60), withBytes(sample(40, 3, 0), 0, 0x40)}},
}

// noticeGS adapts the 80-byte GS form of Notice to codec.
type noticeGS struct{ Notice }

func (n *noticeGS) Decode(b []byte) error { return n.DecodeGS(b) }
func (n *noticeGS) Encode(b []byte) error { return n.EncodeGS(b) }

func init() {
	wireCases["FuzzNoticeGS"] = wireCase{func() codec { return new(noticeGS) }, NoticeGSSize, nil,
		[][]byte{withBytes(sample(80, 3, 1), 0, 0x82, 4, 1, 5, 3)}}
}

func fuzzWire(f *testing.F) {
	c, ok := wireCases[f.Name()]
	if !ok {
		f.Fatalf("no wire case %s", f.Name())
	}
	for _, s := range c.seeds {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		reserved := c.reserved
		if f.Name() == "FuzzGSMAD" && len(b) > 1 && b[1] == ClassPerfMgt {
			// PerfMgt has no B_Key: bytes 24-31 are reserved too.
			reserved = rangeMask(Size, [2]int{18, 20}, [2]int{24, 64})
		}
		checkRoundTrip(t, c.mk, c.size, reserved, b)
	})
}

func FuzzMADHeader(f *testing.F)            { fuzzWire(f) }
func FuzzSMP(f *testing.F)                  { fuzzWire(f) }
func FuzzDRSMP(f *testing.F)                { fuzzWire(f) }
func FuzzGSMAD(f *testing.F)                { fuzzWire(f) }
func FuzzNodeDescription(f *testing.F)      { fuzzWire(f) }
func FuzzNodeInfo(f *testing.F)             { fuzzWire(f) }
func FuzzGUIDInfo(f *testing.F)             { fuzzWire(f) }
func FuzzPortInfo(f *testing.F)             { fuzzWire(f) }
func FuzzPKeyTable(f *testing.F)            { fuzzWire(f) }
func FuzzSLtoVL(f *testing.F)               { fuzzWire(f) }
func FuzzVLArbTable(f *testing.F)           { fuzzWire(f) }
func FuzzSMInfo(f *testing.F)               { fuzzWire(f) }
func FuzzNotice(f *testing.F)               { fuzzWire(f) }
func FuzzNoticeGS(f *testing.F)             { fuzzWire(f) }
func FuzzTrap256(f *testing.F)              { fuzzWire(f) }
func FuzzTrap257(f *testing.F)              { fuzzWire(f) }
func FuzzTrap259Switch(f *testing.F)        { fuzzWire(f) }
func FuzzTrap259BKey(f *testing.F)          { fuzzWire(f) }
func FuzzClassPortInfo(f *testing.F)        { fuzzWire(f) }
func FuzzPortCounters(f *testing.F)         { fuzzWire(f) }
func FuzzPortCountersExtended(f *testing.F) { fuzzWire(f) }
func FuzzBKeyInfo(f *testing.F)             { fuzzWire(f) }
func FuzzGRH(f *testing.F)                  { fuzzWire(f) }

func FuzzDecodeMAD(f *testing.F) {
	f.Add(smpSeed(1))
	f.Add(sample(257, 1, 0))
	f.Add(sample(12, 1, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMAD(b)
		if len(b) != Size {
			if !errors.Is(err, ErrSize) {
				t.Fatalf("DecodeMAD(%d bytes) = %v, want ErrSize", len(b), err)
			}
			return
		}
		if err != nil || !bytes.Equal(m[:], b) {
			t.Fatalf("DecodeMAD: %v", err)
		}
	})
}

// TestWireSeeds runs every seed through the round-trip check, and with
// MAD_WRITE_CORPUS=1 writes the seeds as the committed fuzz corpora.
func TestWireSeeds(t *testing.T) {
	write := os.Getenv("MAD_WRITE_CORPUS") == "1"
	for name, c := range wireCases {
		t.Run(name, func(t *testing.T) {
			for i, s := range c.seeds {
				checkRoundTrip(t, c.mk, c.size, c.reserved, s)
				if write {
					writeCorpus(t, name, i, s)
				}
			}
		})
	}
	if write {
		for i, s := range [][]byte{smpSeed(1), sample(257, 1, 0)} {
			writeCorpus(t, "FuzzDecodeMAD", i, s)
		}
	}
}

func writeCorpus(t *testing.T, name string, i int, b []byte) {
	dir := filepath.Join("testdata", "fuzz", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%d", i)), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
