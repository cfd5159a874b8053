// Package irqpf is the PF side of vfctl bench's interrupt figures: the
// product's software HCA (hca.HCA) with VF 0's EQ created, armed and mapped
// for command completions over the benchmark's region, its MSI-X vector 0
// an eventfd. `vhcrd bench-irq` runs it through bench.IRQPF, so that
// vfctl, the VF side, starts the PF as a vhcrd process instead of linking
// the HCA and the tracker.
package irqpf
