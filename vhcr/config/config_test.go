package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if len(c.Ports) != 2 {
		t.Fatalf("default has %d ports", len(c.Ports))
	}
	fn := c.Function(3)
	if got := fn.PKeyMap[1]; len(got) != 3 || got[1] != 2 {
		t.Errorf("vf 3 override pkey map for port 1 = %v, want [0 2 3]", got)
	}
	if fn0 := c.Function(0); fn0.NodeGUID == uint64(c.Device.NodeGUID) || fn0.NodeGUID == fn.NodeGUID {
		t.Errorf("VF node GUIDs not distinct from the PF and each other: %#x %#x", fn0.NodeGUID, fn.NodeGUID)
	}
}

func TestErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ edit, field string }{
		{`"lid": 5,`, `ports[0].lid`},
		{`"m_key_protect": 0,`, `ports[0].m_key_protect`},
		{`"log_qps": 17,`, `resources.log_qps`},
		{`"subnet_timeout": 18,`, `ports[0].subnet_timeout`},
		{`"pkey_map": {"1": [0, 1], "2": [0, 1]},`, `vfs.default.pkey_map.1[1]`},
		{`"3": { "pkey_map"`, `vfs.overrides.300`},
	} {
		bad := map[string]string{
			`"lid": 5,`:                               `"lid": 65535,`,
			`"m_key_protect": 0,`:                     `"m_key_protect": 4,`,
			`"log_qps": 17,`:                          `"log_qps": 40,`,
			`"subnet_timeout": 18,`:                   `"subnet_timeout": 32,`,
			`"pkey_map": {"1": [0, 1], "2": [0, 1]},`: `"pkey_map": {"1": [0, 9], "2": [0, 1]},`,
			`"3": { "pkey_map"`:                       `"300": { "pkey_map"`,
		}[tc.edit]
		src := strings.Replace(string(Example()), tc.edit, bad, 1)
		if src == string(Example()) {
			t.Fatalf("edit %q did not apply", tc.edit)
		}
		_, err := Parse(strings.NewReader(src))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("edit %q: error %v does not name %s", tc.edit, err, tc.field)
		}
	}
}

func TestUnknownFieldRejected(t *testing.T) {
	src := strings.Replace(string(Example()), `"lmc": 0,`, `"lmc": 0, "lcm": 1,`, 1)
	if _, err := Parse(strings.NewReader(src)); err == nil || !strings.Contains(err.Error(), "lcm") {
		t.Fatalf("unknown field accepted or not named: %v", err)
	}
}

// TestVSTAndSpoofCheck: the VST fields are checked and named, and an
// override's VST and spoof check win over the default's.
func TestVSTAndSpoofCheck(t *testing.T) {
	for _, tc := range []struct{ vst, field string }{
		{`{"vlan": 4095, "qos": 0}`, "vfs.overrides.3.vst.vlan"},
		{`{"vlan": -1, "qos": 0}`, "vfs.overrides.3.vst.vlan"},
		{`{"vlan": 10, "qos": 8}`, "vfs.overrides.3.vst.qos"},
	} {
		src := strings.Replace(string(Example()), `"3": { "pkey_map"`, `"3": { "vst": `+tc.vst+`, "pkey_map"`, 1)
		if _, err := Parse(strings.NewReader(src)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("vst %s: error %v does not name %s", tc.vst, err, tc.field)
		}
	}
	src := strings.Replace(string(Example()), `"3": { "pkey_map"`, `"3": { "vst": {"vlan": 100, "qos": 5}, "spoof_check": true, "pkey_map"`, 1)
	c, err := Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if fn := c.Function(3); fn.VST == nil || fn.VST.VLAN != 100 || fn.VST.QoS != 5 || !fn.SpoofCheck {
		t.Fatalf("VF 3: VST %+v spoof check %v", fn.VST, fn.SpoofCheck)
	}
	if fn := c.Function(2); fn.VST != nil || fn.SpoofCheck {
		t.Fatalf("VF 2 took VF 3's vport state: VST %+v spoof check %v", fn.VST, fn.SpoofCheck)
	}
}

