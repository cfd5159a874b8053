// Package pcap writes the classic libpcap file format (a 24-byte file
// header, then a 16-byte header per record, microsecond timestamps, little
// endian): the MAD capture (mad/capture, LINKTYPE_WIRESHARK_UPPER_PDU) and
// the eSwitch's uplink (LINKTYPE_ETHERNET) write through it, and tshark
// and Wireshark read what it writes.
package pcap
