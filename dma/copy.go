package dma

// Copy copies n bytes from IOVA siova of src to IOVA diova of dst: a
// device's DMA from one window (a read, checked against src's permission)
// into another (a write, checked against dst's), the two possibly the same
// window and overlapping (memmove semantics). Where both windows' regions
// are mapped it copies once between them; otherwise it goes through buf
// (any size above zero), so that it never allocates.
func Copy(dst *Window, diova uint64, src *Window, siova uint64, n int, buf []byte) error {
	soff, err := src.Translate(siova, n, Read)
	if err != nil {
		return err
	}
	doff, err := dst.Translate(diova, n, Write)
	if err != nil {
		return err
	}
	if src.mem != nil && dst.mem != nil {
		s, d := soff-src.off, doff-dst.off
		copy(dst.mem[d:d+int64(n)], src.mem[s:s+int64(n)])
		return nil
	}
	for n > 0 {
		k := min(n, len(buf))
		if err := src.CopyIn(buf[:k], siova); err != nil {
			return err
		}
		if err := dst.CopyOut(diova, buf[:k]); err != nil {
			return err
		}
		siova += uint64(k)
		diova += uint64(k)
		n -= k
	}
	return nil
}
