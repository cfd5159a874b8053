package main

import (
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ifreqHWAddr is struct ifreq with ifr_hwaddr (a struct sockaddr: family,
// then the address in sa_data), as SIOCSIFHWADDR takes it; 40 bytes on
// 64-bit, the union's size.
type ifreqHWAddr struct {
	name   [unix.IFNAMSIZ]byte
	family uint16
	data   [14]byte
	_      [8]byte
}

// setHWAddr sets dev's MAC (SIOCSIFHWADDR, what `ip link set DEV address`
// does): mlx4_en's ndo_set_mac_address moves its steering and its
// registration in the port's MAC table to the new address.
func setHWAddr(dev string, mac net.HardwareAddr) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var r ifreqHWAddr
	copy(r.name[:], dev)
	r.family = unix.ARPHRD_ETHER
	copy(r.data[:], mac)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCSIFHWADDR, uintptr(unsafe.Pointer(&r))); e != 0 {
		return fmt.Errorf("%s: SIOCSIFHWADDR %v: %w", dev, mac, e)
	}
	return nil
}
