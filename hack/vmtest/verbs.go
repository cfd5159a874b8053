package vmtest

import "fmt"

// Scenarios of the verbs guest: Debian's rdma-core userspace (Userspace)
// against mlx4_0 once mlx4_core and mlx4_ib have bound.
const (
	// ScenarioVerbs binds, waits for port 1 ACTIVE with a LID, runs
	// `ibv_devinfo -v` (if Verbs.Devinfo), then each of Verbs.Pingpongs
	// with its server and client in this guest (Verbs.Role "") or one end
	// here and the other in a peer guest (Role "server" or "client", over
	// Verbs.Net), then unbinds.
	ScenarioVerbs = "verbs"
)

// Steps and line prefixes of ScenarioVerbs (the host matches them).
const (
	// DevinfoPrefix starts each line of `ibv_devinfo -v` on the console.
	DevinfoPrefix = "vmtest: ibv_devinfo| "
	// PingpongPrefix starts a pingpong's result line: "vmtest: pingpong
	// NAME: ok" or "vmtest: pingpong NAME: hung ..." or "... failed ...".
	PingpongPrefix = "vmtest: pingpong "
	// TCPPort is the port of the guests' TCP check (the pingpongs use
	// their default, 18515).
	TCPPort = 18600
)

// VerbsConfig is ScenarioVerbs' part of MLX4Config.
type VerbsConfig struct {
	Devinfo   bool       // run `ibv_devinfo -v` and print it (DevinfoPrefix)
	Pingpongs []Pingpong // run in order
	// TimeLimitMS bounds each pingpong: past it both ends are killed and
	// the guest reports it hung, with their last lines.
	TimeLimitMS int
	// Role is "" (server and client here, the client to 127.0.0.1),
	// "server" or "client" (the client to Net.Peer): in a pair of guests
	// the host lets the client start once the server listens.
	Role string
	Net  *NetConfig // eth0 (virtio-net) configuration; nil: none
	// Diags run after ibv_devinfo, in order, each bounded by TimeLimitMS:
	// management tools whose MADs cross the PF's tunnel (saquery). Each
	// line they print starts with DiagPrefix and the diag's name; the
	// result is "vmtest: diag NAME: ok ..." or "... failed ...".
	Diags []Diag
	// IPoIB, if set, is ib0's address (ib_ipoib in both guests of a
	// pair); the client pings the peer's (IPoIBPrefix lines).
	IPoIB *NetConfig
	// CM, with IPoIB, are tools run between the pair over the RDMA CM,
	// in order, each bounded by TimeLimitMS.
	CM []CMRun
	// BM, if set, runs after the Diags: Baseboard Management MADs from
	// the guest's umad (port 1's QP1, with a GRH), as a BM manager sends
	// them (BMRun).
	BM *BMRun
}

// BMRun is a Baseboard Management exchange with the BMA of LID DLID
// (B_Key BKey): a Set(ClassPortInfo) with the right B_Key that points the
// BMA's traps at TrapLID's QP1, answered; then a Set(BKeyInfo) with
// WrongBKey, which the BMA drops (no answer: the MAD layer's timeout)
// and reports as Trap 259; then a Get on the VF's P_Key index
// BadPKeyIndex, whose P_Key the SM left invalid: dropped, Trap 257. Each
// step is a "vmtest: bm| " line; the result is BMPrefix and "ok ..." or
// "failed ...".
type BMRun struct {
	DLID, TrapLID   uint16
	BKey, WrongBKey uint64
	BadPKeyIndex    uint16
}

// BMPrefix starts the BM run's result line.
const BMPrefix = "vmtest: bm: "

// IPoIBPrefix starts the IPoIB ping's result line.
const IPoIBPrefix = "vmtest: ipoib ping: "

// CMRun is a tool run between a pair of guests over the RDMA CM (their
// ib0 addresses): the server with Server, and once it prints a line with
// Ready, the client with Client. "{addr}" in an argument is the guest's
// own ib0 address, "{peer}" the other guest's. Each line the tool prints
// is "vmtest: NAME| LINE"; the result is "vmtest: cm NAME: ok ..." or
// "... failed ..." (CMPrefix).
type CMRun struct {
	Name, Tool     string
	Server, Client []string
	Ready          string
}

// CMPrefix starts a CM run's result line.
const CMPrefix = "vmtest: cm "

// RpingCount is the pings rping's run makes (-C).
const RpingCount = 5

// DefaultCMRuns are rdmacm-utils' rping (RpingCount pings, the client
// validating each echo) and perftest's ib_write_bw with its connection
// made by the RDMA CM (-R) for two seconds.
func DefaultCMRuns() []CMRun {
	c := fmt.Sprint(RpingCount)
	bw := []string{"-R", "-d", "mlx4_0", "-i", "1", "-D", "2", "-F"}
	return []CMRun{
		{Name: "rping", Tool: "/usr/bin/rping", Ready: "rdma_listen",
			Server: []string{"-s", "-d", "-v", "-a", "{addr}", "-p", "7174", "-C", c},
			Client: []string{"-c", "-v", "-V", "-a", "{peer}", "-p", "7174", "-C", c}},
		{Name: "ib_write_bw -R", Tool: "/usr/bin/ib_write_bw", Ready: "Waiting for client to connect",
			Server: bw, Client: append(append([]string{}, bw...), "{peer}")},
	}
}

// Diag is one management tool run in the verbs guest.
type Diag struct {
	Name string   // e.g. "saquery NodeRecord"
	Tool string   // the path in the guest, e.g. /usr/sbin/saquery
	Args []string // with the device and port
}

// DiagPrefix starts a diag's result line.
const DiagPrefix = "vmtest: diag "

// Pingpong is one rdma-core pingpong run: Tool (in /usr/bin) with Args on
// both ends; the client also gets the server's address.
type Pingpong struct {
	Name string // e.g. "rc -e", in the guest's lines and the host's subtests
	Tool string // ibv_rc_pingpong, ibv_ud_pingpong
	Args []string
}

// NetConfig is the guest's virtio-net interface: its IPv4 address and
// prefix length, and the peer guest's address.
type NetConfig struct {
	Addr   string // e.g. 10.77.0.1
	Prefix int    // e.g. 24
	Peer   string
}

// DefaultPingpongs are the pingpongs of issue 20 item 6: RC and UD on port
// 1 of mlx4_0, each polling and with completion events (-e).
func DefaultPingpongs() []Pingpong {
	base := []string{"-d", "mlx4_0", "-i", "1"}
	var pp []Pingpong
	for _, tool := range []struct{ name, bin string }{{"rc", "ibv_rc_pingpong"}, {"ud", "ibv_ud_pingpong"}} {
		pp = append(pp,
			Pingpong{Name: tool.name, Tool: tool.bin, Args: base},
			Pingpong{Name: tool.name + " -e", Tool: tool.bin, Args: append(append([]string{}, base...), "-e")})
	}
	return pp
}
