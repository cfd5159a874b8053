package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// KindLost is the Entry kind of a "records lost" notice in a stream.
const KindLost = "lost"

// Entry is a record as people and scripts read it: names instead of
// numbers, wall time instead of ticks. Its JSON form (AppendJSON, one object
// per line) has these field names, stable across versions; an object carries
// the fields of its kind only:
//
//	every kind   seq, time, kind, vf
//	comm         comm, toggle, param
//	post         comm, toggle, opcode, op_mod, in_mod, in_param, out_param,
//	             e_bit, token, status, reason, latency_ns, and what the
//	             command's fields mean where the trace decodes them:
//	             res, res_op (ALLOC_RES, FREE_RES: mlx4.Resource and
//	             mlx4.AllocMode names), port (RES_MAC, RES_VLAN, MAD_IFC),
//	             qpn (the QP a command names), mad_class, mad_method,
//	             mad_attr, mad_attr_mod (MAD_IFC: the request MAD's header,
//	             with package mad's names)
//	eqe          event_type, event (mlx4.EventName; absent if unnamed), eq,
//	             token
//	irq          vector
//	reset        reset_reason
//	flr          phase ("begin" or "end")
//	restart      adopted
//	fault        fault (the faultinj kind's name), rule (its ID), point
//	             (post, comm, flags, now), and opcode (point post) or comm
//	             (point comm)
//	lost         lost (only: the number of records a slow reader lost)
//
// in_param, out_param and qpn are hexadecimal strings ("0x5000"): 64-bit
// values do not survive a trip through a double, and QPNs are written in
// hexadecimal everywhere, as mlx4 prints them. time is RFC 3339 with nanoseconds,
// in UTC. latency_ns is null for a command whose latency was not measured
// (Ring.PostUntimed).
type Entry struct {
	Seq         uint64    `json:"seq"`
	Time        time.Time `json:"time"`
	Kind        string    `json:"kind"`
	VF          int       `json:"vf"`
	Comm        string    `json:"comm"`
	Toggle      uint8     `json:"toggle"`
	Param       uint16    `json:"param"`
	Opcode      string    `json:"opcode"`
	OpMod       uint8     `json:"op_mod"`
	InMod       uint32    `json:"in_mod"`
	InParam     Hex64     `json:"in_param"`
	OutParam    Hex64     `json:"out_param"`
	E           bool      `json:"e_bit"` // the 'e' bit: completion by EQE
	Token       uint16    `json:"token"`
	Status      string    `json:"status"`
	Reason      string    `json:"reason"`
	LatencyNS   int64     `json:"-"` // latency_ns: a number, or null if not Timed
	Timed       bool      `json:"-"`
	Res         string    `json:"res"`    // ALLOC_RES, FREE_RES: the resource type
	ResOp       string    `json:"res_op"` // ALLOC_RES, FREE_RES: the allocation mode
	Port        uint8     `json:"port"`   // if HasPort
	HasPort     bool      `json:"-"`
	QPN         Hex64     `json:"qpn"` // if HasQPN
	HasQPN      bool      `json:"-"`
	MADClass    string    `json:"mad_class"` // MAD_IFC; the mad_* fields are there if it is
	MADMethod   string    `json:"mad_method"`
	MADAttr     string    `json:"mad_attr"`
	MADAttrMod  uint32    `json:"mad_attr_mod"`
	EventType   uint8     `json:"event_type"`
	Event       string    `json:"event"`
	EQ          uint32    `json:"eq"`
	Vector      uint32    `json:"vector"`
	ResetReason string    `json:"reset_reason"`
	Phase       string    `json:"phase"`
	Adopted     bool      `json:"adopted"`
	Fault       string    `json:"fault"`
	Rule        uint32    `json:"rule"`
	Point       string    `json:"point"`
	Lost        uint64    `json:"lost"`
}

// Hex64 is a 64-bit value written in JSON as a hexadecimal string.
type Hex64 uint64

// MarshalJSON writes "0x…".
func (h Hex64) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, "0x"+strconv.FormatUint(uint64(h), 16)), nil
}

// UnmarshalJSON reads a string "0x…" (or a decimal string).
func (h *Hex64) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: want a hexadecimal string: %v", ErrDecode, err)
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrDecode, s, err)
	}
	*h = Hex64(v)
	return nil
}

