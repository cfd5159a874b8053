package vmtest

import (
	"fmt"
	"strings"
	"time"
)

// faultRule is one `vhcrd fault add` of a case, on the guest's VF.
type faultRule struct {
	Kind       string
	Op, Comm   string // the opcode or comm command it fires at ("" for the kind's default)
	Nth        int    // the occurrence (0: the first)
	Args       []string
	At         string // the point it is added at ("" for the case's point)
	Every      bool
	ProbSeeded string // "P S": --prob P --seed S
}

func (r faultRule) args() []string {
	a := []string{"--kind", r.Kind, "--vf", fmt.Sprint(guestVF)}
	if r.Op != "" {
		a = append(a, "--op", r.Op)
	}
	if r.Comm != "" {
		a = append(a, "--comm", r.Comm)
	}
	switch {
	case r.Every:
		a = append(a, "--every")
	case r.ProbSeeded != "":
		var p, s string
		fmt.Sscan(r.ProbSeeded, &p, &s)
		a = append(a, "--prob", p, "--seed", s)
	case r.Nth > 0:
		a = append(a, "--nth", fmt.Sprint(r.Nth))
	}
	for _, kv := range r.Args {
		a = append(a, "--arg", kv)
	}
	return a
}

// faultCase is one row of the matrix: the rules, the point they are
// added at, what the driver's source says the reaction is and why.
type faultCase struct {
	Name   string
	Point  string
	Rules  []faultRule
	Expect string
	Why    string // the source (Linux 6.1) that decides the reaction
	// Slow: the reaction waits for a command's timeout (70 s): the steady
	// state lasts past it and the case is not in the CI subset.
	Slow bool
	// Settle overrides the steady state's length (default: 1.5 s, or 90
	// s for Slow cases).
	Settle time.Duration
	CI     bool // in the CI subset
	// Against, if set, is the reaction against today's vhcrd where it
	// differs from the driver's source (Expect), and AgainstWhy why: the
	// run is compared with it, and the table shows both.
	Against, AgainstWhy string
	// FlagsAtRest: the case needs the VF's next FLAGS reset request to be
	// a 0 → 1 toggle of bit 16 (faultRun.flagsAtRest says why).
	FlagsAtRest bool
	// Config: the rules are the `faults` section of the configuration of a
	// vhcrd started for this case alone (armed at its start), not added
	// over the admin socket; they all belong to the case's point.
	Config bool
	// Replays names an earlier case with the same rules and seed: the run
	// must show the same first fault (occurrence and command) and the same
	// reaction (faultReplays).
	Replays string
}

// want is the reaction the run must show.
func (c faultCase) want() string {
	if c.Against != "" {
		return c.Against
	}
	return c.Expect
}

func (c faultCase) settle() time.Duration {
	switch {
	case c.Settle != 0:
		return c.Settle
	case c.Slow:
		return 90 * time.Second
	}
	return 1500 * time.Millisecond
}

// limit is how long a step may go without a console line.
func (c faultCase) limit() time.Duration {
	if c.Slow {
		return 2 * faultStepLimit
	}
	return faultStepLimit
}

// rulesAt are c's rules added at point.
func (c faultCase) rulesAt(point string) []faultRule {
	var out []faultRule
	for _, r := range c.Rules {
		if at := r.At; at == point || at == "" && c.Point == point {
			out = append(out, r)
		}
	}
	return out
}

// The statuses of a command's answer (mlx4 CMD_STAT_*), with what
// mlx4_status_to_errno makes of them.
var faultStatuses = []string{
	"INTERNAL_ERR", "BAD_OP", "BAD_PARAM", "BAD_SYS_STATE", "BAD_RESOURCE", "RESOURCE_BUSY",
	"EXCEED_LIM", "BAD_RES_STATE", "BAD_INDEX", "BAD_NVMEM", "ICM_ERROR", "BAD_QP_STATE",
	"BAD_SEG_PARAM", "REG_BOUND", "LAM_NOT_PRE", "BAD_PKT", "BAD_SIZE", "MULTI_FUNC_REQ",
}

// pointRestore: rules added after the unbind (before the faults are
// cleared and the clean round), to put a port's attribute back.
const pointRestore = "restore"

