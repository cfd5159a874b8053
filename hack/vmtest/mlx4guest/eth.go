package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/hack/vmtest"
)

// eth is ScenarioEth: mlx4_core binds with mlx4_en loaded (the VF's port 1
// is Ethernet), the VF's netdev comes up with the configured address, and
// the guest sends UDP datagrams to the subnet's broadcast address and to
// a peer no one answers (the kernel's ARP requests for it go out too).
// Every frame mlx4_en queued must complete: the transmit queue's byte
// queue limit shows nothing in flight, and the watchdog counted no
// timeout. Then the driver unbinds.
func (g *guest) eth() error {
	ec := g.cfg.Eth
	ip, absent := net.ParseIP(ec.Addr).To4(), net.ParseIP(ec.Absent).To4()
	if ip == nil || absent == nil {
		return fmt.Errorf("eth: addresses %q and %q are not IPv4", ec.Addr, ec.Absent)
	}
	say("bind 1: writing %q to new_id (the probe runs inside the write)", g.cfg.NewID)
	if err := stalled("bind 1", func() error { return os.WriteFile(driverDir+"/new_id", []byte(g.cfg.NewID), 0) }); err != nil {
		return fmt.Errorf("bind 1: %w", err)
	}
	g.bound = true
	dev, err := netdevOf(g.bdf, 30*time.Second)
	if err != nil {
		return err
	}
	sys := "/sys/class/net/" + dev
	say("eth: %s (%s) MAC %s", dev, filepath.Base(readLink(sys+"/device/driver/module")), readTrim(sys+"/address"))
	if err := ifUp(dev, ip, ec.Prefix); err != nil {
		return err
	}
	if err := waitFile(sys+"/carrier", "1", 20*time.Second); err != nil {
		return fmt.Errorf("eth: %s: no carrier: %w", dev, err)
	}
	if err := ethRings(dev, ec.RXRings); err != nil {
		return err
	}
	ll, err := linkLocal(dev, 20*time.Second)
	if err != nil {
		return err
	}
	say("eth: %s up with %s/%d and %s, carrier %s, operstate %s, mtu %s", dev, ec.Addr, ec.Prefix, ll, readTrim(sys+"/carrier"), readTrim(sys+"/operstate"), readTrim(sys+"/mtu"))
	wait("eth up")
	if ec.TCPRole != "" {
		if err := tcpCheck(vmtest.VerbsConfig{Role: ec.TCPRole, Net: &vmtest.NetConfig{Addr: ec.Addr, Prefix: ec.Prefix, Peer: ec.Ping}}); err != nil {
			return err
		}
	}
	ethPings(dev, ec)
	if ec.Verbs != nil {
		if err := g.roce(ec); err != nil {
			return err
		}
	}
	bcast := broadcast(ip, ec.Prefix)
	if err := sendUDP(bcast, absent, ec.Broadcasts); err != nil {
		return err
	}
	say("eth: sent %d datagrams to %v and %d to %v", ec.Broadcasts, bcast, ec.Broadcasts, absent)
	// Every queued frame's completion: the queue's byte queue limit holds
	// nothing in flight.
	inflight := sys + "/queues/tx-0/byte_queue_limits/inflight"
	drained := waitFile(inflight, "0", 15*time.Second)
	say("eth: %s tx_packets %s tx_bytes %s tx_errors %s tx_dropped %s, tx-0 inflight %s bytes, tx_timeout %s", dev,
		readTrim(sys+"/statistics/tx_packets"), readTrim(sys+"/statistics/tx_bytes"), readTrim(sys+"/statistics/tx_errors"),
		readTrim(sys+"/statistics/tx_dropped"), readTrim(inflight), readTrim(sys+"/queues/tx-0/tx_timeout"))
	// The queue was seen empty once: every frame queued before then has
	// completed (the stack may queue more since, its own IPv6 traffic).
	if drained != nil {
		return fmt.Errorf("eth: %s: transmit completions missing: %w", dev, drained)
	}
	if t := readTrim(sys + "/queues/tx-0/tx_timeout"); t != "0" {
		return fmt.Errorf("eth: %s: the watchdog timed out %s times", dev, t)
	}
	if err := ethAfter(dev, ec, bcast, absent); err != nil {
		return err
	}
	// mlx4_en's own counters, as a VF shows them (its rings' packets and
	// bytes, its port statistics).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	sayResult("ethtool", runTool(ctx, "ethtool", "/sbin/ethtool", "-S", dev), 30*time.Second)
	cancel()
	wait("eth sent")
	if err := stalled("unbind 1", func() error { return os.WriteFile(driverDir+"/unbind", []byte(g.bdf), 0) }); err != nil {
		return fmt.Errorf("unbind 1: %w", err)
	}
	say("unbound 1")
	return nil
}

