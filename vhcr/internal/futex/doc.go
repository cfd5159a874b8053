// Package futex is the shared (not process-private) futex wait and wake the
// doorbell of the wire contract uses: the PF waits on the header's doorbell
// word, and a VF wakes it after ringing. x/sys/unix has no wrapper.
package futex
