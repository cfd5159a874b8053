package main

import (
	"encoding/binary"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// umadRegisterAgent is IB_USER_MAD_REGISTER_AGENT, _IOWR(0x1b, 0x01,
// struct ib_user_mad_reg_req) (include/uapi/rdma/rdma_user_ioctl.h); the
// request is 28 bytes on 64-bit: id, method_mask (two 8-byte longs, 4-byte
// aligned), qpn, mgmt_class, mgmt_class_version, oui[3], rmpp_version.
const (
	umadRegisterAgent = 0xC0000000 | umadRegReqSize<<16 | 0x1b<<8 | 0x01
	umadRegReqSize    = 28
	umadEnablePKeyCmd = 0x1b<<8 | 0x03 // IB_USER_MAD_ENABLE_PKEY, _IO(0x1b, 0x03)
)

// umadEnablePKey switches f to struct ib_user_mad_hdr, with pkey_index
// (before any agent is registered).
func umadEnablePKey(f *os.File) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), umadEnablePKeyCmd, 0); e != 0 {
		return e
	}
	return nil
}

// umadRegister registers an agent for class/version on QP qpn that takes no
// unsolicited MADs (method mask 0) and returns its id.
func umadRegister(f *os.File, qpn, class, version uint8) (uint32, error) {
	var req [umadRegReqSize]byte
	req[20], req[21], req[22] = qpn, class, version
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), umadRegisterAgent, uintptr(unsafe.Pointer(&req[0]))); e != 0 {
		return 0, e
	}
	return binary.LittleEndian.Uint32(req[0:]), nil
}
