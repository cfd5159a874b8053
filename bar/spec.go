package bar

import (
	"fmt"
	"strconv"
	"strings"
)

// Spec is a parsed region name as given on a command line:
//
//	file:PATH                 a file (tmpfs), created or opened whole
//	sysfs:BDF#resourceN       /sys/bus/pci/devices/BDF/resourceN
//	vfio:BDF[#regionN]        a vfio-pci region (default region 2: BAR2)
//	bar[@OFFSET]              (DMA only) the rest of the BAR region, or from OFFSET
//
// Any form may end in @OFFSET (hex with 0x, or decimal, optional K/M/G suffix)
// to start the region at that offset of the underlying memory.
type Spec struct {
	Scheme string // "file", "sysfs", "vfio" or "bar"
	Path   string // file path or PCI address (BDF)
	Index  int    // resource or region index; -1 if not given
	Offset int64  // start offset; 0 if not given
}

func (s Spec) String() string {
	var b strings.Builder
	b.WriteString(s.Scheme)
	if s.Path != "" {
		b.WriteString(":" + s.Path)
	}
	if s.Index >= 0 {
		switch s.Scheme {
		case "sysfs":
			fmt.Fprintf(&b, "#resource%d", s.Index)
		case "vfio":
			fmt.Fprintf(&b, "#region%d", s.Index)
		}
	}
	if s.Offset != 0 {
		fmt.Fprintf(&b, "@%#x", s.Offset)
	}
	return b.String()
}

// ParseSpec parses a region name. Errors wrap ErrBadSpec and say what was
// expected.
func ParseSpec(s string) (Spec, error) {
	sp := Spec{Index: -1}
	bad := func(why string) (Spec, error) {
		return Spec{}, fmt.Errorf("%q: %s: %w", s, why, ErrBadSpec)
	}
	rest := s
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		off, err := ParseSize(rest[i+1:])
		if err != nil {
			return bad("offset after @: " + err.Error())
		}
		if off%8 != 0 {
			return bad("offset after @ must be a multiple of 8")
		}
		sp.Offset = off
		rest = rest[:i]
	}
	if rest == "bar" {
		sp.Scheme = "bar"
		return sp, nil
	}
	scheme, arg, ok := strings.Cut(rest, ":")
	if !ok || arg == "" {
		return bad("want file:PATH, sysfs:BDF#resourceN, vfio:BDF[#regionN] or bar[@OFFSET]")
	}
	sp.Scheme = scheme
	switch scheme {
	case "file":
		sp.Path = arg
	case "sysfs", "vfio":
		bdf, idx, hasIdx := strings.Cut(arg, "#")
		sp.Path = bdf
		prefix := map[string]string{"sysfs": "resource", "vfio": "region"}[scheme]
		if hasIdx {
			n, err := strconv.Atoi(strings.TrimPrefix(idx, prefix))
			if err != nil || !strings.HasPrefix(idx, prefix) || n < 0 {
				return bad("want #" + prefix + "N after the PCI address")
			}
			sp.Index = n
		} else if scheme == "sysfs" {
			return bad("sysfs needs #resourceN")
		}
		if strings.Count(bdf, ":") < 1 || !strings.Contains(bdf, ".") {
			return bad("want a PCI address like 0000:00:01.0")
		}
	default:
		return bad("unknown scheme " + strconv.Quote(scheme))
	}
	return sp, nil
}

// ParseSize parses a byte count: decimal or 0x-hex, with an optional K, M or
// G suffix (binary multiples).
func ParseSize(s string) (int64, error) {
	mul := int64(1)
	switch {
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "k"):
		mul, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mul, s = 1<<30, s[:len(s)-1]
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	if v > (1<<62)/mul {
		return 0, fmt.Errorf("size %q too large", s)
	}
	return v * mul, nil
}
