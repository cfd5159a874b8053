package vmtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/u-root/u-root/pkg/cpio"
)

// fakeKO writes a minimal ELF64 relocatable file whose only content is a
// .modinfo section holding kv (NUL-separated key=value strings).
func fakeKO(t *testing.T, path string, kv ...string) {
	t.Helper()
	modinfo := []byte(strings.Join(kv, "\x00") + "\x00")
	shstr := []byte("\x00.modinfo\x00.shstrtab\x00")
	type shdr struct {
		Name, Type             uint32
		Flags, Addr, Off, Size uint64
		Link, Info             uint32
		Addralign, Entsize     uint64
	}
	var b bytes.Buffer
	dataOff := uint64(64)
	strOff := dataOff + uint64(len(modinfo))
	shOff := (strOff + uint64(len(shstr)) + 7) &^ 7
	ident := [16]byte{0x7f, 'E', 'L', 'F', 2, 1, 1}
	b.Write(ident[:])
	le := binary.LittleEndian
	binary.Write(&b, le, struct {
		Type, Machine                                        uint16
		Version                                              uint32
		Entry, Phoff, Shoff                                  uint64
		Flags                                                uint32
		Ehsize, Phentsize, Phnum, Shentsize, Shnum, Shstrndx uint16
	}{Type: 1, Machine: 62, Version: 1, Shoff: shOff, Ehsize: 64, Shentsize: 64, Shnum: 3, Shstrndx: 2})
	b.Write(modinfo)
	b.Write(shstr)
	b.Write(make([]byte, shOff-uint64(b.Len())))
	binary.Write(&b, le, shdr{})
	binary.Write(&b, le, shdr{Name: 1, Type: 1, Off: dataOff, Size: uint64(len(modinfo)), Addralign: 1})
	binary.Write(&b, le, shdr{Name: 10, Type: 3, Off: strOff, Size: uint64(len(shstr)), Addralign: 1})
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func modDir(t *testing.T) string {
	dir := t.TempDir()
	fakeKO(t, filepath.Join(dir, "vfio.ko"), "name=vfio", "depends=", "vermagic=6.1.0-test SMP mod_unload")
	fakeKO(t, filepath.Join(dir, "vfio_iommu_type1.ko"), "name=vfio_iommu_type1", "depends=vfio", "vermagic=6.1.0-test SMP mod_unload")
	fakeKO(t, filepath.Join(dir, "vfio-pci-core.ko"), "license=GPL", "depends=vfio", "name=vfio_pci_core", "vermagic=6.1.0-test SMP mod_unload")
	fakeKO(t, filepath.Join(dir, "vfio-pci.ko"), "depends=vfio-pci-core,vfio", "name=vfio_pci", "vermagic=6.1.0-test SMP mod_unload")
	return dir
}

func TestImage(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"init", "vhcrd"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("#!"+f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := DefaultGuestConfig()
	cfg.Serve = []string{"serve", "--bar", "vfio:{BDF}#region2"}
	im := Image{Init: filepath.Join(dir, "init"), Files: map[string]string{"bin/vhcrd": filepath.Join(dir, "vhcrd")}, Modules: modDir(t), Config: cfg}
	var out bytes.Buffer
	release, err := im.Write(&out)
	if err != nil {
		t.Fatal(err)
	}
	if release != "6.1.0-test" {
		t.Fatalf("release %q", release)
	}
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(out.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]cpio.Record{}
	for _, r := range recs {
		files[r.Name] = r
	}
	content := func(name string) string {
		r, ok := files[name]
		if !ok {
			t.Fatalf("%s not in the archive (has %d records)", name, len(recs))
		}
		b, err := io.ReadAll(io.NewSectionReader(r.ReaderAt, 0, int64(r.FileSize)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if content("init") != "#!init" || files["init"].Mode&0o111 == 0 || content("bin/vhcrd") != "#!vhcrd" {
		t.Error("init or bin/vhcrd wrong")
	}
	if r := files["dev/console"]; r.Mode&cpio.S_IFMT != cpio.S_IFCHR || r.Rmajor != 5 || r.Rminor != 1 {
		t.Errorf("dev/console: %+v", r.Info)
	}
	dep := content("lib/modules/6.1.0-test/modules.dep")
	for _, want := range []string{
		"kernel/vfio.ko:\n",
		"kernel/vfio_iommu_type1.ko: kernel/vfio.ko\n",
		"kernel/vfio-pci.ko: kernel/vfio-pci-core.ko kernel/vfio.ko\n",
	} {
		if !strings.Contains(dep, want) {
			t.Errorf("modules.dep lacks %q:\n%s", want, dep)
		}
	}
	content("lib/modules/6.1.0-test/kernel/vfio-pci-core.ko")
	var got GuestConfig
	if err := json.Unmarshal([]byte(content("etc/vmtest.json")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Magic != cfg.Magic || strings.Join(got.Serve, " ") != "serve --bar vfio:{BDF}#region2" || got.ModuleParams["vfio_iommu_type1"] == "" {
		t.Errorf("config %+v", got)
	}
}

func TestModuleTreeErrors(t *testing.T) {
	dir := modDir(t)
	fakeKO(t, filepath.Join(dir, "irqbypass.ko"), "name=irqbypass", "vermagic=6.2.0-other SMP")
	if _, _, err := ModuleTree(dir); err == nil || !strings.Contains(err.Error(), "6.2.0-other") {
		t.Errorf("mixed kernels: %v", err)
	}
	dir = modDir(t)
	os.Remove(filepath.Join(dir, "vfio-pci-core.ko"))
	if _, _, err := ModuleTree(dir); err == nil || !strings.Contains(err.Error(), "vfio-pci-core") {
		t.Errorf("missing dependency: %v", err)
	}
	if _, _, err := ModuleTree(t.TempDir()); err == nil || !strings.Contains(err.Error(), "fetch-vmkernel.sh") {
		t.Errorf("no modules: %v", err)
	}
}
