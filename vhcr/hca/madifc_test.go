package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The MAD engine's outcomes become the statuses a VF sees behind mlx4's
// master (BAD_PKT from firmware reaches a VF as BAD_PARAM).
func TestMADIFCStatus(t *testing.T) {
	for _, tc := range []struct {
		r      mad.IFCResult
		want   mlx4.Status
		reason refusal.Reason
	}{
		{mad.IFCOK, mlx4.OK, refusal.None},
		{mad.IFCRefused, mlx4.BAD_OP, refusal.MAD},
		{mad.IFCBadInbox, mlx4.BAD_PARAM, refusal.Context},
		{mad.IFCNoReply, mlx4.BAD_PARAM, refusal.MADDropped},
	} {
		var c Cmd
		if s := madIFCStatus(&c, tc.r); s != tc.want || c.Reason != tc.reason {
			t.Errorf("%v: %v (%v), want %v (%v)", tc.r, s, c.Reason, tc.want, tc.reason)
		}
	}
}