// fabricJSON is a fresh fabric: both ports cabled to one switch, down with
// LID 0 until an SM configures them; it replaces the default's swept one.
func fabricJSON(cables string) string {
	ex := string(Example())
	i, j := strings.Index(ex, `"fabric": {`), strings.Index(ex, `"vfs": {`)
	src := ex[:i] + `"fabric": {
    "switch": {"node_guid": "0x0002c90300f00000", "node_description": "vhcrd switch", "ports": 8, "vendor_id": "0x000001"},
    "cables": ` + cables + `
  },
  ` + ex[j:]
	src = strings.Replace(src, `"lid": 5,`, `"lid": 0,`, 1)
	src = strings.Replace(src, `"lid": 6,`, `"lid": 0,`, 1)
	return strings.ReplaceAll(src, `"state": "active",`, `"state": "down",`)
}

// The default is a subnet already swept: a switch with a LID, cabled to
// both ports, which keep their LIDs and stay Active.
func TestDefaultFabric(t *testing.T) {
	c := Default()
	if c.Fabric == nil || c.Fabric.Switch.LID == 0 || c.Fabric.Cables["1"] == 0 || c.Fabric.Cables["2"] == 0 {
		t.Fatalf("default fabric %+v", c.Fabric)
	}
	for i, p := range c.Ports {
		if p.LID == 0 || p.State != "active" {
			t.Errorf("default port %d: LID %d state %s", i+1, p.LID, p.State)
		}
	}
}

// An IB port without a cable has no link: it must be down (Polling); a
// switch LID must be unicast and no port's.
func TestFabricUncabledAndSwitchLID(t *testing.T) {
	one := strings.Replace(string(Example()), `"cables": {"1": 1, "2": 2}`, `"cables": {"1": 1}`, 1)
	if _, err := Parse(strings.NewReader(one)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "ports[1].state") ||
		!strings.Contains(err.Error(), "not cabled") {
		t.Errorf("an active uncabled port: %v", err)
	}
	down := strings.Replace(one, `"lid": 6,`, `"lid": 0,`, 1)
	down = strings.Replace(down, `"state": "active",
      "capability_mask": "0x02510868",
      "master_sm_lid": 1,`, `"state": "down",
      "capability_mask": "0x02510868",
      "master_sm_lid": 1,`, 1)
	if down == strings.Replace(one, `"lid": 6,`, `"lid": 0,`, 1) {
		t.Fatal("edit of port 2's state did not apply")
	}
	if _, err := Parse(strings.NewReader(down)); err != nil {
		t.Errorf("a down uncabled port: %v", err)
	}
	// An Ethernet port takes no cable, and needs none.
	eth := strings.Replace(string(Example()), `"link_layer": "ib",`, `"link_layer": "eth",`, 1)
	if _, err := Parse(strings.NewReader(eth)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "fabric.cables.1: port 1 is eth") {
		t.Errorf("a cabled Ethernet port: %v", err)
	}
	eth = strings.Replace(eth, `"cables": {"1": 1, "2": 2}`, `"cables": {"2": 2}`, 1)
	if _, err := Parse(strings.NewReader(eth)); err != nil {
		t.Errorf("an uncabled Ethernet port: %v", err)
	}
	for _, lid := range []string{"5", "49152"} {
		src := strings.Replace(string(Example()), `"lid": 1}`, `"lid": `+lid+`}`, 1)
		if _, err := Parse(strings.NewReader(src)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "fabric.switch.lid") {
			t.Errorf("switch LID %s: %v", lid, err)
		}
	}
}

