package bar

import "fmt"

// Reg is a pre-checked handle to one 32-bit big-endian register of a mapped
// Region. Load and Store do no bounds checks and no allocation: the checks
// happened in NewReg. The zero Reg is invalid.
type Reg struct {
	p      *uint32
	mapped bool // not a heap region (Mem): access_race_amd64.go
}

// NewReg returns a handle to the register at off. The region must be mapped
// (Bytes succeeds) and off aligned and in range.
func NewReg(r Region, off int64) (Reg, error) {
	if err := checkReg(r.Name(), r.Size(), off); err != nil {
		return Reg{}, err
	}
	b, err := r.Bytes()
	if err != nil {
		return Reg{}, fmt.Errorf("%s: register at %#x: %w", r.Name(), off, err)
	}
	_, heap := base(r).(*Mem)
	return Reg{p: wordAt(b, off), mapped: !heap}, nil
}

// Load reads the register with one 32-bit load (acquire ordering).
func (g Reg) Load() uint32 { return fromBE(regLoad32(g)) }

// Store writes the register with one plain 32-bit store (release ordering on
// amd64's TSO; never a locked instruction).
func (g Reg) Store(v uint32) { regStore32(g, toBE(v)) }

// Valid reports whether g refers to a register.
func (g Reg) Valid() bool { return g.p != nil }

// Word returns a pointer to the native-order 32-bit word at off of a mapped,
// shared Region, for atomic operations and futex waits on words that are
// plain shared memory (doorbells), never device registers.
func Word(r Region, off int64) (*uint32, error) {
	if err := checkReg(r.Name(), r.Size(), off); err != nil {
		return nil, err
	}
	if !r.Shared() {
		return nil, fmt.Errorf("%s: word at %#x: %w", r.Name(), off, ErrNotSupported)
	}
	b, err := r.Bytes()
	if err != nil {
		return nil, err
	}
	return wordAt(b, off), nil
}

// base is the region r is a view of (Sub), or r.
func base(r Region) Region {
	for {
		v, ok := r.(*view)
		if !ok {
			return r
		}
		r = v.parent
	}
}
