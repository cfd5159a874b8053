package vmtest

// MLX4ConfigPath is where the mlx4 guest's /init reads its MLX4Config.
const MLX4ConfigPath = "etc/mlx4guest.json"

// Scenarios of the mlx4 guest (MLX4Config.Scenario).
const (
	// ScenarioCycle binds mlx4_core, checks mlx4_0, unbinds, Binds times.
	ScenarioCycle = "cycle"
	// ScenarioMidstream unbinds while readers of the ports' sysfs
	// attributes keep MAD_IFC commands in flight, then binds again.
	ScenarioMidstream = "midstream"
	// ScenarioFlags runs the FLAGS reset handshake of mlx4_reset_slave
	// (bit 16 request, bit 8 ack) through resource2 while the driver is
	// bound, then waits for the driver to recover on its own.
	ScenarioFlags = "flags"
	// ScenarioHold binds and then waits for the host, which kills QEMU.
	ScenarioHold = "hold"
	// ScenarioPFKill binds and keeps readers of the ports' sysfs
	// attributes (MAD_IFC) going while the host SIGKILLs vhcrd and
	// restarts it with its service manager's fd store; the readers go on,
	// then the guest unbinds.
	ScenarioPFKill = "pfkill"
	// ScenarioFLR binds; at "bound 1" the host runs `vhcrd vf flr 0` and
	// the guest waits for its driver to restart on its own; at "recovered"
	// the host resets the function again and the guest unbinds at once;
	// then it binds and unbinds once more.
	ScenarioFLR = "flr"
	// ScenarioEth binds mlx4_core with mlx4_en (the VF's port 1 is
	// Ethernet), waits for the VF's netdev, brings it up with
	// MLX4Config.Eth's address (at "eth up" the host lets it go on), pings
	// the peer guest over IPv4 and IPv6 and sends its datagrams
	// (EthConfig); mlx4_en's transmit completions must come (no
	// watchdog); at "eth sent" the host checks, then it unbinds.
	ScenarioEth = "eth"
)

// EthConfig is ScenarioEth's: the netdev's IPv4 address and prefix, how
// many UDP datagrams it sends to the subnet's broadcast address and to
// Absent, an address no one answers (each an ARP request), and the peer
// guest's address it pings (none: no peer), then over IPv6 the link's
// all-nodes group (ff02::1), which the peer answers from its link-local
// address.
//
// Then, with SpoofMAC, it changes its netdev's MAC to it (its VF has spoof
// check on) and sends its broadcasts again (at "eth spoofed" the host
// counts the switch's drops); with LinkCycle, at "eth link" the host
// forces the VF's link down, the guest waits for its carrier to go and
// sends its broadcasts (at "eth down" the host sees none pass), then the
// host gives the link back and the guest waits for its carrier.
type EthConfig struct {
	Addr       string
	Prefix     int
	Absent     string
	Broadcasts int
	Ping       string
	// TCPRole, "server" or "client", exchanges a line over TCP with Ping
	// (the server listens, at "tcp listening"; the client dials at "tcp
	// dial"): TCP through the device's checksum offloads.
	TCPRole   string
	SpoofMAC  string
	LinkCycle bool
	// RXRings, if set, is the netdev's RX ring count (`ethtool -L DEV rx
	// N`, before its traffic): with more than one mlx4_en steers by RSS.
	RXRings int
	// Host, if set, is an address on the port's uplink (the host's side
	// of its TAP device), pinged after Ping ("pinghost" lines).
	Host string
	// Verbs, if set, runs after the pings with mlx4_ib loaded: RoCE over
	// the port, ibv_devinfo ("roce devinfo") and Verbs.Pingpongs with
	// Verbs.Role against Ping ("roce pingpongs" after the last), their
	// out-of-band TCP over the same netdev.
	Verbs *VerbsConfig
}

// MLX4Config is the mlx4 guest's configuration (MLX4ConfigPath). The guest
// prints "vmtest: " lines; at each "vmtest: wait STEP" it blocks until the
// host writes "go" on the console.
type MLX4Config struct {
	Vendor, Device uint16   // the ivshmem-doorbell device (1af4:1110)
	Modules        []string // loaded in order with their modules.dep dependencies
	// ModuleParams are passed to finit_module by module name (a module
	// loaded by /init does not see module.param= on the kernel command line).
	ModuleParams map[string]string
	NewID        string // written to /sys/bus/pci/drivers/mlx4_core/new_id
	Ports        int    // ports mlx4_0 must show (2)
	Binds        int    // ScenarioCycle: bind/unbind rounds
	Scenario     string
	// MidstreamReads is how many sysfs reads (each a MAD_IFC) the readers
	// complete before ScenarioMidstream unbinds under them.
	MidstreamReads int
	// Verbs is ScenarioVerbs' configuration (verbs.go).
	Verbs VerbsConfig
	// VerbsKill is ScenarioVerbsKill's configuration (verbskill.go).
	VerbsKill VerbsKillConfig
	// Faults are ScenarioFaults's cases, in order.
	Faults []FaultRound
	// Eth is ScenarioEth's configuration.
	Eth EthConfig
}

// DefaultMLX4Config is the configuration TestLinuxMLX4 starts from.
func DefaultMLX4Config() MLX4Config {
	return MLX4Config{
		Vendor: 0x1af4, Device: 0x1110,
		Modules: []string{"mlx4_core", "ib_uverbs", "mlx4_ib"},
		// debug_level=1 prints mlx4_dbg lines such as "NOP command IRQ
		// test passed", which the test quotes.
		ModuleParams: map[string]string{"mlx4_core": "debug_level=1"},
		// driver_data 1 is MLX4_PCI_DEV_IS_VF: new_id_store accepts only
		// a driver_data of an entry of mlx4's id table.
		NewID:          "1af4 1110 ffffffff ffffffff 0 0 1",
		Ports:          2,
		Binds:          4,
		Scenario:       ScenarioCycle,
		MidstreamReads: 40,
	}
}
