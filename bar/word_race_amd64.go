//go:build amd64 && race

package bar

func WordLoad(p *uint32) uint32          { return movLoad32(p) }
func WordStore(p *uint32, v uint32)      { xchgStore32(p, v) }
func WordAdd(p *uint32, d uint32) uint32 { return xaddAdd32(p, d) }
