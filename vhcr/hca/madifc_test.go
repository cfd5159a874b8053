package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The MAD engine's outcomes become the statuses a VF sees behind mlx4's
// master (BAD_PKT from firmware reaches a VF as BAD_PARAM).
func TestMADIFCStatus(t *testing.T) {
	for _, tc := range []struct {
		r      mad.IFCResult
		want   mlx4.Status
		reason mlx4.Reason
	}{
		{mad.IFCOK, mlx4.OK, mlx4.ReasonNone},
		{mad.IFCRefused, mlx4.BAD_OP, mlx4.ReasonMAD},
		{mad.IFCBadInbox, mlx4.BAD_PARAM, mlx4.ReasonContext},
		{mad.IFCNoReply, mlx4.BAD_PARAM, mlx4.ReasonMADDropped},
	} {
		var c mlx4.Cmd
		if s := madIFCStatus(&c, tc.r); s != tc.want || c.Reason != tc.reason {
			t.Errorf("%v: %v (%v), want %v (%v)", tc.r, s, c.Reason, tc.want, tc.reason)
		}
	}
}
