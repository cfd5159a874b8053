package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
	"html"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/capture"
	"github.com/vhcrd/vhcrd/mad/ibsim"
	"github.com/vhcrd/vhcrd/metrics"
	"github.com/vhcrd/vhcrd/metrics/buildinfo"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/irq"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// Defaults of `vhcrd serve`, which vfctl shares; VHCRD_BAR, VHCRD_DMA and
// VHCRD_METRICS_ADDR set others (cmd/internal/cli).
var (
	DefaultBAR         = cli.Default(cli.EnvBAR, "file:"+vfclient.DefaultBARPath)
	DefaultDMA         = cli.Default(cli.EnvDMA, "file:"+vfclient.DefaultDMAPath)
	DefaultMetricsAddr = cli.Default(cli.EnvMetricsAddr, "127.0.0.1:9464")
)

func init() {
	register("serve", "serve the VFs' comm channels (default command)", runServe)
	register("config", "print the embedded default configuration, or check a file (--check FILE)", runConfig)
}

type serveFlags struct {
	bar, dma, configPath, metricsAddr, logLevel string
	logFormat                                   string
	ibsim, capture, cpuProfile                  string
	vfs                                         int
	window                                      string
	adminSocket, traceFile                      string
	traceJSON                                   bool
	vfBARs                                      vfSpecs
	guests                                      vfSpecs
	vectors                                     int
	pfstate                                     string
	idle                                        idleFlag
}

// flagSet is serve's flags, setting f's fields.
func (f *serveFlags) flagSet() *flag.FlagSet {
	fs := clidoc.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.bar, "bar", DefaultBAR, "control region (the header) `SPEC`: file:PATH, sysfs:BDF#resourceN or vfio:BDF[#regionN][@OFFSET] ($VHCRD_BAR sets the default)")
	fs.Var(f.guests, "guest", "`N=RAMFILE[,size=SIZE][,socket=PATH]`: VF N is a QEMU guest's: its DMA memory is the guest's RAM file (memory-backend-file share=on; IOVA = guest-physical address), and an ivshmem server on the socket (default <bar>.vf<N>.sock, mode 0600) hands QEMU's ivshmem-doorbell VF N's BAR region and MSI-X vectors; repeatable")
	fs.IntVar(&f.vectors, "vectors", irq.DefaultVectors, "MSI-X vectors per VF (eventfds; mlx4 needs at least 2)")
	fs.Var(f.vfBARs, "vf-bar", "`N=SPEC`: VF N's BAR region (comm page at 0, EQ doorbells at mlx4's UAR offsets; 8 MiB), any --bar form; repeatable (default: file:<bar>.vf<N> next to a file --bar)")
	fs.StringVar(&f.dma, "dma", DefaultDMA, "DMA region `SPEC`: file:PATH, or bar[@OFFSET] for a range of the BAR region ($VHCRD_DMA sets the default)")
	fs.IntVar(&f.vfs, "num-vfs", 8, "number of VFs to serve (1..126)")
	fs.Var(&f.idle, "idle", idleUsage())
	fs.StringVar(&f.window, "window", "1M", "DMA window per VF (a multiple of 4K)")
	fs.StringVar(&f.configPath, "config", "", "configuration `FILE` (default: the embedded example, which vhcrd config prints)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", DefaultMetricsAddr, "`ADDR` of the HTTP listener: /metrics, /healthz, /readyz (empty: off; $VHCRD_METRICS_ADDR sets the default)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log lines as text (key=value) or json (one object per line)")
	fs.StringVar(&f.ibsim, "ibsim", "", "also serve the MAD engine, cabled to the config's fabric (a switch OpenSM manages), to infiniband-diags and OpenSM under libumad2sim on this IBSIM_SOCKNAME")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&f.capture, "capture", "", "record every MAD in and out (and every trap) to this pcap file (tshark reads it)")
	fs.StringVar(&f.adminSocket, "admin-socket", "", "admin unix socket `PATH`, mode 0600 (vhcrd trace, vf and port use it; default: the BAR file's path + .sock, /run/vhcrd/... for a device; off: none)")
	fs.StringVar(&f.traceFile, "trace", "", "write the command trace to this file from the first command (text; see --trace-json)")
	fs.BoolVar(&f.traceJSON, "trace-json", false, "write --trace as JSON lines")
	fs.StringVar(&f.pfstate, "pfstate", "", "PF state file `PATH` that keeps objects, pending commands and completions across a PF restart (default: the BAR file's path + .pfstate, "+vfclient.RunDir+"/SCHEME-DEVICE[-N].pfstate for a device; off: none, for cost measurements only)")
	return fs
}

