package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// ptysInbox builds ACCESS_REG's inbox as mlx4_ACCESS_REG does for
// mlx4_ACCESS_PTYS_REG: the operation TLV header, then struct mlx4_ptys_reg
// with local_port and proto_mask set.
func ptysInbox(method uint8, id uint16, port, proto uint8) []byte {
	b := make([]byte, mlx4.MailboxSize)
	binary.BigEndian.PutUint16(b[mlx4.AccessRegConstant1:], 0x1<<11|0x4)
	b[mlx4.AccessRegConstant2] = 0x1
	binary.BigEndian.PutUint16(b[mlx4.AccessRegRegID:], id)
	b[mlx4.AccessRegMethod] = method
	binary.BigEndian.PutUint16(b[mlx4.AccessRegLenConst:], (mlx4.PTYSRegSize/4+1)&0x7ff|0x3<<12)
	b[mlx4.ACCESS_REG_HEADER_SIZE+mlx4.PTYSLocalPort] = port
	b[mlx4.ACCESS_REG_HEADER_SIZE+mlx4.PTYSProtoMask] = proto
	return b
}

type ptysReply struct {
	status                      uint8
	port, proto                 uint8
	ethCap, ethAdmin, ethOper   uint32
	widthCap, widthAdm, widthOp uint16
	speedCap, speedAdm, speedOp uint16
}

func (v *vf) accessReg(t *testing.T, in []byte) (mlx4.Status, *Cmd, ptysReply) {
	t.Helper()
	c := v.cmd(mlx4.ACCESS_REG, 0, 0, 0, in, true)
	s := v.run(c)
	st, p := mlx4.DecodeAccessRegPTYS(c.Outbox)
	return s, c, ptysReply{
		status: st, port: p.LocalPort, proto: p.ProtoMask,
		ethCap: p.EthProtoCap, ethAdmin: p.EthProtoAdmin, ethOper: p.EthProtoOper,
		widthCap: p.IBWidthCap, widthAdm: p.IBWidthAdmin, widthOp: p.IBWidthOper,
		speedCap: p.IBSpeedCap, speedAdm: p.IBSpeedAdmin, speedOp: p.IBSpeedOper,
	}
}

