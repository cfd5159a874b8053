package pfstate

// SlaveReadUnanswered is vhcrd's mark in a VF's slave_read (a real PF never
// sets it): the PF took in the command in slave_write and left it
// unanswered on purpose (the faults never, toggle_never, toggle_twice), the
// toggle as it was. It is a bit the driver ignores (outside
// mlx4.CommSlaveReadDriverBits) and one a VF clears with any write of its
// own: sync_toggles (cmd.c) writes 0 to slave_read before it writes 0 to
// slave_write and sends RESET again, which is how the PF, which sees
// values and not writes, tells "the same word written again" from "the
// word it already served". It lives in the VF's BAR region, which outlasts
// the PF: a restarted PF that finds it does not serve that word again.
const SlaveReadUnanswered = 1 << 30
