package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzAdminRequest: any request line either is refused or names a command
// with a handler and valid fields, and survives a round trip through its
// JSON form unchanged.
func FuzzAdminRequest(f *testing.F) {
	for _, s := range []string{`{"cmd":"trace"}`, `{"cmd":"trace","vf":3,"opcode":"NOP","json":true}`,
		`{"cmd":"trace","opcode":"0x31","from_start":true}`, `{"cmd":"trace","vf":-1}`, `{"cmd":"vf"}`,
		`{"cmd":"trace","extra":1}`, `{"cmd":"trace"}{"cmd":"trace"}`, `[]`, ``,
		`{"cmd":"fault.add","fault":{"kind":"delay","vf":2,"comm":"RESET","prob":0.5,"seed":7,"args":{"us":"80s"}}}`,
		`{"cmd":"fault.clear","id":1}`, `{"cmd":"fault.list"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		q, err := parseAdminRequest(line)
		if err != nil {
			return
		}
		if _, ok := adminHandlers[q.Cmd]; !ok {
			t.Fatalf("accepted cmd %q without a handler", q.Cmd)
		}
		if _, err := q.Request.Options(); err != nil {
			t.Fatalf("accepted %q with bad fields: %v", line, err)
		}
		b, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		q2, err := parseAdminRequest(b)
		if err != nil || !reflect.DeepEqual(q, q2) {
			t.Fatalf("%q → %s → %+v, %v; want %+v", line, b, q2, err, q)
		}
	})
}
