package master

// UARWord is the data path's UAR reader (datapath.go), for the external
// tests.
func (p *PF) UARWord(vf int, off uint64) (uint32, bool) { return p.uarWord(vf, off) }