// ErrDecode is returned, wrapped, for a line that is not a trace entry.
var ErrDecode = errors.New("trace: not a trace entry")

// EntryOf names and timestamps record rec.
func (c *Clock) EntryOf(rec *Record) Entry {
	e := Entry{Seq: rec.Seq, Time: c.Time(rec.Ticks).UTC(), Kind: rec.Kind.String(), VF: int(rec.VF)}
	switch rec.Kind {
	case KindComm:
		e.Comm, e.Toggle, e.Param = CommName(rec.Comm), rec.Toggle(), uint16(rec.Arg)
	case KindPost:
		e.Comm, e.Toggle = CommName(rec.Comm), rec.Toggle()
		e.Opcode, e.OpMod, e.InMod = names().op[rec.Op&mlx4.OpcodeMask], rec.OpMod, rec.Arg
		e.InParam, e.OutParam, e.E, e.Token = Hex64(rec.InParam), Hex64(rec.OutParam), rec.EBit(), rec.Token
		e.Status, e.Reason = names().status[rec.Status], rec.Reason.String()
		if rec.Timed() {
			e.LatencyNS, e.Timed = int64(c.Duration(rec.Latency)), true
		}
		decodePost(&e, rec)
	case KindEQE:
		e.EventType, e.Event, e.EQ, e.Token = rec.Aux, mlx4.EventName(rec.Aux), rec.Arg, rec.Token
	case KindIRQ:
		e.Vector = rec.Arg
	case KindReset:
		e.ResetReason = ResetReasonName(rec.Aux)
	case KindFLR:
		e.Phase = "end"
		if rec.Aux != 0 {
			e.Phase = "begin"
		}
	case KindRestart:
		e.Adopted = rec.Aux != 0
	case KindFault:
		pt := faultinj.Point(rec.InParam)
		e.Fault, e.Rule, e.Point = faultinj.Kind(rec.Aux).String(), rec.Arg, pt.String()
		switch pt {
		case faultinj.PointPost:
			e.Opcode = names().op[rec.Op&mlx4.OpcodeMask]
		case faultinj.PointComm:
			e.Comm = CommName(rec.Comm)
		case faultinj.PointCQE:
			e.Opcode = faultinj.CQEKeyName(int(rec.Op & mlx4.OpcodeMask))
		}
	}
	return e
}

// decodePost fills e's decoded fields from the fields of rec, a VHCR_POST,
// as mlx4's wrappers read them: ALLOC_RES/FREE_RES's in_modifier[7:0]
// (type), [15:8] (port of a MAC or VLAN) and op_modifier (mode), and the
// QPN of a QP reservation (out_param's low word, once allocated; FREE_RES:
// in_param's) or ICM mapping (in_param's low word); the QPN in a QP
// command's in_modifier; MAD_IFC's port (in_modifier[7:0]) and the request
// MAD's class, method, attribute ID and modifier from the inbox head. The
// writer records only numbers; naming them is the reader's work.
func decodePost(e *Entry, rec *Record) {
	switch op := rec.Op & mlx4.OpcodeMask; {
	case op == mlx4.ALLOC_RES || op == mlx4.FREE_RES:
		ty, mode := mlx4.Resource(rec.Arg&mlx4.ResTypeMask), mlx4.AllocMode(rec.OpMod)
		e.Res, e.ResOp = ty.String(), mode.String()
		switch ty {
		case mlx4.RES_MAC, mlx4.RES_VLAN:
			e.Port, e.HasPort = uint8(rec.Arg>>mlx4.ResPortShift), true
		case mlx4.RES_QP:
			switch {
			case op == mlx4.ALLOC_RES && mode == mlx4.RES_OP_RESERVE:
				if rec.Status == mlx4.OK {
					e.QPN, e.HasQPN = Hex64(rec.OutParam&mlx4.QPNMask), true
				}
			case mode == mlx4.RES_OP_RESERVE || mode == mlx4.RES_OP_MAP_ICM:
				e.QPN, e.HasQPN = Hex64(rec.InParam&mlx4.QPNMask), true
			}
		}
	case mlx4.InModIsQPN(op):
		e.QPN, e.HasQPN = Hex64(rec.Arg&mlx4.QPNMask), true
	case op == mlx4.MAD_IFC:
		e.Port, e.HasPort = uint8(rec.Arg), true
		if h := rec.Inbox; h[0] != 0 { // base version 0: no inbox was copied
			class, method := uint8(h[0]>>48), uint8(h[0]>>32)
			e.MADClass, e.MADMethod = mad.ClassName(class), mad.MethodName(method)
			e.MADAttr, e.MADAttrMod = mad.AttrName(class, uint16(h[1]>>48)), uint32(h[1])
		}
	}
}

