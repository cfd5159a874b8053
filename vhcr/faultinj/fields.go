package faultinj

import (
	"encoding/binary"
	"sort"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Field is one QUERY_* outbox field outbox_field can set: the opcode and
// op_modifier whose outbox has it, the byte offset and width (1, 2 or 4
// bytes, big-endian), and the bits the driver reads (Mask << Shift within
// the word). The offsets and masks are vhcr/mlx4's (fw.c's *_OFFSET and
// how mlx4_QUERY_* reads each field); the driver's reading is in Doc.
type Field struct {
	Name  string
	Op    mlx4.Opcode
	OpMod uint8
	Off   int
	Width int
	Mask  uint32
	Shift uint
	Doc   string
}

// Max is the largest value the field holds.
func (f Field) Max() uint64 { return uint64(f.Mask) }

// Apply writes v (masked) into the field of outbox, keeping the word's
// other bits.
func (f Field) Apply(outbox []byte, v uint64) {
	if f.Off+f.Width > len(outbox) {
		return
	}
	b := outbox[f.Off : f.Off+f.Width]
	w := f.word(b)
	w = w&^(f.Mask<<f.Shift) | (uint32(v)&f.Mask)<<f.Shift
	switch f.Width {
	case 1:
		b[0] = byte(w)
	case 2:
		binary.BigEndian.PutUint16(b, uint16(w))
	default:
		binary.BigEndian.PutUint32(b, w)
	}
}

// Read reads the field from outbox.
func (f Field) Read(outbox []byte) uint64 {
	return uint64(f.word(outbox[f.Off:f.Off+f.Width]) >> f.Shift & f.Mask)
}

// word is the big-endian word of the field's width in b.
func (f Field) word(b []byte) uint32 {
	switch f.Width {
	case 1:
		return uint32(b[0])
	case 2:
		return uint32(binary.BigEndian.Uint16(b))
	default:
		return binary.BigEndian.Uint32(b)
	}
}

// fields are the catalogue's outbox fields: the capabilities a VF's
// driver must refuse or clamp (main.c mlx4_slave_cap, fw.c).
var fields = []Field{
	{"func_cap.max_eq", mlx4.QUERY_FUNC_CAP, 0, mlx4.QUERY_FUNC_CAP_MAX_EQ_OFFSET, 4, 0xffffffff, 0,
		"fw.c mlx4_QUERY_FUNC_CAP: func_cap->max_eq = field32 & 0xFFFFFF; mlx4_slave_cap: num_eqs"},
	{"func_cap.reserved_eq", mlx4.QUERY_FUNC_CAP, 0, mlx4.QUERY_FUNC_CAP_RESERVED_EQ_OFFSET, 4, 0xffffffff, 0,
		"fw.c: func_cap->reserved_eq; mlx4_slave_cap: reserved_eqs (above num_eqs: no EQ left)"},
	{"func_cap.qp_quota", mlx4.QUERY_FUNC_CAP, 0, mlx4.QUERY_FUNC_CAP_QP_QUOTA_OFFSET, 4, 0xffffff, 0,
		"fw.c: func_cap->qp_quota = field32 & 0xFFFFFF"},
	{"func_cap.cq_quota", mlx4.QUERY_FUNC_CAP, 0, mlx4.QUERY_FUNC_CAP_CQ_QUOTA_OFFSET, 4, 0xffffff, 0,
		"fw.c: func_cap->cq_quota"},
	{"func_cap.mpt_quota", mlx4.QUERY_FUNC_CAP, 0, mlx4.QUERY_FUNC_CAP_MPT_QUOTA_OFFSET, 4, 0xffffff, 0,
		"fw.c: func_cap->mpt_quota"},
	{"func_cap.mtt_quota", mlx4.QUERY_FUNC_CAP, 0, mlx4.QUERY_FUNC_CAP_MTT_QUOTA_OFFSET, 4, 0xffffff, 0,
		"fw.c: func_cap->mtt_quota"},
	{"func_cap.num_ports", mlx4.QUERY_FUNC_CAP, 0, mlx4.QUERY_FUNC_CAP_NUM_PORTS_OFFSET, 1, 0xff, 0,
		"fw.c: func_cap->num_ports; mlx4_slave_cap: \"HCA has %d ports, but we only support %d\""},
	{"dev_cap.log_max_qp", mlx4.QUERY_DEV_CAP, 0, mlx4.QUERY_DEV_CAP_MAX_QP_OFFSET, 1, mlx4.QUERY_DEV_CAP_MAX_QP_MASK, 0,
		"fw.c mlx4_QUERY_DEV_CAP: max_qps = 1 << (field & 0x1f)"},
	{"dev_cap.log_max_cq", mlx4.QUERY_DEV_CAP, 0, mlx4.QUERY_DEV_CAP_MAX_CQ_OFFSET, 1, mlx4.QUERY_DEV_CAP_MAX_CQ_MASK, 0,
		"fw.c: max_cqs = 1 << (field & 0x1f)"},
	{"dev_cap.log_max_eq", mlx4.QUERY_DEV_CAP, 0, mlx4.QUERY_DEV_CAP_MAX_EQ_OFFSET, 1, mlx4.QUERY_DEV_CAP_MAX_EQ_MASK, 0,
		"fw.c: max_eqs = 1 << (field & 0xf)"},
	{"dev_cap.log_max_mpt", mlx4.QUERY_DEV_CAP, 0, mlx4.QUERY_DEV_CAP_MAX_MPT_OFFSET, 1, mlx4.QUERY_DEV_CAP_MAX_MPT_MASK, 0,
		"fw.c: max_mpts = 1 << (field & 0x3f)"},
	{"dev_cap.uar_size", mlx4.QUERY_DEV_CAP, 0, mlx4.QUERY_DEV_CAP_UAR_SZ_OFFSET, 1, 0x3f, 0,
		"fw.c: uar_size = 1 << ((field & 0x3f) + 20); mlx4_slave_cap/mlx4_dev_cap: \"HCA reported UAR size of 0x%x bigger than PCI resource 2 size\""},
	{"dev_cap.log_page_size", mlx4.QUERY_DEV_CAP, 0, mlx4.QUERY_DEV_CAP_PAGE_SZ_OFFSET, 1, 0xff, 0,
		"fw.c: min_page_sz = 1 << field; main.c: \"HCA minimum page size of %d bigger than kernel PAGE_SIZE of %ld, aborting\""},
	{"dev_cap.max_gid", mlx4.QUERY_DEV_CAP, 0, mlx4.QUERY_DEV_CAP_MAX_GID_OFFSET, 1, 0x0f, 0,
		"fw.c: max_gids = 1 << (field & 0xf)"},
	{"dev_cap.max_pkey", mlx4.QUERY_DEV_CAP, 0, mlx4.QUERY_DEV_CAP_MAX_PKEY_OFFSET, 1, 0x0f, 0,
		"fw.c: max_pkeys = 1 << (field & 0xf)"},
	{"port.ib_mtu", mlx4.QUERY_PORT, 0, mlx4.QUERY_PORT_MTU_OFFSET, 1, 0x0f, 0,
		"fw.c mlx4_QUERY_PORT: ib_mtu = field & 0xf (IB_MTU_256..4096 are 1..5)"},
	{"port.max_gid", mlx4.QUERY_PORT, 0, mlx4.QUERY_PORT_MAX_GID_PKEY_OFFSET, 1, 0x0f, 4,
		"fw.c: max_gids = 1 << (field >> 4)"},
	{"port.max_pkey", mlx4.QUERY_PORT, 0, mlx4.QUERY_PORT_MAX_GID_PKEY_OFFSET, 1, 0x0f, 0,
		"fw.c: max_pkeys = 1 << (field & 0xf)"},
	{"port.gid_table_len", mlx4.QUERY_PORT, 0, mlx4.QUERY_PORT_CUR_MAX_GID_OFFSET, 2, 0xffff, 0,
		"fw.c mlx4_QUERY_PORT_wrapper / mlx4_get_slave_num_gids: the VF's GID table length (gid_table_len)"},
	{"port.pkey_table_len", mlx4.QUERY_PORT, 0, mlx4.QUERY_PORT_CUR_MAX_PKEY_OFFSET, 2, 0xffff, 0,
		"fw.c: the VF's P_Key table length (pkey_table_len)"},
	{"port.max_vl", mlx4.QUERY_PORT, 0, mlx4.QUERY_PORT_MAX_VL_OFFSET, 1, 0x0f, 0,
		"fw.c mlx4_QUERY_PORT: max_vl = field & 0xf"},
}

// Fields lists the outbox fields outbox_field can set.
func Fields() []Field { return append([]Field(nil), fields...) }

// FieldNames lists their names, sorted.
func FieldNames() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	sort.Strings(out)
	return out
}

// FieldByName finds a field.
func FieldByName(n string) (Field, bool) {
	for _, f := range fields {
		if f.Name == n {
			return f, true
		}
	}
	return Field{}, false
}