func runServe(args []string) error {
	f := serveFlags{vfBARs: vfSpecs{}, guests: vfSpecs{}}
	fs := f.flagSet()
	h := &cli.Help{Usage: "vhcrd serve [flags]", About: commands["serve"].summary,
		Examples: []string{"vhcrd serve --num-vfs 8", "vhcrd serve --num-vfs 16 --window 256K --log-format json",
			"vhcrd serve --ibsim mysim --capture mads.pcap",
			"vhcrd serve --bar vfio:0000:00:01.0#region2 --dma bar@0x40000 --num-vfs 2 --window 64K --vf-bar 0=vfio:0000:00:01.0#region2@8M --vf-bar 1=vfio:0000:00:01.0#region2@16M"},
		Exit: "0 stopped by SIGINT, SIGTERM or SIGHUP, 1 failed, 2 usage"}
	if err := parseNoArgs(fs, args, h); err != nil {
		return err
	}
	log, cfg, window, err := f.settle()
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	// Signals first: a stop that arrives while the regions are being set up
	// must still end in an orderly shutdown. SIGHUP (the terminal of
	// `make run` closed) stops as SIGTERM does: Go's default for it is to
	// die, leaving the header SERVING and the admin socket behind.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	wdEvery, err := watchdogInterval()
	if err != nil {
		return err
	}
	// The listeners before any region: a port in use fails the start
	// before a file is claimed or created.
	var metricsLn net.Listener
	if f.metricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", f.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		defer metricsLn.Close()
	}
	srv, err := openServer(f, cfg, window, log)
	if err != nil {
		return err
	}
	// A start that fails from here removes the files it created (close,
	// while the claims still hold); a PF that served keeps them for the
	// next start.
	defer srv.close()
	if metricsLn != nil {
		hs := &http.Server{Handler: srv.mux(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = hs.Serve(metricsLn) }()
		defer hs.Close()
		log.Info("metrics", "url", "http://"+metricsLn.Addr().String()+"/metrics")
	}
	if err := srv.startMAD(ctx, f, cfg, log); err != nil {
		return err
	}
	stopSide, err := srv.startTrace(f, log)
	if err != nil {
		return err
	}
	log.Info("vhcrd starting", "bar", srv.barR.Name(), "dma", srv.dmaR.Name(), "vfs", f.vfs, "window", window)
	go srv.logActivity(ctx, log, 5*time.Second)
	srv.served = true
	srv.notify.state("READY=1\nSTATUS=serving")
	wstop := func() {}
	if srv.notify != nil && wdEvery > 0 {
		var wctx context.Context
		wctx, wstop = context.WithCancel(ctx)
		go srv.runWatchdog(wctx, wdEvery, log)
		log.Info("watchdog", "ping_every", wdEvery)
	}
	err = srv.pf.Run(ctx)
	wstop()
	srv.notify.state("STOPPING=1")
	stopSide()
	log.Info("vhcrd stopped")
	return err
}

// settle fills in the admin socket's default path, sets the default logger
// and loads the configuration.
func (f *serveFlags) settle() (log *slog.Logger, cfg *config.Config, window int64, err error) {
	if f.adminSocket == "" {
		p, err := adminc.DefaultSocket(f.bar)
		if err != nil {
			return nil, nil, 0, usageError{err}
		}
		f.adminSocket = p
	}
	log, err = newLogger(os.Stderr, f.logFormat, f.logLevel)
	if err != nil {
		return nil, nil, 0, err
	}
	slog.SetDefault(log)
	cfg = config.Default()
	if f.configPath != "" {
		if cfg, err = config.Load(f.configPath); err != nil {
			return nil, nil, 0, err
		}
	}
	if f.vfs < 1 || f.vfs > config.MaxVFs {
		return nil, nil, 0, usageError{fmt.Errorf("--num-vfs %d: want 1..%d", f.vfs, config.MaxVFs)}
	}
	window, err = bar.ParseSize(f.window)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("--window: %w", err)
	}
	return log, cfg, window, nil
}

// startCPUProfile writes a CPU profile to path (none: "") until the returned
// function is called.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	pf, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); pf.Close() }, nil
}