// Source references of the expectations (Linux 6.1, drivers/net/ethernet/
// mellanox/mlx4 unless named).
const (
	whyProbeCap     = "main.c mlx4_slave_cap: the QUERY_* error is returned, \"... command failed, aborting\" and \"Failed to obtain slave caps\"; mlx4_load_one unwinds"
	whyStatusVerb   = "cmd.c mlx4_slave_cmd: ret = mlx4_status_to_errno(vhcr->status), no reset (the slave path never calls mlx4_closing_cmd_fatal_error); mlx4_ib __mlx4_ib_query_port returns it and the sysfs read fails"
	whyTimeoutEvent = "cmd.c mlx4_comm_cmd_wait: wait_for_completion_timeout(MLX4_COMM_TIME + 60 s) expires, \"communication channel command 0x5 (op=0x%x) timed out\" → mlx4_enter_error_state → mlx4_reset_slave (FLAGS handshake) → catas.c poll_catas \"Internal error mark was detected on device\" → mlx4_restart_one"
	whyCatas        = "catas.c poll_catas (every 5 s) reads bit 17: \"Internal error detected on the communication channel\" → mlx4_handle_error_state → mlx4_enter_error_state → mlx4_reset_slave \"VF Reset succeed\" → mlx4_restart_one \"ret=0\""
	whyBUG          = "catas.c mlx4_reset_slave waits MLX4_COMM_TIME (10 s) for FLAGS bit 8: \"Fail to send reset over the communication channel\", -ETIMEDOUT → mlx4_enter_error_state: BUG_ON(1) (the PCI channel is not offline)"
	whyPortEvent    = "eq.c mlx4_eq_int: PORT_CHANGE / PORT_MNG_CHG → mlx4_dispatch_event → mlx4_ib's event handler (main.c mlx4_ib_event, mad.c handle_port_mgmt_change_event) → ib_dispatch_event; sysfs reads the new value (ib_query_port by MAD_IFC, or ib_core's cache)"
	whyTeardown     = "the teardown logs the failed command and goes on (eq.c mlx4_free_eq \"HW2SW_EQ failed (%d)\"; the slave path has no closing-command reset); the final RESET (mlx4_slave_exit) releases all"
)

