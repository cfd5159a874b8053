package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// Wire contract v2. Two kinds of region:
//
//   - the control region (what --bar names): the header page below, and
//     nothing of any VF's BAR. Words are big-endian 32-bit registers, except
//     the two doorbell words, which are native-order shared-memory words for
//     futex waits (only meaningful where the region is Shared: a file or the
//     heap). The PF owns every field; vhcrd's own VFs write only the doorbell.
//   - one VF BAR region per VF (by default the file <control>.vf<N>), laid
//     out as mlx4's BAR2 of a VF: the comm page at offset 0 (comm.go), the
//     EQ doorbells in the UAR pages (mlx4.EQDoorbellOffset), the driver's UAR at index
//     128 just memory. VFBARSize bytes, a power of two, so that QEMU can map
//     the whole region as a PCI BAR.
const (
	HdrMagic       = 0x000 // 'VHCR'
	HdrVersion     = 0x004 // layout version
	HdrNumVFs      = 0x008
	HdrFlags       = 0x00c // HdrFlagDMAInBAR, HdrFlagDoorbell, HdrFlagOwnerClaim
	HdrHeaderSize  = 0x010 // bytes of the header (the control region without DMA windows)
	HdrReserved14  = 0x014 // 0
	HdrVFBARSizeHi = 0x018 // bytes of each VF BAR region
	HdrVFBARSizeLo = 0x01c
	HdrDMABaseHi   = 0x020 // offset of VF 0's window in the DMA region
	HdrDMABaseLo   = 0x024
	HdrWindowHi    = 0x028 // size of each VF's DMA window
	HdrWindowLo    = 0x02c
	HdrDMASizeHi   = 0x030 // size of the DMA region
	HdrDMASizeLo   = 0x034
	HdrPFState     = 0x038 // PFStateInit, PFStateServing, PFStateStopped
	HdrPFGen       = 0x03c // incremented at every PF start
	HdrDoorbell    = 0x040 // native-order: VFs increment it and futex-wake the PF
	HdrPFSleeping  = 0x044 // native-order: non-zero while the PF waits on the doorbell
	HdrStateVer    = 0x048 // format of the per-VF state records (StateVersion)
	HdrPFStopped   = 0x04c // Unix seconds of the PF's last orderly stop, written before PF_STATE = stopped (0: none)
	HdrDMAPath     = 0x080 // NUL-terminated path of a separate DMA file (empty: DMA in this region)
	HdrDMAPathLen  = 0x100
	HdrVFState     = 0x400              // per-VF PF state, HdrVFStateSize bytes each (PF-private, read only at PF start)
	HdrVFStateSize = pfstate.RecordSize // VF n's channel record (its words and bits: package pfstate)
)

// HdrVFRecord is the offset of VF vf's channel record in the header.
func HdrVFRecord(vf int) int64 { return HdrVFState + int64(vf)*HdrVFStateSize }

// StateVersion is the format of the per-VF state records at HdrVFState.
const StateVersion = 1

const (
	Magic         = 0x56484352 // "VHCR"
	LayoutVersion = 2
	HeaderSize    = 0x1000

	HdrFlagDMAInBAR = 1 << 0
	HdrFlagDoorbell = 1 << 1
	// HdrFlagOwnerClaim: the PF maps this control region as memory of this
	// host (a file), whose owner claim (bar.Own) it holds, so a VF tool on
	// the same file reads "no holder" as "no PF". A PF that maps it as device
	// memory (vfio, sysfs: inside a guest whose BAR the file backs) holds
	// no claim on the file, and the flag is clear.
	HdrFlagOwnerClaim = 1 << 2

	PFStateInit    = 0
	PFStateServing = 1
	PFStateStopped = 2
)

// MaxVFs is the largest VF count the wire contract serves (one VF BAR
// region each; mlx4's limit of 126 VFs per PF with 2 ports is what it sizes
// for).
const MaxVFs = 126

// VFBARSize is the size of every VF BAR region: the uar_size QUERY_DEV_CAP
// reports (mlx4.UARSize, one constant for both), which mlx4_slave_cap
// requires BAR2 to hold, and a power of two as a PCI BAR must be.
const VFBARSize = mlx4.UARSize

// VFBARPath is the default file of VF vf's BAR region next to the control
// region's file ctrl: ctrl + ".vf" + vf.
func VFBARPath(ctrl string, vf int) string { return ctrl + ".vf" + strconv.Itoa(vf) }