func TestFabric(t *testing.T) {
	c, err := Parse(strings.NewReader(fabricJSON(`{"1": 1, "2": 2}`)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Fabric == nil || c.Fabric.Switch.Ports != 8 || c.Fabric.Cables["2"] != 2 || c.Ports[0].LID != 0 {
		t.Fatalf("fabric %+v, port 1 LID %d", c.Fabric, c.Ports[0].LID)
	}
	for _, tc := range []struct{ cables, field string }{
		{`{"1": 9}`, "fabric.cables.1"},
		{`{"3": 1}`, "fabric.cables.3"},
		{`{}`, "fabric.cables"},
	} {
		if _, err := Parse(strings.NewReader(fabricJSON(tc.cables))); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("cables %s: error %v does not name %s", tc.cables, err, tc.field)
		}
	}
	if _, err := Parse(strings.NewReader(fabricJSON(`{"1": 1, "2": 1}`))); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "already cabled") {
		t.Errorf("two ports on one switch port: %v", err)
	}
	peer := func(sp int) string {
		return fmt.Sprintf(`{"1": 1}, "peers": [{"node_guid": "0x10", "port_guid": "0x11", "node_description": "peer", "switch_port": %d}]`, sp)
	}
	if c, err := Parse(strings.NewReader(fabricJSON(peer(3)))); err != nil || len(c.Fabric.Peers) != 1 || c.Fabric.Peers[0].SwitchPort != 3 {
		t.Errorf("a peer on switch port 3: %v", err)
	}
	if _, err := Parse(strings.NewReader(fabricJSON(peer(1)))); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "fabric.peers[0].switch_port") {
		t.Errorf("a peer on a cabled switch port: %v", err)
	}
	// LID 0 is only for a port the SM has not configured yet.
	src := strings.Replace(string(Example()), `"lid": 5,`, `"lid": 0,`, 1)
	if _, err := Parse(strings.NewReader(src)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "ports[0].lid") {
		t.Errorf("active port with LID 0: %v", err)
	}
}

// TestCompletions: the completion mode is checked and named, an override
// wins over the default, and the embedded default serves both kinds of VF
// (auto).
func TestCompletions(t *testing.T) {
	for _, bad := range []string{`"completions": "linux",`, `"completions": "AUTO",`} {
		src := strings.Replace(string(Example()), `"completions": "auto",`, bad, 1)
		if _, err := Parse(strings.NewReader(src)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "vfs.default.completions") {
			t.Errorf("%s: error %v does not name vfs.default.completions", bad, err)
		}
	}
	src := strings.Replace(string(Example()), `"3": { "pkey_map"`, `"3": { "completions": "bogus", "pkey_map"`, 1)
	if _, err := Parse(strings.NewReader(src)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "vfs.overrides.3.completions") {
		t.Errorf("override: error %v does not name vfs.overrides.3.completions", err)
	}
	if fn := Default().Function(0); fn.Completions != "auto" {
		t.Fatalf("embedded default: VF 0 completions %q, want auto", fn.Completions)
	}
	src = strings.Replace(string(Example()), `"completions": "auto",`, `"completions": "seed",`, 1)
	src = strings.Replace(src, `"3": { "pkey_map"`, `"3": { "completions": "mlx4", "pkey_map"`, 1)
	c, err := Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Function(3).Completions; got != "mlx4" {
		t.Fatalf("VF 3: %q, want the override's mlx4", got)
	}
	if got := c.Function(2).Completions; got != "seed" {
		t.Fatalf("VF 2: %q, want the default's seed", got)
	}
	src = strings.Replace(string(Example()), `"completions": "auto",`, ``, 1)
	if c, err = Parse(strings.NewReader(src)); err != nil || c.Function(0).Completions != "auto" {
		t.Fatalf("absent: %v, %q; want auto", err, c.Function(0).Completions)
	}
}

// A value of the wrong type or range names the field and what it takes in
// words, not Go's struct and type names.
func TestParseTypeErrorInWords(t *testing.T) {
	ex := string(Example())
	for _, tc := range []struct{ from, to, want string }{
		{`"lid": 5`, `"lid": 70000`, "ports.lid: number 70000, want a number 0..65535"},
		{`"lid": 5`, `"lid": "five"`, "ports.lid: string, want a number 0..65535"},
	} {
		if !strings.Contains(ex, tc.from) {
			t.Fatalf("the example has no %s", tc.from)
		}
		_, err := Parse(strings.NewReader(strings.Replace(ex, tc.from, tc.to, 1)))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Go struct") {
			t.Errorf("%s: %v, want %q", tc.to, err, tc.want)
		}
	}
}

