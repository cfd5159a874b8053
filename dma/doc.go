// Package dma owns the VFs' DMA spaces: one IOVA window per VF over a mapped
// region, each VF with its own IOVA space starting at 0 (its IOMMU domain).
//
// A Window translates (iova, length) to an offset of the backing region with
// bounds and overflow checks and a permission check, and copies between the
// VF's memory and caller-provided buffers (CopyIn: the device reads guest
// memory; CopyOut: the device writes it). It never allocates and never keeps
// a reference to what it copied: the caller's buffer is the shadow.
//
// Mailbox is a checked 4 KiB page: aligned, inside the window, permitted;
// it is how the PF reaches a vHCR or a mailbox.
//
// Every address here comes from an untrusted VF. A failed check returns a
// wrapped sentinel (ErrOutOfWindow, ErrOverflow, ErrPermission,
// ErrUnaligned) and copies nothing.
package dma
