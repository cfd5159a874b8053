package irqpf

import (
	"encoding/binary"
	"fmt"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/bench"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/irq"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// source is a bench.IRQSource on the software HCA.
type source struct {
	h   *hca.HCA
	set *irq.Set
	eqe [mlx4.EQESize]byte
}

// New builds the HCA side of (e) over region: VF 0's EQ IRQEQN at
// IRQEQPage, armed (the context's state, as mlx4_create_eq), intr 0,
// mapped for command completions, its doorbell word read at IRQDB. It is a
// bench.NewIRQSource.
func New(region bar.Region) (bench.IRQSource, error) {
	h, err := hca.New(config.Default(), 1)
	if err != nil {
		return nil, err
	}
	sp, err := dma.NewSpace(region, 0, bench.IRQWindow, 1)
	if err != nil {
		return nil, err
	}
	w, err := sp.Window(0)
	if err != nil {
		return nil, err
	}
	if err := createEQ(h, w); err != nil {
		return nil, err
	}
	db, err := bar.NewReg(region, bench.IRQDB)
	if err != nil {
		return nil, err
	}
	h.SetDoorbellReader(func(vf, eqn int) (uint32, bool) { return db.Load(), vf == 0 && eqn == bench.IRQEQN })
	set, err := irq.NewSet(1, 2)
	if err != nil {
		return nil, err
	}
	h.SetInterrupts(set)
	return &source{h: h, set: set, eqe: hca.CompletionEQE(1, mlx4.OK, 0)}, nil
}

// createEQ runs, as VF 0 through w, the commands mlx4_create_eq and
// mlx4_MAP_EQ send: an MTT for the ring's page, SW2HW_EQ, MAP_EQ for
// command completions.
func createEQ(h *hca.HCA, w *dma.Window) error {
	run := func(c *hca.Cmd, what string) error {
		c.Mem, c.Token = w, mlx4.PollToken
		if s := h.Exec(c); s != mlx4.OK {
			return fmt.Errorf("%s: %v", what, s)
		}
		return nil
	}
	alloc := &hca.Cmd{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.MTT), OpMod: 1}
	if err := run(alloc, "ALLOC_RES MTT"); err != nil {
		return err
	}
	base := uint64(uint32(alloc.OutParam))
	var in [mlx4.MailboxSize]byte
	binary.BigEndian.PutUint64(in[0:], base)
	binary.BigEndian.PutUint64(in[16:], bench.IRQEQPage)
	if err := run(&hca.Cmd{Op: mlx4.WRITE_MTT, InMod: 1, Inbox: &in}, "WRITE_MTT"); err != nil {
		return err
	}
	var ctx [mlx4.MailboxSize]byte
	mlx4.EQContext{LogSize: bench.IRQLogEQ, MTTBase: base}.Encode(ctx[:])
	if err := run(&hca.Cmd{Op: mlx4.SW2HW_EQ, InMod: bench.IRQEQN, Inbox: &ctx}, "SW2HW_EQ"); err != nil {
		return err
	}
	return run(&hca.Cmd{Op: mlx4.MAP_EQ, InParam: 1 << mlx4.EventCmd, InMod: bench.IRQEQN}, "MAP_EQ")
}

func (s *source) PostEQE() error     { return s.h.PostEQE(0, mlx4.EventCmd, &s.eqe) }
func (s *source) Raise() error       { return s.set.Raise(0, 0) }
func (s *source) Interrupts() uint64 { return s.h.Stats(0).Interrupts.Load() }
func (s *source) Close() error       { return s.set.Close() }

// Vector is VF 0's vector 0.
func (s *source) Vector() int {
	fd, _ := s.set.VF(0).FD(0)
	return fd
}