// tunnel_classes: only perf_mgt and bm; an override's list replaces the
// default's (an empty one: Linux's PF's classes again).
func TestTunnelClasses(t *testing.T) {
	src := strings.Replace(string(Example()), `"3": { "pkey_map"`, `"3": { "tunnel_classes": ["perf_mgt", "snmp"], "pkey_map"`, 1)
	if _, err := Parse(strings.NewReader(src)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "vfs.overrides.3.tunnel_classes[1]") {
		t.Fatalf("snmp: error %v", err)
	}
	src = strings.Replace(string(Example()), `"3": { "pkey_map"`, `"3": { "tunnel_classes": ["bm", "perf_mgt"], "pkey_map"`, 1)
	c, err := Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if fn := c.Function(3); !fn.TunnelPerfMgt || !fn.TunnelBM {
		t.Fatalf("VF 3: perf_mgt %v bm %v", fn.TunnelPerfMgt, fn.TunnelBM)
	}
	if fn := c.Function(2); fn.TunnelPerfMgt || fn.TunnelBM {
		t.Fatal("VF 2 took VF 3's tunnel classes")
	}
	c.VFs.Default.TunnelClasses = []string{"perf_mgt"}
	c.VFs.Overrides["3"] = VF{TunnelClasses: []string{}}
	if fn := c.Function(2); !fn.TunnelPerfMgt || fn.TunnelBM {
		t.Fatalf("VF 2 under the default's perf_mgt: %v %v", fn.TunnelPerfMgt, fn.TunnelBM)
	}
	if fn := c.Function(3); fn.TunnelPerfMgt {
		t.Fatal("an empty override kept the default's perf_mgt")
	}
}

// An uplink belongs to an Ethernet port and names its capture file, its
// TAP device (and the TAP's namespace), or both.
func TestUplink(t *testing.T) {
	uncabled := strings.Replace(string(Example()), `"cables": {"1": 1, "2": 2}`, `"cables": {"2": 2}`, 1)
	eth := strings.Replace(uncabled, `"link_layer": "ib",`, `"link_layer": "eth", "uplink": {"pcap": "/tmp/port1.pcap"},`, 1)
	c, err := Parse(strings.NewReader(eth))
	if err != nil {
		t.Fatal(err)
	}
	if u := c.Ports[0].Uplink; u == nil || u.PCAP != "/tmp/port1.pcap" || c.Ports[1].Uplink != nil {
		t.Fatalf("uplinks %+v %+v", c.Ports[0].Uplink, c.Ports[1].Uplink)
	}
	tap := strings.Replace(uncabled, `"link_layer": "ib",`, `"link_layer": "eth", "uplink": {"tap": "vhup1", "netns": "/run/netns/lab", "vlan": 100},`, 1)
	if c, err = Parse(strings.NewReader(tap)); err != nil {
		t.Fatal(err)
	}
	if u := c.Ports[0].Uplink; u == nil || u.TAP != "vhup1" || u.NetNS != "/run/netns/lab" || u.VLAN != 100 || u.PCAP != "" {
		t.Fatalf("a TAP uplink: %+v", c.Ports[0].Uplink)
	}
	for _, bad := range []string{
		strings.Replace(string(Example()), `"link_layer": "ib",`, `"link_layer": "ib", "uplink": {"pcap": "/tmp/port1.pcap"},`, 1),
		strings.Replace(uncabled, `"link_layer": "ib",`, `"link_layer": "eth", "uplink": {"pcap": ""},`, 1),
		strings.Replace(uncabled, `"link_layer": "ib",`, `"link_layer": "eth", "uplink": {"pcap": "/tmp/p", "netns": "/run/netns/x"},`, 1),
		strings.Replace(uncabled, `"link_layer": "ib",`, `"link_layer": "eth", "uplink": {"tap": "a/b"},`, 1),
		strings.Replace(uncabled, `"link_layer": "ib",`, `"link_layer": "eth", "uplink": {"pcap": "/tmp/p", "vlan": 100},`, 1),
		strings.Replace(uncabled, `"link_layer": "ib",`, `"link_layer": "eth", "uplink": {"tap": "t", "vlan": 4095},`, 1),
		strings.Replace(uncabled, `"link_layer": "ib",`, `"link_layer": "eth", "uplink": {"tap": "vhcrd-uplink-port1"},`, 1),
	} {
		if _, err := Parse(strings.NewReader(bad)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "ports[0].uplink") {
			t.Errorf("error %v does not name ports[0].uplink", err)
		}
	}
}
