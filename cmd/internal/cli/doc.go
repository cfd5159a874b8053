// Package cli is the --help and usage-error form vhcrd and vfctl share:
// every level of their command trees prints its synopsis, subcommands or
// actions, flags in the GNU form (--flag ARG, written with flag.VisitAll),
// examples and exit statuses to stdout and exits 0; a usage error is one
// line on stderr with a pointer to --help and exits 2. VHCRD_BAR, VHCRD_DMA
// and VHCRD_METRICS_ADDR set the defaults of --bar, --dma and
// --metrics-addr (Default); FlagArg and FlagDefault keep Go's type names
// and zero values out of the flags' help.
package cli
