package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

func init() {
	register("mad", "send a MAD through MAD_IFC: get nodeinfo|portinfo|pkeys|guids|nodedesc, or bm-get/bm-set with a B_Key (SMI-privileged VFs)", runMAD)
}

var smpAttrs = map[string]uint16{
	"nodeinfo": mad.AttrNodeInfo, "portinfo": mad.AttrPortInfo, "pkeys": mad.AttrPKeyTable,
	"guids": mad.AttrGUIDInfo, "nodedesc": mad.AttrNodeDescription,
}

func runMAD(args []string) error {
	fs := clidoc.NewFlagSet("mad", flag.ContinueOnError)
	barSpec := barFlag(fs)
	vf := vfFlag(fs)
	port := fs.Uint("port", 1, "the VF's port")
	mod := fs.Uint("mod", 0, "attribute modifier (P_Key or GUID block)")
	bkey := fs.String("bkey", "0", "B_Key of a bm-get")
	slid := fs.Uint("slid", 0, "with bm-get: the requester's LID for the work completion (0: no work completion)")
	srcQP := fs.Uint("src-qp", 1, "with --slid: the requester's QP")
	sgid := fs.String("sgid", "", "with --slid: the requester's GID (adds a GRH)")
	jsonOut := fs.Bool("json", false, "print the status and the decoded MAD as one JSON object")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	var in mad.MADIFCInbox
	in.Port = uint8(*port)
	switch {
	case len(pos) == 2 && pos[0] == "get":
		if err := encodeGet(&in, pos[1], *mod, *port); err != nil {
			return err
		}
	case len(pos) == 1 && (pos[0] == "bm-get" || pos[0] == "bm-set"):
		if err := encodeBM(&in, pos[0] == "bm-set", *bkey, *slid, *srcQP, *sgid); err != nil {
			return err
		}
	default:
		return usageErr(fmt.Errorf("want: get nodeinfo|portinfo|pkeys|guids|nodedesc, bm-get or bm-set"))
	}
	inbox := make([]byte, mlx4.MailboxSize)
	opMod, inMod, err := mad.EncodeMADIFCInbox(&in, inbox)
	if err != nil {
		return err
	}
	a, v, err := openVF(*barSpec, *vf, false)
	if err != nil {
		return err
	}
	defer a.Close()
	resp, err := v.Post(opCtx(), &vfclient.Request{Op: mlx4.MAD_IFC, OpMod: opMod, InMod: inMod, In: inbox})
	if err != nil {
		return err
	}
	return printMADIFC(*barSpec, v, &resp, *jsonOut)
}

// printMADIFC prints MAD_IFC's status (with the PF's reason for a refusal)
// and the MAD it answered, decoded; a refusal or a MAD status exits 1.
func printMADIFC(barSpec string, v *vfclient.VF, resp *vfclient.Response, jsonOut bool) error {
	vf := v.Index
	var out mad.MAD
	var why *adminc.Refusal
	if resp.Status != mlx4.OK {
		why = pfReason(barSpec, v, mlx4.MAD_IFC, resp.Status)
	}
	if jsonOut {
		r := map[string]any{"vf": vf, "opcode": mlx4.MAD_IFC.String(), "status": resp.Status.Name(), "status_code": uint8(resp.Status)}
		if why != nil {
			r["reason"], r["reason_text"] = why.Reason, why.Text
		}
		if resp.Status == mlx4.OK {
			copy(out[:], resp.Out[:])
			r["mad"] = madFields(&out)
		}
		if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
			return err
		}
		if resp.Status != mlx4.OK || out.Status() != 0 {
			return exitError{1}
		}
		return nil
	}
	fmt.Printf("VF %d MAD_IFC: %s\n", vf, withReason(resp.Status, why))
	if resp.Status != mlx4.OK {
		return exitError{1}
	}
	copy(out[:], resp.Out[:])
	printMAD(&out)
	if out.Status() != 0 {
		return exitError{1}
	}
	return nil
}

// encodeGet puts an SMP Get of the attribute named name in the inbox.
func encodeGet(in *mad.MADIFCInbox, name string, mod, port uint) error {
	attr, ok := smpAttrs[name]
	if !ok {
		return usageErr(fmt.Errorf("get %q: want nodeinfo, portinfo, pkeys, guids or nodedesc", name))
	}
	smp := mad.SMP{Header: mad.Header{BaseVersion: 1, MgmtClass: mad.ClassSubnLID, ClassVersion: 1,
		Method: mad.MethodGet, TID: 0x7663746c, AttrID: attr, AttrMod: uint32(mod)}}
	if attr == mad.AttrPortInfo && mod == 0 {
		smp.AttrMod = uint32(port)
	}
	return smp.Encode(in.MAD[:])
}

