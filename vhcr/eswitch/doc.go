// Package eswitch is the embedded Ethernet switch of a ConnectX-3 port as
// its firmware applies it to each frame: what a VF's QP may send and
// receive under the vport policy the PF wrote into the QP's primary path
// (update_vport_qp_param in Linux's resource_tracker.c, the model's
// hca.updateVportQP): VST's forced VLAN and priority, the vlan_control
// blocks, spoof check's forced source MAC, the receive side's VLAN
// enforcement and stripping, and a link forced down.
//
// The package is pure: a Path is read once from a QP context (PathOf) and
// Egress and Ingress apply it to one frame, from one buffer into another,
// without allocating, returning a Verdict the caller counts (Counters).
// Where a frame goes (the MAC and VLAN steering the command path keeps)
// is the engine's; the uplink's capture file is Pcap.
package eswitch
