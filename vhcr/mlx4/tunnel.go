package mlx4

// The SR-IOV MAD tunnel of mlx4_ib (drivers/infiniband/hw/mlx4/mlx4_ib.h,
// mad.c, qp.c). A VF's QP0 and QP1 are proxy QPs; a proxy send is a UD
// datagram to the function's tunnel QP (QUERY_FUNC_CAP's qp0/qp1 tunnel
// QPN) whose address vector has the force-loopback bit, with Q_Key
// IB_QP_SET_QKEY (the QP's own), and whose payload is a struct
// mlx4_ib_tunnel_header (the real destination), inline, then the MAD
// (qp.c set_tunnel_datagram_seg, build_tunnel_header). The PF's tunnel QP
// receives it as struct mlx4_tunnel_mad (the GRH area, the header, the
// MAD). The PF sends a MAD for the VF from the tunnel QP to the VF's proxy
// QP as struct mlx4_rcv_tunnel_mad: a struct mlx4_rcv_tunnel_hdr with the
// work completion the PF's QP0/QP1 got, the GRH, the MAD
// (mad.c mlx4_ib_send_to_slave). The VF posts every proxy receive with
// a first scatter entry of sizeof(struct mlx4_ib_proxy_sqp_hdr) (the UD GRH
// area and the receive header: qp.c mlx4_ib_post_recv) and takes the work
// completion from that header (cq.c use_tunnel_data).

// struct mlx4_ib_tunnel_header (mlx4_ib.h): 56 bytes.
const (
	TunHdrAV        = 0x00 // struct mlx4_av av: the real destination
	TunHdrRemoteQPN = 0x20 // BE32 remote_qpn
	TunHdrQKey      = 0x24 // BE32 qkey
	TunHdrVLAN      = 0x28 // BE16 vlan
	TunHdrMAC       = 0x2a // mac[6]
	TunHdrPKeyIndex = 0x30 // BE16 pkey_index: the VF's virtual index
	TunHdrSize      = 0x38 // reserved[6] after pkey_index
)

// struct mlx4_rcv_tunnel_hdr (mlx4_ib.h): 16 bytes.
const (
	RcvTunFlagsSrcQP  = 0x00 // BE32 flags_src_qp: source QPN 23:0 (flags 6:5 VLAN, RoCE)
	RcvTunGMLPath     = 0x04 // g_ml_path: GRH bit 7
	RcvTunPKeyIndex   = 0x06 // BE16 pkey_index: the VF's virtual index
	RcvTunSLVID       = 0x08 // BE16 sl_vid: SL 15:12 (IB), or the VLAN (RoCE)
	RcvTunSLIDMAC4732 = 0x0a // BE16 slid_mac_47_32: the SLID (IB)
	RcvTunMAC310      = 0x0c // BE32 mac_31_0 (RoCE)
	RcvTunHdrSize     = 0x10

	RcvTunGRHBit    = 0x80 // g_ml_path: the MAD came with a GRH
	RcvTunSLShift   = 12   // sl_vid: the SL's place
	RcvTunSrcQPMask = 0xffffff
)

// Sizes of the tunnel's buffers (mad.c): struct mlx4_tunnel_mad (what the
// tunnel QP receives: GRH area, tunnel header, MAD), struct
// mlx4_rcv_tunnel_mad (what it sends to a proxy QP: receive header, GRH,
// MAD), struct mlx4_ib_proxy_sqp_hdr (the first scatter entry of a proxy
// receive: the GRH area, the receive header).
// (struct ib_grh is 40 bytes, struct ib_mad 256: the IB facts are package
// mad's, which this leaf cannot import.)
const (
	ibGRHSize         = 40
	ibMADSize         = 256
	TunnelMADSize     = ibGRHSize + TunHdrSize + ibMADSize    // 352
	RcvTunnelMADSize  = RcvTunHdrSize + ibGRHSize + ibMADSize // 312
	ProxySQPHdrSize   = ibGRHSize + RcvTunHdrSize             // 56
	TunnelSendPayload = TunHdrSize + ibMADSize                // 312: a proxy send's bytes
)

// AVForceLoopback is port_pd's bit 31, which set_tunnel_datagram_seg sets
// in a proxy send's address vector (and mlx4_ib_send_to_wire clears in the
// real one) so that the datagram stays on the HCA.
const AVForceLoopback = 1 << 31

// MADTIDSlaveByte is the byte of a MAD's transaction ID that
// mlx4_ib_multiplex_mad sets to the slave for a request a VF sends
// (GET, SET, REPORT and the SA's table methods; it refuses a request whose
// byte is not zero) and that mlx4_ib_demux_mad reads from a response and
// clears: the TID's most significant byte (offset 8 of the MAD header).
const MADTIDSlaveByte = 8

