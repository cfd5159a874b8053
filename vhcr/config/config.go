package config

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

//go:embed example.json
var exampleJSON []byte

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid configuration")

// Hex is an unsigned integer written as a JSON string in hex ("0x1003") or a
// JSON number.
type Hex uint64

func (h *Hex) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return fmt.Errorf("want a number or a \"0x...\" string, got %s", b)
	}
	*h = Hex(v)
	return nil
}

func (h Hex) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf(`"%#x"`, uint64(h))), nil }

// Config is the whole file.
type Config struct {
	Device    Device    `json:"device"`
	Resources Resources `json:"resources"`
	Ports     []Port    `json:"ports"`
	VFs       VFs       `json:"vfs"`
	// Fabric, if set, cables the IB ports to a simulated switch (the
	// ibsim server's link partner, what an SM such as OpenSM discovers).
	Fabric *Fabric `json:"fabric,omitempty"`
	// Faults are fault rules armed when the PF starts (package faultinj's
	// Spec, the objects `vhcrd fault add` sends; docs/faults.md). The
	// default configuration has none.
	Faults []faultinj.Spec `json:"faults,omitempty"`
}

// Fabric is a one-switch topology: the switch and which of the HCA's ports
// are cabled to which of its ports.
type Fabric struct {
	Switch Switch `json:"switch"`
	// Cables maps an HCA port ("1", "2") to a switch port.
	Cables map[string]int `json:"cables"`
	// Peers are further single-port channel adapters on the switch,
	// managed by the SM like vhcrd's own ports (fresh: down, LID 0).
	Peers []Peer `json:"peers,omitempty"`
}

// Peer is another channel adapter cabled to the switch.
type Peer struct {
	NodeGUID        Hex    `json:"node_guid"`
	PortGUID        Hex    `json:"port_guid"`
	NodeDescription string `json:"node_description"`
	SwitchPort      int    `json:"switch_port"`
}

// Switch describes the simulated switch.
type Switch struct {
	NodeGUID        Hex    `json:"node_guid"`
	NodeDescription string `json:"node_description"`
	Ports           int    `json:"ports"`     // external ports, 1..36
	VendorID        Hex    `json:"vendor_id"` // 24 bits
	DeviceID        Hex    `json:"device_id"` // 16 bits
	// LID, if set, is the switch's LID as an SM's sweep left it: the
	// subnet starts swept (switch ports facing Active HCA ports Active,
	// the forwarding table routing the ports' LIDs). 0: a fresh switch.
	LID uint16 `json:"lid,omitempty"`
}

// Device describes the model HCA.
type Device struct {
	FWVersion       string `json:"fw_version"` // major.minor.subminor
	NodeGUID        Hex    `json:"node_guid"`
	SysImageGUID    Hex    `json:"sys_image_guid"`
	NodeDescription string `json:"node_description"`
	VendorID        Hex    `json:"vendor_id"` // IEEE OUI, 24 bits
	DeviceID        Hex    `json:"device_id"` // 16 bits
	Revision        Hex    `json:"revision"`
	BoardID         string `json:"board_id"`
}

// FW returns the parsed firmware version.
func (d *Device) FW() (major, minor, subminor uint16) {
	var a, b, c uint64
	parts := strings.Split(d.FWVersion, ".")
	if len(parts) == 3 {
		a, _ = strconv.ParseUint(parts[0], 10, 16)
		b, _ = strconv.ParseUint(parts[1], 10, 16)
		c, _ = strconv.ParseUint(parts[2], 10, 16)
	}
	return uint16(a), uint16(b), uint16(c)
}

// Resources are the device totals, as QUERY_DEV_CAP reports them (log2 sizes)
// and from which the §2.3 quota algorithm derives per-function quotas.
type Resources struct {
	LogQPs       uint8 `json:"log_qps"`
	ReservedQPs  int   `json:"reserved_qps"`
	LogCQs       uint8 `json:"log_cqs"`
	ReservedCQs  int   `json:"reserved_cqs"`
	LogSRQs      uint8 `json:"log_srqs"`
	ReservedSRQs int   `json:"reserved_srqs"`
	LogMPTs      uint8 `json:"log_mpts"`
	ReservedMRWs int   `json:"reserved_mrws"`
	LogMTTs      uint8 `json:"log_mtts"`
	ReservedMTTs int   `json:"reserved_mtts"`
	LogEQs       uint8 `json:"log_eqs"`
	ReservedEQs  int   `json:"reserved_eqs"`
	Counters     int   `json:"counters"`
	MACsPerPort  int   `json:"macs_per_port"`
	VLANsPerPort int   `json:"vlans_per_port"`
}

