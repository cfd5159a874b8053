package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// ptysInbox builds ACCESS_REG's inbox as mlx4_ACCESS_REG does for
// mlx4_ACCESS_PTYS_REG: the operation TLV header, then struct mlx4_ptys_reg
// with local_port and proto_mask set.
func ptysInbox(method uint8, id uint16, port, proto uint8) []byte {
	b := make([]byte, mlx4.MailboxSize)
	binary.BigEndian.PutUint16(b[accessRegTLV:], 0x1<<11|0x4)
	b[accessRegClass] = 0x1
	binary.BigEndian.PutUint16(b[accessRegID:], id)
	b[accessRegMethod] = method
	binary.BigEndian.PutUint16(b[accessRegLen:], (ptysSize/4+1)&0x7ff|0x3<<12)
	b[accessRegData+ptysLocalPort] = port
	b[accessRegData+ptysProtoMask] = proto
	return b
}

type ptysReply struct {
	status                      uint8
	port, proto                 uint8
	ethCap, ethAdmin, ethOper   uint32
	widthCap, widthAdm, widthOp uint16
	speedCap, speedAdm, speedOp uint16
}

func (v *vf) accessReg(t *testing.T, in []byte) (mlx4.Status, *mlx4.Cmd, ptysReply) {
	t.Helper()
	c := v.cmd(mlx4.ACCESS_REG, 0, 0, 0, in, true)
	s := v.run((*HCA).ACCESS_REG, c)
	o, r := c.Outbox[:], c.Outbox[accessRegData:]
	return s, c, ptysReply{
		status: o[accessRegStatus] & 0x7f, port: r[ptysLocalPort], proto: r[ptysProtoMask],
		ethCap: binary.BigEndian.Uint32(r[ptysEthProtoCap:]), ethAdmin: binary.BigEndian.Uint32(r[ptysEthProtoAdm:]),
		ethOper:  binary.BigEndian.Uint32(r[ptysEthProtoOper:]),
		widthCap: binary.BigEndian.Uint16(r[ptysIBWidthCap:]), widthAdm: binary.BigEndian.Uint16(r[ptysIBWidthAdm:]),
		widthOp:  binary.BigEndian.Uint16(r[ptysIBWidthOper:]),
		speedCap: binary.BigEndian.Uint16(r[ptysIBSpeedCap:]), speedAdm: binary.BigEndian.Uint16(r[ptysIBSpeedAdm:]),
		speedOp: binary.BigEndian.Uint16(r[ptysIBSpeedOper:]),
	}
}

