package faultinj

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Spec is a rule as an operator writes it: the admin socket's request
// (vhcrd fault add) and one entry of the configuration's faults section
// are this object.
//
//	kind   the kind's name (Kinds)
//	vf     the VF (absent: any)
//	op     a VHCR_POST's opcode: an mlx4 name (QUERY_FUNC_CAP) or a number, or "any";
//	       for the data-path kinds, the completed work request's opcode: a
//	       send opcode (SEND, SEND_IMM, RDMA_WRITE, RDMA_WRITE_IMM, RDMA_READ,
//	       ATOMIC_CS, ATOMIC_FA, NOP, ...: mlx4's MLX4_OPCODE_* names, or a
//	       number 0..31), RECV (a receive completion), or "any"
//	comm   a comm command: RESET, VHCR0, VHCR1, VHCR2, VHCR_EN, VHCR_POST
//	       (any opcode), FLAGS (the reset request), or "any" (every comm
//	       command but VHCR_POST)
//	nth    fire at the nth matching occurrence only (1-based; the default
//	       is 1 when neither every nor prob is given)
//	every  fire at every matching occurrence
//	prob   fire at each matching occurrence with probability prob (0 < prob
//	       ≤ 1), drawn from the rule's PRNG seeded with seed
//	seed   the PRNG's seed (with prob only)
//	args   the kind's arguments (Info.Params), as strings
//
// With neither op nor comm, the kind fires at its Info.Default point
// (internal_err, the event and port kinds: now, once, when the rule is
// armed; the FLAGS kinds: at the reset request; the command kinds: any
// VHCR_POST).
type Spec struct {
	Kind  string            `json:"kind"`
	VF    *int              `json:"vf,omitempty"`
	Op    string            `json:"op,omitempty"`
	Comm  string            `json:"comm,omitempty"`
	Nth   uint64            `json:"nth,omitempty"`
	Every bool              `json:"every,omitempty"`
	Prob  float64           `json:"prob,omitempty"`
	Seed  uint64            `json:"seed,omitempty"`
	Args  map[string]string `json:"args,omitempty"`
}

// ErrRule is wrapped by every error of a rule that cannot be armed.
var ErrRule = errors.New("faultinj: bad rule")

// Any is the VF or key of a rule that matches every VF or every opcode or
// comm command.
const Any = -1

// commFlags is the key "FLAGS" stands for (PointFlags has one key).
const commFlags = 0

// Rule is a compiled, armed rule and its state: occurrences seen, faults
// fired, and its PRNG.
type Rule struct {
	ID     int
	Kind   Kind
	VF     int   // Any or a VF
	Point  Point // where it fires
	Key    int   // Any, the opcode (PointPost) or the comm command (PointComm)
	Nth    uint64
	Every  bool
	Prob   float64
	Seed   uint64
	Params Params

	seen uint64 // matching occurrences
	hits uint64 // faults fired
	done bool   // an nth rule past its occurrence, a now rule fired
	rng  splitMix64
}

// Compile checks s against the catalogue and returns its rule (ID 0,
// armed by Set.Add) for a PF with numVFs VFs.
func Compile(s Spec, numVFs int) (*Rule, error) {
	k, ok := ParseKind(s.Kind)
	if !ok {
		return nil, fmt.Errorf("%w: unknown kind %q (vhcrd fault kinds lists them)", ErrRule, s.Kind)
	}
	info := k.Info()
	r := &Rule{Kind: k, VF: Any, Key: Any, Seed: s.Seed}
	if s.VF != nil {
		if *s.VF < 0 || *s.VF >= numVFs {
			return nil, fmt.Errorf("%w: vf %d: this PF has VFs 0..%d", ErrRule, *s.VF, numVFs-1)
		}
		r.VF = *s.VF
	}
	var err error
	if r.Point, r.Key, err = target(s, info); err != nil {
		return nil, err
	}
	if info.Points&r.Point == 0 {
		return nil, fmt.Errorf("%w: %s fires at %s, not at %s", ErrRule, info.Name, pointList(info.Points), r.Point)
	}
	if err := r.occurrence(s); err != nil {
		return nil, err
	}
	if r.Params, err = parseArgs(k, s.Args); err != nil {
		return nil, err
	}
	if err := r.checkKind(); err != nil {
		return nil, err
	}
	r.rng = splitMix64{s: r.Seed}
	return r, nil
}