// LostEntry is the notice that n records were lost.
func LostEntry(n uint64) Entry { return Entry{Kind: KindLost, Lost: n} }

// AppendText appends e as one line of text, newline included:
//
//	03:21:19.123456789 vf3 POST  QUERY_FUNC_CAP op_mod=1 in_mod=0x2 in=0x0 out=0x5000 tok=0xffff poll  OK  1.2µs
//	03:21:19.123457000 vf3 POST  SW2HW_MPT op_mod=0 in_mod=0x7 in=0x1000 out=0x0 tok=0x3 event  BAD_RESOURCE reason=not_owner  3.1µs
//	03:21:19.123457500 vf3 POST  NOP op_mod=0 in_mod=0x0 in=0x0 out=0x0 tok=0x4 poll  OK
//	03:21:19.123457600 vf3 POST  ALLOC_RES RES_QP RES_OP_RESERVE qpn=0x848 op_mod=0 in_mod=0x0 in=0x100000001 out=0x848 tok=0x5 poll  OK
//	03:21:19.123457700 vf3 POST  MAD_IFC port=1 SUBN_LID_ROUTED GET PORT_INFO attr_mod=0x1 op_mod=1 in_mod=0x1 in=0x2000 out=0x3000 tok=0x6 poll  OK
//	03:21:19.123458000 vf3 COMM VHCR_EN toggle=1 param=0x0
//	03:21:19.123459000 vf3 EQE CMD type=0x0a eq=2 tok=0x12
//	03:21:19.123460000 vf3 IRQ vector=2
//	03:21:19.123461000 vf3 RESET reason=toggle
//	03:21:19.123462000 vf3 FLR begin
//	03:21:19.123463000 vf3 RESTART adopted
//	# lost 1200 records
//
// Times are UTC, to the nanosecond. A command not timed has no latency.
// The decoded fields (decodePost) follow the opcode; an EQE's type name
// precedes its number, and a type mlx4 does not name has none.
func AppendText(b []byte, e *Entry) []byte {
	if e.Kind == KindLost {
		b = append(b, "# lost "...)
		b = strconv.AppendUint(b, e.Lost, 10)
		return append(b, " records\n"...)
	}
	b = appendTimeOfDay(b, e.Time)
	b = append(b, " vf"...)
	b = strconv.AppendInt(b, int64(e.VF), 10)
	switch e.Kind {
	case "comm":
		b = append(b, " COMM "...)
		b = append(b, e.Comm...)
		b = append(b, " toggle="...)
		b = strconv.AppendUint(b, uint64(e.Toggle), 10)
		if e.Comm != "RESET" {
			b = appendHex(append(b, " param="...), uint64(e.Param))
		}
	case "post":
		b = append(b, " POST  "...)
		b = append(b, e.Opcode...)
		b = appendDecoded(b, e)
		b = strconv.AppendUint(append(b, " op_mod="...), uint64(e.OpMod), 10)
		b = appendHex(append(b, " in_mod="...), uint64(e.InMod))
		b = appendHex(append(b, " in="...), uint64(e.InParam))
		b = appendHex(append(b, " out="...), uint64(e.OutParam))
		b = appendHex(append(b, " tok="...), uint64(e.Token))
		if e.E {
			b = append(b, " event  "...)
		} else {
			b = append(b, " poll  "...)
		}
		b = append(b, e.Status...)
		if e.Reason != "" && e.Reason != "none" {
			b = append(append(b, " reason="...), e.Reason...)
		}
		if e.Timed {
			b = appendLatency(append(b, "  "...), e.LatencyNS)
		}
	case "eqe":
		b = append(b, " EQE "...)
		if e.Event != "" {
			b = append(append(b, e.Event...), ' ')
		}
		b = append(b, "type=0x"...)
		if e.EventType < 0x10 {
			b = append(b, '0')
		}
		b = strconv.AppendUint(b, uint64(e.EventType), 16)
		b = strconv.AppendUint(append(b, " eq="...), uint64(e.EQ), 10)
		b = appendHex(append(b, " tok="...), uint64(e.Token))
	case "irq":
		b = strconv.AppendUint(append(b, " IRQ vector="...), uint64(e.Vector), 10)
	case "reset":
		b = append(append(b, " RESET reason="...), e.ResetReason...)
	case "flr":
		b = append(append(b, " FLR "...), e.Phase...)
	case "restart":
		if e.Adopted {
			b = append(b, " RESTART adopted"...)
		} else {
			b = append(b, " RESTART fresh"...)
		}
	case "fault":
		b = append(append(b, " FAULT "...), e.Fault...)
		b = strconv.AppendUint(append(b, " rule="...), uint64(e.Rule), 10)
		b = append(append(b, " at="...), e.Point...)
		if e.Opcode != "" {
			b = append(append(b, ' '), e.Opcode...)
		}
		if e.Comm != "" {
			b = append(append(b, ' '), e.Comm...)
		}
	default:
		b = append(append(b, " "...), e.Kind...)
	}
	return append(b, '\n')
}

