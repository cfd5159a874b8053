// Command mkinitramfs writes the VM tier's initramfs: a static /init (the
// guest program), optional extra files such as a static vhcrd, the VFIO
// modules with a generated modules.dep, and /etc/vmtest.json.
//
//	CGO_ENABLED=0 go build -o /tmp/init ./hack/vmtest/guest
//	CGO_ENABLED=0 go build -o /tmp/vhcrd ./cmd/vhcrd
//	go run ./hack/vmtest/mkinitramfs -o /tmp/initramfs.cpio -init /tmp/init \
//	    -modules .cache/vmkernel/mods -file bin/vhcrd=/tmp/vhcrd \
//	    -serve 'serve --bar vfio:{BDF}#region2' -param vfio_iommu_type1=allow_unsafe_interrupts=1
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/vhcrd/vhcrd/hack/vmtest"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	var files, params multi
	out := flag.String("o", "initramfs.cpio", "output file")
	initPath := flag.String("init", "", "static /init binary")
	mods := flag.String("modules", ".cache/vmkernel/mods", "directory with the VFIO .ko files")
	serve := flag.String("serve", "", "vhcrd arguments for the guest ({BDF} is replaced); empty: the guest's own echo loop")
	flag.Var(&files, "file", "ARCHIVE_PATH=HOST_PATH to add (repeatable)")
	flag.Var(&params, "param", "MODULE=PARAMS passed to finit_module (repeatable)")
	flag.Parse()
	if *initPath == "" {
		fmt.Fprintln(os.Stderr, "mkinitramfs: -init is required")
		os.Exit(2)
	}
	im := vmtest.Image{Init: *initPath, Files: map[string]string{}, Modules: *mods, Config: vmtest.DefaultGuestConfig()}
	for _, f := range files {
		a, h, ok := strings.Cut(f, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "mkinitramfs: -file %q: want ARCHIVE_PATH=HOST_PATH\n", f)
			os.Exit(2)
		}
		im.Files[a] = h
	}
	for _, p := range params {
		m, v, _ := strings.Cut(p, "=")
		im.Config.ModuleParams[m] = v
	}
	im.Config.Serve = strings.Fields(*serve)
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkinitramfs:", err)
		os.Exit(1)
	}
	release, err := im.Write(f)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkinitramfs:", err)
		os.Exit(1)
	}
	fmt.Printf("mkinitramfs: wrote %s (modules for %s)\n", *out, release)
}
