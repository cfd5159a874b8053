// Package madtest holds fakes for testing code that uses package mad: a
// controllable clock, a trap sink that records, MAD builders and a
// two-port node configuration.
package madtest

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/vhcrd/vhcrd/mad"
)

var be = binary.BigEndian

// Clock is a manual clock for mad.Options.Now.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock {
	return &Clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Sink records traps.
type Sink struct {
	mu    sync.Mutex
	traps []mad.Trap
}

// SendTrap records t.
func (s *Sink) SendTrap(t mad.Trap) {
	s.mu.Lock()
	s.traps = append(s.traps, t)
	s.mu.Unlock()
}

// Traps returns the recorded traps and forgets them.
func (s *Sink) Traps() []mad.Trap {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.traps
	s.traps = nil
	return t
}

// Node returns a valid two-port CA configuration: port 1 Active with LID 5,
// SM at LID 1 SL 3, SubnetTimeOut 0; port 2 Init with LID 6. P_Key table
// {0xFFFF, 0x8001, 0x0002}, no M_Key, no B_Key, BM traps to LID 1 QP 1.
func Node() mad.NodeConfig {
	port := func(lid uint16, guid uint64, st mad.PortState) mad.PortConfig {
		return mad.PortConfig{
			LID: lid, PortGUID: guid, GUIDs: []uint64{guid + 0x100, guid + 0x200},
			State: st, MasterSMLID: 1, MasterSMSL: 3,
			PKeys:  []uint16{0xFFFF, 0x8001, 0x0002},
			BMTrap: mad.TrapAddress{LID: 1, QP: 1},
			SL2VL:  [16]uint8{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 15},
		}
	}
	return mad.NodeConfig{
		NodeGUID:    0x0002c90300a0b0c0,
		Description: "vhcrd model hca",
		DeviceID:    0x1003, Revision: 0xa1, VendorID: 0x0002c9,
		Ports: []mad.PortConfig{
			port(5, 0x0002c90300a0b0c1, mad.PortActive),
			port(6, 0x0002c90300a0b0c2, mad.PortInit),
		},
	}
}

// GID returns a GID made of prefix and guid.
func GID(prefix, guid uint64) (g [16]byte) {
	be.PutUint64(g[:], prefix)
	be.PutUint64(g[8:], guid)
	return g
}

func header(m *mad.MAD, class, method uint8, attr uint16, mod uint32, tid uint64) {
	m[0], m[1], m[2], m[3] = 1, class, 1, method
	be.PutUint64(m[8:], tid)
	be.PutUint16(m[16:], attr)
	be.PutUint32(m[20:], mod)
}

// SMP builds a LID-routed SMP with M_Key mkey and data copied to byte 64.
func SMP(method uint8, attr uint16, mod uint32, mkey uint64, data []byte) *mad.MAD {
	m := new(mad.MAD)
	header(m, mad.ClassSubnLID, method, attr, mod, 0x1234)
	be.PutUint64(m[24:], mkey)
	copy(m[64:128], data)
	return m
}

// DRSMP builds a directed-route SMP as process_mad sees it at the end of
// its path, after the SMI: hop pointer hopCount+1, permissive
// DrSLID/DrDLID, initial path from path (index 1..).
func DRSMP(method uint8, attr uint16, mod uint32, mkey uint64, hopCount uint8, path ...byte) *mad.MAD {
	m := new(mad.MAD)
	header(m, mad.ClassSubnDirected, method, attr, mod, 0x5678)
	m[6], m[7] = hopCount+1, hopCount
	be.PutUint64(m[24:], mkey)
	be.PutUint16(m[32:], 0xFFFF)
	be.PutUint16(m[34:], 0xFFFF)
	copy(m[129:192], path)
	return m
}

// Perf builds a PerfMgt MAD with PortSelect sel and CounterSelect cs.
func Perf(method uint8, attr uint16, sel uint8, cs uint16) *mad.MAD {
	m := new(mad.MAD)
	header(m, mad.ClassPerfMgt, method, attr, 0, 0x9abc)
	m[65] = sel
	be.PutUint16(m[66:], cs)
	return m
}

// BM builds a BM MAD with B_Key bkey and data copied to byte 64.
func BM(method uint8, attr uint16, mod uint32, bkey uint64, data []byte) *mad.MAD {
	m := new(mad.MAD)
	header(m, mad.ClassBM, method, attr, mod, 0xdef0)
	be.PutUint64(m[24:], bkey)
	copy(m[64:], data)
	return m
}

// GSIWC returns a work completion of a MAD received on QP1 from LID slid,
// QP 0x45, SL 3, P_Key index idx.
func GSIWC(slid uint16, idx uint16) *mad.WC {
	return &mad.WC{SLID: slid, SrcQP: 0x45, SL: 3, PKeyIndex: idx, QPN: 1}
}

// SMIWC returns a work completion of an SMP received on QP0 from LID slid.
func SMIWC(slid uint16) *mad.WC {
	return &mad.WC{SLID: slid, QPN: 0}
}