// Port is one physical port.
type Port struct {
	LinkLayer       string `json:"link_layer"` // "ib" or "eth"
	LID             uint16 `json:"lid"`
	LMC             uint8  `json:"lmc"`
	GIDPrefix       Hex    `json:"gid_prefix"`
	PortGUID        Hex    `json:"port_guid"`
	State           string `json:"state"` // down, init, armed, active
	CapabilityMask  Hex    `json:"capability_mask"`
	MKey            Hex    `json:"m_key"`
	MKeyProtect     uint8  `json:"m_key_protect"`
	MKeyLeasePeriod uint16 `json:"m_key_lease_period"`
	MasterSMLID     uint16 `json:"master_sm_lid"`
	MasterSMSL      uint8  `json:"master_sm_sl"`
	SubnetTimeout   uint8  `json:"subnet_timeout"`
	PKeys           []Hex  `json:"pkeys"`
	GIDTableLen     int    `json:"gid_table_len"`
	MTU             int    `json:"mtu"`
	BKey            Hex    `json:"b_key"`
	BKeyProtect     bool   `json:"b_key_protect"`
	BKeyLeasePeriod uint16 `json:"b_key_lease_period"`
	QKey            Hex    `json:"q_key"`
	MAC             string `json:"mac"`
	// Uplink is where an Ethernet port's switch sends the frames that
	// leave the device; without one they go nowhere.
	Uplink *Uplink `json:"uplink,omitempty"`
}

// Uplink is an Ethernet port's way out of the device: a capture file, a
// TAP device, or both.
type Uplink struct {
	// PCAP is a capture file (created, truncated) that gets every frame
	// leaving the port as it is on the wire (a VST VF's with its tag):
	// tshark and Wireshark read it.
	PCAP string `json:"pcap,omitempty"`
	// TAP is a TAP device vhcrd makes (persistent, up, no address): the
	// frames leaving the port are written to it, and what the host sends
	// on it enters the port's switch as from the wire, to the VFs that
	// have its destination MAC. The host's side sees VST VFs' frames
	// tagged: a VLAN device on the TAP is their network.
	TAP string `json:"tap,omitempty"`
	// NetNS is the network namespace the TAP device is made in: a file
	// as `ip netns add NAME` leaves it (/run/netns/NAME); "" the
	// daemon's own.
	NetNS string `json:"netns,omitempty"`
	// VLAN, if set, makes the TAP an access port of that VLAN, as an
	// upstream switch's port to a host without 802.1Q: the TAP gets the
	// port's frames of that VLAN untagged and no others, and the host's
	// frames enter the port tagged with it (priority 0). 0: the TAP is a
	// trunk and sees the frames as on the wire (a VLAN device on it is
	// the VST VFs' network).
	VLAN int `json:"vlan,omitempty"`
}

// VFs configures the functions: a default and per-VF overrides (keyed by the
// 0-based VF index as a string), merged field by field.
type VFs struct {
	Default   VF            `json:"default"`
	Overrides map[string]VF `json:"overrides"`
}