// appendDecoded appends what decodePost found, in text: " RES_QP
// RES_OP_RESERVE qpn=0x48", " port=1 SUBN_LID_ROUTED GET NODE_INFO
// attr_mod=0x0".
func appendDecoded(b []byte, e *Entry) []byte {
	if e.Res != "" {
		b = append(append(append(append(b, ' '), e.Res...), ' '), e.ResOp...)
	}
	if e.HasPort {
		b = strconv.AppendUint(append(b, " port="...), uint64(e.Port), 10)
	}
	if e.HasQPN {
		b = appendHex(append(b, " qpn="...), uint64(e.QPN))
	}
	if e.MADClass != "" {
		b = append(append(append(append(append(append(b, ' '), e.MADClass...), ' '), e.MADMethod...), ' '), e.MADAttr...)
		b = appendHex(append(b, " attr_mod="...), uint64(e.MADAttrMod))
	}
	return b
}

// names caches mlx4's opcode and status names (maps and Sprintf) for
// every value a record can hold.
var names = sync.OnceValue(func() *nameTables {
	t := new(nameTables)
	for i := range t.op {
		t.op[i] = mlx4.Opcode(i).String()
	}
	for i := range t.status {
		t.status[i] = mlx4.Status(i).Name()
	}
	return t
})

type nameTables struct {
	op     [0x1000]string
	status [0x100]string
}

// appendTimeOfDay appends t's UTC time of day as 15:04:05.000000000.
func appendTimeOfDay(b []byte, t time.Time) []byte {
	h, m, s := t.UTC().Clock()
	ns := t.Nanosecond()
	b = append(b, byte('0'+h/10), byte('0'+h%10), ':', byte('0'+m/10), byte('0'+m%10), ':',
		byte('0'+s/10), byte('0'+s%10), '.')
	var d [9]byte
	for i := 8; i >= 0; i-- {
		d[i] = byte('0' + ns%10)
		ns /= 10
	}
	return append(b, d[:]...)
}

func appendHex(b []byte, v uint64) []byte {
	return strconv.AppendUint(append(b, "0x"...), v, 16)
}

// appendLatency writes ns with three significant digits at most: 850ns,
// 1.2µs, 12.3µs, 123µs, 1.2ms, 1.50s.
func appendLatency(b []byte, ns int64) []byte {
	switch {
	case ns < 1000:
		return append(strconv.AppendInt(b, ns, 10), "ns"...)
	case ns < 100_000:
		return append(strconv.AppendFloat(b, float64(ns)/1e3, 'f', 1, 64), "µs"...)
	case ns < 1_000_000:
		return append(strconv.AppendInt(b, ns/1000, 10), "µs"...)
	case ns < 1_000_000_000:
		return append(strconv.AppendFloat(b, float64(ns)/1e6, 'f', 1, 64), "ms"...)
	}
	return append(strconv.AppendFloat(b, float64(ns)/1e9, 'f', 2, 64), "s"...)
}

