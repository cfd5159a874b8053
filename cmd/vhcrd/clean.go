package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

func init() {
	register("clean", "remove a stopped PF's files (regions, VF BARs, state file, sockets); refused while one serves", runClean)
}

// errServing is returned, wrapped, by clean while a PF holds the regions.
var errServing = errors.New("a PF serves these regions")

func runClean(args []string) error {
	fs := clidoc.NewFlagSet("clean", flag.ContinueOnError)
	barSpec := fs.String("bar", DefaultBAR, "the control region of the PF whose files go (file:PATH)")
	dmaSpec := fs.String("dma", "", "its DMA region (file:PATH; default: the one its header names)")
	pfstate := fs.String("pfstate", "", "its PF state file `PATH` (default: the BAR file's path + .pfstate; off: keep it)")
	sock := fs.String("admin-socket", "", "its admin socket (default: the BAR file's path + .sock)")
	h := &cli.Help{Usage: "vhcrd clean [flags]",
		About:    commands["clean"].summary + ".\nThe files of a file: --bar: PATH, PATH.vfN (every N, also those of a larger --num-vfs\nbefore), PATH.vfN.sock, PATH.pfstate, PATH.sock and the DMA file. Each region file is\nclaimed first (as vhcrd serve claims it): while a PF holds one, nothing is removed.",
		Examples: []string{"vhcrd clean", "vhcrd clean --bar file:/tmp/pf2/bar"},
		Exit:     "0 removed (or nothing to remove), 1 a PF serves or a file could not be removed, 2 usage"}
	if err := parseNoArgs(fs, args, h); err != nil {
		return err
	}
	bs, err := bar.ParseSpec(*barSpec)
	if err != nil {
		return usageError{fmt.Errorf("--bar: %w", err)}
	}
	if bs.Scheme != "file" || bs.Offset != 0 {
		return usageError{fmt.Errorf("--bar %s: clean removes the files of a whole file: region (a device's state file: rm its --pfstate)", *barSpec)}
	}
	files, sockets, err := pfFiles(bs.Path, *dmaSpec, *pfstate, *sock)
	if err != nil {
		return err
	}
	removed, err := clean(files, sockets)
	for _, r := range removed {
		fmt.Println("removed", r)
	}
	if err != nil {
		return err
	}
	if len(removed) == 0 {
		fmt.Println("nothing to remove:", bs.Path)
	}
	return nil
}

// vfFileRE matches the names a VF's BAR file and its ivshmem socket have
// beside the control file (wire.VFBARPath, guest.go's default socket).
var vfFileRE = regexp.MustCompile(`^\.vf[0-9]+(\.sock)?$`)

// pfFiles lists the files of the PF whose control file is ctrl that exist:
// region and state files (claimed before removal) and sockets.
func pfFiles(ctrl, dmaSpec, pfstate, sock string) (files, sockets []string, err error) {
	add := func(list *[]string, p string) {
		if _, err := os.Lstat(p); err == nil {
			*list = append(*list, p)
		}
	}
	add(&files, ctrl)
	matches, err := filepath.Glob(globEscape(ctrl) + ".vf*")
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(matches)
	for _, m := range matches {
		switch rest := strings.TrimPrefix(m, ctrl); {
		case !vfFileRE.MatchString(rest):
		case strings.HasSuffix(rest, ".sock"):
			sockets = append(sockets, m)
		default:
			files = append(files, m)
		}
	}
	switch {
	case dmaSpec != "":
		ds, err := bar.ParseSpec(dmaSpec)
		if err != nil || ds.Scheme != "file" {
			return nil, nil, usageError{fmt.Errorf("--dma %s: want file:PATH", dmaSpec)}
		}
		add(&files, ds.Path)
	default:
		if b, err := bar.OpenFile(ctrl, false); err == nil {
			if l, err := wire.ReadLayout(b); err == nil && !l.DMAInBAR && l.DMAPath != "" {
				add(&files, l.DMAPath)
			}
			b.Close()
		}
	}
	if pfstate != "off" {
		if pfstate == "" {
			pfstate = ctrl + ".pfstate"
		}
		add(&files, pfstate)
	}
	if sock == "" {
		if sock, err = adminc.DefaultSocket("file:" + ctrl); err != nil {
			return nil, nil, err
		}
	}
	add(&sockets, sock)
	return files, sockets, nil
}

// globEscape quotes the glob metacharacters of a path.
func globEscape(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(p)
}

// clean claims every file (bar.Own, as a starting PF does: a serving PF's
// claim refuses it, and a PF starting meanwhile is refused by ours), then
// removes the sockets and the files, the control file last, and gives the
// claims up. It returns what it removed.
func clean(files, sockets []string) ([]string, error) {
	var owners []*bar.Owner
	defer func() {
		for _, o := range owners {
			_ = o.Release()
		}
	}()
	for _, p := range files {
		o, err := bar.Own(p)
		if errors.Is(err, bar.ErrOwned) {
			return nil, fmt.Errorf("%w, nothing removed (stop it first: SIGTERM, systemctl stop vhcrd): %w", errServing, err)
		}
		if err != nil {
			return nil, err
		}
		owners = append(owners, o)
	}
	var removed []string
	var errs []error
	rm := func(p string) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			return
		}
		removed = append(removed, p)
	}
	for _, p := range sockets {
		rm(p)
	}
	for i := len(files) - 1; i >= 0; i-- {
		rm(files[i])
	}
	return removed, errors.Join(errs...)
}