// startTrace serves the admin socket and writes --trace. The returned
// function, called once the poller has stopped, writes the trace's last
// records, closes the admin socket (removing its file) and waits for both.
func (s *server) startTrace(f serveFlags, log *slog.Logger) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop = func() { cancel(); wg.Wait() }
	if a := s.admin; a != nil { // listening since openServer
		a.ring, a.pf, a.hca, a.changes = s.trace, s.pf, s.hca, s.changes
		a.irq = s.irq
		wg.Add(1)
		go func() { defer wg.Done(); a.serve(ctx) }()
		log.Info("admin socket", "path", f.adminSocket)
	}
	if f.traceFile != "" {
		// Fail now, not in the writer, if the file cannot be written.
		fh, err := os.OpenFile(f.traceFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			stop()
			return nil, fmt.Errorf("--trace: %w", err)
		}
		fh.Close()
		o := trace.Options{Filter: trace.All, JSON: f.traceJSON}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := trace.WriteFile(ctx, f.traceFile, s.trace, o); err != nil {
				log.Error("--trace", "err", err)
			}
		}()
		log.Info("tracing", "file", f.traceFile, "records", s.trace.Records())
	}
	return stop, nil
}

type server struct {
	pf         *master.PF
	hca        *hca.HCA
	barR, dmaR bar.Region
	vfBARs     []bar.Region
	regions    regionSet
	owners     []*bar.Owner
	reg        *prometheus.Registry
	changes    *metrics.AdminCounter // the admin socket's vf and port changes
	mad        *mad.Engine
	traps      trapFanout
	stopMAD    []func()
	// trace is the command trace, recording from before the PF starts (its
	// restart records included), read or not
	trace *trace.Ring
	// irq is every VF's MSI-X vectors (irq.DefaultVectors eventfds each),
	// raised by the HCA's armed EQs; handed over to whoever delivers them
	irq *irq.Set
	// guests are the ivshmem servers of --guest; guestsStopping tells
	// their disconnects at shutdown from a guest's end (no FLR then)
	guests         []guestServer
	guestsStopping atomic.Bool
	// notify is the service manager's socket (nil: none, NOTIFY_SOCKET
	// unset): readiness and the file-descriptor store of the guests
	notify *notifier
	// probeWait is how long /healthz and /readyz wait for the poller
	// (0: defaultProbeWait)
	probeWait time.Duration
	// created are the region and state files this start created; close
	// removes them unless served (the PF started serving, or PF_STATE
	// says it did: they are its state for the next start)
	created []string
	served  bool
	// admin is the admin socket's server (nil: --admin-socket off),
	// listening from before the regions are opened; startTrace serves it
	admin *adminServer
}

// regionPlan is what the flags say of the regions, checked before any file
// is claimed.
type regionPlan struct {
	bs, ds    bar.Spec
	vbs       []bar.Spec
	lay       wire.Layout
	guests    []guestSpec
	statePath string
}

func planRegions(f serveFlags, window int64) (regionPlan, error) {
	var p regionPlan
	var err error
	if p.bs, err = bar.ParseSpec(f.bar); err != nil {
		return p, fmt.Errorf("--bar: %w", err)
	}
	if p.ds, err = bar.ParseSpec(f.dma); err != nil {
		return p, fmt.Errorf("--dma: %w", err)
	}
	if p.bs.Scheme == "bar" {
		return p, errors.New("--bar: bar[@OFFSET] is only for --dma")
	}
	dmaPath := ""
	if !p.dmaInBAR() {
		if p.ds.Scheme != "file" {
			return p, fmt.Errorf("--dma: %s regions hold DMA windows only as bar[@OFFSET]", p.ds.Scheme)
		}
		dmaPath = p.ds.Path
	}
	if p.lay, err = wire.NewLayout(f.vfs, window, p.dmaInBAR(), p.ds.Offset, 0, dmaPath); err != nil {
		return p, err
	}
	if p.vbs, err = vfBARSpecs(p.bs, f.vfBARs, f.vfs); err != nil {
		return p, usageError{err}
	}
	if p.guests, err = parseGuests(f.guests, p.bs, p.vbs); err != nil {
		return p, usageError{err}
	}
	if f.vectors < 2 || f.vectors > 64 {
		return p, usageError{fmt.Errorf("--vectors %d: want 2..64 (mlx4 needs at least 2)", f.vectors)}
	}
	p.statePath = stateFilePath(f.pfstate, p.bs, runDir)
	return p, nil
}