// AppendJSON appends e as one JSON object and a newline, with the fields of
// its kind (see Entry).
func AppendJSON(b []byte, e *Entry) []byte {
	if e.Kind == KindLost {
		b = append(b, `{"kind":"lost","lost":`...)
		b = strconv.AppendUint(b, e.Lost, 10)
		return append(b, "}\n"...)
	}
	b = strconv.AppendUint(append(b, `{"seq":`...), e.Seq, 10)
	b = append(b, `,"time":"`...)
	b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = appendString(append(b, `","kind":`...), e.Kind)
	b = strconv.AppendInt(append(b, `,"vf":`...), int64(e.VF), 10)
	switch e.Kind {
	case "comm":
		b = appendString(append(b, `,"comm":`...), e.Comm)
		b = strconv.AppendUint(append(b, `,"toggle":`...), uint64(e.Toggle), 10)
		b = strconv.AppendUint(append(b, `,"param":`...), uint64(e.Param), 10)
	case "post":
		b = appendString(append(b, `,"comm":`...), e.Comm)
		b = strconv.AppendUint(append(b, `,"toggle":`...), uint64(e.Toggle), 10)
		b = appendString(append(b, `,"opcode":`...), e.Opcode)
		b = strconv.AppendUint(append(b, `,"op_mod":`...), uint64(e.OpMod), 10)
		b = strconv.AppendUint(append(b, `,"in_mod":`...), uint64(e.InMod), 10)
		b = append(appendHex(append(b, `,"in_param":"`...), uint64(e.InParam)), '"')
		b = append(appendHex(append(b, `,"out_param":"`...), uint64(e.OutParam)), '"')
		b = strconv.AppendBool(append(b, `,"e_bit":`...), e.E)
		b = strconv.AppendUint(append(b, `,"token":`...), uint64(e.Token), 10)
		b = appendString(append(b, `,"status":`...), e.Status)
		b = appendString(append(b, `,"reason":`...), e.Reason)
		if e.Timed {
			b = strconv.AppendInt(append(b, `,"latency_ns":`...), e.LatencyNS, 10)
		} else {
			b = append(b, `,"latency_ns":null`...)
		}
		if e.Res != "" {
			b = appendString(append(b, `,"res":`...), e.Res)
			b = appendString(append(b, `,"res_op":`...), e.ResOp)
		}
		if e.HasPort {
			b = strconv.AppendUint(append(b, `,"port":`...), uint64(e.Port), 10)
		}
		if e.HasQPN {
			b = append(appendHex(append(b, `,"qpn":"`...), uint64(e.QPN)), '"')
		}
		if e.MADClass != "" {
			b = appendString(append(b, `,"mad_class":`...), e.MADClass)
			b = appendString(append(b, `,"mad_method":`...), e.MADMethod)
			b = appendString(append(b, `,"mad_attr":`...), e.MADAttr)
			b = strconv.AppendUint(append(b, `,"mad_attr_mod":`...), uint64(e.MADAttrMod), 10)
		}
	case "eqe":
		b = strconv.AppendUint(append(b, `,"event_type":`...), uint64(e.EventType), 10)
		if e.Event != "" {
			b = appendString(append(b, `,"event":`...), e.Event)
		}
		b = strconv.AppendUint(append(b, `,"eq":`...), uint64(e.EQ), 10)
		b = strconv.AppendUint(append(b, `,"token":`...), uint64(e.Token), 10)
	case "irq":
		b = strconv.AppendUint(append(b, `,"vector":`...), uint64(e.Vector), 10)
	case "reset":
		b = appendString(append(b, `,"reset_reason":`...), e.ResetReason)
	case "flr":
		b = appendString(append(b, `,"phase":`...), e.Phase)
	case "restart":
		b = strconv.AppendBool(append(b, `,"adopted":`...), e.Adopted)
	case "fault":
		b = appendString(append(b, `,"fault":`...), e.Fault)
		b = strconv.AppendUint(append(b, `,"rule":`...), uint64(e.Rule), 10)
		b = appendString(append(b, `,"point":`...), e.Point)
		if e.Opcode != "" {
			b = appendString(append(b, `,"opcode":`...), e.Opcode)
		}
		if e.Comm != "" {
			b = appendString(append(b, `,"comm":`...), e.Comm)
		}
	}
	return append(b, "}\n"...)
}

