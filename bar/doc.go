// Package bar owns mapped register windows: the memory behind a PCI BAR (a
// vfio-pci region, a sysfs resourceN file) or a file that stands in for one
// (tmpfs in CI), and a heap-backed Region for race-detected unit tests.
//
// A Region is a byte range with exact-width register access. Registers are
// 32-bit, big-endian and naturally aligned. Load32 is a single 32-bit load
// and Store32 a single 32-bit store; a store is a plain MOV on amd64, never a
// locked instruction (sync/atomic's StoreUint32 is XCHG, which device memory
// must not see). Offsets are checked: an unaligned or out-of-range access
// returns ErrUnaligned or ErrOutOfRange and touches nothing.
//
// The checked accessors return errors and are meant for setup and for code
// that is not hot. The poller uses Reg, a pre-checked handle to one register
// of a mapped Region, whose Load and Store cost one instruction each plus the
// byte swap. Regions that cannot be mapped (a vfio region without the mmap
// flag) still offer Load32/Store32/ReadAt/WriteAt, but NewReg and Bytes fail
// with ErrNotMapped: the hot loop needs a mapping and says so.
//
// Memory type and lifetime: a mapping is MAP_SHARED. Every Reg, every slice
// returned by Bytes and every Sub view is valid only until the Region that
// owns the mapping is closed; Sub views do not own their parent and closing
// them does nothing to it.
//
// Faults and ownership: a mapped file that another process truncates makes
// the next access past its new end fault (SIGBUS). Guard runs a function with
// such faults turned into a *FaultError (ErrFault) and Contains says which
// region and offset the address belongs to, so a poller can treat a shrunk
// region as a fault of what it backs instead of dying. Own claims a file
// exclusively (flock, released by the kernel when the process dies); a second
// claim fails with ErrOwned naming the holder's pid.
//
// bar knows nothing about what the registers mean; the comm channel lives in
// package vhcr.
package bar
