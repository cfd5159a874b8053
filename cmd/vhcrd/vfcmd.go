package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
)

func init() {
	register("vf", "show and change VFs: list, show N, set N, flr N (admin socket)", runVF)
	register("port", "take a physical port up or down: port up|down P (admin socket)", runPortCmd)
}

// vfSetAbout is `vhcrd vf set --help`'s account of what mlx4 applies at
// once and what at the VF's next reset.
const vfSetAbout = `change VF N's settings as ip link set DEV vf N does on an mlx4 host:
  --mac             admin MAC (next reset; --phys-port for one port only)
  --vlan, --qos     VST VLAN 1..4095 and priority 0..7; vlan 0 qos 0 = VGT (next reset:
                    mlx4 activates at once only with UPDATE_QP, which this device lacks)
  --spoof-check     force the source MAC of the VF's Ethernet QPs (next reset)
  --link-state      the VF's link (at once: a PORT_CHANGE event to the VF)
  --trust           refused: mlx4_en has no ndo_set_vf_trust (EOPNOTSUPP)
  --max-tx-rate, --min-tx-rate   refused: needs vport QoS (MLX4_DEV_CAP_FLAG2_QOS_VPP)`

// vfHelp is the --help of `vhcrd vf` (sub "") and of its commands.
func vfHelp(sub string) *cli.Help {
	ex := map[string][]string{
		"":     {"vhcrd vf list", "vhcrd vf show 3 --json", "vhcrd vf set 3 --vlan 100 --qos 2", "vhcrd vf set 3 --link-state disable", "vhcrd vf flr 3"},
		"list": {"vhcrd vf list", "vhcrd vf list --json"},
		"show": {"vhcrd vf show 3", "vhcrd vf show 3 --json"},
		"set":  {"vhcrd vf set 3 --vlan 100 --qos 2", "vhcrd vf set 3 --mac 00:11:22:33:44:55 --phys-port 1", "vhcrd vf set 3 --link-state disable"},
		"flr":  {"vhcrd vf flr 3"},
	}
	h := actionHelp("vf", sub, map[string]string{"": "COMMAND [flags]     (vhcrd vf COMMAND --help: its flags)",
		"list": "list [flags]", "show": "show N [flags]", "set": "set N [flags]", "flr": "flr N [flags]"}, ex)
	switch sub {
	case "":
		h.About = "shows and changes VFs through the daemon's admin socket (--admin-socket PATH, or --bar SPEC to find it)"
	case "set":
		h.About = vfSetAbout
	}
	return h
}

// portHelp is the --help of `vhcrd port` (state "") and of up and down.
func portHelp(state string) *cli.Help {
	h := &cli.Help{Usage: "vhcrd port up|down P [flags]",
		About:    "Sets physical port P's state (what QUERY_PORT and MAD_IFC show the VFs) and\nsends PORT_CHANGE to every VF with that port and link-state auto.",
		Examples: []string{"vhcrd port down 1", "vhcrd port up 1", "vhcrd port up 2 --json"}, Exit: exitStatus}
	if state == "" {
		for _, c := range subcommands["port"] {
			h.Subs = append(h.Subs, cli.Sub{Name: c[0], Summary: c[1]})
		}
	} else {
		h.Usage = "vhcrd port " + state + " P [flags]"
	}
	return h
}

// adminFlags are the flags every admin client command takes.
type adminFlags struct {
	sock, bar string
	json      bool
}

func (a *adminFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&a.sock, "admin-socket", "", "the daemon's admin socket `PATH` (default: derived from --bar)")
	fs.StringVar(&a.bar, "bar", DefaultBAR, "the daemon's BAR region `SPEC`, to find its admin socket")
	fs.BoolVar(&a.json, "json", false, "print the daemon's answer as JSON")
}

func (a *adminFlags) path() (string, error) {
	if a.sock != "" {
		return a.sock, nil
	}
	return adminc.DefaultSocket(a.bar)
}

// socket is the socket at path, with --bar to explain a dial that fails
// where the path was derived from it.
func (a *adminFlags) socket(path string) adminc.Socket {
	if a.sock != "" {
		return adminc.Socket{Path: path}
	}
	return adminc.Socket{Path: path, BAR: a.bar}
}

