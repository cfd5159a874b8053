// Package guestinit is what the VM tier's guest programs (../guest and
// ../mlx4guest) share as a machine's /init: the mounts and console of PID 1,
// the "vmtest: " console lines the host reads, the PASS or FAIL verdict,
// and the power-off that ends the machine, since PID 1 must never return.
package guestinit
