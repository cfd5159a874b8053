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
	// On an Ethernet port (RoCE; libmlx4 mlx4_create_ah): port_pd bit 29
	// says the datagram segment's vlan (VID and PCP) is valid (else it is
	// not initialised), and the SL, the 802.1p priority, is
	// sl_tclass_flowlabel 31:29.
	AVVLANPresent = 1 << 29
	AVEthSLShift  = 29
	// CQEEthSLShift: a receive CQE's sl_vid on an Ethernet port is the
	// priority in 15:13 and the VID in 11:0 (mlx4_ib_poll_one's RoCE
	// branch; libmlx4 wc.sl = sl_vid >> 13).
	CQEEthSLShift = 13
)
