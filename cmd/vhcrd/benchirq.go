package main

import (
	"github.com/vhcrd/vhcrd/vhcr/bench"
	"github.com/vhcrd/vhcrd/vhcr/bench/irqpf"
)

// bench-irq is the PF process of `vfctl bench`'s interrupt figures: vfctl,
// the VF side, links no HCA, so it starts this binary for the side that
// posts EQEs (bench.IRQPF over irqpf's software HCA).
func init() {
	register("bench-irq", "(internal) the PF process of vfctl bench's interrupt figures", func(a []string) error { return bench.IRQPF(a, irqpf.New) })
	hidden["bench-irq"] = true
}