// VF is one function's view. Zero fields take the default's value.
type VF struct {
	Ports     []int            `json:"ports"`      // physical ports visible, in order (VF port 1 = first)
	LinkState string           `json:"link_state"` // auto, up, down
	PKeyMap   map[string][]int `json:"pkey_map"`   // per physical port: virtual index -> physical index
	NodeGUID  Hex              `json:"node_guid"`
	PortGUIDs map[string]Hex   `json:"port_guids"`
	SMI       *bool            `json:"smi"` // SMI-privileged (QP0, all MAD_IFC)
	// TunnelClasses are the management classes beyond Linux's PF's that
	// the PF's tunnel passes for the function, both ways: "perf_mgt"
	// (the VF's queries of other nodes' PMAs; Debian's mlx4_ib answers
	// the replies to ClassPortInfo and PortCounters itself, see
	// docs/differences.md) and "bm" (Baseboard Management, B_Key checks
	// and Trap 259 from a guest's MADs). mlx4_ib's
	// mlx4_ib_multiplex_mad drops both for every VF; absent or empty:
	// as it does.
	TunnelClasses []string         `json:"tunnel_classes"` // TunnelClassPerfMgt, TunnelClassBM
	Quotas        map[string]Quota `json:"quotas"`
	// VST puts the function's Ethernet ports in VLAN switch tagging (ip
	// link set ... vf N vlan V qos Q); absent: VGT, the VF tags itself.
	VST *VST `json:"vst"`
	// SpoofCheck forces the source MAC of the function's Ethernet QPs to
	// its own (ip link set ... vf N spoofchk on).
	SpoofCheck *bool `json:"spoof_check"`
	// Completions is how the PF completes the function's 'e'-bit commands:
	// "auto" (absent: the default's, else auto) decides per command from
	// the token the VF wrote (0xffff, mlx4's CMD_POLL_TOKEN: as Linux's PF
	// does; any other: the accept-early EQE), "mlx4" always as
	// Linux's PF, "early" always the early way ("seed" is an alias: its name before; master.Completions).
	Completions string `json:"completions"`
}

// The names VF.TunnelClasses takes.
const (
	TunnelClassPerfMgt = "perf_mgt"
	TunnelClassBM      = "bm"
)

// VST is a VF's VLAN switch tagging: the VLAN its traffic is tagged with
// (0: priority tagged only) and the 802.1p priority.
type VST struct {
	VLAN int `json:"vlan"` // 0..4094
	QoS  int `json:"qos"`  // 0..7
}

// Quota overrides the §2.3 defaults of one resource type for a function.
type Quota struct {
	Quota      *int `json:"quota"`
	Guaranteed *int `json:"guaranteed"`
}

// ResourceTypes are the quota keys.
var ResourceTypes = []string{"qp", "cq", "srq", "mpt", "mtt", "mac", "vlan", "counter"}

// Default returns the embedded default configuration.
func Default() *Config {
	c, err := Parse(bytes.NewReader(exampleJSON))
	if err != nil {
		panic("config: embedded default is invalid: " + err.Error())
	}
	return c
}

// Example returns the embedded default as JSON text.
func Example() []byte { return append([]byte(nil), exampleJSON...) }

// Load reads and validates a configuration file.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse decodes strictly and validates.
func Parse(r io.Reader) (*Config, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, fieldErr(te.Field, "%s, want %s", te.Value, jsonWant(te.Type.Kind()))
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// jsonWant says in words what a field of kind k takes (for a value of the
// wrong type or range; not Go's type names).
func jsonWant(k reflect.Kind) string {
	switch k {
	case reflect.Uint8:
		return "a number 0..255"
	case reflect.Uint16:
		return "a number 0..65535"
	case reflect.Uint32:
		return "a number 0..4294967295"
	case reflect.Uint, reflect.Uint64:
		return "a number 0 or more"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}

func fieldErr(field, format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, a...))
}

// Validate checks every value and names the first bad field.
func (c *Config) Validate() error {
	if err := c.Device.validate(); err != nil {
		return err
	}
	if err := c.Resources.validate(); err != nil {
		return err
	}
	if len(c.Ports) < 1 || len(c.Ports) > 2 {
		return fieldErr("ports", "%d ports; the model has 1 or 2", len(c.Ports))
	}
	for i := range c.Ports {
		if err := c.Ports[i].validate(fmt.Sprintf("ports[%d]", i)); err != nil {
			return err
		}
	}
	if c.Fabric != nil {
		if err := c.Fabric.validate(c); err != nil {
			return err
		}
	}
	if err := c.VFs.Default.validate("vfs.default", c, true); err != nil {
		return err
	}
	for i, s := range c.Faults {
		// The VF count is --num-vfs's: checked again when the PF arms it.
		if _, err := faultinj.Compile(s, MaxVFs); err != nil {
			return fieldErr(fmt.Sprintf("faults[%d]", i), "%v", err)
		}
	}
	return c.validateOverrides()
}

