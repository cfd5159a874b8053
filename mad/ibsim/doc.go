// Package ibsim serves a mad.Engine over the ibsim client protocol, so that
// unmodified infiniband-diags tools (smpquery, perfquery, ibstat, ibaddr)
// run under libumad2sim (LD_PRELOAD, IBSIM_SOCKNAME=<name>) query the model
// as if it were an HCA (ib-mad.md §7).
//
// The server binds AF_UNIX datagram sockets in the abstract namespace,
// "<name>:ctl" and "<name>:out0".."<name>:out9", each name counting a
// trailing NUL as ibsim's make_name does. The control socket answers the
// 80-byte sim_ctl requests (CONNECT, DISCONNECT, GET_PORT, GET_VENDOR,
// GET_GID, GET_GUID, GET_NODEINFO, GET_PORTINFO, SET_ISSM, GET_PKEYS) from
// the engine's own attributes; each out socket carries one client's
// 288-byte sim_request packets. Every MAD goes through the engine's
// ProcessMAD with a work completion built from the request (SLID, QPs); a
// MAD the engine does not answer comes back with status 110 (ETIMEDOUT),
// which the tools report at once. Only the local (abstract socket) mode is
// implemented, not ibsim's UDP mode.
//
// With Options.Fabric the engine's ports are cabled to a mad.Switch: a
// directed-route SMP with a hop count above 0 travels its initial path port
// by port (IBA 14.2.2; the return path is recorded, a CA never forwards, an
// uncabled or down port drops it), and a LID-routed SMP reaches the switch's
// LID or another cabled port's. Fabric.LID starts the fabric as a swept
// subnet (the switch's LID, forwarding table and Active ports set). OpenSM
// runs against such a fabric (see cmd/vhcrd's TestOpenSMFabric and
// TestOpenSMDefault). A MAD that expects no response (TrapRepress, a
// response) gets no datagram back from the engine, as on a real link.
//
// Every client attaches to Options.Port. A MAD that reaches that port and
// that the engine leaves to other agents (ProcessMAD's Success alone:
// SMInfo, the SA class, Trap, a response) goes, as ibsim's find_client
// sends it, to a client: a request to the client attached as an SM, with
// the sender's client index in TID bits 63:48; a response to the client
// those bits name. So sminfo and saquery reach OpenSM's SM and SA.
//
// Traps the engine sends reach clients attached as an SM (Server is a
// mad.TrapSink). Options.Capture records the clients' MADs and replies.
//
// The interop tests need the Debian packages infiniband-diags (smpquery,
// perfquery, ibstat, ibaddr), ibsim-utils (which pulls libumad2sim0, the
// LD_PRELOAD library) and, for the capture test, tshark. They are skipped
// with a message when those are missing, unless CI=true, which makes that
// a failure. Every tool runs under timeout(1).
package ibsim
