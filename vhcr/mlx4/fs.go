package mlx4

// Flow-steering rule (QP_FLOW_STEERING_ATTACH's inbox): include/linux/mlx4/
// device.h struct mlx4_net_trans_rule_hw_ctrl, then the headers, each a
// struct _rule_hw starting with its size and BE16 id.
const (
	NetTransCtrlPort = 7  // mlx4_net_trans_rule_hw_ctrl.port
	NetTransCtrlQPN  = 8  // BE32, 23:0
	NetTransCtrlSize = 16 // sizeof: the first header follows
	RuleHwID         = 2  // _rule_hw.id, BE16 (MLX4_NET_TRANS_RULE_ID_*)
	RuleHwEthDstMAC  = 10 // mlx4_net_trans_rule_hw_eth.dst_mac, 6 bytes

	NET_TRANS_RULE_ID_ETH  = 0xe001 // mcg.c __sw_id_hw[MLX4_NET_TRANS_RULE_ID_*]
	NET_TRANS_RULE_ID_IPV4 = 0xe002
	NET_TRANS_RULE_ID_IPV6 = 0xe003
	NET_TRANS_RULE_ID_TCP  = 0xe004
	NET_TRANS_RULE_ID_IB   = 0xe005
	NET_TRANS_RULE_ID_UDP  = 0xe006
)
