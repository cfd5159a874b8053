package hca

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Operators' VF settings: what `ip link set DEV vf N ...` does on an mlx4
// host (en_netdev.c's ndo_set_vf_* calling cmd.c's mlx4_set_vf_*). The
// admin state (struct mlx4_vport_state in vf_admin) is written at once; it
// becomes the operational state (vf_oper) at the VF's next VHCR_EN
// (mlx4_master_activate_admin_state, ActivateVF here). The exceptions are
// mlx4's: link state also sends the VF a PORT_CHANGE event at once, and
// VLAN/QoS is activated at once by mlx4_master_immediate_activate_vlan_qos
// only on a device with MLX4_DEV_CAP_FLAG2_UPDATE_QP, which the model's
// device does not advertise, so mlx4 prints "updating vf %d port %d config
// will take effect on next VF restart" and so does the model.

// Errors of SetVF, each the errno mlx4 returns for the case.
var (
	// ErrVFSettingInvalid is -EINVAL: a VLAN beyond 4095, a QoS beyond 7,
	// a multicast MAC, an unknown link state.
	ErrVFSettingInvalid = errors.New("hca: invalid VF setting (EINVAL)")
	// ErrVFSettingNotSupported is -EOPNOTSUPP / -EPROTONOSUPPORT: trust
	// (mlx4_en has no ndo_set_vf_trust) and rate (mlx4_set_vf_rate needs
	// MLX4_DEV_CAP_FLAG2_QOS_VPP, which the model does not advertise).
	ErrVFSettingNotSupported = errors.New("hca: VF setting not supported by mlx4 (EOPNOTSUPP)")
	// ErrVFSettingPerm is -EPERM: spoof check on a VF without a valid MAC.
	ErrVFSettingPerm = errors.New("hca: VF setting not permitted (EPERM)")
)

// VFSettingsChange is one `ip link set DEV vf N ...`: nil fields are left
// as they are. MAC is per physical port (DEV names the port's netdev).
type VFSettingsChange struct {
	Phys       int     // physical port of the MAC (0: every Ethernet port of the VF)
	MAC        *uint64 // 48-bit
	VLAN       *int    // 0: with QoS 0, back to VGT
	QoS        *int
	SpoofCheck *bool
	Trust      *bool
	LinkState  *string // auto, enable, disable (ip link's words)
	MaxTxRate  *int    // Mb/s
	MinTxRate  *int    // Mb/s
}

// VFSettings is a VF's admin vport state and what is operational now.
type VFSettings struct {
	VF         int            `json:"vf"`
	Ports      []int          `json:"ports"`
	MAC        map[int]string `json:"mac"` // physical port -> admin MAC
	VLAN       int            `json:"vlan"`
	QoS        int            `json:"qos"`
	SpoofCheck bool           `json:"spoof_check"`
	Trust      bool           `json:"trust"`
	LinkState  string         `json:"link_state"` // auto, enable, disable
	// Oper is the operational vport state per physical port (empty while
	// the VF has not enabled its vHCR since its last reset).
	Oper []VportOper `json:"oper"`
}

// VportOper is a VF's operational vport state on one physical port.
type VportOper struct {
	Port       int    `json:"port"`
	MAC        string `json:"mac"`
	VST        bool   `json:"vst"`
	VLAN       int    `json:"vlan"`
	QoS        int    `json:"qos"`
	SpoofCheck bool   `json:"spoof_check"`
}

// linkWords maps ip link's link-state words to the config's.
var linkWords = map[string]string{"auto": "auto", "enable": "up", "disable": "down"}

func linkWord(cfg string) string {
	for w, c := range linkWords {
		if c == cfg {
			return w
		}
	}
	return cfg
}

// MACString formats a 48-bit MAC.
func MACString(m uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], m)
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[2], b[3], b[4], b[5], b[6], b[7])
}

// adminMAC is VF vf's admin MAC on physical port phys.
func (h *HCA) adminMAC(vf, phys int) uint64 {
	if m := h.fw.vfs[vf].AdminMAC[phys-1]; m != 0 {
		return m
	}
	return defaultMAC(vf, phys)
}

