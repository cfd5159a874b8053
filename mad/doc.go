// Package mad owns InfiniBand management datagrams for vhcrd: their wire
// formats, and an engine that answers them the way an HCA's firmware answers
// MAD_IFC.
//
// Wire formats. Every structure is big-endian with a fixed size: the 256-byte
// MAD and its common 24-byte header, LID-routed and directed-route SMPs, the
// GS header of PerfMgt and BM MADs, the SMA attributes (NodeDescription,
// NodeInfo, GUIDInfo, PortInfo, P_KeyTable, SLtoVLMappingTable,
// VLArbitrationTable, SMInfo, Notice with the trap 256/257/258/259 data
// details), the PMA attributes (ClassPortInfo, PortCounters,
// PortCountersExtended), BM BKeyInfo and the 40-byte GRH. Decoders never
// panic; they reject short or inconsistent input with an error that wraps one
// of the sentinel errors (ErrShort, ErrSize, ErrInvalid, ...). Encoding a
// decoded value reproduces the input except for reserved bits, which encode
// as zero.
//
// The engine. Engine.ProcessMAD has the shape of Linux's process_mad after
// the 2005 extension (the seed RFC): it receives the MAD together with the
// receive work completion (WC) and GRH, so that it can check M_Key, P_Key,
// Q_Key and B_Key and build traps 256, 257, 258 and 259 with their full
// payloads. A nil WC or GRH means that a trap which needs them cannot be
// built; the engine counts that case. Results are the IB_MAD_RESULT_* bit set.
// The engine models one channel adapter whose node and ports are described by
// NodeConfig and PortConfig; it contains an SMA (classes 0x01 and 0x81), a
// PMA (class 0x04) and a BMA (class 0x05). Sent traps go to a TrapSink; a
// trap is repeated by PollTraps until the manager answers with TrapRepress.
// The Get path allocates nothing.
//
// Like Linux's process_mad, ProcessMAD sees a directed-route SMP after the
// subnet management interface has handled its hop pointer, and answers it
// with only the D bit added; callers that take DR SMPs off the wire (the
// ibsim server) apply SMIRecv before and SMISend after.
//
// MAD_IFC. Engine.ProcessMADIFC applies the mlx4 master's policy to a MAD_IFC
// command posted by a function: the PF's MADs go to ProcessMAD unfiltered, a
// VF's LID-routed Gets of P_KeyTable, PortInfo, GUIDInfo and NodeInfo are
// paravirtualised through a VFView, and everything else from a VF is refused
// (IFCRefused, which the command layer answers with mlx4's BAD_OP): the
// engine returns an IFCResult and knows no command statuses.
// DecodeMADIFCInbox decodes the extended inbox (WC and GRH after the MAD).
//
// The PMA's per-port counters count what crosses the link: every MAD that
// arrived with a work completion, every reply to one, every trap sent.
// The engine's own counters (every ProcessMAD call by class, method and
// result, traps, key violations, missing WC/GRH) are atomic and read at
// scrape time through Engine.Snapshot.
//
// The switch. Switch is a simulated switch's SMA (NodeInfo type 2,
// SwitchInfo, PortInfo of port 0 and of each external port, port 0's
// P_KeyTable, SLtoVL and VLArbitration tables, the linear and multicast
// forwarding tables): the link partner the ibsim server cables the engine's
// ports to, so that a subnet manager finds a fabric.
//
// Port state. A PortInfo Set moves PortState as IBA 7.2 allows (Armed only
// from Init, Active only from Armed; Down with the link up retrains to
// Init). Engine.Observe hears what each Set changed (PortChange: state, LID,
// SM LID/SL, GID prefix, client reregister, P_Key entries, alias GUIDs),
// which is what mlx4's PF snoops to raise its VFs' events. Traps carry
// Toggle and Count 0; only an SMP with the right M_Key stops a running
// M_Key lease.
//
// mad knows nothing about BARs, comm channels or the VFs' DMA windows.
package mad
