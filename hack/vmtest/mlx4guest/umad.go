package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/hack/vmtest"
	"github.com/vhcrd/vhcrd/mad"
)

// A Baseboard Management manager's MADs from the guest, through the
// kernel's MAD layer as any umad client sends them (ib_umad's write() and
// read(), include/uapi/rdma/ib_user_mad.h), on mlx4_0 port 1's QP1, with a
// GRH: mlx4_ib sends them through its proxy QP1 into the PF's tunnel. No
// Debian tool speaks BM (infiniband-diags has none), so this is the
// client; the MAD layer and the driver under it are the guest's own.

const (
	umadDev = "/dev/infiniband/umad0" // mlx4_0 port 1: the guest's only umad port
	// umadHdrSize is struct ib_user_mad_hdr with IB_USER_MAD_ENABLE_PKEY:
	// id, status, timeout_ms, retries, length, qpn, qkey, lid, sl,
	// path_bits, grh_present, gid_index, hop_limit, traffic_class, gid,
	// flow_label, pkey_index, reserved[6].
	umadHdrSize = 64
	// umadTimeoutMS is the MAD layer's response timeout per send and per
	// resend (call's retries).
	umadTimeoutMS = 1000
)

// umadPort is one agent on a umad device.
type umadPort struct {
	f     *os.File
	agent uint32
	tid   uint32
}

func openUMAD(class, version uint8) (*umadPort, error) {
	f, err := os.OpenFile(umadDev, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if err := umadEnablePKey(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("IB_USER_MAD_ENABLE_PKEY: %w", err)
	}
	id, err := umadRegister(f, 1, class, version)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("IB_USER_MAD_REGISTER_AGENT class %#x: %w", class, err)
	}
	return &umadPort{f: f, agent: id}, nil
}