func (p regionPlan) dmaInBAR() bool { return p.ds.Scheme == "bar" }

func openServer(f serveFlags, cfg *config.Config, window int64, log *slog.Logger) (*server, error) {
	plan, err := planRegions(f, window)
	if err != nil {
		return nil, err
	}
	s := &server{}
	passed, err := takePassedFDs()
	if err != nil {
		return nil, err
	}
	defer passed.closeRest() // those not adopted, on every path
	if s.notify, err = newNotifier(log); err != nil {
		return nil, err
	}
	if plan.statePath != "" && plan.statePath == vfclient.DevicePath(runDir, plan.bs, ".pfstate") {
		if err := os.MkdirAll(runDir, 0o700); err != nil {
			return nil, fmt.Errorf("PF state file: %w", err)
		}
	}
	if err := s.setUp(f, cfg, plan, passed, log); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// setUp claims the region files, listens on the admin socket, opens the
// regions, builds the model and the PF over them and starts the guests'
// ivshmem servers; on an error the caller closes s.
func (s *server) setUp(f serveFlags, cfg *config.Config, plan regionPlan, passed passedFDs, log *slog.Logger) error {
	if err := s.claim(plan); err != nil {
		return err
	}
	// The admin socket next, before any region is sized: ours to replace
	// now that the claims say no other PF serves here.
	var err error
	if f.adminSocket != "off" && f.adminSocket != "" {
		if s.admin, err = listenAdmin(f.adminSocket, nil, log); err != nil {
			return err
		}
	}
	if err := s.openRegions(plan); err != nil {
		return err
	}
	h, e, err := newModel(cfg, f.vfs, &s.traps, log)
	if err != nil {
		return err
	}
	s.hca, s.mad = h, e
	if s.trace, err = master.NewTrace(0); err != nil {
		return err
	}
	guestRAM, err := s.openGuestRAMs(plan.guests)
	if err != nil {
		return err
	}
	adoptedIRQ := adoptVectors(passed, plan.guests, f.vectors, log)
	if s.irq, err = irq.NewSetWith(f.vfs, f.vectors, adoptedIRQ); err != nil {
		return fmt.Errorf("MSI-X vectors: %w", err)
	}
	state, err := s.openState(plan, h.Res.Config().EQsPerVF, log)
	if err != nil {
		return err
	}
	s.pf, err = master.New(master.Options{BAR: s.barR, VFBARs: s.vfBARs, GuestRAM: guestRAM, DMA: s.dmaR, Layout: plan.lay, HCA: h, Logger: log, Trace: s.trace, Interrupts: s.irq, State: state, Faults: cfg.Faults, Idle: f.idle.policy})
	if err != nil {
		return err
	}
	if err := s.startGuests(plan.guests, plan.vbs, passed, adoptedIRQ, log); err != nil {
		return err
	}
	s.reg = prometheus.NewRegistry()
	s.changes = metrics.NewAdminCounter()
	s.reg.MustRegister(s.changes, metrics.NewPFCollector(s.pf), metrics.NewHCACollector(s.pf, h, s.mad), metrics.NewDataPathCollector(h), metrics.NewFaultCollector(s.pf), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return nil
}

// claim takes the files of the regions and of the state file. One PF per
// set of regions: the files are claimed before anything sizes, maps or
// writes them, so a second vhcrd is refused without touching the first
// one's registers or state. The kernel drops the claims when this process
// dies. A VFIO device is opened by one process at a time and needs no claim
// of ours; a sysfs BAR can be mapped by anyone, and its PF's claim is that
// of its state file.
func (s *server) claim(plan regionPlan) error {
	claimed := map[string]bool{}
	for _, sp := range append([]bar.Spec{plan.bs, plan.ds, {Scheme: "file", Path: plan.statePath}}, plan.vbs...) {
		if sp.Scheme != "file" || sp.Path == "" || claimed[sp.Path] {
			continue
		}
		claimed[sp.Path] = true
		o, created, err := bar.OwnNew(sp.Path)
		if err != nil {
			if errors.Is(err, bar.ErrOwned) {
				return fmt.Errorf("another PF serves these regions: %w", err)
			}
			return err
		}
		s.owners = append(s.owners, o)
		if created {
			s.created = append(s.created, sp.Path)
		}
	}
	return nil
}

// openRegions opens (sizing the files it may) the control region, the DMA
// region and the VF BAR regions.
func (s *server) openRegions(plan regionPlan) error {
	var err error
	if s.barR, err = s.regions.open(plan.bs, plan.lay.ControlSize()); err != nil {
		return fmt.Errorf("--bar: %w (fewer --num-vfs or a smaller --window where the DMA windows are in it)", err)
	}
	if plan.dmaInBAR() {
		s.dmaR = s.barR
	} else if s.dmaR, err = s.regions.open(plan.ds, plan.lay.DMASize); err != nil {
		return fmt.Errorf("--dma: %w", err)
	}
	for i, sp := range plan.vbs {
		r, err := s.regions.open(sp, plan.lay.VFBARSize)
		if err != nil {
			return fmt.Errorf("--vf-bar %d: %w", i, err)
		}
		s.vfBARs = append(s.vfBARs, r)
	}
	return nil
}

// openGuestRAMs opens the RAM files of --guest's VFs, by VF.
func (s *server) openGuestRAMs(guests []guestSpec) (map[int]bar.Region, error) {
	guestRAM := map[int]bar.Region{}
	for _, g := range guests {
		r, err := openGuestRAM(g)
		if err != nil {
			return nil, fmt.Errorf("--guest %d: %w", g.vf, err)
		}
		s.regions.order = append(s.regions.order, r) // closed with the others
		guestRAM[g.vf] = r
	}
	return guestRAM, nil
}

// openState opens (creating or sizing) the PF state file, or with
// --pfstate off returns nil and warns.
func (s *server) openState(plan regionPlan, eqsPerVF int, log *slog.Logger) (bar.Region, error) {
	path := plan.statePath
	if path == "" {
		log.Warn("no PF state file (--pfstate off): the VFs' objects and pending commands will not survive a restart")
		return nil, nil
	}
	// Claimed with the regions.
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		s.created = append(s.created, path)
	}
	r, _, err := bar.CreateFile(path, master.StateFileSize(plan.lay, eqsPerVF))
	if err != nil {
		return nil, fmt.Errorf("--pfstate: %w", err)
	}
	s.regions.order = append(s.regions.order, r) // closed with the others
	return r, nil
}

func (s *server) close() {
	s.stopGuests()
	for i := len(s.stopMAD) - 1; i >= 0; i-- {
		s.stopMAD[i]()
	}
	if s.irq != nil {
		_ = s.irq.Close()
	}
	if s.admin != nil {
		_ = s.admin.ln.Close() // removes the socket file; again after serve's own close, harmless
	}
	if s.barR != nil && !s.served {
		// A PF that ran (here or in a test that runs the poller itself)
		// left PF_STATE serving or stopped: its files are its state.
		// Guarded: the region may have shrunk under the PF.
		_ = bar.Guard(func() {
			if st, err := s.barR.Load32(wire.HdrPFState); err == nil && st != wire.PFStateInit {
				s.served = true
			}
		})
	}
	s.regions.close()
	if !s.served {
		for i := len(s.created) - 1; i >= 0; i-- {
			_ = os.Remove(s.created[i])
		}
		s.created = nil
	}
	for _, o := range s.owners {
		_ = o.Release()
	}
	s.notify.close()
}

// openRegion opens the region a spec names, sized for the layout where the
// backend can be sized (files).
func openRegion(sp bar.Spec, size int64) (bar.Region, error) {
	switch sp.Scheme {
	case "file":
		r, _, err := bar.CreateFile(sp.Path, sp.Offset+size)
		if err != nil || sp.Offset == 0 {
			return r, err
		}
		return subRegion(r, sp.Offset)
	}
	return openDevice(sp)
}

func subRegion(r bar.Region, off int64) (bar.Region, error) {
	v, err := bar.Sub(r, off, r.Size()-off)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &ownedView{Region: v, parent: r}, nil
}

// ownedView closes its parent.
type ownedView struct {
	bar.Region
	parent bar.Region
}

func (o *ownedView) Close() error { return o.parent.Close() }

// mux serves the metrics listener: /metrics, /healthz, /readyz (probe) and
// a landing page at /, nothing else. Changes are the admin socket's
// (adminvf.go), never this listener's.
func (s *server) mux() *http.ServeMux {
	m := http.NewServeMux()
	m.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { s.probe(w, false) })
	m.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { s.probe(w, true) })
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		version, revision, _ := buildinfo.Read()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>vhcrd</title><h1>vhcrd %s</h1><p>%d VFs on %s</p><ul>"+
			"<li><a href=\"/metrics\">/metrics</a><li><a href=\"/healthz\">/healthz</a><li><a href=\"/readyz\">/readyz</a></ul>"+
			"<p>Operator changes go through the admin socket: <code>vhcrd vf --help</code>, <code>vhcrd port --help</code>.</p>\n",
			html.EscapeString(version+" "+revision), s.pf.Layout().NumVFs, html.EscapeString(s.barR.Name()))
	})
	return m
}

