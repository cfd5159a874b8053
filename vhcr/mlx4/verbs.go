package mlx4

// Constants of the drivers' send queue sizing and address handles that the
// WQE formats (wqe.go) do not carry: the VF model's verbs (vfdrv) size its
// queues and fill its datagram segments with them.
const (
	// SendWQEMinShift is the smallest send WQE stride, one basic block
	// (mlx4_calc_sq_wqe_size starts wqe_shift at 6).
	SendWQEMinShift = 6
	// RecvWQEMinShift is the smallest receive WQE stride, one data segment
	// (mlx4_alloc_qp_buf starts rq.wqe_shift at 4).
	RecvWQEMinShift = 4
	// BindSegSize is sizeof(struct mlx4_wqe_bind_seg): every send WQE has
	// room for a bind request (mlx4_calc_sq_wqe_size).
	BindSegSize = 32
	// ReservedUARs: "The first 128 UARs are used for EQ doorbells"
	// (drivers/net/ethernet/mellanox/mlx4/main.c mlx4_dev_cap:
	// reserved_uars = max(128, QUERY_DEV_CAP's)); the first UAR a driver
	// allocates (mlx4_uar_alloc) is this index.
	ReservedUARs = 128

	// struct mlx4_av bits (libmlx4 mlx4_create_ah; the kernel's
	// create_ib_ah): port_pd = pdn | port << 24, g_slid's GRH bit 7 over the
	// source path bits, sl_tclass_flowlabel = sl << 28.
	AVPortShift = 24
	AVPDMask    = 0xffffff
	AVGRH       = 0x80
	AVSLShift   = 28
)