// call sends q to the daemon's admin socket and prints its answer: raw
// with --json, else through print.
func (a *adminFlags) call(q any, print func(raw []byte) error) error {
	path, err := a.path()
	if err != nil {
		return usageError{err}
	}
	raw, err := adminc.Call(a.socket(path), q, adminTimeout)
	if err != nil {
		return err
	}
	if a.json {
		_, err := os.Stdout.Write(raw)
		return err
	}
	return print(raw)
}

// adminTimeout bounds one exchange on the admin socket.
const adminTimeout = 30 * time.Second

// parseArgs parses fs with flags and positional arguments in any order.
func parseArgs(fs *flag.FlagSet, args []string, h *cli.Help) ([]string, error) {
	var pos []string
	for {
		if err := cli.Parse(fs, args, h); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func vfArg(pos []string, cmd string) (int, error) {
	if len(pos) != 1 {
		return 0, usageError{fmt.Errorf("%s wants one VF number, got %q", cmd, pos)}
	}
	n, err := strconv.Atoi(pos[0])
	if err != nil || n < 0 {
		return 0, usageError{fmt.Errorf("%s: VF %q is not a number 0..125", cmd, pos[0])}
	}
	return n, nil
}

// onOff is a flag of ip link's on|off.
type onOff struct{ v **bool }

func (o onOff) String() string {
	if o.v == nil || *o.v == nil {
		return ""
	}
	return map[bool]string{true: "on", false: "off"}[**o.v]
}

func (o onOff) Set(s string) error {
	b, ok := map[string]bool{"on": true, "off": false}[s]
	if !ok {
		return errors.New("want on or off")
	}
	*o.v = &b
	return nil
}

// optInt is an int flag that records whether it was given.
type optInt struct{ v **int }

func (o optInt) String() string {
	if o.v == nil || *o.v == nil {
		return ""
	}
	return strconv.Itoa(**o.v)
}

func (o optInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return err
	}
	*o.v = &n
	return nil
}

type optString struct{ v **string }

func (o optString) String() string {
	if o.v == nil || *o.v == nil {
		return ""
	}
	return **o.v
}

func (o optString) Set(s string) error { *o.v = &s; return nil }

func runVF(args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("want a command: list, show, set or flr")}
	}
	if cli.IsHelp(args[0]) {
		vfHelp("").Write(os.Stdout)
		return flag.ErrHelp
	}
	sub, args := args[0], args[1:]
	fs := clidoc.NewFlagSet("vf "+sub, flag.ContinueOnError)
	var af adminFlags
	af.add(fs)
	q := adminRequest{Cmd: "vf." + sub}
	var set vfSetRequest
	switch sub {
	case "list", "show", "flr":
	case "set":
		fs.IntVar(&set.PhysPort, "phys-port", 0, "physical `PORT` of --mac (default: every port of the VF)")
		fs.StringVar(&set.MAC, "mac", "", "admin `MAC` (xx:xx:xx:xx:xx:xx)")
		fs.Var(optInt{&set.VLAN}, "vlan", "VST `VLAN` 0..4095 (0 with qos 0: VGT)")
		fs.Var(optInt{&set.QoS}, "qos", "VST priority `QOS` 0..7")
		fs.Var(onOff{&set.SpoofCheck}, "spoof-check", "force the source MAC of the VF's Ethernet QPs: `on|off`")
		fs.Var(onOff{&set.Trust}, "trust", "`on|off` (mlx4 refuses it)")
		fs.Var(optString{&set.LinkState}, "link-state", "the VF's link: `auto|enable|disable`")
		fs.Var(optInt{&set.MaxTxRate}, "max-tx-rate", "`MBPS` in Mb/s (mlx4 refuses it without vport QoS)")
		fs.Var(optInt{&set.MinTxRate}, "min-tx-rate", "`MBPS` in Mb/s (mlx4 refuses it)")
		q.Set = &set
	default:
		return usageError{fmt.Errorf("unknown vf command %q: want list, show, set or flr", sub)}
	}
	pos, err := parseArgs(fs, args, vfHelp(sub))
	if err != nil {
		return err
	}
	if sub == "list" {
		if len(pos) != 0 {
			return usageError{fmt.Errorf("list takes no arguments, got %q", pos)}
		}
	} else {
		n, err := vfArg(pos, sub)
		if err != nil {
			return err
		}
		q.VF = &n
	}
	if err := checkAdminFields(&q); err != nil {
		return usageError{err}
	}
	return af.call(q, func(raw []byte) error { return printVF(sub, raw, q.VF) })
}