// defaultProbeWait bounds how long /healthz and /readyz wait for the poller to run
// an empty request (a liveness probe's timeout must exceed it).
const defaultProbeWait = time.Second

// probe answers /healthz (ready false) and /readyz (ready true).
//
// /healthz, liveness: 200 while the process is alive and its poller scans
// (it ran an empty request, PF.Do, within the wait) or has not started
// yet (PF_STATE starting: the PF is loading its state file; restarting it
// would only begin that again); 503 when the poller does not answer (stuck)
// or has stopped.
//
// /readyz, readiness: 200 only while the PF serves: PF_STATE SERVING (set
// by the poller once New loaded the state file and replayed its journal)
// and the poller answers; else 503.
func (s *server) probe(w http.ResponseWriter, ready bool) {
	st := s.pf.PFState()
	switch {
	case st == wire.PFStateInit && !ready:
		fmt.Fprintln(w, "ok: starting (loading the PF state, the poller has not started)")
		return
	case st != wire.PFStateServing:
		http.Error(w, "not serving: PF_STATE "+vfclient.PFStateName(st), http.StatusServiceUnavailable)
		return
	}
	wait := s.probeWait
	if wait == 0 {
		wait = defaultProbeWait
	}
	done := make(chan error, 1)
	go func() { done <- s.pf.Do(func() {}) }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-done:
		if err == nil {
			fmt.Fprintln(w, "ok: serving")
			return
		}
	case <-t.C:
	}
	http.Error(w, fmt.Sprintf("not serving: PF_STATE serving, but the poller did not answer within %v", wait), http.StatusServiceUnavailable)
}

