package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

func init() {
	register("init", "bring a VF's comm channel up (sync, RESET, VHCR0..VHCR_EN)", runInit)
	register("cmd", "post one command through a VF's vHCR and print the status and output", runCmd)
	register("flr", "function-level reset of a VF (through vhcrd's admin endpoint)", runFLR)
	register("port", "take a physical port down or bring it up (through vhcrd's admin endpoint): PORT_CHANGE to the VFs", runPort)
}

func openVF(barSpec string, idx int, forceInit bool) (*vfclient.Attachment, *vfclient.VF, error) {
	a, err := attach(barSpec)
	if err != nil {
		return nil, nil, err
	}
	if idx < 0 || idx >= a.Layout.NumVFs {
		a.Close()
		return nil, nil, fmt.Errorf("--vf %d: the region serves VFs 0..%d", idx, a.Layout.NumVFs-1)
	}
	v, err := a.VF(idx)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	v.PFAlive = a.PFAlive // a PF that dies under a wait is reported at once
	ctx := opCtx()
	if forceInit || !a.ChannelUp(idx) {
		if err := v.Init(ctx); err != nil {
			a.Close()
			return nil, nil, fmt.Errorf("VF %d bring-up: %w", idx, err)
		}
	} else if err := v.SyncToggles(ctx); err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, v, nil
}

func runInit(args []string) error {
	fs := clidoc.NewFlagSet("init", flag.ContinueOnError)
	barSpec := barFlag(fs)
	vf := vfFlag(fs)
	jsonOut := fs.Bool("json", false, "print the result as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	start := time.Now()
	a, _, err := openVF(*barSpec, *vf, true)
	if err != nil {
		return err
	}
	defer a.Close()
	if *jsonOut {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"vf": *vf, "channel": "up", "pf_gen": a.PFGen(),
			"elapsed_ns": time.Since(start).Nanoseconds()})
	}
	fmt.Printf("VF %d: comm channel up (RESET acknowledged with version 0x%04x, vHCR at IOVA 0x0) in %v\n", *vf, mlx4.CommVersion, time.Since(start).Round(time.Microsecond))
	return nil
}

func parseU64(s string) (uint64, error) { return strconv.ParseUint(s, 0, 64) }

func runCmd(args []string) error {
	fs := clidoc.NewFlagSet("cmd", flag.ContinueOnError)
	barSpec := barFlag(fs)
	vf := vfFlag(fs)
	opMod := fs.Uint("op-mod", 0, "op_modifier (0..15)")
	inMod := fs.String("in-mod", "0", "in_modifier")
	inParam := fs.String("in-param", "0", "immediate in_param (ignored with --in)")
	outParam := fs.String("out-param", "0", "immediate out_param (for immediate-output commands)")
	inFile := fs.String("in", "", "file whose bytes are the inbox (up to 4096)")
	outLen := fs.Int("out-len", 256, "bytes of the outbox to print")
	jsonOut := fs.Bool("json", false, "print the status, out_param and outbox as one JSON object")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fmt.Errorf("want exactly one OPCODE (a name like QUERY_FUNC_CAP or a number), got %q", pos))
	}
	op, err := mlx4.ParseOpcode(pos[0])
	if err != nil {
		return usageErr(err)
	}
	if *opMod > 15 {
		return usageErr(fmt.Errorf("--op-mod %d: 4 bits", *opMod))
	}
	im, err := parseU64(*inMod)
	if err != nil || im > 0xffffffff {
		return usageErr(fmt.Errorf("--in-mod %q: want a 32-bit number", *inMod))
	}
	ip, err := parseU64(*inParam)
	if err != nil {
		return usageErr(fmt.Errorf("--in-param: %w", err))
	}
	outp, err := parseU64(*outParam)
	if err != nil {
		return usageErr(fmt.Errorf("--out-param: %w", err))
	}
	req := vfclient.Request{Op: op, OpMod: uint8(*opMod), InMod: uint32(im), InParam: ip, OutParam: outp}
	if *inFile != "" {
		if req.In, err = os.ReadFile(*inFile); err != nil {
			return err
		}
		if len(req.In) > mlx4.MailboxSize {
			return fmt.Errorf("--in %s: %d bytes, a mailbox holds %d", *inFile, len(req.In), mlx4.MailboxSize)
		}
	}
	a, v, err := openVF(*barSpec, *vf, false)
	if err != nil {
		return err
	}
	defer a.Close()
	start := time.Now()
	resp, err := v.Post(opCtx(), &req)
	if err != nil {
		return err
	}
	el := time.Since(start)
	var why *adminc.Refusal
	if resp.Status != mlx4.OK {
		why = pfReason(*barSpec, v, op, resp.Status)
	}
	return printCmd(*vf, op, &resp, el, why, *outLen, *jsonOut)
}