// ethRings sets dev's RX ring count to n (none: as mlx4_en chose): with
// more than one its RX steering is an RSS indirection QP over the rings.
// mlx4_en restarts the port for it; the carrier comes back.
func ethRings(dev string, n int) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r := runTool(ctx, "ethtool", "/sbin/ethtool", "-L", dev, "rx", fmt.Sprint(n)); r.err != nil {
		return fmt.Errorf("ethtool -L %s rx %d: %w; last lines: %s", dev, n, r.err, strings.Join(r.last, " | "))
	}
	sayResult("ethtool", runTool(ctx, "ethtool", "/sbin/ethtool", "-l", dev), 30*time.Second)
	if err := waitFile("/sys/class/net/"+dev+"/carrier", "1", 20*time.Second); err != nil {
		return fmt.Errorf("eth: %s: no carrier after ethtool -L: %w", dev, err)
	}
	return nil
}

// ethPings pings the peer's IPv4 address and the link's all-nodes group
// ("ping", "ping6"), and the host's address on the uplink ("pinghost": out
// of the uplink to the host's stack and back in).
func ethPings(dev string, ec vmtest.EthConfig) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if ec.Ping != "" {
		sayResult("ping", runTool(ctx, "ping", "/bin/ping", "-n", "-c", "3", "-i", "0.5", "-W", "5", ec.Ping), 60*time.Second)
		sayResult("ping6", runTool(ctx, "ping6", "/bin/ping", "-6", "-n", "-c", "3", "-i", "0.5", "-W", "5", "ff02::1%"+dev), 60*time.Second)
	}
	if ec.Host != "" {
		sayResult("pinghost", runTool(ctx, "pinghost", "/bin/ping", "-n", "-c", "3", "-i", "0.5", "-W", "5", ec.Host), 60*time.Second)
	}
}

// ethAfter runs ScenarioEth's phases after the first datagrams: the
// spoofed MAC's and the link cycle's (EthConfig).
func ethAfter(dev string, ec vmtest.EthConfig, bcast, absent net.IP) error {
	sys := "/sys/class/net/" + dev
	if ec.SpoofMAC != "" {
		mac, err := net.ParseMAC(ec.SpoofMAC)
		if err != nil {
			return err
		}
		if err := setHWAddr(dev, mac); err != nil {
			return err
		}
		if err := sendUDP(bcast, absent, ec.Broadcasts); err != nil {
			return err
		}
		// Drained: the device has taken (and completed) every frame.
		if err := waitFile(sys+"/queues/tx-0/byte_queue_limits/inflight", "0", 15*time.Second); err != nil {
			return fmt.Errorf("eth: %s: transmit completions missing: %w", dev, err)
		}
		say("eth: %s MAC %s, sent %d datagrams to %v and %d to %v", dev, readTrim(sys+"/address"), ec.Broadcasts, bcast, ec.Broadcasts, absent)
		wait("eth spoofed")
	}
	if ec.LinkCycle {
		wait("eth link")
		if err := waitFile(sys+"/carrier", "0", 20*time.Second); err != nil {
			return fmt.Errorf("eth: %s: the link forced down: %w", dev, err)
		}
		wait("eth carrier down")
		before := readTrim(sys + "/statistics/tx_packets")
		// Without carrier the stack's queue is deactivated: nothing
		// reaches the device (which would drop it), and a send may fail.
		err := sendUDP(bcast, absent, ec.Broadcasts)
		say("eth: %s carrier %s, operstate %s, sent %d datagrams to %v (%v); tx_packets %s before, %s after",
			dev, readTrim(sys+"/carrier"), readTrim(sys+"/operstate"), ec.Broadcasts, bcast, err, before, readTrim(sys+"/statistics/tx_packets"))
		wait("eth down")
		if err := waitFile(sys+"/carrier", "1", 20*time.Second); err != nil {
			return fmt.Errorf("eth: %s: the link given back: %w", dev, err)
		}
		say("eth: %s carrier %s again", dev, readTrim(sys+"/carrier"))
	}
	return nil
}

