// Package sdnotify is a fake service manager for tests: it speaks
// systemd's side of sd_notify (an abstract NOTIFY_SOCKET datagram socket
// with SO_PASSCRED, messages accepted only from the service's main process),
// keeps a file-descriptor store as systemd keeps it (FDSTORE=1 with FDNAME=
// adds, FDSTOREREMOVE=1 removes a name's descriptors) and starts the service
// with the store passed as LISTEN_FDS, LISTEN_FDNAMES and LISTEN_PID. It is
// shared by cmd/vhcrd's tests and the VM tier (hack/vmtest).
package sdnotify
