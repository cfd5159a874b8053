// Package clidoc generates shell completion (bash, zsh, fish) and man pages
// for vhcrd and vfctl from their command trees: each command's name,
// summary, subcommands (actions) and the flag.FlagSet it really parses,
// recorded by running the command with --help (Record). Nothing here is
// written by hand per command, so what completes and what the man page
// lists is what the tools accept. Completion is what `TOOL completion
// SHELL` prints, ManPages what `TOOL man DIR` writes.
package clidoc
