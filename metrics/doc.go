// Package metrics exports vhcrd's counters to Prometheus. Collectors read,
// at scrape time, the atomic counters that the poller owns (master.Stats) and
// build const metrics from them: nothing here runs per command, and the hot
// loop never calls client_golang.
//
// Label sets are closed: vf (bounded by the layout's VF count), opcode (the
// command table's names, or "unknown"), status (mlx4 status names), reason
// (closed enums). Series that are zero are not emitted.
package metrics
