package hca

import (
	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The size on the wire of what the data path sends, for the switch's port
// counters (fabric.go): the headers IBA 9.3 gives each RC/UC operation and
// its response, packets of the QP's path MTU, a GRH in every packet of a
// QP whose path has one.

// pathGRH is the GRH every packet of w carries, if its path has one.
func pathGRH(w *wq) uint64 {
	if w.grh {
		return mad.GRHSize
	}
	return 0
}

// rcRequestSize is an RC or UC request of total bytes: SEND and RDMA
// WRITE in packets of the path MTU (RETH in the first, ImmDt in the last),
// an RDMA READ request (RETH), an atomic (AtomicETH).
func rcRequestSize(w *wq, op uint8, total uint64) pktSize {
	each := pathGRH(w)
	switch op {
	case mlx4.OPCODE_SEND:
		return wireSize(total, w.mtu, 0, each)
	case mlx4.OPCODE_SEND_IMM:
		return wireSize(total, w.mtu, mad.ImmDtSize, each)
	case mlx4.OPCODE_RDMA_WRITE:
		return wireSize(total, w.mtu, mad.RETHSize, each)
	case mlx4.OPCODE_RDMA_WRITE_IMM:
		return wireSize(total, w.mtu, mad.RETHSize+mad.ImmDtSize, each)
	case mlx4.OPCODE_RDMA_READ:
		return wireSize(0, 0, mad.RETHSize, each)
	default:
		return wireSize(0, 0, mad.AtomicETHSize, each)
	}
}

// ackSize is an RC acknowledgement (ACK, NAK, RNR NAK): an AETH.
func ackSize(w *wq) pktSize { return wireSize(0, 0, mad.AETHSize, pathGRH(w)) }

// readResponseSize is an RDMA READ response of total bytes: AETH in the
// first and the last packet (one in a response of one packet).
func readResponseSize(w *wq, total uint64) pktSize {
	sz := wireSize(total, w.mtu, mad.AETHSize, pathGRH(w))
	if sz.pkts > 1 {
		sz.words++ // the last packet's AETH: 4 bytes
	}
	return sz
}

// atomicAckSize is an atomic acknowledgement: AETH and AtomicAckETH.
func atomicAckSize(w *wq) pktSize {
	return wireSize(0, 0, mad.AETHSize+mad.AtomicAckETHSize, pathGRH(w))
}

// udSize is a UD datagram of total bytes: one packet with DETH (ImmDt for
// SEND_IMM) and a GRH if the address vector has one.
func udSize(op uint8, total uint64, grh bool) pktSize {
	once, each := uint64(mad.DETHSize), uint64(0)
	if op == mlx4.OPCODE_SEND_IMM {
		once += mad.ImmDtSize
	}
	if grh {
		each = mad.GRHSize
	}
	return wireSize(total, 0, once, each)
}
