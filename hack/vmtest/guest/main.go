// Command guest is the VM tier's /init: it mounts /dev, /proc and /sys,
// loads the VFIO modules with u-root's kmodule (parameters from
// /etc/vmtest.json), finds the ivshmem device by its ids, checks BAR2
// through sysfs, binds the device to vfio-pci, checks BAR2 and DMA mapping
// through VFIO, and then runs `vhcrd serve --bar vfio:BDF#region2 ...` (or,
// in an image without vhcrd, answers handshakes through the VFIO mapping)
// until the host writes "stop" to the serial console, and then, if
// configured, `vhcrd serve --bar sysfs:BDF#resource2 ...` until the next
// "stop". It reports each step
// on the console as a "vmtest: " line, ends with "vmtest: PASS" or
// "vmtest: FAIL: ...", and powers the machine off: PID 1 must never return.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/bar/pci"
	"github.com/vhcrd/vhcrd/bar/sysfs"
	"github.com/vhcrd/vhcrd/bar/vfio"
	"github.com/vhcrd/vhcrd/hack/vmtest"
	"github.com/vhcrd/vhcrd/hack/vmtest/guestinit"
)

var say = guestinit.Say

func main() { guestinit.Main(run) }

func run() error {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stdout, nil)))
	data, err := os.ReadFile("/etc/vmtest.json")
	if err != nil {
		return err
	}
	var cfg vmtest.GuestConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("/etc/vmtest.json: %w", err)
	}
	var u unix.Utsname
	unix.Uname(&u)
	say("init at uptime %s, kernel %s", guestinit.Uptime(), unix.ByteSliceToString(u.Release[:]))

	mods, err := loadModules(cfg)
	if err != nil {
		return err
	}
	addrs, err := pci.Find(pci.DefaultRoot, cfg.Vendor, cfg.Device)
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return fmt.Errorf("no %04x:%04x device (is -device ivshmem-plain on the QEMU command line?)", cfg.Vendor, cfg.Device)
	}
	bdf := addrs[0]
	say("ivshmem at %s", bdf)

	if err := checkSysfs(cfg, bdf); err != nil {
		return err
	}
	if _, err := vfio.Open(bdf); !errors.Is(err, pci.ErrNotBound) {
		return fmt.Errorf("vfio.Open of a device without vfio-pci: got %v, want pci.ErrNotBound", err)
	}
	if err := (&pci.Binder{Modules: mods}).Bind(bdf, pci.VFIODriver); err != nil {
		return err
	}
	g, _ := pci.IOMMUGroup(pci.DefaultRoot, bdf)
	say("bound %s to vfio-pci, iommu group %d", bdf, g)

	r, d, err := vfio.OpenRegion(bdf, cfg.Region)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := checkVFIO(cfg, r, d); err != nil {
		return err
	}
	stop := guestinit.Lines("stop")
	if len(cfg.Serve) == 0 {
		return echo(cfg, r, stop)
	}
	// vhcrd opens the group itself: one opener per group.
	if err := d.Close(); err != nil {
		return err
	}
	if err := serve(cfg.Serve, bdf, stop); err != nil {
		return err
	}
	if len(cfg.ServeSysfs) == 0 {
		return nil
	}
	// vfio-pci released the BAR with the device fd: sysfs can map it again.
	return serve(cfg.ServeSysfs, bdf, stop)
}

// loadModules loads the VFIO modules with the configuration's parameters and
// checks that the kernel applied each one.
func loadModules(cfg vmtest.GuestConfig) (*pci.Modules, error) {
	mods := &pci.Modules{Params: cfg.ModuleParams}
	if err := mods.LoadVFIO(); err != nil {
		return nil, err
	}
	pm, _ := os.ReadFile("/proc/modules")
	var loaded []string
	for _, l := range strings.Split(strings.TrimSpace(string(pm)), "\n") {
		loaded = append(loaded, strings.Fields(l)[0])
	}
	say("modules loaded: %s", strings.Join(loaded, " "))
	for mod, params := range cfg.ModuleParams {
		for _, kv := range strings.Fields(params) {
			k, want, _ := strings.Cut(kv, "=")
			got, err := os.ReadFile(filepath.Join("/sys/module", mod, "parameters", k))
			if err != nil {
				return nil, fmt.Errorf("module %s parameter %s: %w", mod, k, err)
			}
			if strings.TrimSpace(string(got)) != want {
				return nil, fmt.Errorf("module %s parameter %s = %q, passed %q", mod, k, strings.TrimSpace(string(got)), want)
			}
			say("module %s parameter %s=%s applied", mod, k, want)
		}
	}
	return mods, nil
}

func checkSysfs(cfg vmtest.GuestConfig, bdf string) error {
	r, err := sysfs.Open(pci.DefaultRoot, bdf, cfg.Region)
	if err != nil {
		return err
	}
	defer r.Close()
	v, err := r.Load32(cfg.MagicOff)
	if err != nil {
		return err
	}
	if v != cfg.Magic {
		return fmt.Errorf("%s: word at %#x is %#x, the host wrote %#x (is share=on set?)", r.Name(), cfg.MagicOff, v, cfg.Magic)
	}
	if err := r.Store32(cfg.MagicOff+4, cfg.SysfsMark); err != nil {
		return err
	}
	say("sysfs %s mapped, size %#x: read magic %#x, wrote %#x", r.Name(), r.Size(), v, cfg.SysfsMark)
	return nil
}

