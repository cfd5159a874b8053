package faultinj

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Params are a rule's arguments, parsed: each kind reads the fields its
// Info.Params name, the others are zero.
type Params struct {
	Status  mlx4.Status // status, eqe_status
	US      uint64      // a duration in µs: delay, flr_mid, pf_offline, flags_late_ack, port_flap
	Field   Field       // outbox_field
	Value   uint64      // outbox_field, out_param
	XOR     uint16      // eqe_token
	Version uint16      // reset_version
	Port    int         // the port kinds (physical port, 1-based)
	Count   int         // eq_full, msix_drop, port_flap
	Vector  int         // msix_spurious
	EQN     int         // eq_overrun
	Index   int         // pkey_change
	LID     uint16      // lid_change, sm_lid_change
	PKey    uint16      // pkey_change
	GUID    uint64      // guid_change
	Prefix  uint64      // gid_prefix_change
	// cqe_error: the error CQE's syndrome (MLX4_CQE_SYNDROME_*) and
	// vendor_err_syndrome.
	Syndrome uint8
	Vendor   uint8
}

// ErrArg is wrapped by every argument error.
var ErrArg = errors.New("faultinj: bad argument")

// ParamInfo documents one argument name.
var ParamInfo = map[string]string{
	"status":   "an mlx4 status: a name (BAD_PARAM) or a number (3, 0x40)",
	"us":       "microseconds (a number, or with a unit: 500us, 20ms, 12s)",
	"field":    "an outbox field (Fields: func_cap.max_eq, dev_cap.log_max_qp, port.ib_mtu, ...)",
	"value":    "the value written (decimal or 0x...)",
	"xor":      "the XOR mask applied to the token (1..0xffff)",
	"version":  "the version word of the RESET acknowledgement (its bits 15:8 are the interface revision)",
	"port":     "the physical port, 1 or 2",
	"count":    "how many times (1..1000000)",
	"vector":   "the VF's MSI-X vector",
	"eqn":      "the EQ number the event names",
	"index":    "the physical P_Key index",
	"lid":      "a LID (1..0xbfff, or any 16-bit value)",
	"pkey":     "a P_Key (16 bits, membership bit 15)",
	"guid":     "a 64-bit GUID",
	"prefix":   "a 64-bit GID prefix",
	"syndrome": "an error CQE's syndrome: the mlx4 name (REMOTE_ACCESS_ERR, LOCAL_PROT_ERR, ...; cq.h's MLX4_CQE_SYNDROME_*), the work completion status it maps to (REM_ACCESS_ERR, LOC_PROT_ERR, ...; IBV_WC_*), or a number 0..255",
	"vendor":   "the error CQE's vendor_err_syndrome, 0..255 (ibv_wc.vendor_err)",
}

// defaults are the arguments a rule that omits them gets.
var defaults = Params{US: 1000, XOR: 1, Version: (mlx4.CMD_CHAN_IF_REV+1)<<8 | mlx4.CMD_CHAN_VER, Port: 1, Count: 1}

// defaultOfflineUS is pf_offline's default: past mlx4_comm_check_offline's 30 s.
const defaultOfflineUS = 40_000_000

