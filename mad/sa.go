package mad

// The SA's MAD layout (IBA 15.2.1.1): the MAD header, the RMPP header
// (13.6.2.1), the SA header, the record; and the records the PF's own SA
// requests carry (the VFs' alias GUIDs, multicast joins).
const (
	SAClassVersion = 2

	RMPPVersionOff = 24
	RMPPTypeOff    = 25
	RMPPFlagsOff   = 26
	RMPPStatusOff  = 27
	RMPPSegNumOff  = 28 // BE32
	RMPPPayLenOff  = 32 // BE32 paylen_newwin
	RMPPHdrEnd     = 36 // a segment's data starts here: the SA header's SM_Key

	RMPPVersion   = 1
	RMPPTypeData  = 1
	RMPPActive    = 0x01 // rmpp_rtime_flags
	RMPPFirstLast = 0x06 // FIRST | LAST

	SAHdrAttrOffset = 44 // BE16: the record's size in 8-byte words
	SAHdrCompMask   = 48 // BE64 component mask
	SAData          = 56 // the first record

	// SAStatusNoResources is ERR_NO_RESOURCES, in the status field's
	// class-specific bits (IBA 15.2.1.1 table 197).
	SAStatusNoResources uint16 = 0x0100
)

// SA attributes (IBA 15.2.5).
const (
	AttrGUIDInfoRecord uint16 = 0x0030
	AttrMCMemberRecord uint16 = 0x0038
)

// GUIDInfoRecord (IBA 15.2.5.18): LID 2, BlockNum 1, reserved 5, a GUIDInfo
// block; the component mask's bits.
const (
	GUIDInfoRecordSize   = 72
	GUIDInfoRecBlockNum  = 2
	GUIDInfoRecGUIDs     = 8
	GUIDInfoRecCompLID   = 1 << 0
	GUIDInfoRecCompBlock = 1 << 1
	GUIDInfoRecCompGUID0 = 4 // GUID i of the block is component bit 4+i
)

// MCMemberRecord (IBA 15.2.5.17).
const (
	MCMRMGID           = 0
	MCMRPortGID        = 16
	MCMRMLID           = 36 // BE16
	MCMRScopeJoin      = 48 // scope 7:4, join state 3:0
	MCMRJoinStateMask  = 0x0f
	MCMemberRecordSize = 52
)
