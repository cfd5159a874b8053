package eswitch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/hack/testenv"
	"github.com/vhcrd/vhcrd/pcap"
)

// capture writes frames into a pcap file as the uplink does and returns
// what tshark reads of it with args (its fields).
func capture(t *testing.T, frames [][]byte, args ...string) string {
	t.Helper()
	testenv.LookPath(t, "tshark", "tshark")
	path := filepath.Join(t.TempDir(), "uplink.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcap.NewWriter(f, pcap.LinkTypeEthernet, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range frames {
		if err := w.WriteRecord(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("timeout", append([]string{"60", "tshark", "-r", path}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	return string(got)
}

// TestUplinkCaptureTshark: frames a VST VF (VLAN 100, priority 2) sends,
// through Egress into a pcap file as the uplink writes it, read back by
// tshark: the VST tag is on the wire, the VF's own tag was dropped, a
// short frame is padded to 60 bytes.
func TestUplinkCaptureTshark(t *testing.T) {
	p := vst(100, 2)
	var c Counters
	var sent [][]byte
	for _, in := range [][]byte{frame(Broadcast, macVF, 100), frame(macOther, macVF, 28, TPIDCVLAN, 5), frame(macOther, macVF, 2)} {
		out := make([]byte, EgressRoom(len(in)))
		n, v := p.Egress(out, in, WQEVLAN{}, 1518)
		c.Count(v)
		if v == Forward {
			sent = append(sent, out[:n])
		}
	}
	if c.Get(Forward) != 2 || c.Get(DropTagged) != 1 {
		t.Fatalf("forwarded %d, dropped as tagged %d", c.Get(Forward), c.Get(DropTagged))
	}
	got := capture(t, sent, "-T", "fields", "-E", "separator=,",
		"-e", "eth.dst", "-e", "eth.src", "-e", "vlan.id", "-e", "vlan.priority", "-e", "vlan.etype", "-e", "frame.len")
	want := "ff:ff:ff:ff:ff:ff,02:c9:03:a0:b0:01,100,2,0x0800,118\n" +
		"02:c9:03:a0:b0:02,02:c9:03:a0:b0:01,100,2,0x0800,60\n"
	if got != want {
		t.Fatalf("tshark read\n%s\nwant\n%s", got, want)
	}
	t.Logf("tshark -r uplink.pcap:\n%s", strings.TrimSpace(got))
}

// TestChecksumOffloadTshark: frames whose checksums the offload computed
// (UDP and TCP over IPv4, one of them VLAN-tagged), read back by tshark
// with its checksum validation on: every IPv4 header and TCP or UDP
// checksum good.
func TestChecksumOffloadTshark(t *testing.T) {
	frames := [][]byte{udp4(100, protoUDP), udp4(1001, protoTCP), udp4(57, protoUDP, TPIDCVLAN, 100)}
	for _, b := range frames {
		if err := ChecksumOffload(b, true, true); err != nil {
			t.Fatal(err)
		}
	}
	got := capture(t, frames, "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
		"-T", "fields", "-E", "separator=,", "-e", "ip.checksum.status", "-e", "udp.checksum.status", "-e", "tcp.checksum.status")
	// 1 is tshark's "Good" (0 bad, 2 unverified).
	if want := "1,1,\n1,,1\n1,1,\n"; got != want {
		t.Fatalf("tshark's checksum verdicts (ip, udp, tcp):\n%s\nwant\n%s", got, want)
	}
}