// appendString appends s as a JSON string: names are plain ASCII and are
// copied; anything else goes through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// jsonLine is an AppendJSON line as decoded, with the optional fields
// of a post told from zero.
type jsonLine struct {
	Entry
	Latency *int64  `json:"latency_ns"`
	Port    *uint8  `json:"port"`
	QPN     *Hex64  `json:"qpn"`
	Class   *string `json:"mad_class"`
}

// post fills in e's fields of a post.
func (w *jsonLine) post(e *Entry) error {
	in := &w.Entry
	e.Comm, e.Toggle, e.Opcode, e.OpMod, e.InMod = in.Comm, in.Toggle, in.Opcode, in.OpMod, in.InMod
	e.InParam, e.OutParam, e.E, e.Token = in.InParam, in.OutParam, in.E, in.Token
	e.Status, e.Reason = in.Status, in.Reason
	if w.Latency != nil {
		e.LatencyNS, e.Timed = *w.Latency, true
	}
	if in.Res != "" || in.ResOp != "" {
		e.Res, e.ResOp = in.Res, in.ResOp
		if e.Res == "" {
			return fmt.Errorf("%w: res_op without res", ErrDecode)
		}
	}
	if w.Port != nil {
		e.Port, e.HasPort = *w.Port, true
	}
	if w.QPN != nil {
		if *w.QPN > mlx4.QPNMask {
			return fmt.Errorf("%w: qpn %#x", ErrDecode, uint64(*w.QPN))
		}
		e.QPN, e.HasQPN = *w.QPN, true
	}
	if w.Class != nil {
		if *w.Class == "" {
			return fmt.Errorf("%w: empty mad_class", ErrDecode)
		}
		e.MADClass, e.MADMethod, e.MADAttr, e.MADAttrMod = *w.Class, in.MADMethod, in.MADAttr, in.MADAttrMod
	}
	return nil
}

// ParseJSON decodes one line of AppendJSON output. Unknown fields are
// ignored and so are the fields of other kinds (they are left zero), so that
// ParseJSON(AppendJSON(e)) is e for any e ParseJSON returned.
func ParseJSON(line []byte) (Entry, error) {
	var wire jsonLine
	if err := json.Unmarshal(line, &wire); err != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	in := &wire.Entry
	if in.Kind == KindLost {
		return LostEntry(in.Lost), nil
	}
	k, ok := parseKind(in.Kind)
	if !ok {
		return Entry{}, fmt.Errorf("%w: kind %q", ErrDecode, in.Kind)
	}
	if in.VF < 0 || in.VF > 0xffff {
		return Entry{}, fmt.Errorf("%w: vf %d", ErrDecode, in.VF)
	}
	if in.Toggle > 1 || in.OpMod > 0xf {
		return Entry{}, fmt.Errorf("%w: toggle %d, op_mod %d", ErrDecode, in.Toggle, in.OpMod)
	}
	if y := in.Time.UTC().Year(); y < 0 || y > 9999 {
		return Entry{}, fmt.Errorf("%w: time %v out of range", ErrDecode, in.Time)
	}
	e := Entry{Seq: in.Seq, Time: in.Time.UTC(), Kind: in.Kind, VF: in.VF}
	switch k {
	case KindComm:
		e.Comm, e.Toggle, e.Param = in.Comm, in.Toggle, in.Param
	case KindPost:
		if err := wire.post(&e); err != nil {
			return Entry{}, err
		}
	case KindEQE:
		e.EventType, e.Event, e.EQ, e.Token = in.EventType, in.Event, in.EQ, in.Token
	case KindIRQ:
		e.Vector = in.Vector
	case KindReset:
		e.ResetReason = in.ResetReason
	case KindFLR:
		if in.Phase != "begin" && in.Phase != "end" {
			return Entry{}, fmt.Errorf("%w: flr phase %q", ErrDecode, in.Phase)
		}
		e.Phase = in.Phase
	case KindRestart:
		e.Adopted = in.Adopted
	case KindFault:
		if in.Fault == "" || in.Point == "" {
			return Entry{}, fmt.Errorf("%w: fault without its kind or point", ErrDecode)
		}
		e.Fault, e.Rule, e.Point, e.Opcode, e.Comm = in.Fault, in.Rule, in.Point, in.Opcode, in.Comm
	}
	return e, nil
}
