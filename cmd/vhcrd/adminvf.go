package main

// The admin socket's VF and port commands: vf.list, vf.show, vf.set,
// vf.flr and port. Each answers one JSON line (or "# error: ..."). Every
// change runs on the poller through PF.Do (FLR through PF.FLR), is logged
// and counted in vhcrd_admin_changes_total{action,result}.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// vfSetRequest is `vhcrd vf set`: absent fields are left as they are.
// The words are ip link's (link_state auto|enable|disable, rates in Mb/s).
type vfSetRequest struct {
	PhysPort   int     `json:"phys_port,omitempty"`
	MAC        string  `json:"mac,omitempty"`
	VLAN       *int    `json:"vlan,omitempty"`
	QoS        *int    `json:"qos,omitempty"`
	SpoofCheck *bool   `json:"spoof_check,omitempty"`
	Trust      *bool   `json:"trust,omitempty"`
	LinkState  *string `json:"link_state,omitempty"`
	MaxTxRate  *int    `json:"max_tx_rate,omitempty"`
	MinTxRate  *int    `json:"min_tx_rate,omitempty"`
}

// actions are the counter's action names of the settings in s.
func (s *vfSetRequest) actions() []string {
	var a []string
	add := func(set bool, name string) {
		if set {
			a = append(a, name)
		}
	}
	add(s.MAC != "", "vf_mac")
	add(s.VLAN != nil || s.QoS != nil, "vf_vlan")
	add(s.SpoofCheck != nil, "vf_spoof_check")
	add(s.Trust != nil, "vf_trust")
	add(s.LinkState != nil, "vf_link_state")
	add(s.MaxTxRate != nil || s.MinTxRate != nil, "vf_rate")
	return a
}

// change converts s to the HCA's form.
func (s *vfSetRequest) change() (hca.VFSettingsChange, error) {
	ch := hca.VFSettingsChange{Phys: s.PhysPort, VLAN: s.VLAN, QoS: s.QoS, SpoofCheck: s.SpoofCheck, Trust: s.Trust,
		LinkState: s.LinkState, MaxTxRate: s.MaxTxRate, MinTxRate: s.MinTxRate}
	if s.MAC != "" {
		hw, err := net.ParseMAC(s.MAC)
		if err != nil || len(hw) != 6 {
			return ch, fmt.Errorf("%w: mac %q: want 6 bytes as xx:xx:xx:xx:xx:xx", errAdminRequest, s.MAC)
		}
		var m uint64
		for _, b := range hw {
			m = m<<8 | uint64(b)
		}
		ch.MAC = &m
	}
	return ch, nil
}

// checkAdminFields checks the fields the vf and port commands need.
func checkAdminFields(q *adminRequest) error {
	needVF := q.Cmd == "vf.show" || q.Cmd == "vf.set" || q.Cmd == "vf.flr"
	if needVF && q.VF == nil {
		return fmt.Errorf("%w: %s needs vf", errAdminRequest, q.Cmd)
	}
	if (q.Set != nil) != (q.Cmd == "vf.set") {
		return fmt.Errorf("%w: set goes with vf.set, and vf.set needs it", errAdminRequest)
	}
	if q.Set != nil {
		if len(q.Set.actions()) == 0 {
			return fmt.Errorf("%w: vf.set with nothing to set", errAdminRequest)
		}
		if _, err := q.Set.change(); err != nil {
			return err
		}
	}
	if q.Cmd == "port" {
		if q.State != "up" && q.State != "down" {
			return fmt.Errorf("%w: port state %q: want up or down", errAdminRequest, q.State)
		}
	} else if q.Port != 0 || q.State != "" {
		return fmt.Errorf("%w: port and state go with the port command", errAdminRequest)
	}
	return nil
}

// vfStatus is one VF in vf.list and vf.show.
type vfStatus struct {
	VF      int            `json:"vf"`
	State   string         `json:"state"`
	Active  bool           `json:"active"`
	VHCR    string         `json:"vhcr"`
	Toggle  uint32         `json:"toggle"`
	Setting hca.VFSettings `json:"settings"`
	// Refused is the last VHCR_POST the PF answered with a non-OK status
	// (absent: none since the PF started): what vfctl prints as the PF's
	// reason.
	Refused *adminc.Refusal `json:"last_refusal,omitempty"`
}

