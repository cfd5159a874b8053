package main

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/irq"
)

// The QEMU command line of docs/guests.md gives the ivshmem-doorbell device
// as many vectors as vhcrd serve hands it by default (--vectors): QEMU
// refuses eventfds beyond vectors= ("Too many eventfd received").
func TestGuestsDocVectors(t *testing.T) {
	b, err := os.ReadFile("../../docs/guests.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	m := regexp.MustCompile(`ivshmem-doorbell,[^ \n]*vectors=(\d+)`).FindAllStringSubmatch(doc, -1)
	if len(m) == 0 {
		t.Fatal("docs/guests.md has no ivshmem-doorbell device with vectors=")
	}
	for _, x := range m {
		if n, _ := strconv.Atoi(x[1]); n != irq.DefaultVectors {
			t.Errorf("docs/guests.md: %s, but vhcrd serve's --vectors defaults to %d", x[0], irq.DefaultVectors)
		}
	}
	if !regexp.MustCompile(`--vectors` + "`" + `,\s+default ` + strconv.Itoa(irq.DefaultVectors) + `;`).MatchString(doc) {
		t.Errorf("docs/guests.md does not state --vectors' default, %d", irq.DefaultVectors)
	}
}