// target is the point and key of s.
func target(s Spec, info Info) (Point, int, error) {
	if info.Points == PointCQE {
		return cqeTarget(s)
	}
	switch {
	case s.Op != "" && s.Comm != "":
		return 0, 0, fmt.Errorf("%w: op and comm: a rule fires at one of them", ErrRule)
	case s.Op != "":
		if strings.EqualFold(s.Op, "any") {
			return PointPost, Any, nil
		}
		op, err := mlx4.ParseOpcode(s.Op)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: op: %w", ErrRule, err)
		}
		return PointPost, int(op), nil
	case s.Comm != "":
		c := strings.ToUpper(s.Comm)
		switch c {
		case "ANY":
			return PointComm, Any, nil
		case "FLAGS":
			return PointFlags, commFlags, nil
		case "VHCR_POST":
			return PointPost, Any, nil
		}
		for _, cc := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1,
			mlx4.MLX4_COMM_CMD_VHCR2, mlx4.MLX4_COMM_CMD_VHCR_EN} {
			if cc.String() == c {
				return PointComm, int(cc), nil
			}
		}
		return 0, 0, fmt.Errorf("%w: comm %q: want RESET, VHCR0, VHCR1, VHCR2, VHCR_EN, VHCR_POST, FLAGS or any", ErrRule, s.Comm)
	}
	if info.Default == PointFlags {
		return PointFlags, commFlags, nil
	}
	return info.Default, Any, nil
}

// cqeTarget is the key of a data-path kind's rule: op names the work
// request's opcode.
func cqeTarget(s Spec) (Point, int, error) {
	if s.Comm != "" {
		return 0, 0, fmt.Errorf("%w: the data-path kinds fire at completions: op names a work request's opcode (SEND, RDMA_WRITE, ..., RECV), not comm", ErrRule)
	}
	switch op := strings.ToUpper(s.Op); op {
	case "", "ANY":
		return PointCQE, Any, nil
	case "RECV":
		return PointCQE, CQERecv, nil
	default:
		if v, ok := mlx4.ParseWQEOpcode(op); ok {
			return PointCQE, int(v), nil
		}
		if v, err := parseUint(s.Op, 8); err == nil && v <= mlx4.WQEOpcodeMask {
			return PointCQE, int(v), nil
		}
	}
	return 0, 0, fmt.Errorf("%w: op %q: a data-path kind's op is a work request's opcode (SEND, SEND_IMM, RDMA_WRITE, RDMA_WRITE_IMM, RDMA_READ, ATOMIC_CS, ATOMIC_FA, ..., a number 0..31), RECV or any", ErrRule, s.Op)
}

func (r *Rule) occurrence(s Spec) error {
	n := 0
	if s.Nth != 0 {
		n++
	}
	if s.Every {
		n++
	}
	if s.Prob != 0 {
		n++
	}
	if n > 1 {
		return fmt.Errorf("%w: nth, every and prob exclude each other", ErrRule)
	}
	if s.Seed != 0 && s.Prob == 0 {
		return fmt.Errorf("%w: seed goes with prob", ErrRule)
	}
	if r.Point == PointNow && (s.Nth > 1 || s.Every || s.Prob != 0) {
		return fmt.Errorf("%w: a rule that fires now fires once (give op or comm to fire at an occurrence)", ErrRule)
	}
	switch {
	case s.Every:
		r.Every = true
	case s.Prob != 0:
		if !(s.Prob > 0 && s.Prob <= 1) || math.IsNaN(s.Prob) {
			return fmt.Errorf("%w: prob %v: want 0 < prob ≤ 1", ErrRule, s.Prob)
		}
		r.Prob = s.Prob
	case s.Nth != 0:
		r.Nth = s.Nth
	default:
		r.Nth = 1
	}
	return nil
}

// checkKind applies what a kind needs of its target.
func (r *Rule) checkKind() error {
	switch r.Kind {
	case OutboxField:
		f := r.Params.Field
		if r.Key == Any {
			r.Key = int(f.Op)
		} else if r.Key != int(f.Op) {
			return fmt.Errorf("%w: field %s is in %s's outbox, not %s's", ErrRule, f.Name, f.Op, mlx4.Opcode(r.Key))
		}
	case OutParam:
		if r.Key == Any {
			return fmt.Errorf("%w: out_param needs op (a command with an immediate output, such as ALLOC_RES)", ErrRule)
		}
	case ResetVersion:
		if r.Key != int(mlx4.MLX4_COMM_CMD_RESET) {
			return fmt.Errorf("%w: reset_version fires at RESET only (comm RESET)", ErrRule)
		}
	case GUIDChange:
		if r.VF == Any {
			return fmt.Errorf("%w: guid_change changes one VF's alias GUID: give vf", ErrRule)
		}
	case NoVFResetCap, FlagsNoAck, FlagsLateAck, FlagsAckNoReset, PFOffline, Status, Delay, Never,
		CQEError, CQEDrop, CQEDup, CQOverrun:
	}
	return nil
}