func checkVFIO(cfg vmtest.GuestConfig, r *vfio.Region, d *vfio.Device) error {
	ri := r.Info()
	if _, err := r.Bytes(); err != nil {
		return err
	}
	say("vfio %s mapped: mode %s, group %d, size %#x, flags %#x, device offset %#x", r.Name(), d.Mode(), d.IOMMUGroup(), ri.Size, ri.Flags, ri.Offset)
	v, err := r.Load32(cfg.MagicOff)
	if err != nil {
		return err
	}
	if v != cfg.Magic {
		return fmt.Errorf("%s: word at %#x is %#x, want %#x", r.Name(), cfg.MagicOff, v, cfg.Magic)
	}
	if err := r.Store32(cfg.MagicOff+8, cfg.VFIOMark); err != nil {
		return err
	}
	say("vfio read magic %#x, wrote %#x", v, cfg.VFIOMark)
	if c := d.Container(); c != nil {
		ps, err := c.IOMMUPageSizes()
		if err != nil {
			return err
		}
		say("iommu type %d, page sizes %#x", c.IOMMU(), ps)
	}
	// The rules the fake kernel (vfiotest) enforces, checked against the
	// real one: one opener per group, and a region without the mmap flag
	// (PCI config space) reached through pread only.
	if d2, err := vfio.Open(d.Addr()); !errors.Is(err, vfio.ErrBusy) {
		if d2 != nil {
			d2.Close()
		}
		return fmt.Errorf("second open of the group: got %v, want vfio.ErrBusy", err)
	}
	cfgR, err := d.Region(vfio.VFIO_PCI_CONFIG_REGION_INDEX)
	if err != nil {
		return err
	}
	id, err := cfgR.Load32(0)
	if err != nil {
		return err
	}
	if _, err := cfgR.Bytes(); !errors.Is(err, bar.ErrNotMapped) {
		return fmt.Errorf("config region Bytes: got %v, want bar.ErrNotMapped", err)
	}
	// Config space is little-endian: vendor 1af4, device 1110 read as a
	// big-endian word.
	if want := uint32(cfg.Vendor&0xff)<<24 | uint32(cfg.Vendor>>8)<<16 | uint32(cfg.Device&0xff)<<8 | uint32(cfg.Device>>8); id != want {
		return fmt.Errorf("config word 0 through pread = %#x, want %#x", id, want)
	}
	if b, err := (vfio.Kernel{}).Mmap(d.FD(), int64(cfgR.Info().Offset), 4096, unix.PROT_READ, unix.MAP_SHARED); !errors.Is(err, unix.EINVAL) {
		if err == nil {
			unix.Munmap(b)
		}
		return fmt.Errorf("mmap of the config region: got %v, want EINVAL", err)
	}
	say("real-kernel rules: second group open refused (EBUSY); config region flags %#x: mmap refused (EINVAL), pread of word 0 = %#x", cfgR.Info().Flags, id)
	if err := cfgR.Close(); err != nil {
		return err
	}
	const dmaSize = 2 << 20
	buf, err := unix.Mmap(-1, 0, dmaSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer unix.Munmap(buf)
	if err := d.MapDMA(buf, cfg.DMAIova, true); err != nil {
		return err
	}
	n, err := d.UnmapDMA(cfg.DMAIova, dmaSize)
	if err != nil {
		return err
	}
	if n != dmaSize {
		return fmt.Errorf("UNMAP_DMA unmapped %#x bytes, want %#x", n, dmaSize)
	}
	say("dma map/unmap %#x bytes at iova %#x ok", dmaSize, cfg.DMAIova)
	return nil
}

// echo answers the host through the VFIO mapping, standing in for vhcrd
// in an image without it: whenever the word at EchoOff changes to n, it
// writes n+1 at EchoOff+4.
func echo(cfg vmtest.GuestConfig, r bar.Region, stop <-chan struct{}) error {
	req, err := bar.NewReg(r, cfg.EchoOff)
	if err != nil {
		return err
	}
	resp, err := bar.NewReg(r, cfg.EchoOff+4)
	if err != nil {
		return err
	}
	say("ready: echo on %s at %#x (no vhcrd in the image)", r.Name(), cfg.EchoOff)
	last, answered := req.Load(), 0
	for {
		select {
		case <-stop:
			say("stop: answered %d requests", answered)
			return nil
		default:
		}
		if v := req.Load(); v != last {
			last = v
			resp.Store(v + 1)
			answered++
			continue
		}
		time.Sleep(50 * time.Microsecond) // idle poll interval, not synchronisation
	}
}

func serve(argv []string, bdf string, stop <-chan struct{}) error {
	args := make([]string, len(argv))
	for i, a := range argv {
		args[i] = strings.ReplaceAll(a, "{BDF}", bdf)
	}
	bin := "/bin/vhcrd"
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	say("ready: %s %s (pid %d)", filepath.Base(bin), strings.Join(args, " "), cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return fmt.Errorf("vhcrd exited before stop: %v", err)
	case <-stop:
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := <-done
	say("vhcrd exit status: %v", exitStatus(err))
	if err != nil {
		return fmt.Errorf("vhcrd: %w", err)
	}
	return nil
}

func exitStatus(err error) string {
	if err == nil {
		return "0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.String()
	}
	return err.Error()
}
