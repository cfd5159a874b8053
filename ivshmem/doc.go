// Package ivshmem is the server side of QEMU's ivshmem client-server
// protocol (QEMU docs/specs/ivshmem-spec.rst, "The ivshmem Client-Server
// Protocol"), which an ivshmem-doorbell device uses to get its shared memory
// (mapped as BAR2) and its interrupt eventfds. vhcrd runs one Server per
// guest VF: the shared memory is the VF's BAR region, the eventfds are the
// VF's MSI-X vectors (package vhcr/irq), so that a vector the PF raises is
// an MSI-X interrupt in the guest.
//
// The protocol is one-way, server to client: messages of one little-endian
// int64, each with at most one file descriptor (SCM_RIGHTS). On connect the
// server sends the protocol version 0, the client's ID, -1 with the
// shared-memory fd, the connect notifications of the other clients (a
// vhcrd Server has none: the PF is no ivshmem peer), then the client's own
// ID once per vector, each with that vector's eventfd. The client never
// writes; the server learns of its end (QEMU killed or the device unplugged)
// as EOF on the socket.
//
// A Server serves one client at a time: a second client is refused (its
// connection closed at once, a log line) while the first is connected; one
// that connects while the first one's end is being handled (OnDisconnect,
// vhcrd's reset of the VF) is served after it.
//
// QEMU reads its setup once, at realize: it cannot be set up a second
// time on the same device. A server process that restarts therefore takes
// over the listening socket (ListenFD) and the connection (Adopt) its
// predecessor kept outside itself (systemd's file-descriptor store; OnClient
// and ControlListener hand them out): the client is served on without a
// new setup and never sees a disconnect.
//
// Client decodes the server's messages (SetupState is its state machine,
// fuzzed) for tests and for tools; it is what QEMU's ivshmem_recv_setup
// and process_msg accept.
package ivshmem
