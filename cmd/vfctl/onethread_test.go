package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestLoadOneThread: --one-thread reports every VF of --vfs, and with
// --bystander the bystander apart from the flooding VFs.
func TestLoadOneThread(t *testing.T) {
	spec, _, _ := servePF(t, 4)
	base := []string{"--bar", spec, "--vfs", "0-3", "--one-thread", "--duration", "100ms", "--json", "--procs", "0"}
	out, err := capture(t, func() error { return runLoad(base) })
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res OneThreadResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.PerVF) != 4 || res.Bystander != nil {
		t.Fatalf("want 4 per-VF figures and no bystander:\n%s", out)
	}

	out, err = capture(t, func() error { return runLoad(append(base, "--bystander", "2", "--rounds", "2")) })
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	res = OneThreadResult{}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b := res.Bystander; b == nil || b.VF != 2 || !slices.Equal(b.Flooding, []int{0, 1, 3}) || b.Rounds != 2 {
		t.Fatalf("bystander:\n%s", out)
	}
}

func TestLoadOneThreadFlags(t *testing.T) {
	spec, _, _ := servePF(t, 2)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bystander", "0"}, "only with --one-thread"},
		{[]string{"--one-thread", "--mix", "basic"}, "posts NOPs"},
		{[]string{"--one-thread", "--compare"}, "not with --compare"},
		{[]string{"--one-thread", "--vfs", "0", "--bystander", "1"}, "not one of --vfs"},
	} {
		args := append([]string{"--bar", spec, "--vfs", "0-1", "--duration", "10ms", "--procs", "0"}, c.args...)
		_, err := capture(t, func() error { return runLoad(args) })
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