// encodeBM puts a BM Get of BKeyInfo with the B_Key in the inbox, or with
// set a Set of BKeyInfo to that key, with the requester's work completion
// (and GRH) when slid is not 0.
func encodeBM(in *mad.MADIFCInbox, set bool, bkey string, slid, srcQP uint, sgid string) error {
	k, err := parseU64(bkey)
	if err != nil {
		return usageErr(fmt.Errorf("--bkey: %w", err))
	}
	g := mad.GSMAD{Header: mad.Header{BaseVersion: 1, MgmtClass: mad.ClassBM, ClassVersion: 1,
		Method: mad.MethodGet, TID: 0x7663746d, AttrID: mad.AttrBKeyInfo}, BKey: k}
	if set {
		// Set BKeyInfo to the key it names: with a wrong --bkey this is
		// the B_Key violation that raises Trap 259.
		g.Method = mad.MethodSet
		bi := mad.BKeyInfo{BKey: k}
		if err := bi.Encode(g.Data[:]); err != nil {
			return err
		}
	}
	if err := g.Encode(in.MAD[:]); err != nil {
		return err
	}
	if slid != 0 {
		in.HasWC = true
		in.WC = mad.WC{SLID: uint16(slid), SrcQP: uint32(srcQP), QPN: 1}
		if sgid != "" {
			a, err := netip.ParseAddr(sgid)
			if err != nil || !a.Is6() {
				return usageErr(fmt.Errorf("--sgid %q: want an IPv6-form GID", sgid))
			}
			in.WC.GRHPresent, in.HasGRH = true, true
			in.GRH = mad.GRH{IPVer: 6, NextHeader: 0x1b, HopLimit: 255, SGID: a.As16(), PayLen: 256 + 8 + 4}
		}
	}
	return nil
}

func printMAD(m *mad.MAD) {
	fmt.Printf("MAD: class %#02x method %#02x attr %#04x mod %#x status %#04x\n", m.MgmtClass(), m.Method(), m.AttrID(), m.AttrMod(), m.Status())
	if m.Status() != 0 {
		return
	}
	switch {
	case m.MgmtClass() == mad.ClassSubnLID && m.AttrID() == mad.AttrNodeInfo:
		var n mad.NodeInfo
		if n.Decode(m.SMPData()) == nil {
			fmt.Printf("NodeType %d NumPorts %d NodeGUID %#016x PortGUID %#016x SysImageGUID %#016x\n", n.NodeType, n.NumPorts, n.NodeGUID, n.PortGUID, n.SystemImageGUID)
			fmt.Printf("PartitionCap %d DeviceID %#04x Revision %#x LocalPort %d VendorID %#06x\n", n.PartitionCap, n.DeviceID, n.Revision, n.LocalPortNum, n.VendorID)
		}
	case m.MgmtClass() == mad.ClassSubnLID && m.AttrID() == mad.AttrPortInfo:
		var p mad.PortInfo
		if p.Decode(m.SMPData()) == nil {
			fmt.Printf("LID %d LMC %d SM LID %d SM SL %d State %d CapMask %#08x GIDPrefix %#016x LocalPort %d\n",
				p.LID, p.LMC, p.MasterSMLID, p.MasterSMSL, p.PortState, p.CapabilityMask, p.GIDPrefix, p.LocalPortNum)
			fmt.Printf("M_KeyViolations %d P_KeyViolations %d Q_KeyViolations %d\n", p.MKeyViolations, p.PKeyViolations, p.QKeyViolations)
		}
	case m.MgmtClass() == mad.ClassSubnLID && m.AttrID() == mad.AttrPKeyTable:
		var keys []string
		d := m.SMPData()
		for i := 0; i < 32; i++ {
			if k := binary.BigEndian.Uint16(d[2*i:]); k != 0 {
				keys = append(keys, fmt.Sprintf("[%d]=%#04x", int(m.AttrMod()&0xffff)*32+i, k))
			}
		}
		fmt.Println("P_Keys:", strings.Join(keys, " "))
	case m.MgmtClass() == mad.ClassSubnLID && m.AttrID() == mad.AttrGUIDInfo:
		var g mad.GUIDInfo
		if g.Decode(m.SMPData()) == nil {
			for i, x := range g {
				if x != 0 {
					fmt.Printf("GUID[%d] %#016x\n", int(m.AttrMod())*8+i, x)
				}
			}
		}
	case m.MgmtClass() == mad.ClassSubnLID && m.AttrID() == mad.AttrNodeDescription:
		fmt.Printf("NodeDescription %q\n", strings.TrimRight(string(m.SMPData()), "\x00"))
	case m.MgmtClass() == mad.ClassBM && m.AttrID() == mad.AttrBKeyInfo:
		var k mad.BKeyInfo
		if k.Decode(m.GSData()) == nil {
			fmt.Printf("B_Key %#016x protect %v lease %d violations %d\n", k.BKey, k.BKeyProtectBit, k.BKeyLeasePeriod, k.BKeyViolations)
		}
	default:
		fmt.Println("data:", strconv.Quote(string(m.GSData()[:32])))
	}
}