// linkLocal waits for dev's IPv6 link-local address to be usable (its
// duplicate address detection over: /proc/net/if_inet6 without the
// tentative flag) and returns it.
func linkLocal(dev string, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		b, _ := os.ReadFile("/proc/net/if_inet6")
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l) // address, index, prefix length, scope, flags, name
			if len(f) != 6 || f[5] != dev || !strings.HasPrefix(f[0], "fe80") {
				continue
			}
			flags, _ := strconv.ParseUint(f[4], 16, 32)
			if flags&unix.IFA_F_TENTATIVE == 0 {
				a := make(net.IP, 16)
				for i := range a {
					v, _ := strconv.ParseUint(f[0][2*i:2*i+2], 16, 8)
					a[i] = byte(v)
				}
				return a.String(), nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("eth: %s has no usable link-local address after %v (if_inet6: %q)", dev, limit, b)
		}
		time.Sleep(50 * time.Millisecond) // procfs, polled
	}
}

// netdevOf waits for the network device of PCI device bdf.
func netdevOf(bdf string, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		ents, _ := os.ReadDir(filepath.Join("/sys/bus/pci/devices", bdf, "net"))
		if len(ents) > 0 {
			return ents[0].Name(), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("eth: no network device of %s after %v (is mlx4_en loaded? is port 1 Ethernet?)", bdf, limit)
		}
		time.Sleep(50 * time.Millisecond) // sysfs, polled
	}
}

// waitFile waits until the sysfs file p reads want.
func waitFile(p, want string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for readTrim(p) != want {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is %q after %v, want %q", p, readTrim(p), limit, want)
		}
		time.Sleep(20 * time.Millisecond) // sysfs, polled
	}
	return nil
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// broadcast is the subnet's broadcast address of ip/prefix.
func broadcast(ip net.IP, prefix int) net.IP {
	m := net.CIDRMask(prefix, 32)
	b := make(net.IP, 4)
	for i := range b {
		b[i] = ip[i] | ^m[i]
	}
	return b
}

// sendUDP sends n datagrams to the discard port of bcast and of peer.
func sendUDP(bcast, peer net.IP, n int) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BROADCAST, 1); err != nil {
		return err
	}
	for i := range n {
		msg := []byte("vhcrd eswitch " + strconv.Itoa(i))
		for _, to := range []net.IP{bcast, peer} {
			sa := &unix.SockaddrInet4{Port: 9}
			copy(sa.Addr[:], to)
			// The peer's datagrams wait for ARP (and are dropped when it
			// fails): EAGAIN is not a failure of the device.
			if err := unix.Sendto(fd, msg, 0, sa); err != nil && !errors.Is(err, unix.EAGAIN) {
				return fmt.Errorf("eth: sendto %v: %w", to, err)
			}
		}
	}
	return nil
}