// call sends m to dlid's QP1 with a GRH to dgid, with the port's P_Key
// of (virtual) index pkeyIndex, and returns what the MAD layer gives back
// for it: the response, or the send's status (ETIMEDOUT: no response in
// umadTimeoutMS to the send or any of its retries resends).
func (u *umadPort) call(dlid uint16, dgid [16]byte, pkeyIndex uint16, retries uint32, m *mad.MAD) (resp mad.MAD, status uint32, err error) {
	u.tid++
	binary.BigEndian.PutUint64(m[8:], uint64(u.tid))
	var b [umadHdrSize + mad.Size]byte
	binary.LittleEndian.PutUint32(b[0:], u.agent)
	binary.LittleEndian.PutUint32(b[8:], umadTimeoutMS)
	binary.LittleEndian.PutUint32(b[12:], retries)
	binary.BigEndian.PutUint32(b[20:], 1) // qpn
	binary.BigEndian.PutUint32(b[24:], mad.QP1QKey)
	binary.BigEndian.PutUint16(b[28:], dlid)
	b[32], b[33], b[34] = 1, 0, 64 // grh_present, gid_index 0 (the port's own GID), hop_limit
	copy(b[36:52], dgid[:])
	binary.LittleEndian.PutUint16(b[56:], pkeyIndex)
	copy(b[umadHdrSize:], m[:])
	if _, err := u.f.Write(b[:]); err != nil {
		return resp, 0, fmt.Errorf("write: %w", err)
	}
	end := time.Now().Add(time.Duration(retries+1)*umadTimeoutMS*time.Millisecond + 5*time.Second)
	for time.Now().Before(end) {
		fds := []unix.PollFd{{Fd: int32(u.f.Fd()), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 1000); err != nil && !errors.Is(err, unix.EINTR) {
			return resp, 0, fmt.Errorf("poll: %w", err)
		} else if n == 0 {
			continue
		}
		var r [umadHdrSize + mad.Size]byte
		if _, err := u.f.Read(r[:]); err != nil {
			return resp, 0, fmt.Errorf("read: %w", err)
		}
		copy(resp[:], r[umadHdrSize:])
		if uint32(resp.TID()) != u.tid {
			continue // not this call's
		}
		return resp, binary.LittleEndian.Uint32(r[4:]), nil
	}
	return resp, 0, errors.New("the MAD layer reported nothing")
}

// bmRun is vmtest.BMRun: the trap address set with the right B_Key, then a
// Set with a wrong one and a Get on an invalid P_Key index, which must go
// unanswered.
func (g *guest) bmRun(b *vmtest.BMRun) {
	err := bmExchange(b)
	if err != nil {
		say("bm: failed: %v", err)
		return
	}
	say("bm: ok")
}

func bmExchange(b *vmtest.BMRun) error {
	line := func(f string, a ...any) { say("bm| "+f, a...) }
	u, err := openUMAD(mad.ClassBM, 1)
	if err != nil {
		return err
	}
	defer u.f.Close()
	gid, err := portGID(1)
	if err != nil {
		return err
	}
	line("umad agent %d on %s, source GID %s (the VF's), to LID %d", u.agent, umadDev, netip.AddrFrom16(gid), b.DLID)
	cpi := mad.ClassPortInfo{TrapLID: b.TrapLID, TrapPKey: mad.DefaultPKey, TrapHL: 64, TrapQP: 1, TrapQKey: mad.QP1QKey}
	m := bmMAD(mad.MethodSet, mad.AttrClassPortInfo, b.BKey)
	_ = cpi.Encode(m.GSData())
	resp, st, err := u.call(b.DLID, gid, 0, 0, m)
	if err != nil {
		return fmt.Errorf("Set(ClassPortInfo): %w", err)
	}
	var got mad.ClassPortInfo
	_ = got.Decode(resp.GSData())
	line("Set(ClassPortInfo) B_Key %#x: send status %d, response method %#x status %#x, TrapLID %d TrapQP %d", b.BKey, st, resp.Method(), resp.Status(), got.TrapLID, got.TrapQP)
	if st != 0 || resp.Method() != mad.MethodGetResp || resp.Status() != 0 || got.TrapLID != b.TrapLID {
		return errors.New("Set(ClassPortInfo) with the port's B_Key not answered as set")
	}
	m = bmMAD(mad.MethodSet, mad.AttrBKeyInfo, b.WrongBKey)
	resp, st, err = u.call(b.DLID, gid, 0, 0, m)
	if err != nil {
		return fmt.Errorf("Set(BKeyInfo): %w", err)
	}
	line("Set(BKeyInfo) B_Key %#x: send status %d (%s), response method %#x", b.WrongBKey, st, unix.Errno(st), resp.Method())
	if st != uint32(unix.ETIMEDOUT) {
		return errors.New("a Set with a wrong B_Key was answered")
	}
	// A Get with the P_Key of an index the SM left invalid: the port
	// drops it (Bad P_Key, Trap 257 to the SM). Its MAD layer resends it
	// twice: the port paces its traps (one per 4.096 µs * 2^SubnetTimeOut,
	// about a second under OpenSM), and the Trap 259 above was the last.
	pk := readFile(fmt.Sprintf("%s/mlx4_0/ports/1/pkeys/%d", ibClass, b.BadPKeyIndex))
	m = bmMAD(mad.MethodGet, mad.AttrClassPortInfo, b.BKey)
	resp, st, err = u.call(b.DLID, gid, b.BadPKeyIndex, 2, m)
	if err != nil {
		return fmt.Errorf("Get(ClassPortInfo) on P_Key index %d: %w", b.BadPKeyIndex, err)
	}
	line("Get(ClassPortInfo) on P_Key index %d (P_Key %s): send status %d (%s)", b.BadPKeyIndex, pk, st, unix.Errno(st))
	if st != uint32(unix.ETIMEDOUT) {
		return errors.New("a MAD with an invalid P_Key was answered")
	}
	return nil
}

// bmMAD is a BM MAD with B_Key bkey (bytes 24..31, IBA 16.4.1).
func bmMAD(method uint8, attr uint16, bkey uint64) *mad.MAD {
	m := new(mad.MAD)
	m[0], m[1], m[2], m[3] = 1, mad.ClassBM, 1, method
	binary.BigEndian.PutUint16(m[16:], attr)
	binary.BigEndian.PutUint64(m[24:], bkey)
	return m
}

// portGID is mlx4_0 port's GID index 0 as sysfs shows it.
func portGID(port int) ([16]byte, error) {
	s := readFile(fmt.Sprintf("%s/mlx4_0/ports/%d/gids/0", ibClass, port))
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return [16]byte{}, fmt.Errorf("port %d GID 0 %q: %w", port, s, err)
	}
	return a.As16(), nil
}
