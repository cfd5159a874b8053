// Package buildinfo is the version and VCS revision a binary was built from,
// for `vhcrd version`, `vfctl version` and metrics' vhcrd_build_info. It
// imports nothing of vhcrd, so that a tool can print its version without
// linking the PF (metrics imports it, not the other way round).
//
// The build may set Version and Revision with
//
//	-ldflags '-X github.com/vhcrd/vhcrd/metrics/buildinfo.Revision=REV -X github.com/vhcrd/vhcrd/metrics/buildinfo.Version=V'
//
// as the Makefile and hack/deploy/Containerfile do.
package buildinfo