func init() {
	adminHandlers["vf.list"] = func(ctx context.Context, a *adminServer, conn net.Conn, q *adminRequest) error {
		return a.reply(conn, func() (any, error) {
			var out []vfStatus
			for vf := range a.pf.Layout().NumVFs {
				s, err := a.vfStatus(vf)
				if err != nil {
					return nil, err
				}
				out = append(out, s)
			}
			return out, nil
		})
	}
	adminHandlers["vf.show"] = func(ctx context.Context, a *adminServer, conn net.Conn, q *adminRequest) error {
		return a.reply(conn, func() (any, error) { return a.vfStatus(*q.VF) })
	}
	adminHandlers["vf.set"] = func(ctx context.Context, a *adminServer, conn net.Conn, q *adminRequest) error {
		return a.reply(conn, func() (any, error) {
			acts := q.Set.actions()
			done, err := a.setVF(*q.VF, q.Set)
			res := metrics.AdminDone
			if err != nil {
				res = metrics.AdminRefused
			}
			for _, act := range acts {
				a.changes.Inc(act, res)
			}
			if err != nil {
				a.log.Warn("vf set refused", "vf", *q.VF, "settings", strings.Join(acts, ","), "err", err)
				return nil, err
			}
			a.log.Info("vf set", "vf", *q.VF, "applied", strings.Join(done, "; "))
			return map[string]any{"vf": *q.VF, "applied": done}, nil
		})
	}
	adminHandlers["vf.flr"] = func(ctx context.Context, a *adminServer, conn net.Conn, q *adminRequest) error {
		return a.reply(conn, func() (any, error) {
			vf := *q.VF
			err := a.checkVF(vf)
			if err == nil {
				err = a.pf.FLR(vf)
			}
			if err != nil {
				a.changes.Inc("vf_flr", metrics.AdminRefused)
				a.log.Warn("FLR refused", "vf", vf, "err", err)
				return nil, err
			}
			a.changes.Inc("vf_flr", metrics.AdminDone)
			a.log.Info("FLR", "vf", vf)
			return map[string]any{"vf": vf, "flr": "done"}, nil
		})
	}
	adminHandlers["port"] = func(ctx context.Context, a *adminServer, conn net.Conn, q *adminRequest) error {
		return a.reply(conn, func() (any, error) {
			act, state := "port_"+q.State, map[string]string{"up": "active", "down": "down"}[q.State]
			var n int
			var perr error
			err := a.pf.Do(func() { n, perr = a.hca.SetPortState(q.Port, state) })
			if err == nil {
				err = perr
			}
			if err != nil {
				a.changes.Inc(act, metrics.AdminRefused)
				a.log.Warn("port state refused", "port", q.Port, "state", q.State, "err", err)
				return nil, err
			}
			a.changes.Inc(act, metrics.AdminDone)
			a.log.Info("port state", "port", q.Port, "state", q.State, "vfs_notified", n)
			return map[string]any{"port": q.Port, "state": q.State, "vfs_notified": n}, nil
		})
	}
}

// errNoPF is the answer of the vf and port commands of an admin server
// without a PF.
var errNoPF = errors.New("no PF behind this admin socket")

// reply writes f's answer as one JSON line, or its error as "# error:",
// and closes conn.
func (a *adminServer) reply(conn net.Conn, f func() (any, error)) error {
	defer conn.Close()
	if a.pf == nil || a.hca == nil || a.changes == nil {
		fmt.Fprintf(conn, "# error: %v\n", errNoPF)
		return errNoPF
	}
	v, err := f()
	if err != nil {
		fmt.Fprintf(conn, "# error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = conn.Write(append(b, '\n'))
	return err
}

func (a *adminServer) checkVF(vf int) error {
	if n := a.pf.Layout().NumVFs; vf < 0 || vf >= n {
		return fmt.Errorf("%w: vf %d: this PF has VFs 0..%d", errAdminRequest, vf, n-1)
	}
	return nil
}

func (a *adminServer) vfStatus(vf int) (vfStatus, error) {
	if err := a.checkVF(vf); err != nil {
		return vfStatus{}, err
	}
	in, err := a.pf.Info(vf)
	if err != nil {
		return vfStatus{}, err
	}
	s := vfStatus{VF: vf, State: in.LastCmd.String(), Active: in.Active, VHCR: fmt.Sprintf("%#x", in.VHCR), Toggle: in.Toggle}
	if r := in.Refused; r.Status != mlx4.OK {
		s.Refused = &adminc.Refusal{Opcode: r.Op.String(), Status: r.Status.Name(), StatusCode: uint8(r.Status),
			Reason: r.Reason.String(), Text: r.Reason.Text(), Toggle: r.Toggle}
	}
	var serr error
	if err := a.pf.Do(func() { s.Setting, serr = a.hca.VFSettings(vf) }); err != nil {
		return vfStatus{}, err
	}
	return s, serr
}

func (a *adminServer) setVF(vf int, set *vfSetRequest) ([]string, error) {
	if err := a.checkVF(vf); err != nil {
		return nil, err
	}
	ch, err := set.change()
	if err != nil {
		return nil, err
	}
	var done []string
	var serr error
	if err := a.pf.Do(func() { done, serr = a.hca.SetVF(vf, ch) }); err != nil {
		return nil, err
	}
	return done, serr
}