// validateOverrides checks every override, in the order of its VF's key.
func (c *Config) validateOverrides() error {
	keys := make([]string, 0, len(c.VFs.Overrides))
	for k := range c.VFs.Overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n, err := strconv.Atoi(k)
		if err != nil || n < 0 || n > MaxVFs-1 {
			return fieldErr("vfs.overrides."+k, "key must be a VF index 0..%d", MaxVFs-1)
		}
		ov := c.VFs.Overrides[k]
		if err := ov.validate("vfs.overrides."+k, c, false); err != nil {
			return err
		}
	}
	return nil
}

func (d *Device) validate() error {
	if maj, min, sub := d.FW(); maj == 0 && min == 0 && sub == 0 {
		return fieldErr("device.fw_version", "%q is not major.minor.subminor", d.FWVersion)
	}
	if d.NodeGUID == 0 {
		return fieldErr("device.node_guid", "must be non-zero")
	}
	if d.VendorID > 0xffffff {
		return fieldErr("device.vendor_id", "%#x does not fit 24 bits", uint64(d.VendorID))
	}
	if d.DeviceID > 0xffff {
		return fieldErr("device.device_id", "%#x does not fit 16 bits", uint64(d.DeviceID))
	}
	if len(d.NodeDescription) > 64 {
		return fieldErr("device.node_description", "longer than 64 bytes")
	}
	return nil
}

func (r *Resources) validate() error {
	for _, x := range []struct {
		name     string
		log      uint8
		reserved int
		max      uint8
	}{
		{"qps", r.LogQPs, r.ReservedQPs, 23}, {"cqs", r.LogCQs, r.ReservedCQs, 24},
		{"srqs", r.LogSRQs, r.ReservedSRQs, 23}, {"mpts", r.LogMPTs, r.ReservedMRWs, 24},
		{"mtts", r.LogMTTs, r.ReservedMTTs, 26}, {"eqs", r.LogEQs, r.ReservedEQs, 10},
	} {
		if x.log < 4 || x.log > x.max {
			return fieldErr("resources.log_"+x.name, "%d outside 4..%d", x.log, x.max)
		}
		if x.reserved < 0 || x.reserved >= 1<<x.log {
			return fieldErr("resources.reserved_"+strings.TrimSuffix(x.name, "s")+"s", "%d outside 0..%d", x.reserved, 1<<x.log-1)
		}
	}
	if r.Counters < 2 || r.Counters > 256 {
		return fieldErr("resources.counters", "%d outside 2..256", r.Counters)
	}
	if r.MACsPerPort < 2 || r.MACsPerPort > 128 {
		return fieldErr("resources.macs_per_port", "%d outside 2..128", r.MACsPerPort)
	}
	if r.VLANsPerPort < 1 || r.VLANsPerPort > 128 {
		return fieldErr("resources.vlans_per_port", "%d outside 1..128", r.VLANsPerPort)
	}
	return nil
}

// MaxVFs is the largest VF count vhcrd serves: the wire contract's bound.
const MaxVFs = wire.MaxVFs

var portStates = map[string]uint8{"down": 1, "init": 2, "armed": 3, "active": 4}

// StateValue is the IB PortState value (1 Down .. 4 Active).
func (p *Port) StateValue() uint8 { return portStates[p.State] }

func (u *Uplink) validate(f, linkLayer string) error {
	switch {
	case linkLayer != "eth" || u.PCAP == "" && u.TAP == "":
		return fieldErr(f, "needs link_layer \"eth\" and a pcap file or a tap device")
	case u.VLAN != 0 && (u.TAP == "" || u.VLAN < 1 || u.VLAN > 4094):
		return fieldErr(f+".vlan", "%d: the tap device's access VLAN, 1..4094, needs uplink.tap", u.VLAN)
	case u.NetNS != "" && u.TAP == "":
		return fieldErr(f+".netns", "is where the tap device is made: needs uplink.tap")
	case u.TAP != "" && (len(u.TAP) > 15 || strings.ContainsAny(u.TAP, "/: \t")):
		return fieldErr(f+".tap", "%q is not an interface name (15 bytes, no '/', ':' or space)", u.TAP)
	}
	return nil
}