// MADTIDDom0 is the slave byte of the PF's own MADs in mlx4_ib_demux_mad
// ("255 indicates the dom0": a response with it is the PF's, its TID kept).
const MADTIDDom0 = 0xff

// CM_CLEANUP_CACHE_TIMEOUT is how long mlx4_ib's CM paravirtualisation
// (cm.c) keeps a connection's comm ID mapping after its DREQ or REJ (and a
// REQ's sender for a later REJ with reason Timeout), in nanoseconds: 30 s,
// so that the retries and the DREP still find it.
const CM_CLEANUP_CACHE_TIMEOUT = 30e9

// MLX4_MFUNC_MAX is the most functions (PF and VFs) mlx4 has: the proxy
// and tunnel QP ranges hold 8 QPs for each.
const MLX4_MFUNC_MAX = 128

// TunnelHeader is struct mlx4_ib_tunnel_header.
type TunnelHeader struct {
	AV        AV
	RemoteQPN uint32
	QKey      uint32
	VLAN      uint16
	MAC       [6]byte
	PKeyIndex uint16
}

// DecodeTunnelHeader decodes b (at least TunHdrSize bytes).
func DecodeTunnelHeader(b []byte) (TunnelHeader, error) {
	if len(b) < TunHdrSize {
		return TunnelHeader{}, shortErr("mlx4_ib_tunnel_header", len(b), TunHdrSize)
	}
	var d DatagramSeg
	decodeDatagram(&d, b) // av, then remote_qpn, qkey, vlan, mac: the datagram segment's first 48 bytes
	h := TunnelHeader{AV: d.AV, RemoteQPN: d.DQPN, QKey: d.QKey, VLAN: d.VLAN, MAC: d.MAC,
		PKeyIndex: get16(b, TunHdrPKeyIndex)}
	return h, nil
}

// Encode writes h into b (at least TunHdrSize bytes), as
// build_tunnel_header does; reserved bytes are zero.
func (h TunnelHeader) Encode(b []byte) error {
	if len(b) < TunHdrSize {
		return shortErr("mlx4_ib_tunnel_header", len(b), TunHdrSize)
	}
	clear(b[:TunHdrSize])
	encodeDatagram(b, DatagramSeg{AV: h.AV, DQPN: h.RemoteQPN, QKey: h.QKey, VLAN: h.VLAN, MAC: h.MAC})
	put16(b, TunHdrPKeyIndex, h.PKeyIndex)
	return nil
}

// RcvTunnelHeader is struct mlx4_rcv_tunnel_hdr for an IB port.
type RcvTunnelHeader struct {
	SrcQP     uint32
	GRH       bool
	PKeyIndex uint16
	SL        uint8
	SLID      uint16
}

// Encode writes h into b (at least RcvTunHdrSize bytes), as
// mlx4_ib_send_to_slave fills it for an IB port.
func (h RcvTunnelHeader) Encode(b []byte) error {
	if len(b) < RcvTunHdrSize {
		return shortErr("mlx4_rcv_tunnel_hdr", len(b), RcvTunHdrSize)
	}
	clear(b[:RcvTunHdrSize])
	put32(b, RcvTunFlagsSrcQP, h.SrcQP&RcvTunSrcQPMask)
	if h.GRH {
		b[RcvTunGMLPath] = RcvTunGRHBit
	}
	put16(b, RcvTunPKeyIndex, h.PKeyIndex)
	put16(b, RcvTunSLVID, uint16(h.SL)<<RcvTunSLShift)
	put16(b, RcvTunSLIDMAC4732, h.SLID)
	return nil
}

// DecodeRcvTunnelHeader decodes b as use_tunnel_data reads it for an IB
// port.
func DecodeRcvTunnelHeader(b []byte) (RcvTunnelHeader, error) {
	if len(b) < RcvTunHdrSize {
		return RcvTunnelHeader{}, shortErr("mlx4_rcv_tunnel_hdr", len(b), RcvTunHdrSize)
	}
	return RcvTunnelHeader{SrcQP: get32(b, RcvTunFlagsSrcQP) & RcvTunSrcQPMask, GRH: b[RcvTunGMLPath]&RcvTunGRHBit != 0,
		PKeyIndex: get16(b, RcvTunPKeyIndex), SL: uint8(get16(b, RcvTunSLVID) >> RcvTunSLShift),
		SLID: get16(b, RcvTunSLIDMAC4732)}, nil
}