// VFSettings returns VF vf's settings. Runs on the poller.
func (h *HCA) VFSettings(vf int) (VFSettings, error) {
	if vf < 0 || vf >= len(h.Funcs) {
		return VFSettings{}, fmt.Errorf("%w: VF %d outside 0..%d", ErrVFSettingInvalid, vf, len(h.Funcs)-1)
	}
	fn := &h.Funcs[vf]
	s := VFSettings{VF: vf, Ports: append([]int(nil), fn.Ports...), MAC: map[int]string{},
		SpoofCheck: fn.SpoofCheck, Trust: false, LinkState: linkWord(fn.LinkState), Oper: []VportOper{}}
	if fn.VST != nil {
		s.VLAN, s.QoS = fn.VST.VLAN, fn.VST.QoS
	}
	for _, p := range fn.Ports {
		s.MAC[p] = MACString(h.adminMAC(vf, p))
		op := &h.fw.vfs[vf].Vport[p-1]
		if op.Active {
			s.Oper = append(s.Oper, VportOper{Port: p, MAC: MACString(h.VFMAC(vf, p)), VST: op.VST, VLAN: op.VLAN, QoS: op.QoS, SpoofCheck: op.Spoof})
		}
	}
	return s, nil
}

// SetVF applies ch to VF vf's admin state as mlx4_set_vf_* do, checking
// every field before changing any. It returns what was done, one line per
// setting, saying whether it applies now or at the VF's next reset. Runs on
// the poller.
//
// Three stages: vfChecks validate the change (the first failing check is
// the answer), the apply steps change one setting each, and each step's line
// reports what it changed.
func (h *HCA) SetVF(vf int, ch VFSettingsChange) ([]string, error) {
	if vf < 0 || vf >= len(h.Funcs) {
		return nil, fmt.Errorf("%w: VF %d outside 0..%d", ErrVFSettingInvalid, vf, len(h.Funcs)-1)
	}
	h.fw.adminChanges++ // the PF checkpoints the firmware state it may change (image.go)
	c := &vfChange{h: h, vf: vf, fn: &h.Funcs[vf], ch: ch, ports: h.Funcs[vf].Ports}
	if ch.Phys != 0 {
		c.ports = []int{ch.Phys}
	}
	for _, check := range vfChecks {
		if err := check(c); err != nil {
			return nil, err
		}
	}
	var done []string
	if ch.MAC != nil {
		done = append(done, c.applyMAC())
	}
	if ch.VLAN != nil || ch.QoS != nil {
		done = append(done, c.applyVLAN())
	}
	if ch.SpoofCheck != nil {
		done = append(done, c.applySpoofCheck())
	}
	if ch.LinkState != nil {
		done = append(done, c.applyLinkState())
	}
	return done, nil
}

// vfChange is one SetVF in progress.
type vfChange struct {
	h     *HCA
	vf    int
	fn    *config.Function
	ch    VFSettingsChange
	ports []int // the physical ports the MAC applies to
}

// vfChecks are SetVF's checks in mlx4's order of errnos.
var vfChecks = [...]func(c *vfChange) error{
	(*vfChange).checkTrust,
	(*vfChange).checkRate,
	(*vfChange).checkPhys,
	(*vfChange).checkMAC,
	(*vfChange).checkMACInvalidation,
	(*vfChange).checkVLAN,
	(*vfChange).checkQoS,
	(*vfChange).checkQoSWithoutVLAN,
	(*vfChange).checkLinkState,
	(*vfChange).checkSpoofCheckMACs,
}

func (c *vfChange) checkTrust() error {
	if c.ch.Trust != nil {
		return fmt.Errorf("%w: trust: mlx4_en implements no ndo_set_vf_trust", ErrVFSettingNotSupported)
	}
	return nil
}

func (c *vfChange) checkRate() error {
	if c.ch.MaxTxRate != nil || c.ch.MinTxRate != nil {
		return fmt.Errorf("%w: rate: mlx4_set_vf_rate needs vport QoS (MLX4_DEV_CAP_FLAG2_QOS_VPP), which this device does not have", ErrVFSettingNotSupported)
	}
	return nil
}

func (c *vfChange) checkPhys() error {
	if c.ch.Phys != 0 && !contains(c.fn.Ports, c.ch.Phys) {
		return fmt.Errorf("%w: VF %d has no physical port %d (its %s)", ErrVFSettingInvalid, c.vf, c.ch.Phys, portList(c.fn.Ports))
	}
	return nil
}

func (c *vfChange) checkMAC() error {
	if m := c.ch.MAC; m != nil && (*m>>48 != 0 || *m&(1<<40) != 0) {
		return fmt.Errorf("%w: mac %s is multicast or not 48-bit", ErrVFSettingInvalid, MACString(*m))
	}
	return nil
}

func (c *vfChange) checkMACInvalidation() error {
	if c.ch.MAC != nil && *c.ch.MAC == 0 && c.ch.SpoofCheck == nil && c.fn.SpoofCheck {
		// mlx4_set_vf_mac: "MAC invalidation is not allowed when spoofchk is on"
		return fmt.Errorf("%w: mac 00:00:00:00:00:00 with spoof check on", ErrVFSettingPerm)
	}
	return nil
}

