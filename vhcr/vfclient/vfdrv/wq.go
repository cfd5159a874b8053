package vfdrv

import (
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// QPCaps are a verbs QP's capabilities as ibv_create_qp takes them
// (struct ibv_qp_cap); CreateVerbsQP sizes the queues from them as
// libmlx4 does and reports what it got back in VQP.Caps.
type QPCaps struct {
	MaxSendWR, MaxRecvWR   int
	MaxSendSGE, MaxRecvSGE int
	MaxInline              int
}

// sq is a send queue's geometry and positions (libmlx4's struct mlx4_wq
// for the SQ, plus sq_spare_wqes).
type sq struct {
	shift   uint8    // log2 of the WQE stride (≥ 6: a basic block)
	cnt     uint32   // WQEs, a power of two
	spare   uint32   // sq_spare_wqes: headroom the device may prefetch
	maxPost uint32   // cnt - spare
	maxGS   int      // data segments per WQE
	offset  int      // in the QP buffer
	head    uint32   // WQEs posted
	tail    uint32   // WQEs completed (moved by send CQEs' wqe_index)
	wrid    []uint64 // by WQE index
}

// rq is a receive queue's geometry and positions.
type rq struct {
	shift   uint8 // log2 of the WQE stride (≥ 4: one data segment)
	cnt     uint32
	maxPost uint32
	maxGS   int
	offset  int
	head    uint32
	tail    uint32
	wrid    []uint64
}

// alignQueueSize is libmlx4's align_queue_size: the next power of two.
func alignQueueSize(n int) uint32 {
	s := uint32(1)
	for int(s) < n {
		s <<= 1
	}
	return s
}

// sqWQESize is libmlx4's mlx4_calc_sq_wqe_size: the bytes a send WQE
// needs for caps on transport st (the larger of the gather list and the
// inline data, plus the transport's segments, at least a bind segment,
// plus the control segment).
func sqWQESize(caps QPCaps, st uint8) int {
	maxSGE := (caps.MaxInline + mlx4.InlineSegSize + mlx4.DataSegSize - 1) / mlx4.DataSegSize
	maxSGE = max(maxSGE, caps.MaxSendSGE)
	size := maxSGE * mlx4.DataSegSize
	switch st {
	case mlx4.QP_ST_UD:
		size += mlx4.DatagramSegSize
	case mlx4.QP_ST_UC:
		size += mlx4.RAddrSegSize
	case mlx4.QP_ST_RC, mlx4.QP_ST_XRC:
		size += mlx4.RAddrSegSize
		// an atomic needs an atomic segment, a remote address and one
		// data segment
		size = max(size, mlx4.AtomicSegSize+mlx4.RAddrSegSize+mlx4.DataSegSize)
	}
	size = max(size, mlx4.BindSegSize)
	return size + mlx4.CtrlSegSize
}

// geometry computes the queues of a QP on transport st for caps
// (mlx4_create_qp, mlx4_alloc_qp_buf, mlx4_set_sq_sizes) and returns the
// buffer's bytes; caps comes back with what the queues hold. An SRQ QP
// (noRQ) has no receive queue.
func geometry(caps *QPCaps, st uint8, noRQ bool) (s sq, r rq, bytes int) {
	size := sqWQESize(*caps, st)
	s.shift = mlx4.SendWQEMinShift
	for 1<<s.shift < size {
		s.shift++
	}
	s.spare = uint32(mlx4.SQHeadroom(uint(s.shift)))
	s.cnt = alignQueueSize(caps.MaxSendWR + int(s.spare))
	if !noRQ {
		r.maxGS = max(caps.MaxRecvSGE, 1)
		r.shift = mlx4.RecvWQEMinShift
		for 1<<r.shift < r.maxGS*mlx4.DataSegSize {
			r.shift++
		}
		r.cnt = alignQueueSize(max(caps.MaxRecvWR, 1))
		r.maxGS = 1 << r.shift / mlx4.DataSegSize
		r.maxPost = r.cnt
	}
	sqBytes, rqBytes := int(s.cnt)<<s.shift, int(r.cnt)<<r.shift
	if r.cnt > 0 && r.shift > s.shift {
		r.offset, s.offset = 0, rqBytes
	} else {
		r.offset, s.offset = sqBytes, 0
	}
	// mlx4_set_sq_sizes
	wqe := 1<<s.shift - mlx4.CtrlSegSize
	switch st {
	case mlx4.QP_ST_UD:
		wqe -= mlx4.DatagramSegSize
	case mlx4.QP_ST_UC, mlx4.QP_ST_RC, mlx4.QP_ST_XRC:
		wqe -= mlx4.RAddrSegSize
	}
	s.maxGS = wqe / mlx4.DataSegSize
	s.maxPost = s.cnt - s.spare
	caps.MaxSendSGE, caps.MaxSendWR = s.maxGS, int(s.maxPost)
	// inline segments do not cross a 64-byte boundary: one header per chunk
	caps.MaxInline = wqe - mlx4.InlineSegSize*((wqe+mlx4.INLINE_ALIGN-1)/mlx4.INLINE_ALIGN)
	caps.MaxRecvSGE, caps.MaxRecvWR = r.maxGS, int(r.maxPost)
	s.wrid = make([]uint64, s.cnt)
	r.wrid = make([]uint64, r.cnt)
	return s, r, sqBytes + rqBytes
}

// log2 of a power of two.
func log2(n uint32) uint8 {
	l := uint8(0)
	for 1<<l < n {
		l++
	}
	return l
}