// ErrHeader is wrapped by every header validation error.
var ErrHeader = errors.New("vhcr: bad region header")

// Layout is the decoded header: where everything is.
type Layout struct {
	NumVFs    int
	VFBARSize int64  // bytes of each VF BAR region
	DMAInBAR  bool   // DMA windows live in the control region, after the header
	DMAPath   string // else: the file that holds them
	DMABase   int64  // offset of VF 0's window in the DMA region
	Window    int64  // bytes per VF window
	DMASize   int64  // bytes of the DMA region
	Doorbell  bool
	// OwnerClaim: the PF holds the control file's owner claim
	// (HdrFlagOwnerClaim), read from the header; Write sets it where the
	// PF's region is memory of this host.
	OwnerClaim bool
}

// NewLayout computes the layout for n VFs with windows of window bytes. If
// dmaInBAR, the windows follow the header in the control region from dmaOff
// (0: right after the header); else they start at dmaOff of a
// separate region of dmaSize bytes (0: exactly n windows).
func NewLayout(n int, window int64, dmaInBAR bool, dmaOff, dmaSize int64, dmaPath string) (Layout, error) {
	if n < 1 || n > MaxVFs {
		return Layout{}, fmt.Errorf("vhcr: %d VFs outside 1..%d", n, MaxVFs)
	}
	if window < 3*bar.PageSize || window%bar.PageSize != 0 || window > 1<<40 {
		return Layout{}, fmt.Errorf("vhcr: window %#x is not a multiple of 4 KiB between 12 KiB and 1 TiB", window)
	}
	l := Layout{NumVFs: n, VFBARSize: VFBARSize, DMAInBAR: dmaInBAR, Window: window, Doorbell: true}
	if dmaOff%bar.PageSize != 0 {
		return Layout{}, fmt.Errorf("vhcr: DMA offset %#x is not 4 KiB aligned", dmaOff)
	}
	if dmaInBAR {
		l.DMABase = dmaOff
		if l.DMABase < HeaderSize {
			if dmaOff != 0 {
				return Layout{}, fmt.Errorf("vhcr: DMA offset %#x overlaps the header (which ends at %#x)", dmaOff, HeaderSize)
			}
			l.DMABase = HeaderSize
		}
		l.DMASize = l.DMABase + int64(n)*window
	} else {
		if len(dmaPath) >= HdrDMAPathLen {
			return Layout{}, fmt.Errorf("vhcr: DMA path longer than %d bytes", HdrDMAPathLen-1)
		}
		l.DMAPath = dmaPath
		l.DMABase = dmaOff
		l.DMASize = dmaOff + int64(n)*window
		if dmaSize > 0 {
			if dmaSize < l.DMASize {
				return Layout{}, fmt.Errorf("vhcr: DMA region of %#x bytes cannot hold %d windows of %#x from %#x", dmaSize, n, window, dmaOff)
			}
			l.DMASize = dmaSize
		}
	}
	return l, nil
}

// ControlSize is the smallest control region that holds the layout: the
// header, and the DMA windows where they live in it.
func (l Layout) ControlSize() int64 {
	if l.DMAInBAR {
		return l.DMASize
	}
	return HeaderSize
}

// Through is l as a PF mapping its control region r writes it, and as
// ReadLayout reads it back: the futex doorbell and the owner claim only
// where r is memory of this host (a file), not device memory (vfio, sysfs).
func (l Layout) Through(r bar.Region) Layout {
	l.Doorbell = l.Doorbell && r.Shared()
	l.OwnerClaim = r.Shared()
	return l
}

// Write stores the header (everything but the state, generation and doorbell
// words) into r.
func (l Layout) Write(r bar.Region) error {
	l = l.Through(r)
	var flags uint32
	if l.DMAInBAR {
		flags |= HdrFlagDMAInBAR
	}
	if l.Doorbell {
		flags |= HdrFlagDoorbell
	}
	if l.OwnerClaim {
		flags |= HdrFlagOwnerClaim
	}
	regs := []struct {
		off int64
		v   uint32
	}{
		{HdrVersion, LayoutVersion}, {HdrNumVFs, uint32(l.NumVFs)}, {HdrFlags, flags},
		{HdrHeaderSize, HeaderSize}, {HdrReserved14, 0},
		{HdrVFBARSizeHi, uint32(l.VFBARSize >> 32)}, {HdrVFBARSizeLo, uint32(l.VFBARSize)},
		{HdrDMABaseHi, uint32(l.DMABase >> 32)}, {HdrDMABaseLo, uint32(l.DMABase)},
		{HdrWindowHi, uint32(l.Window >> 32)}, {HdrWindowLo, uint32(l.Window)},
		{HdrDMASizeHi, uint32(l.DMASize >> 32)}, {HdrDMASizeLo, uint32(l.DMASize)},
	}
	for _, x := range regs {
		if err := r.Store32(x.off, x.v); err != nil {
			return err
		}
	}
	var path [HdrDMAPathLen]byte
	copy(path[:], l.DMAPath)
	if _, err := r.WriteAt(path[:], HdrDMAPath); err != nil {
		return err
	}
	return r.Store32(HdrMagic, Magic) // last: a reader that sees the magic sees the rest
}