// TestAccessRegPTYS: a VF's PTYS query is answered for the physical port
// behind its own port number, from the same link PortInfo reports.
func TestAccessRegPTYS(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(1)
	r.h.Funcs[1].Ports = []int{2} // VF 1's port 1 is physical port 2

	s, c, got := v.accessReg(t, ptysInbox(mlx4.ACCESS_REG_QUERY, mlx4.REG_ID_PTYS, 1, mlx4.PTYS_IB))
	if s != mlx4.OK || got.status != mlx4.RegStatusOK {
		t.Fatalf("PTYS query: %v, register status %#x", s, got.status)
	}
	// Without a MAD engine: 1X|4X supported, 4X active; SDR|DDR|QDR, QDR.
	want := ptysReply{port: 2, proto: mlx4.PTYS_IB, widthCap: 0x5, widthAdm: 0x5, widthOp: 0x4, speedCap: 0x7, speedAdm: 0x7, speedOp: 0x4}
	if got != want {
		t.Fatalf("mlx4.PTYS reply\n got %+v\nwant %+v", got, want)
	}
	if id := binary.BigEndian.Uint16(c.Outbox[mlx4.AccessRegRegID:]); id != mlx4.REG_ID_PTYS || c.Outbox[mlx4.AccessRegMethod] != mlx4.ACCESS_REG_QUERY {
		t.Fatalf("outbox header: id %#x method %d", id, c.Outbox[mlx4.AccessRegMethod])
	}

	// With the MAD engine attached, PTYS follows its PortInfo.
	e, err := mad.New(MADNode(r.h.Cfg), mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.h.AttachMAD(e); err != nil {
		t.Fatal(err)
	}
	pi, _ := e.PortInfo(2)
	_, _, got = v.accessReg(t, ptysInbox(mlx4.ACCESS_REG_QUERY, mlx4.REG_ID_PTYS, 1, mlx4.PTYS_IB))
	if got.widthOp != ptysWidth(pi.LinkWidthActive) || got.speedOp != ptysSpeed(pi.LinkSpeedActive, pi.LinkSpeedExtActive) {
		t.Fatalf("mlx4.PTYS %+v does not follow PortInfo width %#x speed %#x", got, pi.LinkWidthActive, pi.LinkSpeedActive)
	}

	// A VF whose link is forced down has no operational width or speed.
	r.h.Funcs[1].LinkState = "down"
	if _, _, got = v.accessReg(t, ptysInbox(mlx4.ACCESS_REG_QUERY, mlx4.REG_ID_PTYS, 1, mlx4.PTYS_IB)); got.widthOp != 0 || got.speedOp != 0 || got.widthCap == 0 {
		t.Fatalf("link down: %+v", got)
	}
}

func TestAccessRegPTYSEthernet(t *testing.T) {
	r := newRig(t, 1, func(c *config.Config) { c.Ports[0].LinkLayer = "eth" })
	_, _, got := r.vf(0).accessReg(t, ptysInbox(mlx4.ACCESS_REG_QUERY, mlx4.REG_ID_PTYS, 1, mlx4.PTYS_EN))
	want := ptysReply{port: 1, proto: mlx4.PTYS_EN, ethCap: 1<<6 | 1<<12, ethAdmin: 1<<6 | 1<<12, ethOper: 1 << 6}
	if got.status != mlx4.RegStatusOK || got.ethCap != want.ethCap || got.ethAdmin != want.ethAdmin || got.proto != want.proto {
		t.Fatalf("Ethernet PTYS %+v", got)
	}
	if (r.h.Cfg.Ports[0].State == "active") != (got.ethOper == want.ethOper) {
		t.Fatalf("Ethernet mlx4.PTYS oper %#x with port state %q", got.ethOper, r.h.Cfg.Ports[0].State)
	}
}

// TestAccessRegRefusals: a VF may not write registers (EPERM, as
// mlx4_ACCESS_REG_wrapper); everything the firmware would not do is its
// register access status, with the command itself OK.
func TestAccessRegRefusals(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(0)
	s, c, _ := v.accessReg(t, ptysInbox(mlx4.ACCESS_REG_WRITE, mlx4.REG_ID_PTYS, 1, mlx4.PTYS_IB))
	if s != mlx4.BAD_OP || c.Reason != refusal.Privileged {
		t.Fatalf("mlx4.PTYS write: %v (%v), want BAD_OP", s, c.Reason)
	}
	if c.Outbox[mlx4.AccessRegRegID] != 0 || c.Outbox[mlx4.AccessRegRegID+1] != 0 {
		t.Fatal("a refused write wrote the outbox")
	}
	bad := func(edit func(b []byte)) []byte {
		b := ptysInbox(mlx4.ACCESS_REG_QUERY, mlx4.REG_ID_PTYS, 1, mlx4.PTYS_IB)
		edit(b)
		return b
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want uint8
	}{
		{"unknown register", ptysInbox(mlx4.ACCESS_REG_QUERY, 0x5003, 1, 0), mlx4.RegStatusNotSupported},
		{"method 3", ptysInbox(3, mlx4.REG_ID_PTYS, 1, mlx4.PTYS_IB), mlx4.RegStatusMethodNotSupported},
		{"class 2", bad(func(b []byte) { b[mlx4.AccessRegConstant2] = 2 }), mlx4.RegStatusClassNotSupported},
		{"not an operation TLV", bad(func(b []byte) { binary.BigEndian.PutUint16(b[mlx4.AccessRegConstant1:], 0x3<<11|0x4) }), mlx4.RegStatusBadParameter},
		{"TLV length", bad(func(b []byte) { binary.BigEndian.PutUint16(b[mlx4.AccessRegConstant1:], 0x1<<11|0x5) }), mlx4.RegStatusBadParameter},
		{"port 0", ptysInbox(mlx4.ACCESS_REG_QUERY, mlx4.REG_ID_PTYS, 0, mlx4.PTYS_IB), mlx4.RegStatusBadParameter},
		{"port the VF does not have", ptysInbox(mlx4.ACCESS_REG_QUERY, mlx4.REG_ID_PTYS, 3, mlx4.PTYS_IB), mlx4.RegStatusBadParameter},
	} {
		s, c, got := v.accessReg(t, tc.in)
		if s != mlx4.OK || got.status != tc.want {
			t.Errorf("%s: %v, register status %#x, want OK and %#x", tc.name, s, got.status, tc.want)
		}
		if binary.BigEndian.Uint16(c.Outbox[mlx4.AccessRegRegID:]) != binary.BigEndian.Uint16(tc.in[mlx4.AccessRegRegID:]) {
			t.Errorf("%s: outbox header not the request's", tc.name)
		}
	}
}

func TestPTYSEncodings(t *testing.T) {
	for _, tc := range []struct {
		width uint8
		want  uint16
	}{{0x1, 0x1}, {0x2, 0x4}, {0x3, 0x5}, {0x4, 0x8}, {0x8, 0x10}, {0x10, 0x2}, {0x1f, 0x1f}} {
		if got := ptysWidth(tc.width); got != tc.want {
			t.Errorf("PortInfo width %#x: mlx4.PTYS %#x, want %#x", tc.width, got, tc.want)
		}
	}
	if got := ptysSpeed(0x7, 0x3); got != 0x37 {
		t.Errorf("SDR|DDR|QDR + FDR|EDR: %#x", got)
	}
}

// FuzzAccessReg: any inbox gets BAD_OP (a write) or OK with a register
// access status from the documented set; a PTYS answer names one of the
// VF's physical ports; the other VF is never touched.
func FuzzAccessReg(f *testing.F) {
	f.Add(ptysInbox(mlx4.ACCESS_REG_QUERY, mlx4.REG_ID_PTYS, 1, mlx4.PTYS_IB))
	f.Add(ptysInbox(mlx4.ACCESS_REG_WRITE, mlx4.REG_ID_PTYS, 2, mlx4.PTYS_EN))
	f.Add(ptysInbox(mlx4.ACCESS_REG_QUERY, 0x9001, 0, 0))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := newRig(t, 2, nil)
		v := r.vf(0)
		before := fingerprint(r.h, 1)
		c := v.cmd(mlx4.ACCESS_REG, 0, 0, 0, in, true)
		s := v.run(c)
		method := c.Inbox[mlx4.AccessRegMethod] & 0x7f
		switch {
		case method == mlx4.ACCESS_REG_WRITE:
			if s != mlx4.BAD_OP {
				t.Fatalf("write: %v", s)
			}
		case s != mlx4.OK:
			t.Fatalf("status %v", s)
		}
		if s == mlx4.OK {
			st := c.Outbox[mlx4.AccessRegStatus] & 0x7f
			switch st {
			case mlx4.RegStatusOK:
				phys := int(c.Outbox[mlx4.ACCESS_REG_HEADER_SIZE+mlx4.PTYSLocalPort])
				found := false
				for _, p := range r.h.Funcs[0].Ports {
					found = found || p == phys
				}
				if !found {
					t.Fatalf("mlx4.PTYS answered for port %d", phys)
				}
			case mlx4.RegStatusNotSupported, mlx4.RegStatusClassNotSupported, mlx4.RegStatusMethodNotSupported, mlx4.RegStatusBadParameter:
			default:
				t.Fatalf("register status %#x", st)
			}
		}
		if fingerprint(r.h, 1) != before {
			t.Fatal("VF 1 changed")
		}
	})
}

