package faultinj_test

import (
	"encoding/json"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
)

// FuzzSpec: any JSON rule either is refused with ErrRule/ErrArg or
// compiles to a rule whose written-back Spec compiles to the same rule;
// matching it never panics and a nth rule fires at most once.
func FuzzSpec(f *testing.F) {
	for _, s := range []string{
		`{"kind":"status","vf":1,"op":"QUERY_FUNC_CAP","nth":2,"args":{"status":"BAD_PARAM"}}`,
		`{"kind":"delay","comm":"RESET","every":true,"args":{"us":"20ms"}}`,
		`{"kind":"eqe_drop","op":"any","prob":0.25,"seed":42}`,
		`{"kind":"outbox_field","args":{"field":"dev_cap.uar_size","value":"0x3f"}}`,
		`{"kind":"flags_no_ack"}`,
		`{"kind":"port_flap","args":{"port":"2","us":"1ms","count":"3"}}`,
		`{"kind":"guid_change","vf":0,"args":{"guid":"0x1234"}}`,
		`{"kind":"cqe_error","vf":1,"op":"SEND","args":{"syndrome":"REM_ACCESS_ERR","vendor":"0x51"}}`,
		`{"kind":"cqe_error","op":"RECV","every":true,"args":{"syndrome":"0x22"}}`,
		`{"kind":"cqe_drop","op":"RDMA_WRITE","prob":0.5,"seed":3}`,
		`{"kind":"cqe_dup","op":"10","nth":2}`,
		`{"kind":"cq_overrun","vf":0}`,
	} {
		f.Add([]byte(s), uint8(1), uint16(0))
	}
	f.Fuzz(func(t *testing.T, b []byte, vf uint8, key uint16) {
		var s faultinj.Spec
		if json.Unmarshal(b, &s) != nil {
			return
		}
		set := faultinj.NewSet(4)
		r, err := set.Add(s)
		if err != nil {
			return
		}
		r2, err := faultinj.Compile(r.Spec(), 4)
		if err != nil || r2.String() != r.String() || r2.Params != r.Params {
			t.Fatalf("%s written back: %v, %v", r, r2, err)
		}
		n := 0
		for i := 0; i < 64; i++ {
			for _, pt := range []faultinj.Point{faultinj.PointPost, faultinj.PointComm, faultinj.PointFlags, faultinj.PointCQE} {
				if set.Match(pt, int(vf%6)-1, int(key), i%2 == 0) != nil {
					n++
				}
			}
		}
		if r.Nth != 0 && n > 1 {
			t.Fatalf("nth rule %s fired %d times", r, n)
		}
	})
}

// FuzzMatch: the selector's occurrences for a probabilistic rule are a
// function of the seed and the occurrence sequence alone.
func FuzzMatch(f *testing.F) {
	f.Add(uint64(7), uint8(10), []byte{1, 1, 0, 1, 2, 1})
	f.Add(uint64(0), uint8(255), []byte{})
	f.Fuzz(func(t *testing.T, seed uint64, pct uint8, seq []byte) {
		prob := float64(pct%100+1) / 100
		run := func() []bool {
			s := faultinj.NewSet(3)
			if _, err := s.Add(faultinj.Spec{Kind: "never", Op: "NOP", Prob: prob, Seed: seed}); err != nil {
				t.Fatal(err)
			}
			var out []bool
			for _, c := range seq {
				out = append(out, s.Match(faultinj.PointPost, int(c%3), int(c/3%2), false) != nil)
			}
			return out
		}
		a, b := run(), run()
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("occurrence %d differs", i)
			}
		}
	})
}
