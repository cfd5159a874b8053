package hca

import (
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/config"
)

// The model's half of injected faults (vhcr/faultinj; the PF carries them
// out in vhcr/master's faults.go): events dropped as a full EQ drops them,
// and port changes an SM would make.

// DropEvents makes the next n EQEs for VF vf fail as a full EQ fails them
// (ErrOverrun, counted as overruns): faultinj's eq_full.
func (h *HCA) DropEvents(vf, n int) {
	if vf < 0 || vf >= h.NumVFs || n <= 0 {
		return
	}
	if h.dropEvents == nil {
		h.dropEvents = make([]int, h.NumVFs)
	}
	h.dropEvents[vf] += n
}

// dropEvent reports whether an injected fault drops VF vf's next EQE
// (PostEQE, after the EQ is found).
func (h *HCA) dropEvent(vf int) bool {
	if h.dropEvents == nil || h.dropEvents[vf] == 0 {
		return false
	}
	h.dropEvents[vf]--
	h.fw.vfs[vf].stats.Overruns.Add(1)
	return true
}

// What a PortInjection changes.
const (
	InjectLID = iota + 1
	InjectSMLID
	InjectPKey
	InjectGUID
	InjectClientRereg
	InjectGIDPrefix
)

// PortInjection is one port change of faultinj's port kinds.
type PortInjection struct {
	What      int
	VF        int // InjectGUID: the VF whose alias GUID (index VF+1) changes
	LID       uint16
	SMLID     uint16
	PKeyIndex int
	PKey      uint16
	GUID      uint64
	GIDPrefix uint64
}

// ErrInjection is wrapped by a port injection the model cannot make.
var ErrInjection = errors.New("hca: port injection")

// InjectPortChange makes change in on physical port phys as an SM's Set
// would (the configuration's view and, with one attached, the MAD
// engine's) and delivers it to the VFs as PortMgmtChange does. It returns
// how many EQEs were posted. Runs on the poller.
func (h *HCA) InjectPortChange(phys int, in PortInjection) (int, error) {
	if phys < 1 || phys > len(h.Cfg.Ports) {
		return 0, fmt.Errorf("%w: no port %d", ErrInjection, phys)
	}
	p := &h.Cfg.Ports[phys-1]
	mi := mad.Injection{}
	switch in.What {
	case InjectLID:
		mi.What, mi.LID = mad.ChangeLID, in.LID
		p.LID = in.LID
	case InjectSMLID:
		mi.What, mi.SMLID = mad.ChangeSMLID, in.SMLID
		p.MasterSMLID = in.SMLID
	case InjectPKey:
		if in.PKeyIndex >= len(p.PKeys) {
			return 0, fmt.Errorf("%w: port %d has %d P_Keys, no index %d", ErrInjection, phys, len(p.PKeys), in.PKeyIndex)
		}
		mi.What, mi.PKeyIndex, mi.PKey = mad.ChangePKeys, in.PKeyIndex, in.PKey
		p.PKeys[in.PKeyIndex] = config.Hex(in.PKey)
	case InjectGUID:
		if in.VF < 0 || in.VF >= h.NumVFs || in.VF+1 >= 64 {
			return 0, fmt.Errorf("%w: alias GUID of VF %d", ErrInjection, in.VF)
		}
		mi.What, mi.GUIDIndex, mi.GUID = mad.ChangeGUIDs, in.VF+1, in.GUID
	case InjectClientRereg:
		mi.What = mad.ChangeClientRereg
	case InjectGIDPrefix:
		mi.What, mi.GIDPrefix = mad.ChangeGIDPrefix, in.GIDPrefix
		p.GIDPrefix = config.Hex(in.GIDPrefix)
	default:
		return 0, fmt.Errorf("%w: change %d", ErrInjection, in.What)
	}
	c := mad.PortChange{Port: uint8(phys), What: mi.What, State: mad.PortNoChange}
	if in.What == InjectPKey {
		c.PKeys[in.PKeyIndex/64] |= 1 << (in.PKeyIndex % 64)
	}
	if in.What == InjectGUID {
		c.GUIDs = 1 << (in.VF + 1)
	}
	if h.mad != nil {
		var err error
		if c, err = h.mad.Inject(uint8(phys), mi); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrInjection, err)
		}
	}
	n, err := h.PortMgmtChange(&c)
	if errors.Is(err, ErrNoEQ) {
		err = nil
	}
	return n, err
}