// madFields is the --json form of a MAD_IFC response: its header and, for
// a successful reply, the attribute printMAD decodes.
func madFields(m *mad.MAD) map[string]any {
	r := map[string]any{"mgmt_class": m.MgmtClass(), "method": m.Method(), "attr_id": m.AttrID(), "attr_mod": m.AttrMod(), "mad_status": m.Status()}
	if m.Status() != 0 {
		return r
	}
	switch {
	case m.MgmtClass() == mad.ClassSubnLID && m.AttrID() == mad.AttrNodeInfo:
		var n mad.NodeInfo
		if n.Decode(m.SMPData()) == nil {
			r["node_info"] = map[string]any{"node_type": n.NodeType, "num_ports": n.NumPorts, "node_guid": fmt.Sprintf("%#016x", n.NodeGUID),
				"port_guid": fmt.Sprintf("%#016x", n.PortGUID), "sys_image_guid": fmt.Sprintf("%#016x", n.SystemImageGUID), "partition_cap": n.PartitionCap,
				"device_id": n.DeviceID, "revision": n.Revision, "local_port": n.LocalPortNum, "vendor_id": n.VendorID}
		}
	case m.MgmtClass() == mad.ClassSubnLID && m.AttrID() == mad.AttrPortInfo:
		var p mad.PortInfo
		if p.Decode(m.SMPData()) == nil {
			r["port_info"] = map[string]any{"lid": p.LID, "lmc": p.LMC, "sm_lid": p.MasterSMLID, "sm_sl": p.MasterSMSL, "port_state": p.PortState,
				"capability_mask": p.CapabilityMask, "gid_prefix": fmt.Sprintf("%#016x", p.GIDPrefix), "local_port": p.LocalPortNum,
				"m_key_violations": p.MKeyViolations, "p_key_violations": p.PKeyViolations, "q_key_violations": p.QKeyViolations}
		}
	case m.MgmtClass() == mad.ClassSubnLID && m.AttrID() == mad.AttrPKeyTable:
		keys := map[string]string{}
		d := m.SMPData()
		for i := 0; i < 32; i++ {
			if k := binary.BigEndian.Uint16(d[2*i:]); k != 0 {
				keys[strconv.Itoa(int(m.AttrMod()&0xffff)*32+i)] = fmt.Sprintf("%#04x", k)
			}
		}
		r["p_keys"] = keys
	case m.MgmtClass() == mad.ClassSubnLID && m.AttrID() == mad.AttrGUIDInfo:
		var g mad.GUIDInfo
		if g.Decode(m.SMPData()) == nil {
			guids := map[string]string{}
			for i, x := range g {
				if x != 0 {
					guids[strconv.Itoa(int(m.AttrMod())*8+i)] = fmt.Sprintf("%#016x", x)
				}
			}
			r["guids"] = guids
		}
	case m.MgmtClass() == mad.ClassSubnLID && m.AttrID() == mad.AttrNodeDescription:
		r["node_description"] = strings.TrimRight(string(m.SMPData()), "\x00")
	case m.MgmtClass() == mad.ClassBM && m.AttrID() == mad.AttrBKeyInfo:
		var k mad.BKeyInfo
		if k.Decode(m.GSData()) == nil {
			r["b_key_info"] = map[string]any{"b_key": fmt.Sprintf("%#016x", k.BKey), "protect": k.BKeyProtectBit, "lease_period": k.BKeyLeasePeriod, "violations": k.BKeyViolations}
		}
	}
	return r
}
