package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// slaveMcast is what a Linux 6.1 VF makes of QUERY_HCA's multicast
// parameters, decoded exactly as the driver does: mlx4_QUERY_HCA (fw.c)
// picks the steering mode from INIT_HCA_FLAGS and, outside device-managed
// steering, reads log_mc_entry_sz & 0x1f; slave_adjust_steering_mode
// (main.c) sets caps.num_qp_per_mgm = 4 * ((1 << log_mc_entry_sz)/16 - 2);
// mlx4_slave_cap sets caps.num_mgms = caps.num_amgms = 0; and mlx4_ib's
// mlx4_ib_query_device reports max_mcast_qp_attach = num_qp_per_mgm and
// max_mcast_grp = num_mgms + num_amgms, what `ibv_devinfo -v` prints.
func slaveMcast(o *[mlx4.MailboxSize]byte) (dmfs bool, maxMcastQPAttach, maxMcastGrp int) {
	flags := binary.BigEndian.Uint32(o[mlx4.INIT_HCA_FLAGS_OFFSET:])
	if flags&(1<<mlx4.INIT_HCA_DEVICE_MANAGED_FLOW_STEERING_EN) != 0 {
		return true, 0, 0
	}
	logEntry := int(o[mlx4.INIT_HCA_LOG_MC_ENTRY_SZ_OFFSET] & 0x1f)
	numQPPerMGM := 4 * ((1<<logEntry)/16 - 2)
	numMGMs, numAMGMs := 0, 0
	return false, numQPPerMGM, numMGMs + numAMGMs
}

// TestQueryHCAMulticastAsAVFReadsIt: the guest's ibv_devinfo showed
// max_mcast_qp_attach -8: the entry size was written at 0xd2, where
// kernels before "net/mlx4_core: Fix init_hca fields offset" read it, and
// Linux 6.1 reads the byte at 0xd3 (0, so 4 * (1/16 - 2)). A VF must now
// read the model's 2^9-byte entries: 120 QPs per group. max_mcast_grp is
// 0 on every mlx4 VF (mlx4_slave_cap zeroes the group counts), here too.
func TestQueryHCAMulticastAsAVFReadsIt(t *testing.T) {
	r := newRig(t, 1, nil)
	v := r.vf(0)
	c := v.cmd(mlx4.QUERY_HCA, 0, 0, 0, nil, true)
	v.must(v.run(c), "QUERY_HCA")
	dmfs, attach, grp := slaveMcast(c.Outbox)
	// mlx4_QUERY_HCA's steering mode: B0 (the UC steering byte's bit 3).
	if c.Outbox[0xd8]&0x08 == 0 {
		t.Errorf("QUERY_HCA byte 0xd8 = %#x: the VF reads steering mode A0, not B0", c.Outbox[0xd8])
	}
	if dmfs {
		t.Fatal("QUERY_HCA reports device-managed flow steering; the model's multicast tables are A0/B0")
	}
	if attach != 120 {
		t.Errorf("a VF reads max_mcast_qp_attach %d, want 120 (2^9-byte MGM entries: 4 * (512/16 - 2))", attach)
	}
	if grp != 0 {
		t.Errorf("a VF reads max_mcast_grp %d, want 0 as on every mlx4 VF", grp)
	}
	if h := c.Outbox[mlx4.INIT_HCA_LOG_MC_HASH_SZ_OFFSET] & 0x1f; h == 0 {
		t.Errorf("log_mc_hash_sz reads 0 at %#x", mlx4.INIT_HCA_LOG_MC_HASH_SZ_OFFSET)
	}
}
