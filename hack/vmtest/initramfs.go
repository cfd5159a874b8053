package vmtest

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/u-root/u-root/pkg/cpio"
	"github.com/ulikunitz/xz"
)

// GuestConfig is /etc/vmtest.json: what the guest's /init does.
type GuestConfig struct {
	Vendor, Device uint16 // the ivshmem device to find (1af4:1110)
	Region         int    // its BAR/VFIO region index holding the shared file (2)
	// ModuleParams are passed to finit_module by name (the kernel does not
	// apply module.param= from its command line to modules loaded this way).
	ModuleParams map[string]string
	// Magic is the word the host wrote at MagicOff before boot. The guest
	// checks it through sysfs and through vfio, and writes SysfsMark at
	// MagicOff+4 and VFIOMark at MagicOff+8.
	MagicOff            int64
	Magic               uint32
	SysfsMark, VFIOMark uint32
	// DMAIova is where the guest maps 2 MiB of anonymous memory for the
	// VFIO_IOMMU_MAP_DMA check.
	DMAIova uint64
	// Serve is the argv after "/bin/vhcrd"; "{BDF}" is replaced by the
	// device's address. Empty: no vhcrd in the image, and the guest answers
	// EchoOff handshakes itself through the VFIO mapping until stopped.
	Serve []string
	// ServeSysfs, if set, is a second vhcrd run after the first stops (the
	// BAR through sysfs resourceN once vfio-pci has released it).
	ServeSysfs []string
	EchoOff    int64
}

// DefaultGuestConfig is the configuration the VM test uses.
func DefaultGuestConfig() GuestConfig {
	return GuestConfig{
		Vendor: 0x1af4, Device: 0x1110, Region: 2,
		MagicOff: 0xff000, Magic: 0xc0ffee01, SysfsMark: 0x5f5f0001, VFIOMark: 0x7f100001,
		DMAIova: 0x10000000,
		EchoOff: 0xff010,
		// A harmless parameter, checked in /sys/module by the guest: it
		// shows that parameters reach finit_module. (intremap=on makes
		// allow_unsafe_interrupts unnecessary.)
		ModuleParams: map[string]string{"vfio_iommu_type1": "dma_entry_limit=65000"},
	}
}

// Module is a kernel module file and what its .modinfo says.
type Module struct {
	Path     string // on the host
	File     string // base name, e.g. vfio-pci.ko
	Name     string // name=, e.g. vfio_pci
	Depends  []string
	Vermagic string // the kernel release it was built for
}

// ReadModule reads a module's .modinfo section.
// .ko.xz modules (newer kernels) are decompressed for reading; kmodule
// loads them as they are.
func ReadModule(path string) (Module, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Module{}, fmt.Errorf("module %s: %w", path, err)
	}
	if strings.HasSuffix(path, ".xz") {
		xr, err := xz.NewReader(bytes.NewReader(raw))
		if err == nil {
			raw, err = io.ReadAll(xr)
		}
		if err != nil {
			return Module{}, fmt.Errorf("module %s: %w", path, err)
		}
	}
	f, err := elf.NewFile(bytes.NewReader(raw))
	if err != nil {
		return Module{}, fmt.Errorf("module %s: %w", path, err)
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		return Module{}, fmt.Errorf("module %s: no .modinfo section", path)
	}
	data, err := s.Data()
	if err != nil {
		return Module{}, fmt.Errorf("module %s: %w", path, err)
	}
	m := Module{Path: path, File: filepath.Base(path)}
	for _, kv := range bytes.Split(data, []byte{0}) {
		k, v, ok := strings.Cut(string(kv), "=")
		if !ok {
			continue
		}
		switch k {
		case "name":
			m.Name = v
		case "depends":
			if v != "" {
				m.Depends = strings.Split(v, ",")
			}
		case "vermagic":
			m.Vermagic = strings.Fields(v)[0]
		}
	}
	if m.Name == "" {
		m.Name = modName(strings.TrimSuffix(strings.TrimSuffix(m.File, ".xz"), ".ko"))
	}
	return m, nil
}