func (p *Port) validate(f string) error {
	switch p.LinkLayer {
	case "ib", "eth":
	default:
		return fieldErr(f+".link_layer", "%q is neither \"ib\" nor \"eth\"", p.LinkLayer)
	}
	if p.LinkLayer == "ib" && (p.LID >= 0xc000 || p.LID == 0 && p.State != "down" && p.State != "init") {
		// LID 0 is a port the SM has not configured yet: a fresh fabric.
		return fieldErr(f+".lid", "%d is not a unicast LID (1..0xbfff; 0 only for a down or init port)", p.LID)
	}
	if p.LMC > 7 {
		return fieldErr(f+".lmc", "%d outside 0..7", p.LMC)
	}
	if u := p.Uplink; u != nil {
		if err := u.validate(f+".uplink", p.LinkLayer); err != nil {
			return err
		}
	}
	if p.PortGUID == 0 {
		return fieldErr(f+".port_guid", "must be non-zero")
	}
	if _, ok := portStates[p.State]; !ok {
		return fieldErr(f+".state", "%q is not one of down, init, armed, active", p.State)
	}
	if p.CapabilityMask > 0xffffffff {
		return fieldErr(f+".capability_mask", "does not fit 32 bits")
	}
	if p.MKeyProtect > 3 {
		return fieldErr(f+".m_key_protect", "%d outside 0..3", p.MKeyProtect)
	}
	if p.MasterSMLID >= 0xc000 {
		return fieldErr(f+".master_sm_lid", "%d is not a unicast LID", p.MasterSMLID)
	}
	if p.MasterSMSL > 15 {
		return fieldErr(f+".master_sm_sl", "%d outside 0..15", p.MasterSMSL)
	}
	if p.SubnetTimeout > 31 {
		return fieldErr(f+".subnet_timeout", "%d outside 0..31", p.SubnetTimeout)
	}
	if err := validPKeys(f, p.PKeys); err != nil {
		return err
	}
	if p.GIDTableLen < 1 || p.GIDTableLen > 128 {
		return fieldErr(f+".gid_table_len", "%d outside 1..128", p.GIDTableLen)
	}
	switch p.MTU {
	case 256, 512, 1024, 2048, 4096:
	default:
		return fieldErr(f+".mtu", "%d is not 256, 512, 1024, 2048 or 4096", p.MTU)
	}
	if p.QKey > 0xffffffff {
		return fieldErr(f+".q_key", "does not fit 32 bits")
	}
	return nil
}

// validPKeys checks a port's P_Key table: 1 to 128 valid 16-bit P_Keys.
func validPKeys(f string, pkeys []Hex) error {
	if len(pkeys) == 0 || len(pkeys) > 128 {
		return fieldErr(f+".pkeys", "%d entries; want 1..128", len(pkeys))
	}
	for i, k := range pkeys {
		if k > 0xffff {
			return fieldErr(fmt.Sprintf("%s.pkeys[%d]", f, i), "%#x does not fit 16 bits", uint64(k))
		}
		if k&0x7fff == 0 {
			return fieldErr(fmt.Sprintf("%s.pkeys[%d]", f, i), "%#x is the invalid P_Key", uint64(k))
		}
	}
	return nil
}