// logActivity logs one line per interval in which commands completed.
func (s *server) logActivity(ctx context.Context, log *slog.Logger, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	last, lastT := s.pf.Stats().Completed(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			st := s.pf.Stats()
			n := st.Completed()
			if n != last {
				log.Info("commands", "completed", n, "per_second", int(float64(n-last)/now.Sub(lastT).Seconds()),
					"poller_sleeps", st.Sleeps)
			}
			last, lastT = n, now
		}
	}
}

// trapFanout hands every trap the engine sends to the capture writer and the
// ibsim server, whichever are on. Sinks are added while the ibsim server
// may already be raising traps, hence the atomic swap of the list.
type trapFanout struct{ sinks atomic.Pointer[mad.TrapSinks] }

func (t *trapFanout) SendTrap(tr mad.Trap) {
	if s := t.sinks.Load(); s != nil {
		s.SendTrap(tr)
	}
}

func (t *trapFanout) add(s mad.TrapSink) {
	var next mad.TrapSinks
	if cur := t.sinks.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, s)
	t.sinks.Store(&next)
}

// startMAD opens the Ethernet ports' uplinks, switches on the capture,
// cables the fabric (the data path's
// switch), starts the ibsim server and the trap-resend clock.
func (s *server) startMAD(ctx context.Context, f serveFlags, cfg *config.Config, log *slog.Logger) error {
	if err := s.startUplinks(cfg, log); err != nil { // the Ethernet ports' way out (uplink.go)
		return err
	}
	var capw *capture.Writer
	if f.capture != "" {
		file, err := os.Create(f.capture)
		if err != nil {
			return fmt.Errorf("--capture: %w", err)
		}
		if capw, err = capture.NewWriter(file, time.Now); err != nil {
			file.Close()
			return fmt.Errorf("--capture: %w", err)
		}
		s.traps.add(capw)
		s.hca.SetMADRecorder(&ifcCapture{tap: capture.Tap{Engine: s.mad, W: capw}})
		s.stopMAD = append(s.stopMAD, func() { _ = capw.Close(); _ = file.Close() })
		log.Info("capturing MADs", "file", f.capture)
	}
	// The fabric, with or without --ibsim: the data path routes through
	// its switch (hca.SetFabric), which the ibsim server then serves to
	// OpenSM. Cabled before the poller runs.
	fab, err := fabric(cfg, &s.traps, log)
	if err != nil {
		return fmt.Errorf("fabric: %w", err)
	}
	if err := cableFabric(s.hca, s.mad, fab); err != nil {
		return fmt.Errorf("fabric: %w", err)
	}
	if f.ibsim != "" {
		maj, min, sub := cfg.Device.FW()
		tw := newTunnelWire(s.hca, 1) // the server's port (ibsim.Options.Port's default)
		srv, err := ibsim.Listen(f.ibsim, s.mad, ibsim.Options{Capture: capw, Logger: log, Fabric: fab,
			FWVersion: uint64(maj)<<32 | uint64(min)<<16 | uint64(sub), Tunnel: tw.receive})
		if err != nil {
			return fmt.Errorf("--ibsim: %w", err)
		}
		tw.srv = srv
		s.hca.SetMADWire(tw) // before the poller runs
		done := make(chan struct{})
		go tw.run(done)
		s.traps.add(srv)
		s.stopMAD = append(s.stopMAD, func() { close(done); _ = srv.Close() })
		log.Info("ibsim server", "IBSIM_SOCKNAME", f.ibsim)
	}
	if fab != nil {
		log.Info("fabric", fabricAttrs(cfg, fab)...)
	}
	s.watchPorts(ctx, log)
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.mad.PollTraps()
			}
		}
	}()
	return nil
}

