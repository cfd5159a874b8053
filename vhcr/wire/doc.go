// Package wire is vhcrd's wire contract (v2) between the PF and the VFs
// that are not in mlx4's ABI: where the registers live in the regions a PF
// maps and a VF attaches to.
//
// Two kinds of region (Layout; docs/wire-contract.md's table):
//
//   - the control region (what --bar names): a PF-owned header page (magic,
//     version, number of VFs, flags, DMA geometry, PF state and generation,
//     the futex doorbell and the PF's sleeping word, the PF-private channel
//     records, whose words and bits are package vhcr/pfstate's);
//   - one VF BAR region per VF, laid out as mlx4's BAR2 of a VF: the comm
//     page of struct mlx4_comm at offset 0, the EQ doorbells in the UAR
//     pages, the driver's UAR beyond. The comm page's registers, the comm
//     commands and their bits are mlx4's (package vhcr/mlx4); this package
//     says where a region has them and how a word is put together
//     (CommWord, SplitCommWord).
//
// Both halves use it: the PF (package vhcr/master) writes the layout, the
// VF client (package vhcr/vfclient) reads it. It imports neither.
package wire