func (v *VF) validate(f string, c *Config, isDefault bool) error {
	if isDefault && len(v.Ports) == 0 {
		return fieldErr(f+".ports", "the default VF needs at least one port")
	}
	seen := map[int]bool{}
	for i, p := range v.Ports {
		if p < 1 || p > len(c.Ports) {
			return fieldErr(fmt.Sprintf("%s.ports[%d]", f, i), "port %d does not exist (1..%d)", p, len(c.Ports))
		}
		if seen[p] {
			return fieldErr(fmt.Sprintf("%s.ports[%d]", f, i), "port %d listed twice", p)
		}
		seen[p] = true
	}
	switch v.LinkState {
	case "", "auto", "up", "down":
	default:
		return fieldErr(f+".link_state", "%q is not auto, up or down", v.LinkState)
	}
	switch v.Completions {
	case "", "auto", "mlx4", "early", "seed": // seed: early's name before
	default:
		return fieldErr(f+".completions", "%q is not auto, mlx4 or early", v.Completions)
	}
	for i, c := range v.TunnelClasses {
		if c != TunnelClassPerfMgt && c != TunnelClassBM {
			return fieldErr(fmt.Sprintf("%s.tunnel_classes[%d]", f, i), "%q is not %s or %s", c, TunnelClassPerfMgt, TunnelClassBM)
		}
	}
	if v.VST != nil {
		if v.VST.VLAN < 0 || v.VST.VLAN > 4094 {
			return fieldErr(f+".vst.vlan", "%d outside 0..4094 (0: priority tagged)", v.VST.VLAN)
		}
		if v.VST.QoS < 0 || v.VST.QoS > 7 {
			return fieldErr(f+".vst.qos", "%d outside 0..7", v.VST.QoS)
		}
	}
	if err := v.validateMaps(f, c); err != nil {
		return err
	}
	return v.validateQuotas(f)
}

// validateMaps checks the P_Key maps and port GUIDs, keyed by port.
func (v *VF) validateMaps(f string, c *Config) error {
	for k, m := range v.PKeyMap {
		p, err := strconv.Atoi(k)
		if err != nil || p < 1 || p > len(c.Ports) {
			return fieldErr(f+".pkey_map."+k, "key must be a port number 1..%d", len(c.Ports))
		}
		if len(m) == 0 || len(m) > len(c.Ports[p-1].PKeys) {
			return fieldErr(f+".pkey_map."+k, "%d entries; want 1..%d (the port's P_Key table)", len(m), len(c.Ports[p-1].PKeys))
		}
		for i, phys := range m {
			if phys < 0 || phys >= len(c.Ports[p-1].PKeys) {
				return fieldErr(fmt.Sprintf("%s.pkey_map.%s[%d]", f, k, i), "physical index %d outside 0..%d", phys, len(c.Ports[p-1].PKeys)-1)
			}
		}
	}
	for k := range v.PortGUIDs {
		if p, err := strconv.Atoi(k); err != nil || p < 1 || p > len(c.Ports) {
			return fieldErr(f+".port_guids."+k, "key must be a port number 1..%d", len(c.Ports))
		}
	}
	return nil
}

func (v *VF) validateQuotas(f string) error {
	for k, q := range v.Quotas {
		known := false
		for _, t := range ResourceTypes {
			known = known || t == k
		}
		if !known {
			return fieldErr(f+".quotas."+k, "unknown resource type (want one of %s)", strings.Join(ResourceTypes, ", "))
		}
		if q.Quota != nil && *q.Quota < 0 {
			return fieldErr(f+".quotas."+k+".quota", "%d is negative", *q.Quota)
		}
		if q.Guaranteed != nil && *q.Guaranteed < 0 {
			return fieldErr(f+".quotas."+k+".guaranteed", "%d is negative", *q.Guaranteed)
		}
		if q.Quota != nil && q.Guaranteed != nil && *q.Guaranteed > *q.Quota {
			return fieldErr(f+".quotas."+k+".guaranteed", "%d exceeds the quota %d", *q.Guaranteed, *q.Quota)
		}
	}
	return nil
}

// Function is the resolved view of one VF: the default merged with its
// override, with derived GUIDs filled in.
type Function struct {
	VF        int
	Ports     []int         // physical port of VF port i+1
	LinkState string        // auto, up, down
	PKeyMap   map[int][]int // physical port -> virtual index -> physical index
	NodeGUID  uint64
	PortGUID  map[int]uint64 // physical port -> GUID
	SMI       bool
	// TunnelPerfMgt and TunnelBM: the tunnel passes the VF's PerfMgt and
	// BM MADs and their responses (VF.TunnelClasses).
	TunnelPerfMgt, TunnelBM bool
	Quotas                  map[string]Quota
	VST                     *VST // nil: VGT
	SpoofCheck              bool
	// Completions is auto, mlx4 or early (or seed, early's old name) (VF.Completions).
	Completions string
}