// ifcCapture records MAD_IFC exchanges that carry a work completion (MADs
// that crossed the link). It runs on the poller only.
type ifcCapture struct {
	tap capture.Tap
	req capture.Packet
	ok  bool
}

func (c *ifcCapture) Request(port uint8, wc *mad.WC, grh *mad.GRH, in *mad.MAD) {
	c.req, c.ok = c.tap.Request(port, wc, grh, in)
}

func (c *ifcCapture) Reply(port uint8, out *mad.MAD) {
	if c.ok {
		c.tap.Reply(&c.req, out)
		c.ok = false
	}
}

// fabric builds the config's switch and cables (nil when the config has no
// fabric): the data path's and the ibsim server's.
func fabric(cfg *config.Config, traps mad.TrapSink, log *slog.Logger) (*ibsim.Fabric, error) {
	fc := cfg.Fabric
	if fc == nil {
		return nil, nil
	}
	sw, err := mad.NewSwitch(mad.SwitchConfig{NodeGUID: uint64(fc.Switch.NodeGUID), Description: fc.Switch.NodeDescription,
		NumPorts: fc.Switch.Ports, VendorID: uint32(fc.Switch.VendorID), DeviceID: uint16(fc.Switch.DeviceID)})
	if err != nil {
		return nil, err
	}
	f := &ibsim.Fabric{Switch: sw, Cables: map[uint8]uint8{}, LID: fc.Switch.LID}
	for k, sp := range fc.Cables {
		p, err := strconv.Atoi(k)
		if err != nil {
			return nil, err // Validate has checked the keys
		}
		f.Cables[uint8(p)] = uint8(sp)
	}
	// Peers: single-port CAs with the HCA's vendor and device IDs, fresh
	// (Down, LID 0) until the SM configures them; their traps go where the
	// HCA's go.
	for _, pc := range fc.Peers {
		e, err := mad.New(mad.NodeConfig{NodeGUID: uint64(pc.NodeGUID), Description: pc.NodeDescription,
			DeviceID: uint16(cfg.Device.DeviceID), Revision: uint32(cfg.Device.Revision), VendorID: uint32(cfg.Device.VendorID),
			Ports: []mad.PortConfig{{PortGUID: uint64(pc.PortGUID), State: mad.PortDown}}},
			mad.Options{Sink: traps, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("peer %#x: %w", uint64(pc.NodeGUID), err)
		}
		if f.Peers == nil {
			f.Peers = map[uint8]*mad.Engine{}
		}
		f.Peers[uint8(pc.SwitchPort)] = e
	}
	return f, nil
}

// cableFabric connects the MAD engine's ports to the fabric's switch (the
// links up; a swept subnet's LIDs routed: ibsim.Fabric.Cable, as the ibsim
// server's port 1 would) and gives the HCA's data path the switch to route
// through. Nothing to do without a fabric: the ports then reach each other
// directly (hca's route.go).
func cableFabric(h *hca.HCA, e *mad.Engine, fab *ibsim.Fabric) error {
	if fab == nil {
		return nil
	}
	if err := fab.Cable(e, 1); err != nil {
		return err
	}
	return h.SetFabric(fab.Switch, fab.Cables)
}

// fabricAttrs describes the fabric the ibsim server built, for its log
// line: the switch, each cable (HCA port, its LID and state, the switch
// port), the peers and whether the subnet starts swept or fresh.
func fabricAttrs(cfg *config.Config, f *ibsim.Fabric) []any {
	sw := f.Switch
	subnet := "fresh (the switch has no LID until an SM sweeps)"
	if lid := sw.LID(); lid != 0 {
		subnet = fmt.Sprintf("swept (switch LID %d, routes to every port's LID)", lid)
	}
	var cables, peers, uncabled []string
	for hp := uint8(1); int(hp) <= len(cfg.Ports); hp++ {
		sp, ok := f.Cables[hp]
		if !ok {
			if cfg.Ports[hp-1].LinkLayer == "ib" {
				uncabled = append(uncabled, fmt.Sprintf("port %d (Down, Polling)", hp))
			}
			continue
		}
		pi, _ := sw.PortInfo(int(sp))
		cables = append(cables, fmt.Sprintf("port %d (LID %d) - switch port %d (%s)", hp, cfg.Ports[hp-1].LID, sp, pi.PortState))
	}
	for _, pc := range cfg.Fabric.Peers {
		peers = append(peers, fmt.Sprintf("%#016x %q on switch port %d", uint64(pc.PortGUID), pc.NodeDescription, pc.SwitchPort))
	}
	attrs := []any{"switch", fmt.Sprintf("%#016x %q", sw.NodeGUID(), cfg.Fabric.Switch.NodeDescription),
		"switch_ports", sw.NumPorts(), "cables", strings.Join(cables, ", "), "subnet", subnet}
	if len(peers) > 0 {
		attrs = append(attrs, "peers", strings.Join(peers, ", "))
	}
	if len(uncabled) > 0 {
		attrs = append(attrs, "uncabled", strings.Join(uncabled, ", "))
	}
	return attrs
}

// watchPorts carries the port changes an SM makes (the MAD engine's
// observer, called on whichever goroutine ran the SMP) to the poller, which
// delivers them to the VFs. Changes wait merged per port, so a burst of
// Sets costs at most one pending record per port and never blocks the
// engine's caller.
func (s *server) watchPorts(ctx context.Context, log *slog.Logger) {
	var mu sync.Mutex
	var pending [mad.MaxPorts]mad.PortChange
	kick := make(chan struct{}, 1)
	s.mad.Observe(func(c *mad.PortChange) {
		mu.Lock()
		pending[c.Port-1].Merge(c)
		mu.Unlock()
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
			}
			mu.Lock()
			batch := pending
			pending = [mad.MaxPorts]mad.PortChange{}
			mu.Unlock()
			for i := range batch {
				c := &batch[i]
				if c.What == 0 {
					continue
				}
				var n int
				var perr error
				if err := s.pf.Do(func() { n, perr = s.hca.PortMgmtChange(c) }); err != nil {
					return // the poller has stopped
				}
				if perr != nil {
					log.Warn("port change", "port", c.Port, "state", c.State, "what", c.What, "eqes", n, "err", perr)
				} else {
					log.Info("port change", "port", c.Port, "state", c.State, "what", c.What, "eqes", n)
				}
			}
		}
	}()
}

// runDir is vfclient.RunDir, where a device BAR's state file goes by default;
// tests point it elsewhere.
var runDir = vfclient.RunDir

// stateFilePath is the PF state file: --pfstate, beside a file BAR
// (PATH.pfstate), or for a device BAR (sysfs:, vfio:) in dir, named after
// the device (vfclient.DevicePath: dir/SCHEME-DEVICE[-N].pfstate, beside its
// default admin socket); "" for none (--pfstate off).
func stateFilePath(flagValue string, bs bar.Spec, dir string) string {
	switch {
	case flagValue == "off":
		return ""
	case flagValue != "":
		return flagValue
	case bs.Scheme == "file":
		return bs.Path + ".pfstate"
	}
	return vfclient.DevicePath(dir, bs, ".pfstate")
}
