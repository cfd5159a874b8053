package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

func init() {
	register("ptys", "read the PTYS register (port type and speed) through ACCESS_REG, as mlx4_en's ethtool does", runPTYS)
}

func runPTYS(args []string) error {
	fs := clidoc.NewFlagSet("ptys", flag.ContinueOnError)
	barSpec := barFlag(fs)
	vf := vfFlag(fs)
	port := fs.Uint("port", 1, "the VF's port")
	proto := fs.String("proto", "ib", "protocol asked for: ib or eth")
	jsonOut := fs.Bool("json", false, "print the status and the register as one JSON object")
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
	mask := map[string]uint8{"ib": mlx4.PTYS_IB, "eth": mlx4.PTYS_EN}[*proto]
	if mask == 0 {
		return usageErr(fmt.Errorf("--proto %q: want ib or eth", *proto))
	}
	var in [mlx4.MailboxSize]byte
	mlx4.EncodeAccessRegPTYS(&in, mlx4.ACCESS_REG_QUERY, uint8(*port), mask)
	a, v, err := openVF(*barSpec, *vf, false)
	if err != nil {
		return err
	}
	defer a.Close()
	resp, err := v.Post(opCtx(), &vfclient.Request{Op: mlx4.ACCESS_REG, In: in[:]})
	if err != nil {
		return err
	}
	if *jsonOut {
		r := map[string]any{"vf": *vf, "opcode": mlx4.ACCESS_REG.String(), "status": resp.Status.Name(), "status_code": uint8(resp.Status)}
		var st uint8
		if resp.Status == mlx4.OK {
			var p mlx4.PTYS
			st, p = mlx4.DecodeAccessRegPTYS(resp.Out)
			r["reg_status"] = st
			if st == mlx4.RegStatusOK {
				ptys := map[string]any{"local_port": p.LocalPort, "proto_mask": p.ProtoMask}
				if p.ProtoMask&mlx4.PTYS_EN != 0 {
					ptys["eth_proto_cap"], ptys["eth_proto_admin"], ptys["eth_proto_oper"] = p.EthProtoCap, p.EthProtoAdmin, p.EthProtoOper
				}
				if p.ProtoMask&mlx4.PTYS_IB != 0 {
					ptys["ib_width_cap"] = bitNames(uint32(p.IBWidthCap), mlx4.PTYSWidths)
					ptys["ib_width_admin"] = bitNames(uint32(p.IBWidthAdmin), mlx4.PTYSWidths)
					ptys["ib_width_oper"] = bitNames(uint32(p.IBWidthOper), mlx4.PTYSWidths)
					ptys["ib_speed_cap"] = bitNames(uint32(p.IBSpeedCap), mlx4.PTYSSpeeds)
					ptys["ib_speed_admin"] = bitNames(uint32(p.IBSpeedAdmin), mlx4.PTYSSpeeds)
					ptys["ib_speed_oper"] = bitNames(uint32(p.IBSpeedOper), mlx4.PTYSSpeeds)
				}
				r["ptys"] = ptys
			}
		}
		if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
			return err
		}
		if resp.Status != mlx4.OK || st != mlx4.RegStatusOK {
			return exitError{1}
		}
		return nil
	}
	fmt.Printf("VF %d ACCESS_REG PTYS: %s\n", *vf, resp.Status.String())
	if resp.Status != mlx4.OK {
		return exitError{1}
	}
	st, p := mlx4.DecodeAccessRegPTYS(resp.Out)
	if st != mlx4.RegStatusOK {
		fmt.Printf("register access status %#x\n", st)
		return exitError{1}
	}
	fmt.Printf("local_port %d proto_mask %#x\n", p.LocalPort, p.ProtoMask)
	if p.ProtoMask&mlx4.PTYS_EN != 0 {
		fmt.Printf("eth proto cap %#08x admin %#08x oper %#08x\n", p.EthProtoCap, p.EthProtoAdmin, p.EthProtoOper)
	}
	if p.ProtoMask&mlx4.PTYS_IB != 0 {
		fmt.Printf("ib width cap %s admin %s oper %s\n", bitNames(uint32(p.IBWidthCap), mlx4.PTYSWidths), bitNames(uint32(p.IBWidthAdmin), mlx4.PTYSWidths), bitNames(uint32(p.IBWidthOper), mlx4.PTYSWidths))
		fmt.Printf("ib speed cap %s admin %s oper %s\n", bitNames(uint32(p.IBSpeedCap), mlx4.PTYSSpeeds), bitNames(uint32(p.IBSpeedAdmin), mlx4.PTYSSpeeds), bitNames(uint32(p.IBSpeedOper), mlx4.PTYSSpeeds))
	}
	return nil
}

// bitNames lists the names of the set bits of v ("-" for none).
func bitNames(v uint32, names []string) string {
	var s []string
	for i, n := range names {
		if v&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, "|")
}
