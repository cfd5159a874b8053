package vmtest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/u-root/u-root/pkg/cpio"

	"github.com/vhcrd/vhcrd/hack/testenv"
)

// vmUserRoot is hack/fetch-vmuserspace.sh's unpacked root, or a skip (a
// failure under CI).
func vmUserRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join(moduleRoot(t), ".cache", "vmuser", "root")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/ibv_devinfo")); err != nil {
		testenv.SkipOrFail(t, "verbs guest: no rdma-core userspace in %s (run hack/fetch-vmuserspace.sh)", root)
	}
	return root
}

// Debian's tools with their libraries and the loader: the closure holds
// libibverbs, libnl, glibc and ld.so at their Debian paths, the provider's
// symlink and its target, and nothing of the root the files do not need.
func TestUserspaceClosure(t *testing.T) {
	root := vmUserRoot(t)
	recs, paths, err := Userspace(root, VerbsFiles)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"usr/bin/ibv_devinfo", "usr/bin/ibv_rc_pingpong", "usr/bin/ibv_ud_pingpong",
		"etc/libibverbs.d/mlx4.driver",
		"usr/lib/x86_64-linux-gnu/libibverbs/libmlx4-rdmav34.so", // symlink
		"usr/lib/x86_64-linux-gnu/libmlx4.so.1.0.44.0",           // its target
		"usr/lib/x86_64-linux-gnu/libibverbs.so.1",
		"lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
		"lib/x86_64-linux-gnu/libc.so.6",
	} {
		if !slices.Contains(paths, want) {
			t.Errorf("closure lacks %s", want)
		}
	}
	if slices.ContainsFunc(paths, func(p string) bool {
		return filepath.Base(p) == "libhns-rdmav34.so" || filepath.Base(p) == "rdma_server"
	}) {
		t.Errorf("closure has files nothing needs: %v", paths)
	}
	if !slices.Contains(paths, "usr/lib/x86_64-linux-gnu/libnl-route-3.so.200") {
		t.Errorf("closure lacks libnl-route-3 (libibverbs' DT_NEEDED): %v", paths)
	}
	// The archive reads back with the provider a symlink.
	var b bytes.Buffer
	w := cpio.Newc.Writer(&b)
	if err := cpio.WriteRecordsAndDirs(w, recs); err != nil {
		t.Fatal(err)
	}
	got, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(b.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if r.Name == "usr/lib/x86_64-linux-gnu/libibverbs/libmlx4-rdmav34.so" {
			if r.Mode&cpio.S_IFMT != cpio.S_IFLNK {
				t.Errorf("%s: mode %o, want a symlink", r.Name, r.Mode)
			}
			return
		}
	}
	t.Error("the archive has no mlx4 provider")
}

// A library the root lacks is an error that names it.
func TestUserspaceMissingLibrary(t *testing.T) {
	root := vmUserRoot(t)
	dir := t.TempDir()
	// The tool and the loader, without libibverbs.
	for _, p := range []string{"usr/bin/ibv_devinfo", "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"} {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "lib64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", filepath.Join(dir, "lib64/ld-linux-x86-64.so.2")); err != nil {
		t.Fatal(err)
	}
	_, _, err := Userspace(dir, []string{"usr/bin/ibv_devinfo"})
	if !errors.Is(err, ErrMissingLibrary) || !strings.Contains(err.Error(), "libibverbs.so.1") {
		t.Fatalf("Userspace of a root without libibverbs: %v, want ErrMissingLibrary naming libibverbs.so.1", err)
	}
	t.Logf("%v", err)
}
