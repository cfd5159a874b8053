package mlx4

import (
	"errors"
	"testing"
)

// drivers/infiniband/hw/mlx4/mlx4_ib.h and mad.c: the tunnel's structures,
// counted by hand from the C declarations (struct mlx4_av is 32 bytes,
// struct ib_grh 40, struct ib_mad 256; every struct here is __packed or
// naturally aligned).
func TestTunnelLayout(t *testing.T) {
	checkOffsets(t, "mlx4_ib_tunnel_header", []off{
		{"av", TunHdrAV, 0}, {"remote_qpn", TunHdrRemoteQPN, 32}, {"qkey", TunHdrQKey, 36},
		{"vlan", TunHdrVLAN, 40}, {"mac", TunHdrMAC, 42}, {"pkey_index", TunHdrPKeyIndex, 48}, {"sizeof", TunHdrSize, 56},
	})
	checkOffsets(t, "mlx4_rcv_tunnel_hdr", []off{
		{"flags_src_qp", RcvTunFlagsSrcQP, 0}, {"g_ml_path", RcvTunGMLPath, 4}, {"pkey_index", RcvTunPKeyIndex, 6},
		{"sl_vid", RcvTunSLVID, 8}, {"slid_mac_47_32", RcvTunSLIDMAC4732, 10}, {"mac_31_0", RcvTunMAC310, 12},
		{"sizeof", RcvTunHdrSize, 16},
	})
	checkOffsets(t, "tunnel buffers", []off{
		{"sizeof(struct mlx4_tunnel_mad)", TunnelMADSize, 352}, {"sizeof(struct mlx4_rcv_tunnel_mad)", RcvTunnelMADSize, 312},
		{"sizeof(struct mlx4_ib_proxy_sqp_hdr)", ProxySQPHdrSize, 56}, {"proxy send payload", TunnelSendPayload, 312},
		{"tid msb", MADTIDSlaveByte, 8}, {"dom0", MADTIDDom0, 0xff}, {"MLX4_MFUNC_MAX", MLX4_MFUNC_MAX, 128},
		{"CM_CLEANUP_CACHE_TIMEOUT (30 * HZ, ns)", CM_CLEANUP_CACHE_TIMEOUT, 30_000_000_000},
	})
	checkOffsets(t, "tunnel bits", []off{
		{"force loopback (port_pd bit 31)", AVForceLoopback, 0x80000000}, {"g_ml_path GRH", RcvTunGRHBit, 0x80},
		{"sl_vid SL shift", RcvTunSLShift, 12},
	})
}

// A header as build_tunnel_header writes it, byte by byte, and the
// receive header as mlx4_ib_send_to_slave writes it.
func TestTunnelHeaderBytes(t *testing.T) {
	h := TunnelHeader{AV: AV{PortPD: 1<<24 | 0x12, GSLID: 0x80 | 3, DLID: 0x0102, GIDIndex: 4, StatRate: 5, HopLimit: 6,
		SLTClassFlowLabel: 0x7abcdef1}, RemoteQPN: 1, QKey: 0x80010000, VLAN: 0x0203, MAC: [6]byte{1, 2, 3, 4, 5, 6},
		PKeyIndex: 0x0007}
	h.AV.DGID[15] = 0xee
	b := make([]byte, TunHdrSize)
	for i := range b {
		b[i] = 0xff
	}
	if err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	want := map[int]byte{0: 0x01, 3: 0x12, 5: 0x83, 6: 0x01, 7: 0x02, 9: 4, 10: 5, 11: 6, 12: 0x7a, 13: 0xbc, 14: 0xde, 15: 0xf1, 31: 0xee,
		35: 0x01, 36: 0x80, 37: 0x01, 40: 0x02, 41: 0x03, 42: 1, 43: 2, 44: 3, 45: 4, 46: 5, 47: 6, 49: 7}
	for i, v := range b {
		if v != want[i] {
			t.Errorf("byte %d = %#x, want %#x", i, v, want[i])
		}
	}
	got, err := DecodeTunnelHeader(b)
	if err != nil || got != h {
		t.Fatalf("decode = %+v, %v; want %+v", got, err, h)
	}
	r := RcvTunnelHeader{SrcQP: 0x1234567, GRH: true, PKeyIndex: 2, SL: 9, SLID: 0x0abc}
	rb := make([]byte, RcvTunHdrSize)
	if err := r.Encode(rb); err != nil {
		t.Fatal(err)
	}
	wantR := []byte{0x00, 0x23, 0x45, 0x67, 0x80, 0, 0x00, 0x02, 0x90, 0x00, 0x0a, 0xbc, 0, 0, 0, 0}
	if string(rb) != string(wantR) {
		t.Fatalf("receive header % x, want % x", rb, wantR)
	}
	r.SrcQP &= RcvTunSrcQPMask
	if got, err := DecodeRcvTunnelHeader(rb); err != nil || got != r {
		t.Fatalf("decode = %+v, %v; want %+v", got, err, r)
	}
	if _, err := DecodeTunnelHeader(b[:TunHdrSize-1]); !errors.Is(err, ErrShort) {
		t.Fatalf("short header: %v", err)
	}
	if err := r.Encode(rb[:RcvTunHdrSize-1]); !errors.Is(err, ErrShort) {
		t.Fatalf("short receive header: %v", err)
	}
}

// FuzzTunnelHeaders: every byte pattern decodes (or is short), and what an
// encoder writes decodes back to the same value.
func FuzzTunnelHeaders(f *testing.F) {
	seed := make([]byte, TunHdrSize)
	_ = TunnelHeader{AV: AV{PortPD: 1 << 24, DLID: 1}, RemoteQPN: 1, QKey: 0x80010000}.Encode(seed)
	f.Add(seed)
	f.Add(make([]byte, RcvTunHdrSize))
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeTunnelHeader(b)
		if err == nil {
			out := make([]byte, TunHdrSize)
			if err := h.Encode(out); err != nil {
				t.Fatal(err)
			}
			if back, _ := DecodeTunnelHeader(out); back != h {
				t.Fatalf("round trip %+v → %+v", h, back)
			}
		}
		r, err := DecodeRcvTunnelHeader(b)
		if err == nil {
			out := make([]byte, RcvTunHdrSize)
			if err := r.Encode(out); err != nil {
				t.Fatal(err)
			}
			if back, _ := DecodeRcvTunnelHeader(out); back != r {
				t.Fatalf("round trip %+v → %+v", r, back)
			}
		}
	})
}