// ReadLayout decodes and validates the header of r. Every inconsistency is an
// error wrapping ErrHeader that says what is wrong.
func ReadLayout(r bar.Region) (Layout, error) {
	bad := func(format string, a ...any) (Layout, error) {
		return Layout{}, fmt.Errorf("%s: %w: %s", r.Name(), ErrHeader, fmt.Sprintf(format, a...))
	}
	if r.Size() < HeaderSize {
		return bad("region is %d bytes, smaller than the %d-byte header", r.Size(), HeaderSize)
	}
	rd := func(off int64) uint32 { v, _ := r.Load32(off); return v }
	rd64 := func(hi int64) int64 { return int64(uint64(rd(hi))<<32 | uint64(rd(hi+4))) }
	if m := rd(HdrMagic); m != Magic {
		return bad("magic %#08x, want %#08x (not a vhcrd region, or the PF has not written it yet)", m, Magic)
	}
	if v := rd(HdrVersion); v != LayoutVersion {
		return bad("layout version %d, this build speaks %d", v, LayoutVersion)
	}
	l := Layout{
		NumVFs:    int(rd(HdrNumVFs)),
		VFBARSize: rd64(HdrVFBARSizeHi),
		DMABase:   rd64(HdrDMABaseHi),
		Window:    rd64(HdrWindowHi),
		DMASize:   rd64(HdrDMASizeHi),
	}
	flags := rd(HdrFlags)
	l.DMAInBAR = flags&HdrFlagDMAInBAR != 0
	l.Doorbell = flags&HdrFlagDoorbell != 0
	l.OwnerClaim = flags&HdrFlagOwnerClaim != 0
	if flags&^(HdrFlagDMAInBAR|HdrFlagDoorbell|HdrFlagOwnerClaim) != 0 {
		return bad("unknown flags %#x", flags)
	}
	if hs := rd(HdrHeaderSize); hs != HeaderSize {
		return bad("header size %#x, want %#x", hs, HeaderSize)
	}
	if l.NumVFs < 1 || l.NumVFs > MaxVFs {
		return bad("VF count %d outside 1..%d", l.NumVFs, MaxVFs)
	}
	if l.VFBARSize < VFBARSize || l.VFBARSize > 1<<40 || l.VFBARSize&(l.VFBARSize-1) != 0 {
		return bad("VF BAR size %#x: want a power of two of at least %#x (the uar_size QUERY_DEV_CAP reports)", l.VFBARSize, VFBARSize)
	}
	if l.Window < 3*bar.PageSize || l.Window%bar.PageSize != 0 || l.Window > 1<<40 {
		return bad("window size %#x", l.Window)
	}
	if l.DMABase < 0 || l.DMABase%bar.PageSize != 0 || l.DMASize < l.DMABase+int64(l.NumVFs)*l.Window {
		return bad("DMA region of %#x bytes cannot hold %d windows of %#x from %#x", l.DMASize, l.NumVFs, l.Window, l.DMABase)
	}
	if l.DMAInBAR {
		if l.DMABase < HeaderSize {
			return bad("DMA windows at %#x overlap the header", l.DMABase)
		}
		if l.DMASize > r.Size() {
			return bad("DMA windows end at %#x beyond the region's %#x bytes", l.DMASize, r.Size())
		}
	} else {
		var path [HdrDMAPathLen]byte
		if _, err := r.ReadAt(path[:], HdrDMAPath); err != nil {
			return bad("reading the DMA path: %v", err)
		}
		n := bytes.IndexByte(path[:], 0)
		if n <= 0 {
			return bad("no DMA path and the DMA windows are not in this region")
		}
		l.DMAPath = string(path[:n])
	}
	return l, nil
}
