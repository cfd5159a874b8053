package hca

import (
	"fmt"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// HCA is the model device.
type HCA struct {
	Cfg    *config.Config
	NumVFs int
	Funcs  []config.Function // resolved per-VF views, index = VF (fixed after New)
	gids   [][2]gidRange     // each VF's RoCE GID slices per physical port (roce.go)

	Res *restrack.Tracker // who owns what (res.go)
	fw  *firmware         // object tables a firmware keeps (res.go)

	mad        *mad.Engine    // MAD_IFC's engine (madifc.go), nil until AttachMAD
	madViews   []mad.StaticVF // each VF's paravirtualised view for MAD_IFC
	madRec     MADRecorder    // --capture of MAD_IFC commands with a WC
	madScratch mad.MADIFCInbox
	eqeScratch [mlx4.EQESize]byte // PostEQE's copy of the EQE it writes
	dropEvents []int              // per VF: EQEs an injected fault drops (faults.go), nil until one does
	dp         *dpScratch         // the data path's working memory (sq.go)
	fab        fabricLink         // the switch the ports are cabled to (fabric.go), none until SetFabric

	sched      dpSched                // the data path's scheduler and CQ watch list (dpsched.go)
	cqeScratch [mlx4.CQESize]byte     // postCQE's copy of the CQE it writes
	cqRec      [mlx4.CQDBRecSize]byte // a CQ doorbell record read
	compEQE    [mlx4.EQESize]byte     // a completion EQE
	dl         *dpLog                 // the data path's log in the state file (dplog.go), or nil
	cqeHook    CQEFaultHook           // injected data-path faults (dpfault.go), nil when none is armed
	tun        tunnel                 // the SR-IOV MAD tunnel (tunnel.go)
	eth        ethState               // raw Ethernet: the uplink and the frame scratch (eth.go)

	tptGen uint64 // moves at every change that may touch an MPT or MTT (keycache.go)

	// clock is the data path's clock in nanoseconds for the RC retries'
	// deadlines (retry.go): nil is the poller's cycle counter; the test
	// rig sets it to advance time by hand.
	clock func() uint64
}

// New builds the model for numVFs functions.
func New(cfg *config.Config, numVFs int) (*HCA, error) {
	if numVFs < 1 || numVFs > config.MaxVFs {
		return nil, fmt.Errorf("hca: %d VFs outside 1..%d", numVFs, config.MaxVFs)
	}
	h := &HCA{Cfg: cfg, NumVFs: numVFs, Funcs: make([]config.Function, numVFs)}
	for vf := range h.Funcs {
		h.Funcs[vf] = cfg.Function(vf)
	}
	if err := h.initResources(); err != nil {
		return nil, err
	}
	h.sched.init(numVFs)
	h.gidSlices() // roce.go
	return h, nil
}

// PhysPort converts a VF's port number (1-based, its own numbering) to the
// physical port, or returns 0 if the VF has no such port
// (mlx4_slave_convert_port).
func (h *HCA) PhysPort(vf int, port uint32) int {
	fn := &h.Funcs[vf]
	if port < 1 || port > uint32(len(fn.Ports)) {
		return 0
	}
	return fn.Ports[port-1]
}