// Function resolves VF vf.
func (c *Config) Function(vf int) Function {
	d := c.VFs.Default
	o, hasO := c.VFs.Overrides[strconv.Itoa(vf)]
	fn := Function{VF: vf, Ports: d.Ports, LinkState: d.LinkState, PKeyMap: map[int][]int{},
		PortGUID: map[int]uint64{}, Quotas: map[string]Quota{}}
	if hasO && len(o.Ports) > 0 {
		fn.Ports = o.Ports
	}
	if hasO && o.LinkState != "" {
		fn.LinkState = o.LinkState
	}
	if fn.LinkState == "" {
		fn.LinkState = "auto"
	}
	// mlx4 derives VF GUIDs from the PF's; here: node GUID with the VF index
	// (+1, slave numbering) in bits 47:40, which keeps the OUI.
	fn.NodeGUID = uint64(c.Device.NodeGUID) ^ uint64(vf+1)<<40
	if hasO && o.NodeGUID != 0 {
		fn.NodeGUID = uint64(o.NodeGUID)
	} else if d.NodeGUID != 0 {
		fn.NodeGUID = uint64(d.NodeGUID) ^ uint64(vf+1)<<40
	}
	c.resolvePorts(&fn, &d, &o, hasO)
	resolveAdmin(&fn, &d, &o, hasO)
	for k, q := range d.Quotas {
		fn.Quotas[k] = q
	}
	if hasO {
		for k, q := range o.Quotas {
			fn.Quotas[k] = q
		}
	}
	return fn
}

// resolveAdmin merges what an operator sets per VF (SMI, the tunnel's
// extra classes, VST, spoof check, completions): the override's wins.
func resolveAdmin(fn *Function, d, o *VF, hasO bool) {
	if d.SMI != nil {
		fn.SMI = *d.SMI
	}
	if hasO && o.SMI != nil {
		fn.SMI = *o.SMI
	}
	classes := d.TunnelClasses
	if hasO && o.TunnelClasses != nil {
		classes = o.TunnelClasses
	}
	for _, c := range classes {
		fn.TunnelPerfMgt = fn.TunnelPerfMgt || c == TunnelClassPerfMgt
		fn.TunnelBM = fn.TunnelBM || c == TunnelClassBM
	}
	fn.VST = d.VST
	if hasO && o.VST != nil {
		fn.VST = o.VST
	}
	if d.SpoofCheck != nil {
		fn.SpoofCheck = *d.SpoofCheck
	}
	if hasO && o.SpoofCheck != nil {
		fn.SpoofCheck = *o.SpoofCheck
	}
	fn.Completions = d.Completions
	if hasO && o.Completions != "" {
		fn.Completions = o.Completions
	}
	if fn.Completions == "" {
		fn.Completions = "auto"
	}
}

// resolvePorts fills in fn's port GUIDs and P_Key maps: the override's, the
// default's, or derived from the PF's.
func (c *Config) resolvePorts(fn *Function, d, o *VF, hasO bool) {
	vf := fn.VF
	for i, p := range c.Ports {
		port := i + 1
		fn.PortGUID[port] = uint64(p.PortGUID) ^ uint64(vf+1)<<40
		m := d.PKeyMap[strconv.Itoa(port)]
		if hasO {
			if om, ok := o.PKeyMap[strconv.Itoa(port)]; ok {
				m = om
			}
			if g, ok := o.PortGUIDs[strconv.Itoa(port)]; ok {
				fn.PortGUID[port] = uint64(g)
			}
		}
		if g, ok := d.PortGUIDs[strconv.Itoa(port)]; ok && (!hasO || o.PortGUIDs[strconv.Itoa(port)] == 0) {
			fn.PortGUID[port] = uint64(g) ^ uint64(vf+1)<<40
		}
		if len(m) == 0 {
			m = []int{0}
		}
		fn.PKeyMap[port] = append([]int(nil), m...)
	}
}

