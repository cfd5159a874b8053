package main

// The admin socket's fault commands (package faultinj; docs/faults.md):
// fault.add arms a rule and answers it as armed (its id, the rule
// normalised, its counts), fault.list answers every rule with its counts,
// fault.clear disarms one rule (id) or all (no id) and answers how many.
// Adds and clears are logged and counted in
// vhcrd_admin_changes_total{action="fault_add"|"fault_clear"}.

import (
	"context"
	"fmt"
	"net"

	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/vhcr/faultinj"
)

// checkFaultFields checks the fields the fault commands take.
func checkFaultFields(q *adminRequest) error {
	if (q.Fault != nil) != (q.Cmd == "fault.add") {
		return fmt.Errorf("%w: fault goes with fault.add, and fault.add needs it", errAdminRequest)
	}
	if q.ID != 0 && q.Cmd != "fault.clear" {
		return fmt.Errorf("%w: id goes with fault.clear", errAdminRequest)
	}
	if q.ID < 0 {
		return fmt.Errorf("%w: id %d", errAdminRequest, q.ID)
	}
	if q.Fault != nil {
		// The catalogue's checks now; the VF count when the PF arms it.
		if _, err := faultinj.Compile(*q.Fault, maxAdminVFs); err != nil {
			return fmt.Errorf("%w: %w", errAdminRequest, err)
		}
	}
	return nil
}

// maxAdminVFs bounds a rule's VF before the PF (which knows its count)
// checks it.
const maxAdminVFs = 126

func init() {
	adminHandlers["fault.add"] = func(ctx context.Context, a *adminServer, conn net.Conn, q *adminRequest) error {
		return a.reply(conn, func() (any, error) {
			st, err := a.pf.AddFault(*q.Fault)
			if err != nil {
				a.changes.Inc("fault_add", metrics.AdminRefused)
				a.log.Warn("fault rule refused", "rule", faultArgs(q.Fault), "err", err)
				return nil, err
			}
			a.changes.Inc("fault_add", metrics.AdminDone)
			a.log.Info("fault rule armed", "id", st.ID, "rule", st.Args)
			return st, nil
		})
	}
	adminHandlers["fault.list"] = func(ctx context.Context, a *adminServer, conn net.Conn, q *adminRequest) error {
		return a.reply(conn, func() (any, error) {
			rs, err := a.pf.Faults()
			if rs == nil {
				rs = []faultinj.RuleStatus{}
			}
			return rs, err
		})
	}
	adminHandlers["fault.clear"] = func(ctx context.Context, a *adminServer, conn net.Conn, q *adminRequest) error {
		return a.reply(conn, func() (any, error) {
			n, err := a.pf.ClearFaults(q.ID)
			if err != nil {
				a.changes.Inc("fault_clear", metrics.AdminRefused)
				a.log.Warn("fault clear refused", "id", q.ID, "err", err)
				return nil, err
			}
			a.changes.Inc("fault_clear", metrics.AdminDone)
			a.log.Info("fault rules cleared", "id", q.ID, "cleared", n)
			return map[string]int{"cleared": n}, nil
		})
	}
}

// faultArgs is a refused rule as flags, for the log.
func faultArgs(s *faultinj.Spec) string {
	out := ""
	for i, a := range s.Flags() {
		if i > 0 {
			out += " "
		}
		out += a
	}
	return out
}