// printVF prints the admin socket's answer raw to vf sub (on VF vf).
func printVF(sub string, raw []byte, vf *int) error {
	switch sub {
	case "list":
		var vfs []vfStatus
		if err := json.Unmarshal(raw, &vfs); err != nil {
			return err
		}
		fmt.Printf("%-4s %-10s %-6s %-5s %-5s %-11s %s\n", "VF", "STATE", "ACTIVE", "VLAN", "QOS", "SPOOFCHK", "LINK")
		for _, v := range vfs {
			fmt.Printf("%-4d %-10s %-6v %-5d %-5d %-11v %s\n", v.VF, v.State, v.Active, v.Setting.VLAN, v.Setting.QoS, v.Setting.SpoofCheck, v.Setting.LinkState)
		}
	case "show":
		return printVFShow(raw)
	case "set":
		var r struct {
			Applied []string `json:"applied"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		for _, a := range r.Applied {
			fmt.Printf("VF %d %s\n", *vf, a)
		}
	case "flr":
		fmt.Printf("FLR of VF %d done\n", *vf)
	}
	return nil
}

// printVFShow prints vf show's answer: the channel, the admin settings, the
// operational ones and the last refused command.
func printVFShow(raw []byte) error {
	var v vfStatus
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	s := v.Setting
	fmt.Printf("VF %d: channel %s, active %v, vHCR %s, toggle %d\n", v.VF, v.State, v.Active, v.VHCR, v.Toggle)
	fmt.Printf("admin (ip link): vlan %d, qos %d, spoof checking %s, trust off, link-state %s\n", s.VLAN, s.QoS, map[bool]string{true: "on", false: "off"}[s.SpoofCheck], s.LinkState)
	ports := make([]int, 0, len(s.MAC))
	for p := range s.MAC {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	for _, p := range ports {
		fmt.Printf("  port %d: mac %s\n", p, s.MAC[p])
	}
	if len(s.Oper) == 0 {
		fmt.Println("operational: none (the VF has not enabled its vHCR since its last reset)")
	}
	for _, o := range s.Oper {
		fmt.Printf("operational port %d: mac %s, vst %v, vlan %d, qos %d, spoof checking %v\n", o.Port, o.MAC, o.VST, o.VLAN, o.QoS, o.SpoofCheck)
	}
	if r := v.Refused; r != nil {
		fmt.Printf("last refused command: %s, %s (%#02x), reason %s (%s)\n", r.Opcode, r.Status, r.StatusCode, r.Reason, r.Text)
	}
	return nil
}

func runPortCmd(args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("want up or down")}
	}
	if cli.IsHelp(args[0]) {
		portHelp("").Write(os.Stdout)
		return flag.ErrHelp
	}
	state, args := args[0], args[1:]
	if state != "up" && state != "down" {
		return usageError{fmt.Errorf("unknown port command %q: want up or down", state)}
	}
	fs := clidoc.NewFlagSet("port "+state, flag.ContinueOnError)
	var af adminFlags
	af.add(fs)
	pos, err := parseArgs(fs, args, portHelp(state))
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("port %s wants one physical port number, got %q", state, pos)}
	}
	p, err := strconv.Atoi(pos[0])
	if err != nil || p < 1 {
		return usageError{fmt.Errorf("port %q is not a physical port number (1, 2)", pos[0])}
	}
	return af.call(adminRequest{Cmd: "port", Port: p, State: state}, func(raw []byte) error {
		var r struct {
			N int `json:"vfs_notified"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		fmt.Printf("port %d %s: PORT_CHANGE sent to %d VFs\n", p, state, r.N)
		return nil
	})
}
