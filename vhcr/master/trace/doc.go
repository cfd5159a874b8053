// Package trace is the command trace of the PF: a fixed-size ring that the
// poller writes one record into for every comm channel step, vHCR command,
// EQE, interrupt, reset, FLR and restart, and that readers stream live as
// text or JSON lines (vhcrd trace) or copy to a file (vhcrd serve --trace).
//
// # Writing
//
// The poller is the only writer, and it writes always, whether or not
// anyone reads: the ring is a flight recorder, and a reader that attaches
// after the fact (NewReaderFromStart, vhcrd trace --from-start) finds the
// last Records()-1 records. Each writer method (Comm, Post, EQE, IRQ, Reset,
// FLR, Restart, Fault) packs its arguments into eight 64-bit words, stores them in
// the next slot and publishes the record by advancing the ring's cursor:
// nine plain stores on amd64, no allocation, no lock, no syscall, no atomic
// read-modify-write. The records carry numbers (opcode, status, refusal
// reason, comm command, reset reason, EQE type) and, for a command with an
// inbox, the inbox's first words as the PF copied them (Record.Inbox: a
// MAD_IFC's class, method and attribute); names, decoded fields and wall
// time are a reader's business (Clock, EntryOf). The poller guards each call
// with Enabled, which only asks whether there is a ring (a PF made without
// one):
//
//	if p.trace.Enabled() {
//		if timed {
//			p.trace.Post(t0, t1, toggle, c, status)
//		} else {
//			p.trace.PostUntimed(p.now, toggle, c, status)
//		}
//	}
//
// Slots are 64 bytes, one cache line, so a record dirties one line; the
// ring's capacity is a power of two so that a sequence number becomes a
// slot index with a mask.
//
// # Reading
//
// Readers never slow the writer: there is no handshake, the writer
// overwrites the oldest record whether or not it was read. A Reader keeps
// its own position. The consistency check is a seqlock over the whole
// ring rather than per slot: record s lives in slot s mod N and is
// overwritten by record s+N, which the writer begins only after publishing
// cursor s+N. A reader loads the cursor, copies records, loads the cursor
// again and keeps only the records s with s+N > cursor: any overwrite that
// touched its copy has published a cursor it sees. Records lost to a slow
// reader (overwritten before being read, or torn while copied) are counted
// and reported by Read; streams write them as "# lost N records". Up to N-1
// records can be read back from a ring of N.
//
// One publish per record, instead of a sequence word per slot written
// before and after the data, halves the writer's ordering work. On amd64
// (TSO) a plain store publishes: stores become visible in program order
// and loads are not reordered with loads. sync/atomic.Store is XCHG there,
// a locked instruction that drains the store buffer, which the writer
// cannot afford on every command. Under the race detector and on other
// architectures every word goes through sync/atomic instead (race builds
// must not report the deliberate overlap of a reader's copy with the
// writer; arm64 needs ordered stores and loads), as package bar does for
// its registers.
//
// # Time and cost
//
// A record holds the ticks its caller passes (the poller's cycle counter);
// Clock converts them with the wall-clock anchor and the tick rate taken
// when the ring was made. Text lines carry the UTC time of day to the
// nanosecond, JSON lines RFC 3339 time.
//
// The ring does not read the clock: in a VM the cycle counter costs tens of
// ns per read, more than the record. Measured on the PF's NOP path (package
// vhcr's BenchmarkPost/NOP, one goroutine, 2-vCPU VM, median of 20 runs)
// with the trace wired into postPlain and a 4 MiB ring: untraced 24.8 ns;
// Enabled on a nil ring 25.4 ns; a record with ticks the poller already has
// 33.4 ns; with one clock read per command (PostUntimed) 44.6 ns; with two,
// detection and completion (Post), 47.4 ns. Against a NOP round trip of 120-150 ns, only
// the record without a clock read stays within 1.1x. Hence two ways to
// stamp a command, the poller's choice:
//
//   - Post(t0, t1, ...) for the commands the poller times anyway (one in
//     master.LatencySample), and PostUntimed(now, ...) for the others, with
//     now the poller's latest clock reading (the last timed command, an idle
//     checkpoint, the wake-up from a sleep): no clock read added, exact
//     latency for the sampled commands, the others shown without latency
//     (latency_ns null) at the time of that reading.
//   - Post(t0, t1, ...) for every command: exact time and latency each time,
//     about 22 ns more per command than untraced on that VM.
//
// The ring's size matters too: each record dirties a fresh line, which must
// be fetched for ownership once the ring no longer fits in the poller's
// cache. With the record and no clock read, fastest of 12 runs on the same
// path: 4096 records 28.5 ns, 65536 records (4 MiB) 34.1 ns, untraced 24.2
// ns. DefaultRecords (1 MiB) is the L2 of one Zen 4 or 5 core (recent Xeons
// have 2 MiB); a larger ring lets a slow reader fall further behind before
// it loses records.
//
// Those figures are the cost of recording always, now that the poller does
// (before, it recorded only while a reader held the ring). Alternating the
// two builds on a loaded shared 2-vCPU machine (package master's
// BenchmarkPost/NOP, 25 runs, medians): 101 ns with no record, 131 ns with
// one, fastest runs 63 and 73 ns; the two extra words of Record.Inbox made
// no difference measurable there (0.98 of the held ring's record).
//
// Comm steps, EQEs, interrupts, resets, FLRs and restarts are rare next to
// commands and can be stamped with a fresh read, or with the ticks of the
// command they belong to (the completion EQE and interrupt of an 'e'
// command).
//
// # Streaming
//
// ServeConn is the server side of a local socket: a client (Follow) sends
// one Request line, {"vf":3,"opcode":"NOP","json":true}, and receives
// records until it closes the connection. vhcrd's admin socket reads its
// own request line ({"cmd":"trace",...}, the same fields) and hands the
// Request to ServeRequest. Stream writes a Reader's records
// to any io.Writer with a Filter (VF, opcode); WriteFile copies a ring from
// its first record to a file. ParseJSON decodes the JSON lines for
// scripts and tests.
package trace