// TestAccessRegPTYS: a VF's PTYS query is answered for the physical port
// behind its own port number, from the same link PortInfo reports.
func TestAccessRegPTYS(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(1)
	r.h.Funcs[1].Ports = []int{2} // VF 1's port 1 is physical port 2

	s, c, got := v.accessReg(t, ptysInbox(AccessRegQuery, RegIDPTYS, 1, ptysProtoIB))
	if s != mlx4.OK || got.status != RegStatusOK {
		t.Fatalf("PTYS query: %v, register status %#x", s, got.status)
	}
	// Without a MAD engine: 1X|4X supported, 4X active; SDR|DDR|QDR, QDR.
	want := ptysReply{port: 2, proto: ptysProtoIB, widthCap: 0x5, widthAdm: 0x5, widthOp: 0x4, speedCap: 0x7, speedAdm: 0x7, speedOp: 0x4}
	if got != want {
		t.Fatalf("PTYS reply\n got %+v\nwant %+v", got, want)
	}
	if id := binary.BigEndian.Uint16(c.Outbox[accessRegID:]); id != RegIDPTYS || c.Outbox[accessRegMethod] != AccessRegQuery {
		t.Fatalf("outbox header: id %#x method %d", id, c.Outbox[accessRegMethod])
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
	_, _, got = v.accessReg(t, ptysInbox(AccessRegQuery, RegIDPTYS, 1, ptysProtoIB))
	if got.widthOp != ptysWidth(pi.LinkWidthActive) || got.speedOp != ptysSpeed(pi.LinkSpeedActive, pi.LinkSpeedExtActive) {
		t.Fatalf("PTYS %+v does not follow PortInfo width %#x speed %#x", got, pi.LinkWidthActive, pi.LinkSpeedActive)
	}

	// A VF whose link is forced down has no operational width or speed.
	r.h.Funcs[1].LinkState = "down"
	if _, _, got = v.accessReg(t, ptysInbox(AccessRegQuery, RegIDPTYS, 1, ptysProtoIB)); got.widthOp != 0 || got.speedOp != 0 || got.widthCap == 0 {
		t.Fatalf("link down: %+v", got)
	}
}

func TestAccessRegPTYSEthernet(t *testing.T) {
	r := newRig(t, 1, func(c *config.Config) { c.Ports[0].LinkLayer = "eth" })
	_, _, got := r.vf(0).accessReg(t, ptysInbox(AccessRegQuery, RegIDPTYS, 1, ptysProtoEN))
	want := ptysReply{port: 1, proto: ptysProtoEN, ethCap: 1<<6 | 1<<12, ethAdmin: 1<<6 | 1<<12, ethOper: 1 << 6}
	if got.status != RegStatusOK || got.ethCap != want.ethCap || got.ethAdmin != want.ethAdmin || got.proto != want.proto {
		t.Fatalf("Ethernet PTYS %+v", got)
	}
	if (r.h.Cfg.Ports[0].State == "active") != (got.ethOper == want.ethOper) {
		t.Fatalf("Ethernet PTYS oper %#x with port state %q", got.ethOper, r.h.Cfg.Ports[0].State)
	}
}

// TestAccessRegRefusals: a VF may not write registers (EPERM, as
// mlx4_ACCESS_REG_wrapper); everything the firmware would not do is its
// register access status, with the command itself OK.
func TestAccessRegRefusals(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(0)
	s, c, _ := v.accessReg(t, ptysInbox(AccessRegWrite, RegIDPTYS, 1, ptysProtoIB))
	if s != mlx4.BAD_OP || c.Reason != mlx4.ReasonPrivileged {
		t.Fatalf("PTYS write: %v (%v), want BAD_OP", s, c.Reason)
	}
	if c.Outbox[accessRegID] != 0 || c.Outbox[accessRegID+1] != 0 {
		t.Fatal("a refused write wrote the outbox")
	}
	bad := func(edit func(b []byte)) []byte {
		b := ptysInbox(AccessRegQuery, RegIDPTYS, 1, ptysProtoIB)
		edit(b)
		return b
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want uint8
	}{
		{"unknown register", ptysInbox(AccessRegQuery, 0x5003, 1, 0), RegStatusNotSupported},
		{"method 3", ptysInbox(3, RegIDPTYS, 1, ptysProtoIB), RegStatusMethodNotSupported},
		{"class 2", bad(func(b []byte) { b[accessRegClass] = 2 }), RegStatusClassNotSupported},
		{"not an operation TLV", bad(func(b []byte) { binary.BigEndian.PutUint16(b[accessRegTLV:], 0x3<<11|0x4) }), RegStatusBadParameter},
		{"TLV length", bad(func(b []byte) { binary.BigEndian.PutUint16(b[accessRegTLV:], 0x1<<11|0x5) }), RegStatusBadParameter},
		{"port 0", ptysInbox(AccessRegQuery, RegIDPTYS, 0, ptysProtoIB), RegStatusBadParameter},
		{"port the VF does not have", ptysInbox(AccessRegQuery, RegIDPTYS, 3, ptysProtoIB), RegStatusBadParameter},
	} {
		s, c, got := v.accessReg(t, tc.in)
		if s != mlx4.OK || got.status != tc.want {
			t.Errorf("%s: %v, register status %#x, want OK and %#x", tc.name, s, got.status, tc.want)
		}
		if binary.BigEndian.Uint16(c.Outbox[accessRegID:]) != binary.BigEndian.Uint16(tc.in[accessRegID:]) {
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
			t.Errorf("PortInfo width %#x: PTYS %#x, want %#x", tc.width, got, tc.want)
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
	f.Add(ptysInbox(AccessRegQuery, RegIDPTYS, 1, ptysProtoIB))
	f.Add(ptysInbox(AccessRegWrite, RegIDPTYS, 2, ptysProtoEN))
	f.Add(ptysInbox(AccessRegQuery, 0x9001, 0, 0))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := newRig(t, 2, nil)
		v := r.vf(0)
		before := fingerprint(r.h, 1)
		c := v.cmd(mlx4.ACCESS_REG, 0, 0, 0, in, true)
		s := v.run((*HCA).ACCESS_REG, c)
		method := c.Inbox[accessRegMethod] & 0x7f
		switch {
		case method == AccessRegWrite:
			if s != mlx4.BAD_OP {
				t.Fatalf("write: %v", s)
			}
		case s != mlx4.OK:
			t.Fatalf("status %v", s)
		}
		if s == mlx4.OK {
			st := c.Outbox[accessRegStatus] & 0x7f
			switch st {
			case RegStatusOK:
				phys := int(c.Outbox[accessRegData+ptysLocalPort])
				found := false
				for _, p := range r.h.Funcs[0].Ports {
					found = found || p == phys
				}
				if !found {
					t.Fatalf("PTYS answered for port %d", phys)
				}
			case RegStatusNotSupported, RegStatusClassNotSupported, RegStatusMethodNotSupported, RegStatusBadParameter:
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
	EncodeAccessRegPTYS(&in, AccessRegQuery, 2, ptysProtoIB)
	want := ptysInbox(AccessRegQuery, RegIDPTYS, 2, ptysProtoIB)
	if string(in[:accessRegData+ptysSize]) != string(want[:accessRegData+ptysSize]) {
		t.Fatalf("encoded % x\n   want % x", in[:accessRegData+ptysSize], want[:accessRegData+ptysSize])
	}
	r := newRig(t, 1, nil)
	c := r.vf(0).cmd(mlx4.ACCESS_REG, 0, 0, 0, in[:], true)
	if s := r.vf(0).run((*HCA).ACCESS_REG, c); s != mlx4.OK {
		t.Fatal(s)
	}
	st, p := DecodeAccessRegPTYS(c.Outbox)
	if st != RegStatusOK || p.LocalPort != 2 || p.ProtoMask != ptysProtoIB || p.IBWidthOper != 0x4 || p.IBSpeedOper != 0x4 || p.IBSpeedCap != 0x7 {
		t.Fatalf("decoded status %#x %+v", st, p)
	}
}
