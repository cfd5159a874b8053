package pci

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/u-root/u-root/pkg/kmodule"
)

// VFIODriver is the name of the vfio-pci driver in sysfs.
const VFIODriver = "vfio-pci"

// Binder switches devices between drivers. The zero value works on the
// host's /sys; tests set Root to a fake tree and WriteFile to a function
// that plays the kernel's part.
type Binder struct {
	// Root is the sysfs root; "" means DefaultRoot.
	Root string
	// WriteFile writes a sysfs attribute; nil means os.WriteFile.
	WriteFile func(name string, data []byte) error
	// Modules loads missing modules; nil means a Modules with default options.
	Modules *Modules
}

func (b *Binder) root() string {
	if b.Root == "" {
		return DefaultRoot
	}
	return b.Root
}

func (b *Binder) write(name, data string) error {
	wf := b.WriteFile
	if wf == nil {
		wf = func(n string, d []byte) error { return os.WriteFile(n, d, 0o200) }
	}
	if err := wf(name, []byte(data)); err != nil {
		return fmt.Errorf("write %q to %s: %w", strings.TrimSpace(data), name, err)
	}
	return nil
}

// Bind binds the device to driver (normally VFIODriver) through
// driver_override and drivers_probe, unbinding it from its current driver
// first. For vfio-pci it loads the VFIO modules when they are missing. It
// logs a warning when other devices of the IOMMU group are not bound to
// vfio-pci, since such a group is not viable.
func (b *Binder) Bind(addr, driver string) error {
	root := b.root()
	a, err := Exists(root, addr)
	if err != nil {
		return err
	}
	cur, err := Driver(root, a)
	if err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	if cur == driver {
		slog.Debug("pci: already bound", "dev", a, "driver", driver)
		return nil
	}
	if driver == VFIODriver {
		if _, err := IOMMUGroup(root, a); err != nil {
			return err
		}
		m := b.Modules
		if m == nil {
			m = &Modules{SysRoot: root}
		}
		if err := m.LoadVFIO(); err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	dir := Dir(root, a)
	if err := b.write(filepath.Join(dir, "driver_override"), driver); err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	if cur != "" {
		slog.Info("pci: unbinding", "dev", a, "driver", cur)
		if err := b.write(filepath.Join(dir, "driver", "unbind"), a); err != nil {
			return fmt.Errorf("%s: unbind from %s: %w", a, cur, err)
		}
	}
	if err := b.write(filepath.Join(root, "bus", "pci", "drivers_probe"), a); err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	now, err := Driver(root, a)
	if err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	if now != driver {
		if now == "" {
			now = "no driver"
		}
		return fmt.Errorf("%s: after drivers_probe the device has %s, not %s (see dmesg; for vfio-pci the device needs an IOMMU group): %w", a, now, driver, ErrNotBound)
	}
	slog.Info("pci: bound", "dev", a, "driver", driver)
	if driver == VFIODriver {
		b.warnGroup(a)
	}
	return nil
}

func (b *Binder) warnGroup(a string) {
	root := b.root()
	g, err := IOMMUGroup(root, a)
	if err != nil {
		return
	}
	devs, err := GroupDevices(root, g)
	if err != nil {
		return
	}
	for _, d := range devs {
		if d == a {
			continue
		}
		if drv, _ := Driver(root, d); drv != "" && drv != VFIODriver {
			slog.Warn("pci: IOMMU group is not viable until every device in it is bound to vfio-pci or unbound",
				"group", g, "dev", d, "driver", drv)
		}
	}
}

// Unbind releases the device from its driver and clears driver_override,
// then asks the kernel to probe it again so that its default driver can
// take it.
func (b *Binder) Unbind(addr string) error {
	root := b.root()
	a, err := Exists(root, addr)
	if err != nil {
		return err
	}
	dir := Dir(root, a)
	cur, err := Driver(root, a)
	if err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	if cur != "" {
		if err := b.write(filepath.Join(dir, "driver", "unbind"), a); err != nil {
			return fmt.Errorf("%s: unbind from %s: %w", a, cur, err)
		}
	}
	if err := b.write(filepath.Join(dir, "driver_override"), "\n"); err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	if err := b.write(filepath.Join(root, "bus", "pci", "drivers_probe"), a); err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	slog.Info("pci: unbound", "dev", a, "was", cur)
	return nil
}

// Modules loads the VFIO kernel modules with u-root's kmodule, which reads
// modules.dep and loads dependencies first.
type Modules struct {
	// SysRoot is the sysfs root used to see which modules are loaded
	// (SysRoot/module/NAME); "" means DefaultRoot.
	SysRoot string
	// Opts are passed to kmodule (RootDir, KVer, DryRunCB for tests).
	Opts kmodule.ProbeOpts
	// Params holds module parameters by module name, e.g.
	// {"vfio_iommu_type1": "allow_unsafe_interrupts=1"}. finit_module does
	// not read them from the kernel command line, so they are passed here.
	Params map[string]string
}

// VFIOModules are the modules vfio-pci needs beyond its modules.dep
// dependencies: the type1 IOMMU backend is not a dependency of vfio-pci.
var VFIOModules = []string{"vfio_iommu_type1", "vfio_pci"}

// Loaded reports whether module name (with '-' or '_') is loaded or built in.
func (m *Modules) Loaded(name string) bool {
	root := m.SysRoot
	if root == "" {
		root = DefaultRoot
	}
	_, err := os.Stat(filepath.Join(root, "module", strings.ReplaceAll(name, "-", "_")))
	return err == nil
}

// Load loads the named modules that are not loaded yet, in order, each
// with its dependencies.
func (m *Modules) Load(names ...string) error {
	var p *kmodule.Prober
	for _, n := range names {
		if m.Loaded(n) {
			continue
		}
		if p == nil {
			var err error
			if p, err = kmodule.NewProber(m.Opts); err != nil {
				return fmt.Errorf("module %s is not loaded and the module index cannot be read (install the kernel's modules package, or run modprobe %s): %v: %w", n, n, err, ErrModule)
			}
		}
		if err := p.Probe(n, m.Params[n]); err != nil {
			if errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "could not find") {
				return fmt.Errorf("module %s is not loaded and was not found (install the kernel's modules package, or run modprobe %s): %v: %w", n, n, err, ErrModule)
			}
			return fmt.Errorf("loading module %s: %w", n, err)
		}
		slog.Info("pci: loaded module", "module", n, "params", m.Params[n])
	}
	return nil
}

// LoadVFIO loads vfio_iommu_type1 and vfio_pci (and their dependencies)
// where they are missing.
func (m *Modules) LoadVFIO() error { return m.Load(VFIOModules...) }
