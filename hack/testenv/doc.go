// Package testenv decides what a test does when the machine lacks something
// it needs — a tool, a library, a kernel: it skips with the reason, so that a
// developer's `go test ./...` passes without them, except under CI (CI=true),
// where the environment is meant to have everything and a skip would let a
// tier pass without running, so it fails.
package testenv
