// Package cli is the --help and usage-error form vhcrd and vfctl share:
// every level of their command trees prints its synopsis, subcommands or
// actions, flags in the GNU form (--flag ARG, written with flag.VisitAll),
// examples and exit statuses to stdout and exits 0; a usage error is one
// line on stderr with a pointer to --help and exits 2.
package cli
