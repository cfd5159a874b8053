package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
)

// The quotas QUERY_FUNC_CAP reports are the ones the tracker enforces.
func TestQuotasMatchQueryFuncCap(t *testing.T) {
	for _, n := range []int{1, 8, 63} {
		cfg := config.Default()
		cfg.VFs.Default.Quotas = map[string]config.Quota{"cq": {Quota: intp(100), Guaranteed: intp(3)}}
		h, err := New(cfg, n)
		if err != nil {
			t.Fatal(err)
		}
		for name, ty := range map[string]restrack.Type{"qp": restrack.QP, "cq": restrack.CQ, "srq": restrack.SRQ,
			"mpt": restrack.MPT, "mtt": restrack.MTT, "mac": restrack.MAC, "vlan": restrack.VLAN, "counter": restrack.Counter} {
			q := h.Res.QuotaOf(0, ty, 1)
			if q.Quota != h.Quota(0, name) || q.Guaranteed != h.Guaranteed(0, name) {
				t.Errorf("%d VFs %s: tracker %+v, QUERY_FUNC_CAP %d/%d", n, name, q, h.Quota(0, name), h.Guaranteed(0, name))
			}
		}
	}
}
