package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// A caller of Exec passing a command without the mailboxes its row
// promises, or a VF index the HCA does not have, gets a status, not a
// panic: Exec checks the row once for every executor.
func TestExecutorsSurviveMissingMailboxesAndBadVFs(t *testing.T) {
	r := newRig(t, 2, nil)
	r.h.SetDeviceManagedSteering(true)
	for _, in := range mlx4.CmdInfos() {
		for _, vfn := range []int{0, -1, 2, 1 << 20} {
			for opmod := uint8(0); opmod < 3; opmod++ {
				c := &Cmd{VF: vfn, Op: in.Op, OpMod: opmod, InMod: 1 << 8, Token: 1}
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Errorf("%v VF %d op_mod %d: panic %v", in.Op, vfn, opmod, p)
						}
					}()
					s := r.h.Exec(c)
					if s == mlx4.OK && (vfn != 0 || in.HasInbox || in.HasOutbox || in.EPERM) {
						t.Errorf("%v from VF %d without its mailboxes: OK", in.Op, vfn)
					}
				}()
			}
		}
	}
}
