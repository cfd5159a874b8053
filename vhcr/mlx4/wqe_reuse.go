package mlx4

// resetSend zeroes every field of w but its gather entries: Decode fills
// SGE[0:NSGE] and nothing reads past NSGE, so the MaxSGE entries (2 KiB)
// are not cleared for every WQE the poller decodes into the same value.
func (w *SendWQE) resetSend() {
	w.Ctrl = WQECtrl{}
	w.HasRAddr, w.RAddr = false, RAddrSeg{}
	w.HasAtomic, w.Atomic = false, AtomicSeg{}
	w.HasDatagram, w.Datagram = false, DatagramSeg{}
	w.HasLSO, w.LSO = false, LSOSeg{}
	w.HasLocalInval, w.LocalInvalKey = false, 0
	w.NSGE = 0
}