func (c *vfChange) checkVLAN() error {
	if v := c.ch.VLAN; v != nil && (*v < 0 || *v > 4095) {
		return fmt.Errorf("%w: vlan %d: want 0..4095", ErrVFSettingInvalid, *v)
	}
	return nil
}

func (c *vfChange) checkQoS() error {
	if q := c.ch.QoS; q != nil && (*q < 0 || *q > 7) {
		return fmt.Errorf("%w: qos %d: want 0..7", ErrVFSettingInvalid, *q)
	}
	return nil
}

func (c *vfChange) checkQoSWithoutVLAN() error {
	if c.ch.QoS != nil && c.ch.VLAN == nil && c.fn.VST == nil && *c.ch.QoS != 0 {
		return fmt.Errorf("%w: qos without vlan (ip link sets them together)", ErrVFSettingInvalid)
	}
	return nil
}

func (c *vfChange) checkLinkState() error {
	if l := c.ch.LinkState; l != nil {
		if _, ok := linkWords[*l]; !ok {
			return fmt.Errorf("%w: link-state %q: want auto, enable or disable", ErrVFSettingInvalid, *l)
		}
	}
	return nil
}

// checkSpoofCheckMACs: turning spoof check on needs a MAC on every port of
// the VF, the change's own where it sets one.
func (c *vfChange) checkSpoofCheckMACs() error {
	if c.ch.SpoofCheck == nil || !*c.ch.SpoofCheck {
		return nil
	}
	for _, p := range c.fn.Ports {
		m := c.h.adminMAC(c.vf, p)
		if c.ch.MAC != nil && contains(c.ports, p) {
			m = *c.ch.MAC
		}
		if m == 0 {
			return fmt.Errorf("%w: spoof check with MAC 00:00:00:00:00:00 on port %d (mlx4: \"Illegal MAC with spoofchk\")", ErrVFSettingPerm, p)
		}
	}
	return nil
}

// atNextReset is the report of a setting that becomes operational at the
// VF's next activation.
func atNextReset(what string) string { return what + ": at the VF's next reset" }

func (c *vfChange) applyMAC() string {
	for _, p := range c.ports {
		c.h.fw.vfs[c.vf].AdminMAC[p-1] = *c.ch.MAC
	}
	return atNextReset(fmt.Sprintf("mac %s on %s", MACString(*c.ch.MAC), portList(c.ports)))
}

// applyVLAN sets VST with the change's VLAN and QoS over the current ones;
// VLAN 0 with QoS 0 is back to VGT.
func (c *vfChange) applyVLAN() string {
	vlan, qos := 0, 0
	if c.fn.VST != nil {
		vlan, qos = c.fn.VST.VLAN, c.fn.VST.QoS
	}
	if c.ch.VLAN != nil {
		vlan = *c.ch.VLAN
	}
	if c.ch.QoS != nil {
		qos = *c.ch.QoS
	}
	if vlan == 0 && qos == 0 {
		c.fn.VST = nil // MLX4_VGT
		return atNextReset("vlan 0 qos 0 (VGT)")
	}
	c.fn.VST = &config.VST{VLAN: vlan, QoS: qos}
	return atNextReset(fmt.Sprintf("vlan %d qos %d (VST)", vlan, qos))
}

func (c *vfChange) applySpoofCheck() string {
	c.fn.SpoofCheck = *c.ch.SpoofCheck
	return atNextReset(fmt.Sprintf("spoof-check %v", *c.ch.SpoofCheck))
}

// applyLinkState sets the link state and, at once, sends the VF a
// PORT_CHANGE on each of its ports with the state it now sees.
func (c *vfChange) applyLinkState() string {
	c.fn.LinkState = linkWords[*c.ch.LinkState]
	n := 0
	for i, p := range c.fn.Ports {
		// mlx4_set_vf_link_state: auto follows the port's state.
		sub := uint8(mlx4.PORT_CHANGE_SUBTYPE_DOWN)
		if c.h.VFLinkUp(c.vf, p) {
			sub = mlx4.PORT_CHANGE_SUBTYPE_ACTIVE
		}
		e := mlx4.EncodeEQE(mlx4.EQE{Type: mlx4.EventPortChange, Subtype: sub, Port: i + 1})
		if c.h.PostEQE(c.vf, mlx4.EventPortChange, &e) == nil {
			n++
		}
	}
	return fmt.Sprintf("link-state %s: now (PORT_CHANGE to the VF on %d of its %d ports)", *c.ch.LinkState, n, len(c.fn.Ports))
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// portList names ports as a message says them: "port 1", "ports 1, 2".
func portList(ports []int) string {
	w := make([]string, len(ports))
	for i, p := range ports {
		w[i] = strconv.Itoa(p)
	}
	if len(w) == 1 {
		return "port " + w[0]
	}
	return "ports " + strings.Join(w, ", ")
}