// TestPTYSCodec: the exported encoder builds what mlx4_ACCESS_PTYS_REG
// builds (the test's own builder), and the decoder reads the executor's
// answer.
func TestPTYSCodec(t *testing.T) {
	var in [mlx4.MailboxSize]byte
	for i := range in {
		in[i] = 0xee // the encoder clears the header and the register
	}
	mlx4.EncodeAccessRegPTYS(&in, mlx4.ACCESS_REG_QUERY, 2, mlx4.PTYS_IB)
	want := ptysInbox(mlx4.ACCESS_REG_QUERY, mlx4.REG_ID_PTYS, 2, mlx4.PTYS_IB)
	if string(in[:mlx4.ACCESS_REG_HEADER_SIZE+mlx4.PTYSRegSize]) != string(want[:mlx4.ACCESS_REG_HEADER_SIZE+mlx4.PTYSRegSize]) {
		t.Fatalf("encoded % x\n   want % x", in[:mlx4.ACCESS_REG_HEADER_SIZE+mlx4.PTYSRegSize], want[:mlx4.ACCESS_REG_HEADER_SIZE+mlx4.PTYSRegSize])
	}
	r := newRig(t, 1, nil)
	c := r.vf(0).cmd(mlx4.ACCESS_REG, 0, 0, 0, in[:], true)
	if s := r.vf(0).run(c); s != mlx4.OK {
		t.Fatal(s)
	}
	st, p := mlx4.DecodeAccessRegPTYS(c.Outbox)
	if st != mlx4.RegStatusOK || p.LocalPort != 2 || p.ProtoMask != mlx4.PTYS_IB || p.IBWidthOper != 0x4 || p.IBSpeedOper != 0x4 || p.IBSpeedCap != 0x7 {
		t.Fatalf("decoded status %#x %+v", st, p)
	}
}