// printCmd prints a command's answer: its status (with the PF's reason for
// a refusal), out_param for an immediate-output command and outLen bytes of
// the outbox; a status other than OK exits 1.
func printCmd(vf int, op mlx4.Opcode, resp *vfclient.Response, el time.Duration, why *adminc.Refusal, outLen int, jsonOut bool) error {
	if jsonOut {
		r := map[string]any{"vf": vf, "opcode": op.String(), "status": resp.Status.Name(), "status_code": uint8(resp.Status),
			"elapsed_ns": el.Nanoseconds(), "out_param": fmt.Sprintf("%#x", resp.OutParam)}
		if why != nil {
			r["reason"], r["reason_text"] = why.Reason, why.Text
		}
		if resp.Out != nil {
			r["outbox"] = hex.EncodeToString(resp.Out[:min(max(outLen, 0), len(resp.Out))])
		}
		if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
			return err
		}
		if resp.Status != mlx4.OK {
			return exitError{1}
		}
		return nil
	}
	fmt.Printf("VF %d %v: %s in %v\n", vf, op, withReason(resp.Status, why), el.Round(100*time.Nanosecond))
	if in, _ := mlx4.CmdInfo(op); in.OutIsImm {
		fmt.Printf("out_param: %#016x\n", resp.OutParam)
	}
	if resp.Out != nil {
		n := min(max(outLen, 0), len(resp.Out))
		fmt.Print(hex.Dump(resp.Out[:n]))
	}
	if resp.Status != mlx4.OK {
		return exitError{1}
	}
	return nil
}

func runFLR(args []string) error {
	fs := clidoc.NewFlagSet("flr", flag.ContinueOnError)
	barSpec := barFlag(fs)
	vf := vfFlag(fs)
	sock := fs.String("admin-socket", "", "vhcrd's admin socket (default: the --bar file's path + .sock)")
	jsonOut := fs.Bool("json", false, "print vhcrd's answer as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return postAdminAt(*sock, *barSpec, map[string]any{"cmd": "vf.flr", "vf": *vf}, *timeout, *jsonOut, fmt.Sprintf("FLR of VF %d done", *vf))
}

func runPort(args []string) error {
	fs := clidoc.NewFlagSet("port", flag.ContinueOnError)
	barSpec := barFlag(fs)
	port := fs.Int("phys-port", 0, "physical port (required)")
	state := fs.String("state", "", "down or active (required)")
	sock := fs.String("admin-socket", "", "vhcrd's admin socket (default: the --bar file's path + .sock)")
	jsonOut := fs.Bool("json", false, "print vhcrd's answer as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	word := map[string]string{"down": "down", "active": "up"}[*state]
	if *port < 1 || word == "" {
		return usageErr(errors.New("want --phys-port P (1, 2) and --state down|active"))
	}
	return postAdminAt(*sock, *barSpec, map[string]any{"cmd": "port", "port": *port, "state": word}, *timeout, *jsonOut, fmt.Sprintf("port %d %s", *port, *state))
}
