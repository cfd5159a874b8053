// Package capture records MADs as they would cross an InfiniBand link, in
// a pcap file that Wireshark and tshark read without options: link type
// LINKTYPE_WIRESHARK_UPPER_PDU (252), each record an exported-PDU header
// naming the "infiniband" dissector followed by LRH, BTH, DETH, the
// 256-byte MAD, ICRC and VCRC (ib-mad.md §8). Link type 247 is not used:
// Wireshark does not map it.
//
// A Writer records single packets and implements mad.TrapSink, so it can
// receive the engine's traps. A Tap wraps an engine's ProcessMAD and
// records each request and its reply.
//
// The ICRC and VCRC are computed (CRC-32 over the invariant fields, CRC-16
// polynomial 0x100B) but their exact bit conventions are unverified:
// tshark displays them without checking.
//
// The tshark test needs the Debian package tshark; it is skipped with a
// message when tshark is missing, unless CI=true, which makes that a failure.
package capture
