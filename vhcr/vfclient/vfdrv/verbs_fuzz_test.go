package vfdrv

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// FuzzVerbsPoll: whatever a PF writes into a CQ ring (any CQE bytes, any
// owner bits, QPNs the driver knows or not, any wqe_index), Poll takes at
// most the completions asked for and only software-owned CQEs in order,
// never panics, keeps every queue's tail inside its wrid table and writes
// set_ci as its consumer index.
//
// Input: the ring's bytes (8 CQEs of 32 bytes, cycled), then how many
// completions each Poll asks for.
func FuzzVerbsPoll(f *testing.F) {
	good := func(qpn uint32, send bool, idx uint16, owner bool) []byte {
		b := mlx4.EncodeCQE(mlx4.CQE{VlanMyQPN: qpn, IsSend: send, WQEIndex: idx, Owner: owner})
		return b[:]
	}
	var seed []byte
	seed = append(seed, good(0x48, true, 3, false)...)
	seed = append(seed, good(0x48, false, 0, false)...)
	seed = append(seed, good(0x99, true, 0xffff, false)...)
	seed = append(seed, good(0x48, true, 1, true)...)
	f.Add(seed, []byte{1, 4, 16})
	f.Add(make([]byte, 256), []byte{8, 8})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, []byte{3})
	f.Fuzz(func(t *testing.T, ring, asks []byte) {
		const nent = 8
		mem := make([]byte, nent*mlx4.CQESize+mlx4.CQDBRecSize)
		for i := 0; i < nent*mlx4.CQESize && len(ring) > 0; i++ {
			mem[i] = ring[i%len(ring)]
		}
		d := &Driver{mem: mem, qps: map[uint32]*VQP{}}
		qp := &VQP{QP: &QP{QPN: 0x48}, sq: sq{cnt: 4, wrid: make([]uint64, 4)}, rq: rq{cnt: 2, wrid: make([]uint64, 2)}}
		d.qps[0x48] = qp
		rec := uint64(nent * mlx4.CQESize)
		cq := &VCQ{CQ: &CQ{CQN: 1}, d: d, ring: mem[:rec], nent: nent, entry: mlx4.CQESize,
			setCI: mem[rec : rec+4], armDB: mem[rec+4 : rec+8]}
		var wc [16]WC
		for _, a := range asks {
			k := int(a) % (len(wc) + 1)
			before := cq.cons
			n := cq.Poll(wc[:k])
			if n < 0 || n > k || cq.cons != before+uint32(n) {
				t.Fatalf("Poll(%d) took %d, consumer %d → %d", k, n, before, cq.cons)
			}
			if n > 0 && dmaGet32(cq.setCI) != cq.cons&mlx4.CQDBCIMask {
				t.Fatalf("set_ci %d, consumer %d", dmaGet32(cq.setCI), cq.cons)
			}
			for i := range wc[:n] {
				if wc[i].QPN != 0x48 && wc[i].Status != WCGeneralErr {
					t.Fatalf("a completion for unknown QP %#x with status %v", wc[i].QPN, wc[i].Status)
				}
			}
		}
	})
}
