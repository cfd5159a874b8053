package mlx4

// PutCQE writes c into b[0:CQESize] (ErrShort for a shorter b): the same
// 32 bytes as EncodeCQE, stored straight into b without copying the CQE in
// or the bytes out, for the CQ path that writes a CQE per completion.
func PutCQE(b []byte, c *CQE) error {
	if len(b) < CQESize {
		return shortErr("CQE", len(b), CQESize)
	}
	putCQE((*[CQESize]byte)(b[:CQESize]), c)
	return nil
}

// putCQE is the one encoding of a CQE's 32 bytes into b (an array: the
// stores at constant offsets need no bounds checks).
func putCQE(a *[CQESize]byte, c *CQE) {
	b := a[:]
	put32(b, CQEVlanMyQPN, c.VlanMyQPN)
	put32(b, CQEImmedRSSInvalid, c.ImmedRSSInvalid)
	put32(b, CQEGMLPathRQPN, c.GMLPathRQPN)
	put16(b, CQESLVID, c.SLVID)
	put16(b, CQERLID, c.RLID)
	put16(b, CQEStatus, c.Status)
	b[CQEIPv6ExtMask], b[CQEBadFCSEnc] = c.IPv6ExtMask, c.BadFCSEnc
	put32(b, CQEByteCnt, c.ByteCnt)
	put16(b, CQEWQEIndex, c.WQEIndex)
	put16(b, CQEChecksum, c.Checksum)
	b[CQEReserved], b[CQEReserved+1], b[CQEReserved+2] = c.Reserved[0], c.Reserved[1], c.Reserved[2]
	o := c.Opcode & CQE_OPCODE_MASK
	if c.Owner {
		o |= CQE_OWNER_MASK
	}
	if c.IsSend {
		o |= CQE_IS_SEND_MASK
	}
	b[CQEOwnerSROpcode] = o
}
