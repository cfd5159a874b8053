package perftest

import (
	"context"
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// ErrNoLID is ibv_rc_pingpong's "Couldn't get local LID": the port's
// PortInfo says LID 0 (no SM has assigned one).
var ErrNoLID = errors.New("perftest: couldn't get local LID")

// LocalLID asks the VF's port for its LID, as ibv_query_port does: an SMP
// Get PortInfo through MAD_IFC (poll mode).
func LocalLID(ctx context.Context, d *vfdrv.Driver, port int) (uint16, error) {
	var in mad.MADIFCInbox
	in.Port = uint8(port)
	smp := mad.SMP{Header: mad.Header{BaseVersion: 1, MgmtClass: mad.ClassSubnLID, ClassVersion: 1,
		Method: mad.MethodGet, TID: 0x70696e67, AttrID: mad.AttrPortInfo, AttrMod: uint32(port)}}
	if err := smp.Encode(in.MAD[:]); err != nil {
		return 0, err
	}
	inbox := make([]byte, mlx4.MailboxSize)
	opMod, inMod, err := mad.EncodeMADIFCInbox(&in, inbox)
	if err != nil {
		return 0, err
	}
	res, err := d.Poll(ctx, &vfclient.Request{Op: mlx4.MAD_IFC, OpMod: opMod, InMod: inMod, In: inbox})
	if err != nil {
		return 0, err
	}
	if res.Status != mlx4.OK {
		return 0, fmt.Errorf("MAD_IFC PortInfo: %w", res.Status)
	}
	var m mad.MAD
	copy(m[:], res.Out)
	var pi mad.PortInfo
	if err := pi.Decode(m.SMPData()); err != nil {
		return 0, err
	}
	if pi.LID == 0 {
		return 0, ErrNoLID
	}
	return pi.LID, nil
}
