// Package taptest makes the network namespaces that tests put TAP devices
// in, with iproute2's `ip netns`, so that nothing they send leaves the
// machine.
package taptest
