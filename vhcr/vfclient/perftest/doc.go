// Package perftest is what a user runs on a host to see an RDMA device
// move data, over the VF driver model (vfdrv) instead of libibverbs:
// ibv_rc_pingpong's and ibv_ud_pingpong's loop (PingPong), ib_write_bw's
// RDMA_WRITE stream (WriteBW) and a SEND message-rate stream (SendRate
// against ReceiveLoop). An Endpoint is one end on one VF; the two ends
// exchange a Dest out of band (in one process, or over TCP as
// ibv_rc_pingpong does: vfctl pingpong). The loops post, poll and wait as
// the examples do and allocate nothing per message.
package perftest