func pointList(p Point) string {
	var out []string
	for b := Point(1); b != 0 && b <= PointCQE; b <<= 1 {
		if p&b != 0 {
			out = append(out, b.String())
		}
	}
	return strings.Join(out, ", ")
}

// Spec is the rule written back as a normalised Spec (names, not numbers;
// every argument the kind takes, defaults included).
func (r *Rule) Spec() Spec {
	s := Spec{Kind: r.Kind.String(), Nth: r.Nth, Every: r.Every, Prob: r.Prob, Seed: r.Seed}
	if r.VF != Any {
		vf := r.VF
		s.VF = &vf
	}
	switch r.Point {
	case PointPost:
		s.Op = "any"
		if r.Key != Any {
			s.Op = mlx4.Opcode(r.Key).String()
		}
	case PointComm:
		s.Comm = "any"
		if r.Key != Any {
			s.Comm = mlx4.CommCmd(r.Key).String()
		}
	case PointFlags:
		s.Comm = "FLAGS"
	case PointCQE:
		s.Op = "any"
		if r.Key != Any {
			s.Op = CQEKeyName(r.Key)
		}
	}
	if ps := r.Kind.Info().Params; len(ps) > 0 {
		s.Args = make(map[string]string, len(ps))
		for _, n := range ps {
			s.Args[n] = r.Params.format(n)
		}
	}
	return s
}

func (p *Params) format(n string) string {
	switch n {
	case "status":
		return p.Status.Name()
	case "us":
		return strconv.FormatUint(p.US, 10)
	case "field":
		return p.Field.Name
	case "value":
		return "0x" + strconv.FormatUint(p.Value, 16)
	case "xor":
		return "0x" + strconv.FormatUint(uint64(p.XOR), 16)
	case "version":
		return "0x" + strconv.FormatUint(uint64(p.Version), 16)
	case "port":
		return strconv.Itoa(p.Port)
	case "count":
		return strconv.Itoa(p.Count)
	case "vector":
		return strconv.Itoa(p.Vector)
	case "eqn":
		return strconv.Itoa(p.EQN)
	case "index":
		return strconv.Itoa(p.Index)
	case "lid":
		return strconv.Itoa(int(p.LID))
	case "pkey":
		return "0x" + strconv.FormatUint(uint64(p.PKey), 16)
	case "guid":
		return "0x" + strconv.FormatUint(p.GUID, 16)
	case "prefix":
		return "0x" + strconv.FormatUint(p.Prefix, 16)
	case "syndrome":
		if n := mlx4.CQESyndromeName(p.Syndrome); n != "" {
			return n
		}
		return "0x" + strconv.FormatUint(uint64(p.Syndrome), 16)
	case "vendor":
		return "0x" + strconv.FormatUint(uint64(p.Vendor), 16)
	}
	return ""
}

// Flags is the command line of s: the flags of vhcrd fault add.
func (s Spec) Flags() []string {
	a := []string{"--kind", s.Kind}
	if s.VF != nil {
		a = append(a, "--vf", strconv.Itoa(*s.VF))
	}
	if s.Op != "" {
		a = append(a, "--op", s.Op)
	}
	if s.Comm != "" {
		a = append(a, "--comm", s.Comm)
	}
	switch {
	case s.Every:
		a = append(a, "--every")
	case s.Prob != 0:
		a = append(a, "--prob", strconv.FormatFloat(s.Prob, 'g', -1, 64), "--seed", strconv.FormatUint(s.Seed, 10))
	case s.Nth != 0:
		a = append(a, "--nth", strconv.FormatUint(s.Nth, 10))
	}
	names := make([]string, 0, len(s.Args))
	for n := range s.Args {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a = append(a, "--arg", n+"="+s.Args[n])
	}
	return a
}

// String is the rule as vhcrd fault add's flags.
func (r *Rule) String() string { return strings.Join(r.Spec().Flags(), " ") }