// modName normalises a module name: '-' and '_' are the same to the kernel.
func modName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// ModuleTree reads every .ko in dir and returns the cpio records of
// lib/modules/RELEASE/kernel/*.ko plus a modules.dep naming each module's
// direct dependencies (kmodule resolves the rest), and RELEASE.
func ModuleTree(dir string) ([]cpio.Record, string, error) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.ko"))
	xzs, _ := filepath.Glob(filepath.Join(dir, "*.ko.xz"))
	paths = append(paths, xzs...)
	if len(paths) == 0 {
		return nil, "", fmt.Errorf("no *.ko modules in %s (run hack/fetch-vmkernel.sh)", dir)
	}
	sort.Strings(paths)
	byName := map[string]Module{}
	var mods []Module
	for _, p := range paths {
		m, err := ReadModule(p)
		if err != nil {
			return nil, "", err
		}
		byName[modName(m.Name)] = m
		mods = append(mods, m)
	}
	release := mods[0].Vermagic
	base := "lib/modules/" + release + "/"
	var dep strings.Builder
	var recs []cpio.Record
	for _, m := range mods {
		if m.Vermagic != release {
			return nil, "", fmt.Errorf("module %s is for %s, %s for %s", m.File, m.Vermagic, mods[0].File, release)
		}
		fmt.Fprintf(&dep, "kernel/%s:", m.File)
		for _, d := range m.Depends {
			dm, ok := byName[modName(d)]
			if !ok {
				return nil, "", fmt.Errorf("module %s depends on %s, which is not in %s", m.File, d, dir)
			}
			fmt.Fprintf(&dep, " kernel/%s", dm.File)
		}
		dep.WriteString("\n")
		data, err := os.ReadFile(m.Path)
		if err != nil {
			return nil, "", err
		}
		recs = append(recs, cpio.StaticRecord(data, cpio.Info{Name: base + "kernel/" + m.File, Mode: cpio.S_IFREG | 0o644}))
	}
	recs = append(recs, cpio.StaticFile(base+"modules.dep", dep.String(), 0o644))
	return recs, release, nil
}

// Image lists what goes into the initramfs.
type Image struct {
	Init    string            // host path of the static /init
	Files   map[string]string // archive path -> host path (e.g. "bin/vhcrd")
	Modules string            // directory with the VFIO .ko files
	Config  GuestConfig
	// Extra are records added as they are (Userspace's tree).
	Extra []cpio.Record
}

// Write writes the newc cpio archive to w and returns the kernel release
// the modules are for.
func (im Image) Write(w io.Writer) (string, error) {
	rw := cpio.NewDedupWriter(cpio.Newc.Writer(w))
	recs := []cpio.Record{
		cpio.Directory("dev", 0o755), cpio.Directory("proc", 0o755), cpio.Directory("sys", 0o755),
		cpio.Directory("tmp", 0o1777), cpio.Directory("etc", 0o755), cpio.Directory("bin", 0o755),
		cpio.CharDev("dev/console", 0o600, 5, 1),
	}
	add := func(name, host string, perm uint64) error {
		data, err := os.ReadFile(host)
		if err != nil {
			return err
		}
		recs = append(recs, cpio.StaticRecord(data, cpio.Info{Name: name, Mode: cpio.S_IFREG | perm}))
		return nil
	}
	if err := add("init", im.Init, 0o755); err != nil {
		return "", err
	}
	names := make([]string, 0, len(im.Files))
	for n := range im.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := add(n, im.Files[n], 0o755); err != nil {
			return "", err
		}
	}
	mods, release, err := ModuleTree(im.Modules)
	if err != nil {
		return "", err
	}
	recs = append(recs, mods...)
	recs = append(recs, im.Extra...)
	cfg, err := json.MarshalIndent(im.Config, "", "  ")
	if err != nil {
		return "", err
	}
	recs = append(recs, cpio.StaticFile("etc/vmtest.json", string(cfg)+"\n", 0o644))
	cpio.MakeAllReproducible(recs)
	if err := cpio.WriteRecordsAndDirs(rw, recs); err != nil {
		return "", err
	}
	if err := cpio.WriteTrailer(rw); err != nil {
		return "", err
	}
	return release, nil
}
