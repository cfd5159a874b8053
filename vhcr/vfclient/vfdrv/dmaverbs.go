//go:build amd64

package vfdrv

import "encoding/binary"

// The verbs' accesses to memory the PF reads or writes by DMA while the VF
// runs (work queues, CQ rings, doorbell records, message buffers): plain
// stores and loads, hidden from the race detector as loadEQE is (it cannot
// know the owner-bit protocol). On amd64 stores are not reordered with
// older stores, so a WQE body copied before its owner word is visible
// before it (libmlx4's udma_to_device_barrier), and loads are not
// reordered with older loads (the CQE owner byte first, then its body:
// udma_from_device_barrier).

// dmaPut32 stores v big-endian at b[0:4] with one 32-bit store.
//
//go:norace
//go:noinline
func dmaPut32(b []byte, v uint32) { binary.BigEndian.PutUint32(b, v) }

// dmaGet32 loads b[0:4] big-endian with one 32-bit load.
//
//go:norace
//go:noinline
func dmaGet32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// dmaByte loads b[i].
//
//go:norace
//go:noinline
func dmaByte(b []byte, i int) byte { return b[i] }
