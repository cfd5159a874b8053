package mlx4

import "testing"

// drivers/net/ethernet/mellanox/mlx4/mlx4.h struct mlx4_comm,
// MLX4_COMM_CHAN_CAPS, MLX4_COMM_CHAN_FLAGS, MLX4_COMM_PAGESIZE and enum
// MLX4_COMM_CMD_*; cmd.h COMM_CHAN_EVENT_INTERNAL_ERR; cmd.c CMD_CHAN_VER,
// CMD_CHAN_IF_REV and mlx4_comm_cmd_post's slave_write word; main.c
// COMM_CHAN_RST_OFFSET and COMM_CHAN_OFFLINE_OFFSET; catas.c
// COM_CHAN_RST_REQ_OFFSET and COM_CHAN_RST_ACK_OFFSET.
func TestCommChannelLayout(t *testing.T) {
	checkOffsets(t, "mlx4_comm", []off{
		{"MLX4_SLAVE_COMM_BASE", MLX4_SLAVE_COMM_BASE, 0x0}, {"slave_write", CommSlaveWrite, 0x0},
		{"slave_read", CommSlaveRead, 0x4}, {"MLX4_COMM_CHAN_CAPS", MLX4_COMM_CHAN_CAPS, 0x8},
		{"MLX4_COMM_CHAN_FLAGS", MLX4_COMM_CHAN_FLAGS, 0xc}, {"MLX4_COMM_PAGESIZE", MLX4_COMM_PAGESIZE, 0x1000},
	})
	checkOffsets(t, "comm bits", []off{
		{"toggle", CommToggle, 0x80000000}, {"toggle bit", CommToggleShift, 31}, {"COMM_CHAN_EVENT_INTERNAL_ERR", COMM_CHAN_EVENT_INTERNAL_ERR, 0x20000},
		{"COMM_CHAN_RST_OFFSET", COMM_CHAN_RST_OFFSET, 30}, {"COMM_CHAN_OFFLINE_OFFSET", COMM_CHAN_OFFLINE_OFFSET, 9},
		{"COM_CHAN_RST_REQ_OFFSET", COM_CHAN_RST_REQ_OFFSET, 16}, {"COM_CHAN_RST_ACK_OFFSET", COM_CHAN_RST_ACK_OFFSET, 8},
		{"CMD_CHAN_VER", CMD_CHAN_VER, 1}, {"CMD_CHAN_IF_REV", CMD_CHAN_IF_REV, 1},
		{"mlx4_comm_get_version", CommVersion, 0x0101}, {"valid slave_write bits", CommSlaveWriteValid, 0x80ffffff},
		{"slave_read bits the VF reads", CommSlaveReadDriverBits, 0x8002ff00},
	})
	checkOffsets(t, "MLX4_COMM_CMD", []off{
		{"RESET", int(MLX4_COMM_CMD_RESET), 0}, {"VHCR0", int(MLX4_COMM_CMD_VHCR0), 1},
		{"VHCR1", int(MLX4_COMM_CMD_VHCR1), 2}, {"VHCR2", int(MLX4_COMM_CMD_VHCR2), 3},
		{"VHCR_EN", int(MLX4_COMM_CMD_VHCR_EN), 4}, {"VHCR_POST", int(MLX4_COMM_CMD_VHCR_POST), 5},
		{"FLR", int(MLX4_COMM_CMD_FLR), 254},
	})
	// mlx4_comm_cmd_post: writel((u32)cmd<<16 | param | toggle<<31 ...).
	if w := CommWord(1, MLX4_COMM_CMD_VHCR_POST, 0); w != 0x80050000 || w&^CommToggle != CommVHCRPostWord {
		t.Errorf("VHCR_POST with toggle 1: %#x", w)
	}
	if w := CommWord(0, MLX4_COMM_CMD_VHCR1, 0xbeef); w != 0x0002beef {
		t.Errorf("VHCR1 0xbeef with toggle 0: %#x", w)
	}
	if c, p := SplitCommWord(0xfe03abcd); c != MLX4_COMM_CMD_VHCR2 || p != 0xabcd {
		t.Errorf("split 0xfe03abcd: %v %#x", c, p)
	}
	for c, sh := range map[CommCmd]uint{MLX4_COMM_CMD_VHCR0: 48, MLX4_COMM_CMD_VHCR1: 32, MLX4_COMM_CMD_VHCR2: 16,
		MLX4_COMM_CMD_VHCR_EN: 0, MLX4_COMM_CMD_RESET: 0, MLX4_COMM_CMD_VHCR_POST: 0} {
		if got := CommVHCRShift(c); got != sh {
			t.Errorf("%v carries vhcr_dma from bit %d, the kernel's %d", c, got, sh)
		}
	}
	if CommIfRev(0x80020101) != CMD_CHAN_IF_REV || CommIfRev(0x0201) != 2 {
		t.Errorf("MLX4_COMM_GET_IF_REV: %d %d", CommIfRev(0x80020101), CommIfRev(0x0201))
	}
	if MLX4_COMM_CMD_VHCR_EN.String() != "VHCR_EN" || CommCmd(9).String() != "comm_cmd_9" {
		t.Errorf("names: %v %v", MLX4_COMM_CMD_VHCR_EN, CommCmd(9))
	}
}
