// Package vfdrv is a VF driver model over a *vfclient.VF: what the mlx4 VF
// driver does with its command path once the comm channel is up.
//
// It owns
//   - the VF side of the mailboxes: it fills the EQ, CQ, SRQ and QP
//     contexts, the modify-QP mailbox, the MPT entry and the WRITE_MTT inbox
//     with package mlx4's encoders (the PF decodes them with the same
//     codecs), and decodes EQEs (§3.1) with mlx4.DecodeEQE, the codec the
//     PF builds its events with;
//   - the resource lifecycles a driver runs through real VHCR_POSTs: MTT
//     allocation and WRITE_MTT of ring pages, EQ create/map/destroy, CQ,
//     SRQ, memory regions (MPT) and QPs through RST→INIT→RTR→RTS, RTS2RTS,
//     the SQD transitions, 2ERR, 2RST, QUERY_QP and destroy;
//   - event mode, the early way's 'e' bit: an EQ consumer in the VF's own DMA
//     memory (32-byte EQEs, owner bit flipping per pass, mlx4's next_eqe_sw
//     rule), per-VF tokens 1, 2, 3, ..., acceptance then completion by EQE
//     matched by token in posting order, pipelining up to a bound (Submit,
//     Wait, Pipeline; one outbox page per position in flight), and the EQ
//     consumer-index doorbell in the VF's BAR region where mlx4 has it
//     (mlx4.EQDoorbellOffset: UAR page eqn/4, 0x800 + 8*(eqn%4); BE32, consumer
//     index 23:0, arm bit 31 only for a driver that waits on its vector's
//     eventfd, Options.IRQ), with an in-place
//     re-creation of the EQ for PFs that do not read it (RecycleEQ); ring
//     buffers are zeroed, as Linux's, and rely on the PF's SW2HW_EQ to make
//     every EQE hardware-owned;
//   - event mode as Linux's mlx4_core speaks it (Options.Completions =
//     CompletionsMlx4): token 0xffff, one command at a time, the CMD EQE
//     matched against the context token 1, 2, 3, ... from RESET, status
//     and immediate output read from the vHCR the PF wrote back;
//   - adoption of objects another process of the same VF created, learnt
//     from the PF with QUERY_EQ/CQ/MPT/QP and READ_MTT (objects live in the
//     PF, so a vfctl process can pick up where the previous one stopped);
//   - the VF's memory for rings and buffers: pages taken once from
//     VF.AllocPages and recycled;
//   - the verbs (verbs.go, wq.go, dbrec.go), as rdma-core's mlx4 provider
//     drives the device: CreateVerbsCQ/CreateVerbsQP size and lay out the
//     rings as libmlx4 does (the larger stride first, sq_spare_wqes,
//     ownership and stamps at RESET→INIT), with doorbell records in the
//     VF's memory and the contexts naming them, the UAR (usr_page,
//     Options.UAR) and the MTT; PostSend writes a WQE's body, then its
//     owner word, then rings qpn << 8 at UAR + MLX4_SEND_DOORBELL;
//     PostRecv ends short scatter lists with MLX4_INVALID_LKEY and writes
//     the RQ record; Poll takes CQEs by the owner rule and writes set_ci;
//     Arm writes arm_db and the UAR words; WaitEvent takes a completion EQE
//     from the CQ's EQ (on the vector's eventfd with Options.IRQ). Post and
//     poll allocate nothing and make no system call.
//
// Poll mode is vfclient.VF.Post. A Driver, like the VF under it, is used by one
// goroutine. The PF treats the VF as untrusted; this package is the
// well-behaved driver, but it does not trust the PF's replies either: odd
// EQEs, tokens and outboxes produce errors and counters, never panics.
package vfdrv
