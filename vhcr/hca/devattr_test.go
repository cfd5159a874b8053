package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestVFDeviceAttributesAsConnectX3: what `ibv_devinfo -v` shows in a
// guest comes from QUERY_DEV_CAP and QUERY_HCA, decoded as Linux 6.1 does
// for a VF: mlx4_QUERY_DEV_CAP (fw.c) reads max_srq_sz = 1 << MAX_SRQ_SZ,
// max_requester_per_qp = 1 << (MAX_REQ_QP & 0x3f), min_page_sz = 1 <<
// PAGE_SZ; mlx4_slave_cap (main.c) sets max_qp_dest_rdma = 1 <<
// (QUERY_HCA's log_rd_per_qp & 0x7); mlx4_ib_query_device reports
// max_srq_wr = max_srq_wqes - 1, max_qp_init_rd_atom =
// max_qp_init_rdma, max_qp_rd_atom = max_qp_dest_rdma and page_size_cap
// = ~(min_page_sz - 1). The values are a ConnectX-3's (firmware 2.42.5000)
// behind Linux's PF; the guest read 65535, 16, 1 and 0xfffff000 before.
func TestVFDeviceAttributesAsConnectX3(t *testing.T) {
	r := newRig(t, 1, nil)
	v := r.vf(0)
	dc := v.cmd(mlx4.QUERY_DEV_CAP, 0, 0, 0, nil, true)
	v.must(v.run(dc), "QUERY_DEV_CAP")
	hc := v.cmd(mlx4.QUERY_HCA, 0, 0, 0, nil, true)
	v.must(v.run(hc), "QUERY_HCA")
	o, h := dc.Outbox, hc.Outbox
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"max_srq_wr", 1<<o[mlx4.QUERY_DEV_CAP_MAX_SRQ_SZ_OFFSET] - 1, 16383},
		{"max_qp_init_rd_atom", 1 << (o[mlx4.QUERY_DEV_CAP_MAX_REQ_QP_OFFSET] & 0x3f), 128},
		{"max_qp_rd_atom", 1 << (h[mlx4.INIT_HCA_LOG_RD_OFFSET] & 0x7), 16},
		{"page_size_cap", uint64(^uint32(1<<o[mlx4.QUERY_DEV_CAP_PAGE_SZ_OFFSET] - 1)), 0xfffffe00},
		// Unchanged, checked with them: max_qp_wr = max_wqes - 33
		// (MLX4_IB_SQ_MAX_SPARE), max_cqe = max_cqes - 1.
		{"max_qp_wr", 1<<o[mlx4.QUERY_DEV_CAP_MAX_QP_SZ_OFFSET] - 33, 16351},
		{"max_cqe", 1<<o[mlx4.QUERY_DEV_CAP_MAX_CQ_SZ_OFFSET] - 1, 4194303},
	} {
		if c.got != c.want {
			t.Errorf("a VF's ibv_devinfo -v shows %s %d (%#x), want %d (%#x)", c.name, c.got, c.got, c.want, c.want)
		}
	}
}
