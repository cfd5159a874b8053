package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// vfSpecs is a repeatable flag of N=VALUE pairs, one per VF (--vf-bar,
// --guest).
type vfSpecs map[int]string

func (v vfSpecs) String() string {
	var keys []int
	for k := range v {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, strconv.Itoa(k)+"="+v[k])
	}
	return strings.Join(parts, ",")
}

func (v vfSpecs) Set(s string) error {
	n, val, ok := strings.Cut(s, "=")
	if !ok || val == "" {
		return fmt.Errorf("%q: want N=VALUE (N the VF's number)", s)
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 || i >= wire.MaxVFs {
		return fmt.Errorf("%q: VF number %q outside 0..%d", s, n, wire.MaxVFs-1)
	}
	if _, dup := v[i]; dup {
		return fmt.Errorf("%q: VF %d given twice", s, i)
	}
	v[i] = val
	return nil
}

// vfBARSpecs returns the spec of every VF's BAR region: --vf-bar where
// given, else the file next to a file control region (<bar>.vf<N>).
func vfBARSpecs(ctrl bar.Spec, given vfSpecs, n int) ([]bar.Spec, error) {
	out := make([]bar.Spec, n)
	for k := range given {
		if k >= n {
			return nil, fmt.Errorf("--vf-bar %d=...: only %d VFs are served (--num-vfs)", k, n)
		}
	}
	for i := range n {
		s, ok := given[i]
		if !ok {
			if ctrl.Scheme != "file" || ctrl.Offset != 0 {
				return nil, fmt.Errorf("--vf-bar %d=SPEC is needed: the control region is not a whole file, so VF %d's BAR region has no default", i, i)
			}
			s = "file:" + wire.VFBARPath(ctrl.Path, i)
		}
		sp, err := bar.ParseSpec(s)
		if err != nil {
			return nil, fmt.Errorf("--vf-bar %d: %w", i, err)
		}
		if sp.Scheme == "bar" {
			return nil, fmt.Errorf("--vf-bar %d: bar[@OFFSET] is only for --dma", i)
		}
		out[i] = sp
	}
	return out, nil
}

// regionSet opens regions and shares one open of each device or file among
// the specs that name it at different offsets (a VFIO device is opened by
// one process once: the control region and the VF BAR regions may all be
// ranges of one BAR). Close closes each underlying region once.
type regionSet struct {
	whole map[string]bar.Region
	order []bar.Region
}

// open returns the region sp names, size bytes from its offset (files are
// created or sized to hold it; a device's region must).
func (rs *regionSet) open(sp bar.Spec, size int64) (bar.Region, error) {
	key := bar.Spec{Scheme: sp.Scheme, Path: sp.Path, Index: sp.Index}.String()
	r, ok := rs.whole[key]
	if !ok {
		var err error
		if sp.Scheme == "file" {
			// Lazily mapped: a VF BAR region is sparse, and the PF
			// touches its first pages only.
			r, _, err = bar.CreateFileLazy(sp.Path, sp.Offset+size)
		} else {
			r, err = openDevice(bar.Spec{Scheme: sp.Scheme, Path: sp.Path, Index: sp.Index})
		}
		if err != nil {
			return nil, err
		}
		if rs.whole == nil {
			rs.whole = map[string]bar.Region{}
		}
		rs.whole[key] = r
		rs.order = append(rs.order, r)
	}
	if sp.Offset == 0 && r.Size() == size {
		return r, nil
	}
	if sp.Offset+size > r.Size() {
		return nil, fmt.Errorf("%s: %w: %#x bytes from %#x need %#x, the region has %#x", sp, bar.ErrTooSmall, size, sp.Offset, sp.Offset+size, r.Size())
	}
	return bar.Sub(r, sp.Offset, size)
}

func (rs *regionSet) close() {
	for i := len(rs.order) - 1; i >= 0; i-- {
		rs.order[i].Close()
	}
	rs.order, rs.whole = nil, nil
}