// faultCases is the matrix (docs/faults.md, "The matrix", explains each
// expectation at more length).
var faultCases = func() []faultCase {
	cs := []faultCase{
		{Name: "baseline", Point: PointSteady, Expect: classUnaffected,
			Why: "no fault: the round itself is clean"},

		// At bind (the probe).
		{Name: "status-query-func-cap", Point: PointBind, CI: true,
			Rules:  []faultRule{{Kind: "status", Op: "QUERY_FUNC_CAP", Args: []string{"status=BAD_PARAM"}}},
			Expect: classProbeFailed, Why: whyProbeCap + " (\"QUERY_FUNC_CAP general command failed, aborting (-22)\")"},
		{Name: "status-query-dev-cap", Point: PointBind,
			Rules:  []faultRule{{Kind: "status", Op: "QUERY_DEV_CAP", Args: []string{"status=INTERNAL_ERR"}}},
			Expect: classProbeFailed, Why: whyProbeCap + " (\"QUERY_DEV_CAP command failed, aborting\")"},
		{Name: "status-nop-busy", Point: PointBind,
			Rules:  []faultRule{{Kind: "status", Op: "NOP", Args: []string{"status=RESOURCE_BUSY"}}},
			Expect: classProbeFailed, Why: "main.c mlx4_setup_hca: mlx4_NOP fails → \"NOP command failed to generate MSI-X interrupt IRQ %d)\", \"Trying again without MSI-X\"; mlx4_load_one retries without MSI-X only when !mlx4_is_mfunc"},
		{Name: "reset-version", Point: PointBind, CI: true,
			Rules:  []faultRule{{Kind: "reset_version", Comm: "RESET"}},
			Expect: classProbeFailed, Why: "main.c mlx4_init_slave: MLX4_COMM_GET_IF_REV differs → \"slave driver version is not supported by the master\", RESET, -EIO, \"Failed to initialize slave\""},
		{Name: "reset-never", Point: PointBind,
			Rules:  []faultRule{{Kind: "never", Comm: "RESET"}},
			Expect: classProbeFailed, Why: "RESET never executed nor answered: cmd.c mlx4_comm_cmd_poll times out in MLX4_COMM_TIME (10 s) → MLX4_DELAY_RESET_SLAVE; main.c mlx4_init_slave \"slave is currently in the middle of FLR - Deferring probe\" (-EPROBE_DEFER); drivers/base/dd.c device_driver_attach returns it to the sysfs bind as -EAGAIN and queues no retry: not bound. The case's clean bind is the driver's recovery: cmd.c sync_toggles finds the toggles apart for 5 s, \"recovering from previously mis-behaved VM\", writes 0 to slave_read (clearing the PF's unanswered mark, bit 30) and slave_write, and its RESET (the same word as the unanswered one) is served"},
		{Name: "reset-toggle-never", Point: PointBind,
			Rules:  []faultRule{{Kind: "toggle_never", Comm: "RESET"}},
			Expect: classProbeFailed, Why: "RESET executed but its toggle never flipped: as reset-never, cmd.c mlx4_comm_cmd_poll times out (10 s) → MLX4_DELAY_RESET_SLAVE, \"Deferring probe\", the sysfs bind gets -EAGAIN (dd.c device_driver_attach, no retry); the clean bind goes through sync_toggles' recovery and its RESET, the same word, is served"},
		{Name: "vhcr0-never", Point: PointBind, Slow: true,
			Rules:  []faultRule{{Kind: "never", Comm: "VHCR0"}},
			Expect: classProbeFailed, Why: "cmd.c mlx4_comm_cmd_poll: \"Communication channel command 0x1 timed out\" → mlx4_enter_error_state (reset over FLAGS); main.c mlx4_init_slave goto err: RESET, -EIO"},
		{Name: "pf-offline", Point: PointBind,
			Rules:  []faultRule{{Kind: "pf_offline", Args: []string{"us=40s"}}},
			Expect: classProbeFailed, Why: "main.c mlx4_comm_check_offline: FLAGS bit 9 for MLX4_COMM_OFFLINE_TIME_OUT (30 s) → \"Communication channel is offline.\", \"PF is not responsive, skipping initialization\""},
		{Name: "pf-offline-short", Point: PointBind,
			Rules:  []faultRule{{Kind: "pf_offline", Args: []string{"us=2s"}}},
			Expect: classUnaffected, Why: "main.c mlx4_comm_check_offline polls every 100 ms for 30 s: a 2 s offline is waited out"},
		{Name: "func-cap-num-ports", Point: PointBind,
			Rules:  []faultRule{{Kind: "outbox_field", Op: "QUERY_FUNC_CAP", Args: []string{"field=func_cap.num_ports", "value=3"}}},
			Expect: classProbeFailed, Why: "main.c mlx4_slave_cap: \"HCA has %d ports, but we only support %d, aborting\" (MLX4_MAX_PORTS 2)"},
		{Name: "dev-cap-page-size", Point: PointBind,
			Rules:  []faultRule{{Kind: "outbox_field", Op: "QUERY_DEV_CAP", Args: []string{"field=dev_cap.log_page_size", "value=16"}}},
			Expect: classProbeFailed, Why: "main.c mlx4_dev_cap (from mlx4_slave_cap): \"HCA minimum page size of %d bigger than kernel PAGE_SIZE of %ld, aborting\" → \"QUERY_DEV_CAP command failed, aborting\""},
		{Name: "dev-cap-uar-size", Point: PointBind,
			Rules:  []faultRule{{Kind: "outbox_field", Op: "QUERY_DEV_CAP", Args: []string{"field=dev_cap.uar_size", "value=10"}}},
			Expect: classProbeFailed, Why: "main.c mlx4_dev_cap (from mlx4_slave_cap): uar_size 1 GiB: \"HCA reported UAR size of 0x%x bigger than PCI resource 2 size of 0x%llx, aborting\" → \"QUERY_DEV_CAP command failed, aborting\""},
		{Name: "internal-err-before-probe", Point: PointBind,
			Rules:  []faultRule{{Kind: "internal_err"}},
			Expect: classUnaffected, Why: "main.c mlx4_init_slave sends RESET first; the PF's RESET acknowledgement rewrites slave_read (toggle | version), clearing bit 17 before the catas poll starts"},
		{Name: "nop-eqe-drop", Point: PointBind, Slow: true,
			Rules:  []faultRule{{Kind: "eqe_drop", Op: "NOP"}},
			Expect: classProbeFailed, Why: "main.c mlx4_setup_hca's NOP (the IRQ test) times out: " + whyTimeoutEvent[:strings.Index(whyTimeoutEvent, " → catas.c")] + "; mlx4_NOP returns -EIO → \"NOP command failed to generate MSI-X interrupt\", the probe unwinds"},
		{Name: "nop-msix-drop", Point: PointBind, Slow: true,
			Rules:  []faultRule{{Kind: "msix_drop", Op: "NOP"}},
			Expect: classProbeFailed, Why: "as nop-eqe-drop: the EQE is written but no interrupt runs mlx4_eq_int; nothing else polls the EQ"},

		// Steady state: the port-state reads are MAD_IFC commands.
		{Name: "mad-ifc-eqe-status", Point: PointSteady, CI: true,
			Rules:  []faultRule{{Kind: "eqe_status", Op: "MAD_IFC", Args: []string{"status=BAD_PARAM"}}},
			Expect: classError, Why: "cmd.c mlx4_cmd_event: context->result from the EQE's status; mlx4_comm_cmd_wait \"command 0x5 failed: fw status = 0x3\" (not a closing command: no reset); mlx4_slave_cmd \"failed execution of VHCR_POST command opcode 0x24\""},
		{Name: "mad-ifc-status-seeded", Point: PointSteady, Settle: 3 * time.Second,
			Rules:  []faultRule{{Kind: "status", Op: "MAD_IFC", Args: []string{"status=BAD_PARAM"}, ProbSeeded: "0.25 21"}},
			Expect: classError, Why: whyStatusVerb + "; a quarter of the MAD_IFCs, chosen by the rule's seed"},
		{Name: "mad-ifc-delay-short", Point: PointSteady,
			Rules:  []faultRule{{Kind: "delay", Op: "MAD_IFC", Args: []string{"us=200ms"}}},
			Expect: classUnaffected, Why: "cmd.c mlx4_comm_cmd_wait waits up to 70 s: 200 ms is a slow command"},
		{Name: "mad-ifc-delay-past-timeout", Point: PointSteady, Slow: true,
			Rules:  []faultRule{{Kind: "delay", Op: "MAD_IFC", Args: []string{"us=75s"}}},
			Expect: classRecovered, Why: whyTimeoutEvent},
		{Name: "mad-ifc-never", Point: PointSteady, Slow: true,
			Rules:  []faultRule{{Kind: "never", Op: "MAD_IFC"}},
			Expect: classRecovered, Why: whyTimeoutEvent},
		{Name: "mad-ifc-eqe-drop", Point: PointSteady, Slow: true,
			Rules:  []faultRule{{Kind: "eqe_drop", Op: "MAD_IFC"}},
			Expect: classRecovered, Why: whyTimeoutEvent},
		{Name: "mad-ifc-eqe-dup", Point: PointSteady,
			Rules:  []faultRule{{Kind: "eqe_dup", Op: "MAD_IFC"}},
			Expect: classUnaffected, Why: "cmd.c mlx4_cmd_event: the copy carries the same token; it completes the context again (its count is reset by the next command's reinit_completion) or, once the next command took the context (token += token_mask + 1), is ignored"},
		{Name: "mad-ifc-eqe-token", Point: PointSteady, Slow: true,
			Rules:  []faultRule{{Kind: "eqe_token", Op: "MAD_IFC"}},
			Expect: classRecovered, Why: "cmd.c mlx4_cmd_event: token != context->token → ignored (\"previously timed out command completing at long last\"); then " + whyTimeoutEvent},
		{Name: "mad-ifc-toggle-never", Point: PointSteady, Slow: true,
			Rules:  []faultRule{{Kind: "toggle_never", Op: "MAD_IFC"}},
			Expect: classRecovered, Why: "cmd.c mlx4_comm_cmd_wait: the EQE completes the command, the comm-ready wait spins 70 s and returns 0; the next post's toggle equals the PF's: the PF resets the VF (bit 17) → " + whyCatas},
		{Name: "mad-ifc-toggle-twice", Point: PointSteady, Slow: true,
			Rules:  []faultRule{{Kind: "toggle_twice", Op: "MAD_IFC"}},
			Expect: classRecovered, Why: "as mad-ifc-toggle-never: the EQE completes the command; the toggle flipped back leaves comm_pending true; the next post is a violation → bit 17 → catas reset and restart"},
		{Name: "mad-ifc-no-writeback", Point: PointSteady,
			Rules:  []faultRule{{Kind: "no_writeback", Op: "MAD_IFC"}},
			Expect: classUnaffected, Why: "cmd.c mlx4_slave_cmd zeroes vhcr->status before the post: the unwritten status reads OK; MAD_IFC's answer is in the outbox, which the PF wrote"},
		{Name: "mad-ifc-flr-mid", Point: PointSteady,
			Rules:  []faultRule{{Kind: "flr_mid", Op: "MAD_IFC", Args: []string{"us=100ms"}}},
			Settle: 20 * time.Second,
			Expect: classRecovered, Why: "the command is never answered; " + whyCatas + " (mlx4_cmd_wake_completions fails the waiting MAD_IFC)"},
		{Name: "internal-err", Point: PointSteady, CI: true, Settle: 20 * time.Second,
			Rules:  []faultRule{{Kind: "internal_err"}},
			Expect: classRecovered, Why: whyCatas},
		{Name: "vf-reset", Point: PointSteady, Settle: 20 * time.Second,
			Rules:  []faultRule{{Kind: "vf_reset"}},
			Expect: classRecovered, Why: whyCatas},
		{Name: "flags-no-ack", Point: PointSteady, FlagsAtRest: true, CI: true, Settle: 25 * time.Second,
			Rules:  []faultRule{{Kind: "flags_no_ack"}, {Kind: "internal_err"}},
			Expect: classOops, Why: whyBUG},
		{Name: "flags-late-ack-3s", Point: PointSteady, FlagsAtRest: true, Settle: 25 * time.Second,
			Rules:  []faultRule{{Kind: "flags_late_ack", Args: []string{"us=3s"}}, {Kind: "internal_err"}},
			Expect: classRecovered, Why: "catas.c mlx4_reset_slave polls FLAGS for 10 s: an ack after 3 s is \"VF Reset succeed\"; then " + whyCatas[strings.Index(whyCatas, "mlx4_restart_one"):]},
		{Name: "flags-late-ack-12s", Point: PointSteady, FlagsAtRest: true, Settle: 30 * time.Second,
			Rules:  []faultRule{{Kind: "flags_late_ack", Args: []string{"us=12s"}}, {Kind: "internal_err"}},
			Expect: classOops, Why: whyBUG + " (the ack comes 2 s after the driver gave up)"},
		{Name: "flags-ack-no-reset", Point: PointSteady, FlagsAtRest: true, Settle: 20 * time.Second,
			Rules:  []faultRule{{Kind: "flags_ack_no_reset"}, {Kind: "internal_err"}},
			Expect: classRecovered, Why: "catas.c mlx4_reset_slave succeeds; the restart's probe sends RESET, which releases what the PF kept (main.c mlx4_init_slave)"},
		{Name: "no-vf-reset-cap", Point: PointSteady, Settle: 20 * time.Second,
			Rules:  []faultRule{{Kind: "no_vf_reset_cap", At: PointBind}, {Kind: "internal_err"}},
			Expect: classOops, Why: "main.c mlx4_reset_vf_support reads COMM_CHAN_CAPS at probe; catas.c mlx4_reset_slave: \"VF reset is not supported\", -EOPNOTSUPP → mlx4_enter_error_state BUG_ON(1)"},
		{Name: "eq-overrun", Point: PointSteady,
			Rules:  []faultRule{{Kind: "eq_overrun", Args: []string{"eqn=0"}}},
			Expect: classUnaffected, Why: "eq.c get_async_ev_mask: MLX4_ASYNC_EVENT_MASK has no MLX4_EVENT_TYPE_EQ_OVERFLOW, so the VF's MAP_EQ never maps it and the PF has no EQ to post it to (mlx4_eq_int's \"EQ overrun on EQN %d\" is never reached on a VF)"},
		{Name: "eq-full", Point: PointSteady, Slow: true,
			Rules:  []faultRule{{Kind: "eq_full", Args: []string{"count=1"}}},
			Expect: classRecovered, Why: "the next EQE, the next MAD_IFC's completion, is lost: " + whyTimeoutEvent},
		{Name: "msix-drop", Point: PointSteady, Slow: true,
			Rules:  []faultRule{{Kind: "msix_drop", Args: []string{"count=1"}}},
			Expect: classRecovered, Why: "the next MAD_IFC's EQE is written but no interrupt runs mlx4_eq_int (nothing else posts an EQE meanwhile: slave_cmd_mutex): " + whyTimeoutEvent},
		{Name: "msix-spurious", Point: PointSteady, CI: true,
			Rules:  []faultRule{{Kind: "msix_spurious", Args: []string{"vector=0"}}},
			Expect: classUnaffected, Why: "eq.c mlx4_msi_x_interrupt → mlx4_eq_int finds no software-owned EQE, eq_set_ci re-arms; it returns IRQ_HANDLED (\"MSI-X vectors always belong to us\")"},
		{Name: "port-flap", Point: PointSteady, Settle: 4 * time.Second, CI: true,
			Rules:  []faultRule{{Kind: "port_flap", Args: []string{"port=1", "us=1s"}}},
			Expect: classFollowed, Why: whyPortEvent + " (IB_EVENT_PORT_ERR, then IB_EVENT_PORT_ACTIVE: ports/1/state DOWN, then ACTIVE)"},
		{Name: "lid-change", Point: PointSteady,
			Rules: []faultRule{{Kind: "lid_change", Args: []string{"port=1", "lid=0x25"}},
				{Kind: "lid_change", Args: []string{"port=1", "lid=0x5"}, At: pointRestore}},
			Expect: classFollowed, Why: whyPortEvent + " (IB_EVENT_LID_CHANGE; ports/1/lid)"},
		{Name: "sm-lid-change", Point: PointSteady,
			Rules: []faultRule{{Kind: "sm_lid_change", Args: []string{"port=1", "lid=0x7"}},
				{Kind: "sm_lid_change", Args: []string{"port=1", "lid=0x1"}, At: pointRestore}},
			Expect: classFollowed, Why: "no event (mlx4's PF sends none); ports/1/sm_lid is ib_query_port → MAD_IFC PortInfo, which shows the new SM LID"},
		{Name: "pkey-change", Point: PointSteady,
			Rules: []faultRule{{Kind: "pkey_change", Args: []string{"port=1", "index=0", "pkey=0x7fff"}},
				{Kind: "pkey_change", Args: []string{"port=1", "index=0", "pkey=0xffff"}, At: pointRestore}},
			Expect: classFollowed, Why: whyPortEvent + " (IB_EVENT_PKEY_CHANGE → ib_cache refresh; ports/1/pkeys/0)"},
		{Name: "guid-change", Point: PointSteady,
			Rules: []faultRule{{Kind: "guid_change", Args: []string{"port=1", "guid=0x0002c80300a0beef"}},
				{Kind: "guid_change", Args: []string{"port=1", "guid=0x0002c80300a0b0c1"}, At: pointRestore}},
			Expect: classFollowed, Why: whyPortEvent + " (GUID_INFO → IB_EVENT_GID_CHANGE → ib_cache; ports/1/gids/0)"},
		{Name: "gid-prefix-change", Point: PointSteady,
			Rules: []faultRule{{Kind: "gid_prefix_change", Args: []string{"port=1", "prefix=0xfe80000000000001"}},
				{Kind: "gid_prefix_change", Args: []string{"port=1", "prefix=0xfe80000000000000"}, At: pointRestore}},
			Expect: classFollowed, Why: whyPortEvent + " (GID_PFX_CHANGE → IB_EVENT_GID_CHANGE; ports/1/gids/0)"},
		{Name: "client-rereg", Point: PointSteady,
			Rules:  []faultRule{{Kind: "client_rereg", Args: []string{"port=1"}}},
			Expect: classUnaffected, Why: "mlx4_ib mad.c: IB_EVENT_CLIENT_REREGISTER to the SA clients; no SA client runs in the guest and no sysfs attribute changes"},

		// Replay and the configuration file (faults_seeded_test.go). The
		// finding of flags-no-ack reached at the MAD_IFC the rule's seed
		// picks: SplitMix64 seeded 25 draws under 0.1 first at the 6th
		// MAD_IFC after the rule is armed, then at the 18th
		// (TestSeededFaultCases pins it). The steady state's MAD_IFCs are the
		// guest's reads alone, in a fixed order: ports/1/state, ports/2/state
		// every 250 ms, each sysfs.c state_show → ib_query_port →
		// mlx4_ib_query_port → ib_link_query_port, a PortInfo MAD_IFC
		// (attr_mod the port) and, the port being QDR (the configuration's),
		// an ExtendedPortInfo one (the FDR10 check); nothing else of the VF
		// posts while bound and idle (the catas poll reads slave_read). So the
		// 6th is the second round's port 1 ExtendedPortInfo in every run.
		{Name: "flags-no-ack-seeded", Point: PointSteady, FlagsAtRest: true, Settle: 25 * time.Second,
			Rules:  []faultRule{{Kind: "flags_no_ack"}, {Kind: "internal_err", Op: "MAD_IFC", ProbSeeded: "0.1 25"}},
			Expect: classOops, Why: "bit 17 comes in the acknowledgement of the MAD_IFC the seed picks (cmd.c mlx4_comm_cmd_wait does not look at it); " + whyCatas[:strings.Index(whyCatas, " → mlx4_reset_slave")] + "; " + whyBUG},
		{Name: "flags-no-ack-seeded-replay", Point: PointSteady, FlagsAtRest: true, Settle: 25 * time.Second, Replays: "flags-no-ack-seeded",
			Rules:  []faultRule{{Kind: "flags_no_ack"}, {Kind: "internal_err", Op: "MAD_IFC", ProbSeeded: "0.1 25"}},
			Expect: classOops, Why: "flags-no-ack-seeded again, in a new guest: the same seed fires at the same MAD_IFC and the driver reacts the same"},
		{Name: "config-status-query-func-cap", Point: PointBind, Config: true,
			Rules:  []faultRule{{Kind: "status", Op: "QUERY_FUNC_CAP", Nth: 1, Args: []string{"status=BAD_PARAM"}}},
			Expect: classProbeFailed, Why: "status-query-func-cap's rule from the configuration's faults section, armed when vhcrd starts: the guest's first QUERY_FUNC_CAP is its probe's; " + whyProbeCap + " (\"QUERY_FUNC_CAP general command failed, aborting (-22)\")"},

		// At unbind (the teardown).
		{Name: "hw2sw-eq-status", Point: PointUnbind, CI: true,
			Rules:  []faultRule{{Kind: "status", Op: "HW2SW_EQ", Args: []string{"status=BAD_PARAM"}}},
			Expect: classError, Why: whyTeardown},
		{Name: "hw2sw-cq-status", Point: PointUnbind,
			Rules:  []faultRule{{Kind: "status", Op: "HW2SW_CQ", Args: []string{"status=INTERNAL_ERR"}}},
			Expect: classError, Why: "cq.c mlx4_cq_free: \"HW2SW_CQ failed (%d) for CQN %06x\"; " + whyTeardown[strings.Index(whyTeardown, "the final"):]},
		{Name: "close-port-status", Point: PointUnbind,
			Rules:  []faultRule{{Kind: "status", Op: "CLOSE_PORT", Args: []string{"status=BAD_PARAM"}}},
			Expect: classUnaffected, Why: "mlx4_ib main.c mlx4_ib_remove → mlx4_CLOSE_PORT's result is not checked and not logged"},
		{Name: "hw2sw-eq-never", Point: PointUnbind, Slow: true,
			Rules:  []faultRule{{Kind: "never", Op: "HW2SW_EQ"}},
			Expect: classRecovered, Why: "by then the commands are polled (mlx4_cmd_use_polling): cmd.c mlx4_comm_cmd_poll \"Communication channel command 0x5 timed out\" → mlx4_enter_error_state, \"device was reset successfully\"; the rest of the teardown gets mlx4_internal_err_ret_value (0 for HW2SW_*, FREE_RES, CLOSE_*) and the unbind completes"},
		{Name: "internal-err-unbind", Point: PointUnbind, Settle: 2 * time.Second,
			Rules:  []faultRule{{Kind: "internal_err"}},
			Expect: classRecovered, Why: "main.c mlx4_unload_one: the catas poll is stopped first; intf.c mlx4_unregister_device reads bit 17 (mlx4_comm_internal_err) → mlx4_enter_error_state \"device is going to be reset\"; the teardown's commands get mlx4_internal_err_ret_value"},
	}
	for _, st := range faultStatuses {
		c := faultCase{Name: "mad-ifc-status-" + st, Point: PointSteady,
			Rules:  []faultRule{{Kind: "status", Op: "MAD_IFC", Args: []string{"status=" + st}}},
			Expect: classError, Why: whyStatusVerb,
			CI: st == "BAD_PARAM"}
		cs = append(cs, c)
	}
	return cs
}()
