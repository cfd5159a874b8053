package mad

import "testing"

// TestCMLayout holds the CM field offsets against IBA 12.6's field
// locations as the kernel's cm_msgs.h gives them (bytes from the end of the
// MAD header) and the attribute IDs against ib_cm's CM_*_ATTR_ID.
func TestCMLayout(t *testing.T) {
	const hdr = 24
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"CM_REQ_LOCAL_COMM_ID", CMLocalCommID, hdr + 0},
		{"CM_REP_REMOTE_COMM_ID", CMRemoteCommID, hdr + 4},
		{"CM_SIDR_REQ_REQUESTID", CMSIDRReqID, hdr + 0},
		{"CM_REQ_PRIMARY_REMOTE_PORT_GID", CMREQRemoteGID, hdr + 72},
		{"CM_REJ_REASON", CMREJReason, hdr + 10},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, want %d", c.name, c.got, c.want)
		}
	}
	ids := []uint16{AttrCMREQ, AttrCMMRA, AttrCMREJ, AttrCMREP, AttrCMRTU, AttrCMDREQ, AttrCMDREP, AttrCMSIDRREQ, AttrCMSIDRREP, AttrCMLAP, AttrCMAPR}
	for i, id := range ids {
		if id != uint16(0x10+i) {
			t.Errorf("CM attribute %d is %#x, want %#x (CM_REQ_ATTR_ID 0x10 upwards)", i, id, 0x10+i)
		}
	}
}