// PortGUIDValue is the port GUID as a number.
func (p *Port) PortGUIDValue() uint64 { return uint64(p.PortGUID) }

func (fb *Fabric) validate(c *Config) error {
	sw := &fb.Switch
	switch {
	case sw.NodeGUID == 0:
		return fieldErr("fabric.switch.node_guid", "must be non-zero")
	case sw.Ports < 1 || sw.Ports > 36:
		return fieldErr("fabric.switch.ports", "%d outside 1..36", sw.Ports)
	case sw.VendorID > 0xffffff:
		return fieldErr("fabric.switch.vendor_id", "%#x does not fit 24 bits", uint64(sw.VendorID))
	case sw.DeviceID > 0xffff:
		return fieldErr("fabric.switch.device_id", "%#x does not fit 16 bits", uint64(sw.DeviceID))
	case len(sw.NodeDescription) > 64:
		return fieldErr("fabric.switch.node_description", "longer than 64 bytes")
	case len(fb.Cables) == 0:
		return fieldErr("fabric.cables", "no port is cabled")
	}
	if sw.LID >= 0xc000 {
		return fieldErr("fabric.switch.lid", "%d is not a unicast LID (1..0xbfff, or 0 for a fresh switch)", sw.LID)
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if sw.LID != 0 && p.LinkLayer == "ib" && p.LID != 0 && sw.LID >= p.LID && sw.LID < p.LID+1<<p.LMC {
			return fieldErr("fabric.switch.lid", "%d is port %d's LID", sw.LID, i+1)
		}
		if _, cabled := fb.Cables[strconv.Itoa(i+1)]; !cabled && p.LinkLayer == "ib" && p.State != "down" {
			// No cable, no link: the port polls for a partner.
			return fieldErr(fmt.Sprintf("ports[%d].state", i), "%q, but port %d is not cabled (fabric.cables): an uncabled port is \"down\" (Polling)", p.State, i+1)
		}
	}
	used, err := fb.validateCables(c)
	if err != nil {
		return err
	}
	return fb.validatePeers(used)
}

// validateCables checks the cables and returns the switch ports they use,
// each with its cable's key.
func (fb *Fabric) validateCables(c *Config) (map[int]string, error) {
	sw := &fb.Switch
	used := map[int]string{}
	for k, sp := range fb.Cables {
		p, err := strconv.Atoi(k)
		if err != nil || p < 1 || p > len(c.Ports) {
			return nil, fieldErr("fabric.cables."+k, "key must be an IB port number 1..%d", len(c.Ports))
		}
		if c.Ports[p-1].LinkLayer != "ib" {
			return nil, fieldErr("fabric.cables."+k, "port %d is %s: only IB ports are cabled to the switch (remove this cable)", p, c.Ports[p-1].LinkLayer)
		}
		if sp < 1 || sp > sw.Ports {
			return nil, fieldErr("fabric.cables."+k, "switch port %d outside 1..%d", sp, sw.Ports)
		}
		if o, dup := used[sp]; dup {
			return nil, fieldErr("fabric.cables."+k, "switch port %d is already cabled to port %s", sp, o)
		}
		used[sp] = k
	}
	return used, nil
}

// validatePeers checks the peers, none on a switch port in used.
func (fb *Fabric) validatePeers(used map[int]string) error {
	sw := &fb.Switch
	for i, p := range fb.Peers {
		f := fmt.Sprintf("fabric.peers[%d]", i)
		switch {
		case p.NodeGUID == 0 || p.PortGUID == 0:
			return fieldErr(f, "node_guid and port_guid must be non-zero")
		case len(p.NodeDescription) > 64:
			return fieldErr(f+".node_description", "longer than 64 bytes")
		case p.SwitchPort < 1 || p.SwitchPort > sw.Ports:
			return fieldErr(f+".switch_port", "%d outside 1..%d", p.SwitchPort, sw.Ports)
		}
		if o, dup := used[p.SwitchPort]; dup {
			return fieldErr(f+".switch_port", "switch port %d is already cabled to %s", p.SwitchPort, o)
		}
		used[p.SwitchPort] = f
	}
	return nil
}
