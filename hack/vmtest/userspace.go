package vmtest

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/u-root/u-root/pkg/cpio"
)

// The verbs guest runs Debian's rdma-core userspace as Debian ships it:
// hack/fetch-vmuserspace.sh unpacks the packages (glibc and the loader
// among them) into a root, and Userspace takes from that root the files a
// scenario names and every shared library they need, transitively.

// LibDirs are where the loader looks for a DT_NEEDED library with no
// ld.so.cache (Debian's multiarch system directories), in its order.
var LibDirs = []string{"lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib", "usr/lib"}

// VerbsFiles are what the verbs guest runs, as paths in the unpacked root:
// rdma-core's tools, the mlx4 provider libibverbs dlopens (its .driver file
// names it), infiniband-diags' saquery, smpquery, ibnetdiscover and
// ibportstate and perfquery (the MAD tunnel), iputils' ping (IPoIB), ethtool (the Ethernet
// guests' mlx4_en counters), and perftest's and the RDMA CM's tools for the scenarios that
// follow.
var VerbsFiles = []string{
	"usr/bin/ibv_devinfo", "usr/bin/ibv_devices", "usr/sbin/saquery", "usr/sbin/smpquery", "usr/sbin/ibnetdiscover", "usr/sbin/ibportstate", "usr/sbin/perfquery", "bin/ping",
	"sbin/ethtool",
	"usr/bin/ibv_rc_pingpong", "usr/bin/ibv_ud_pingpong", "usr/bin/ibv_srq_pingpong",
	"usr/bin/rping", "usr/bin/udaddy",
	"usr/bin/ib_write_bw", "usr/bin/ib_send_lat", "usr/bin/ib_send_bw",
	"usr/lib/x86_64-linux-gnu/libibverbs/libmlx4-rdmav34.so",
	"etc/libibverbs.d/mlx4.driver",
	// glibc dlopens it for pthread_exit and pthread_cancel (rping's
	// threads end so): no DT_NEEDED names it.
	"lib/x86_64-linux-gnu/libgcc_s.so.1",
}

// ErrMissingLibrary is a DT_NEEDED library that no LibDirs of the root has.
var ErrMissingLibrary = errors.New("shared library not in the root")

// Userspace returns the cpio records of files (paths relative to root) and
// of the closure of what they need: a symlink's target, an ELF file's
// interpreter (PT_INTERP) and its DT_NEEDED libraries, found in LibDirs.
// Symlinks stay symlinks; every path keeps its place in the root, so that
// the guest's loader and libibverbs find them where Debian puts them. It
// also returns the paths it took, sorted.
func Userspace(root string, files []string) ([]cpio.Record, []string, error) {
	u := &userspace{root: root, seen: map[string]bool{}}
	for _, f := range files {
		if err := u.add(strings.TrimPrefix(path.Clean(f), "/"), ""); err != nil {
			return nil, nil, err
		}
	}
	sort.Strings(u.paths)
	return u.recs, u.paths, nil
}

type userspace struct {
	root  string
	seen  map[string]bool
	recs  []cpio.Record
	paths []string
}

// add takes p (relative to the root) and what it needs; by names who
// needs it, for errors.
func (u *userspace) add(p, by string) error {
	if u.seen[p] {
		return nil
	}
	u.seen[p] = true
	host := filepath.Join(u.root, p)
	fi, err := os.Lstat(host)
	if err != nil {
		if by != "" {
			return fmt.Errorf("%s (needed by %s): %w", p, by, err)
		}
		return fmt.Errorf("%s: %w (run hack/fetch-vmuserspace.sh)", p, err)
	}
	u.paths = append(u.paths, p)
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(host)
		if err != nil {
			return err
		}
		u.recs = append(u.recs, cpio.Symlink(p, target))
		next := target
		if path.IsAbs(target) {
			next = strings.TrimPrefix(target, "/")
		} else {
			next = path.Join(path.Dir(p), target)
		}
		return u.add(path.Clean(next), p)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file or symlink (%v)", p, fi.Mode())
	}
	data, err := os.ReadFile(host)
	if err != nil {
		return err
	}
	u.recs = append(u.recs, cpio.StaticRecord(data, cpio.Info{Name: p, Mode: cpio.S_IFREG | uint64(fi.Mode().Perm())}))
	ef, err := elf.NewFile(strings.NewReader(string(data)))
	if err != nil {
		return nil // not ELF: a configuration file
	}
	defer ef.Close()
	for _, prog := range ef.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(b, 0); err != nil {
			return fmt.Errorf("%s: PT_INTERP: %w", p, err)
		}
		if err := u.add(strings.TrimPrefix(strings.TrimRight(string(b), "\x00"), "/"), p); err != nil {
			return err
		}
	}
	libs, err := ef.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: DT_NEEDED: %w", p, err)
	}
	for _, lib := range libs {
		found := ""
		for _, d := range LibDirs {
			if _, err := os.Lstat(filepath.Join(u.root, d, lib)); err == nil {
				found = path.Join(d, lib)
				break
			}
		}
		if found == "" {
			return fmt.Errorf("%s needs %s: %w %s (in %v; add its package to hack/fetch-vmuserspace.sh)", p, lib, ErrMissingLibrary, u.root, LibDirs)
		}
		if err := u.add(found, p); err != nil {
			return err
		}
	}
	return nil
}
