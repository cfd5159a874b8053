package faultinj

// splitMix64 is the rule's PRNG (Steele, Lea and Flood's SplitMix64, as
// java.util.SplittableRandom and Go's math/rand/v2 seed their generators):
// one 64-bit state, a fixed increment, and a finaliser; the same seed
// gives the same sequence on every machine.
type splitMix64 struct{ s uint64 }

func (r *splitMix64) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// below reports whether the next draw falls under p (0..1): a draw's top
// 53 bits as a float in [0, 1), compared with p.
func (r *splitMix64) below(p float64) bool {
	return float64(r.next()>>11)/(1<<53) < p
}
