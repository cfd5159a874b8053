package mad

// The CM's MADs (IBA 12.6): the attribute IDs and the fields the SR-IOV
// PF reads and rewrites to keep its VFs' connections apart (mlx4_ib's
// cm.c): the communication IDs, the REQ's primary remote port GID (the
// passive side's GID, which names the VF a REQ is for) and the REJ's
// reason. Offsets are from the start of the MAD; IBA's (and the kernel's
// cm_msgs.h IBA_FIELD locations) are from the end of the 24-byte MAD
// header.
const (
	AttrCMREQ     uint16 = 0x0010
	AttrCMMRA     uint16 = 0x0011
	AttrCMREJ     uint16 = 0x0012
	AttrCMREP     uint16 = 0x0013
	AttrCMRTU     uint16 = 0x0014
	AttrCMDREQ    uint16 = 0x0015
	AttrCMDREP    uint16 = 0x0016
	AttrCMSIDRREQ uint16 = 0x0017
	AttrCMSIDRREP uint16 = 0x0018
	AttrCMLAP     uint16 = 0x0019
	AttrCMAPR     uint16 = 0x001a

	CMLocalCommID  = 24 // BE32; a SIDR REQ's or REP's RequestID is at the same place
	CMRemoteCommID = 28 // BE32
	CMSIDRReqID    = 24 // BE32
	CMREQRemoteGID = 96 // 16 bytes: the REQ's Primary Remote Port GID
	CMREJReason    = 34 // BE16

	// CMREJTimeout is the REJ reason "Timeout" (IBA 12.6.7.2 table 112,
	// IB_CM_REJ_TIMEOUT): the passive side's CM rejects a REQ it took too
	// long to answer, possibly before any comm ID of its was sent.
	CMREJTimeout uint16 = 1
)
