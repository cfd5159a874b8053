// Package tap opens Linux TAP devices (/dev/net/tun, IFF_TAP|IFF_NO_PI):
// an Ethernet interface whose frames a process reads and writes whole, one
// frame per read or write. The device can be made in another network
// namespace (a file under /run/netns, as `ip netns add` leaves it): the
// thread that opens it enters the namespace and leaves it again, and the
// descriptor stays bound to the device there. The device is persistent: a
// process killed leaves it, with the VLANs and addresses the host put on
// it, and the process's restart attaches to it again; Remove ends it.
//
// It is the eSwitch's uplink to the host (cmd/vhcrd: ports[].uplink.tap):
// what a port sends out of the device is written to the TAP, what the host
// sends into it is read and steered to the VFs.
package tap