func parseArgs(k Kind, args map[string]string) (Params, error) {
	p := defaults
	if k == PFOffline {
		p.US = defaultOfflineUS
	}
	if k == Status || k == EQEStatus {
		p.Status = mlx4.INTERNAL_ERR
	}
	info := k.Info()
	names := make([]string, 0, len(args))
	for n := range args {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !contains(info.Params, n) {
			if len(info.Params) == 0 {
				return p, fmt.Errorf("%w: %s takes no arguments, got %q", ErrArg, info.Name, n)
			}
			return p, fmt.Errorf("%w: %s takes %s, not %q", ErrArg, info.Name, strings.Join(info.Params, ", "), n)
		}
		if err := p.set(n, args[n]); err != nil {
			return p, fmt.Errorf("%w: %s=%q: %v", ErrArg, n, args[n], err)
		}
	}
	if k == OutboxField {
		if p.Field.Name == "" {
			return p, fmt.Errorf("%w: outbox_field needs field= (%s)", ErrArg, strings.Join(FieldNames(), ", "))
		}
		if _, ok := args["value"]; !ok {
			return p, fmt.Errorf("%w: outbox_field needs value=", ErrArg)
		}
		if p.Value > p.Field.Max() {
			return p, fmt.Errorf("%w: value %#x does not fit %s (at most %#x)", ErrArg, p.Value, p.Field.Name, p.Field.Max())
		}
	}
	if k == OutParam {
		if _, ok := args["value"]; !ok {
			return p, fmt.Errorf("%w: out_param needs value=", ErrArg)
		}
	}
	if k == CQEError {
		if _, ok := args["syndrome"]; !ok {
			return p, fmt.Errorf("%w: cqe_error needs syndrome= (%s, or a number)", ErrArg, strings.Join(syndromeNames(), ", "))
		}
	}
	return p, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (p *Params) set(n, v string) error {
	var err error
	switch n {
	case "status":
		p.Status, err = ParseStatus(v)
	case "us":
		p.US, err = ParseMicros(v)
	case "field":
		f, ok := FieldByName(v)
		if !ok {
			return fmt.Errorf("unknown field (%s)", strings.Join(FieldNames(), ", "))
		}
		p.Field = f
	case "value":
		p.Value, err = parseUint(v, 64)
	case "guid":
		p.GUID, err = parseUint(v, 64)
	case "prefix":
		p.Prefix, err = parseUint(v, 64)
	default:
		return p.setSmall(n, v)
	}
	return err
}

// ranged parses v as a bits-wide number in lo..hi; outside it, the error
// is bad.
func ranged(v string, bits int, lo, hi uint64, bad error) (uint64, error) {
	u, err := parseUint(v, bits)
	if err == nil && (u < lo || u > hi) {
		err = bad
	}
	return u, err
}

// setSmall sets the parameters of 32 bits or fewer.
func (p *Params) setSmall(n, v string) error {
	var err error
	var u uint64
	switch n {
	case "xor":
		u, err = ranged(v, 16, 1, 0xffff, errors.New("0 changes nothing"))
		p.XOR = uint16(u)
	case "version":
		u, err = parseUint(v, 16)
		p.Version = uint16(u)
	case "port":
		u, err = ranged(v, 8, 1, 2, errors.New("want 1 or 2"))
		p.Port = int(u)
	case "count":
		u, err = ranged(v, 32, 1, 1_000_000, errors.New("want 1..1000000"))
		p.Count = int(u)
	case "vector":
		u, err = ranged(v, 16, 0, 1023, errors.New("want 0..1023"))
		p.Vector = int(u)
	case "eqn":
		u, err = ranged(v, 16, 0, mlx4.EQNMask, fmt.Errorf("want 0..%d", mlx4.EQNMask))
		p.EQN = int(u)
	case "index":
		u, err = ranged(v, 16, 0, 127, errors.New("want 0..127"))
		p.Index = int(u)
	case "lid":
		u, err = parseUint(v, 16)
		p.LID = uint16(u)
	case "pkey":
		u, err = parseUint(v, 16)
		p.PKey = uint16(u)
	case "syndrome":
		if syn, ok := mlx4.ParseCQESyndrome(v); ok {
			p.Syndrome = syn
			return nil
		}
		u, err = parseUint(v, 8)
		if err != nil {
			return errors.New("not a syndrome name or a number 0..255")
		}
		p.Syndrome = uint8(u)
	case "vendor":
		u, err = parseUint(v, 8)
		p.Vendor = uint8(u)
	}
	return err
}

func syndromeNames() []string {
	out := make([]string, 0, len(mlx4.CQESyndromes))
	for _, in := range mlx4.CQESyndromes {
		out = append(out, in.Name)
	}
	return out
}

// ParseStatus reads an mlx4 status: its name (case-insensitive) or a
// number 0..255. Every byte is accepted: the statuses mlx4 names and any
// other a broken firmware could write.
func ParseStatus(s string) (mlx4.Status, error) {
	for _, st := range mlx4.Statuses() {
		if strings.EqualFold(st.Name(), s) {
			return st, nil
		}
	}
	u, err := parseUint(s, 8)
	if err != nil {
		return 0, fmt.Errorf("not an mlx4 status name or a number 0..255")
	}
	return mlx4.Status(u), nil
}

// ParseMicros reads a duration in microseconds: a plain number is µs; a
// number with a unit ns, us, µs, ms, s, m or h is converted (rounded down to
// whole µs). At most 1 hour.
func ParseMicros(s string) (uint64, error) {
	units := []struct {
		suf string
		mul float64
	}{{"ns", 1e-3}, {"us", 1}, {"µs", 1}, {"ms", 1e3}, {"s", 1e6}, {"m", 60e6}, {"h", 3600e6}}
	mul := 1.0
	num := s
	for _, u := range units {
		if strings.HasSuffix(s, u.suf) {
			num, mul = strings.TrimSuffix(s, u.suf), u.mul
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || !(f >= 0) {
		return 0, errors.New("want a duration such as 500, 500us, 20ms, 12s or 2m")
	}
	us := f * mul
	if us > 3600e6 {
		return 0, errors.New("at most 1 hour")
	}
	return uint64(us), nil
}

// parseUint reads a number: hexadecimal with 0x, else decimal (a leading
// 0 is not octal).
func parseUint(s string, bits int) (uint64, error) {
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		return strconv.ParseUint(h, 16, bits)
	}
	return strconv.ParseUint(s, 10, bits)
}
