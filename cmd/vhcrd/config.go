package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca"
)

// `vhcrd config` prints the embedded default configuration; `vhcrd config
// --check FILE` validates a file as vhcrd serve --config FILE would, and
// builds from it what serve builds before it maps a region (the software
// HCA, the MAD engine, the fabric), without serving.

func runConfig(args []string) error {
	fs := clidoc.NewFlagSet("config", flag.ContinueOnError)
	check := fs.String("check", "", "validate the configuration `FILE` as vhcrd serve --config FILE does, without serving")
	vfs := fs.Int("num-vfs", 8, "with --check: the VF count serve would be given (1..126)")
	h := &cli.Help{Usage: "vhcrd config [--check FILE [--num-vfs N]]",
		About: "prints the embedded default configuration; edit a copy and pass it to vhcrd serve --config FILE.\n" +
			"--check FILE validates a file as serve would (the same parse and checks), prints what it\nconfigures and exits.",
		Examples: []string{"vhcrd config > vhcrd.json", "vhcrd config --check vhcrd.json", "vhcrd config --check vhcrd.json --num-vfs 16"},
		Exit:     "0 printed or valid, 1 invalid (the reason on stderr), 2 usage"}
	if err := parseNoArgs(fs, args, h); err != nil {
		return err
	}
	if *check == "" {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "num-vfs" })
		if given {
			return usageError{errors.New("--num-vfs goes with --check FILE")}
		}
		_, err := os.Stdout.Write(config.Example())
		return err
	}
	if *vfs < 1 || *vfs > config.MaxVFs {
		return usageError{fmt.Errorf("--num-vfs %d: want 1..%d", *vfs, config.MaxVFs)}
	}
	sum, err := checkConfig(*check, *vfs)
	if err != nil {
		return err
	}
	fmt.Printf("%s: valid: %s\n", *check, sum)
	return nil
}

// checkConfig loads path as serve's --config and builds the model serve
// would build for vfs VFs; it returns what the file configures in words.
func checkConfig(path string, vfs int) (string, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return "", err
	}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, e, err := newModel(cfg, vfs, nil, discard)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	fab, err := fabric(cfg, nil, discard)
	if err == nil {
		err = cableFabric(h, e, fab)
	}
	if err != nil {
		return "", fmt.Errorf("%s: fabric: %w", path, err)
	}
	sum := fmt.Sprintf("%d VFs, %d ports, %d VF overrides", vfs, len(cfg.Ports), len(cfg.VFs.Overrides))
	if fab != nil {
		sum += fmt.Sprintf(", a fabric: a switch of %d ports, %d cables, %d peers", cfg.Fabric.Switch.Ports, len(fab.Cables), len(fab.Peers))
	}
	return sum, nil
}

// newModel builds the software HCA for vfs VFs from cfg and attaches its
// MAD engine (traps to sink): what serve builds, and config --check with
// it.
func newModel(cfg *config.Config, vfs int, sink mad.TrapSink, log *slog.Logger) (*hca.HCA, *mad.Engine, error) {
	h, err := hca.New(cfg, vfs)
	if err != nil {
		return nil, nil, err
	}
	e, err := mad.New(hca.MADNode(cfg), mad.Options{Sink: sink, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("MAD engine: %w", err)
	}
	if err := h.AttachMAD(e); err != nil {
		return nil, nil, err
	}
	return h, e, nil
}
