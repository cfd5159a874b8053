# vhcrd — see README.md. `make run` serves the embedded default; `make test`
# is what CI runs.

GO        ?= go
BIN       := bin
GOFLAGS   ?=
FUZZTIME  ?= 3s
BENCHTIME ?= 1s
PKGS      := ./...

.PHONY: all build run test unit race lint fuzz-smoke bench vmtest faults deploy-check crash clean

all: build

# Static binaries: nothing in the module uses cgo (net falls back to its
# pure-Go resolver). The revision also goes in through -X for trees Go does
# not stamp (a git worktree, GOFLAGS=-buildvcs=false).
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := $(if $(REVISION),-X github.com/vhcrd/vhcrd/metrics/buildinfo.Revision=$(REVISION))

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

# The main job on the embedded default: 8 VFs, BAR and DMA regions as tmpfs
# files (/dev/shm/vhcrd-bar, the VF BAR regions /dev/shm/vhcrd-bar.vf0..7,
# /dev/shm/vhcrd-dma), metrics on 127.0.0.1:9464.
run: build
	./$(BIN)/vhcrd serve

# Everything CI runs: lint, the race-detected unit, cross-process and
# interop tests, a short run of every fuzz target, and the VM tier.
# Each target in turn, its wall time printed after it (the bound on 2 cores:
# 25 minutes in all).
TEST_TARGETS := lint race fuzz-smoke deploy-check crash vmtest
test:
	@for t in $(TEST_TARGETS); do \
	  s=$$(date +%s); $(MAKE) --no-print-directory $$t || exit 1; \
	  echo "make test: $$t took $$(( $$(date +%s) - s )) s"; \
	done

race:
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

# The crash tier (hack/crashtest, also in race): vhcrd built with -tags
# crashpoints, killed with SIGKILL under a ledgered 8-VF load at random
# moments and at each named crash point, restarted on the same files, and
# checked after every restart; -v prints its totals (kills, lost,
# duplicated, kept objects). VHCRD_CRASH_SEED repeats a run.
crash:
	$(GO) test -count=1 -v -run '^TestCrash' ./hack/crashtest

unit:
	$(GO) test -count=1 $(PKGS)

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)
	@# No function over 80 lines or cyclomatic complexity 25 outside test and
	@# generated files (hack/funclint counts as gocyclo does).
	$(GO) run ./hack/funclint -max-lines 80 -max-cyclo 25 $(PKGS)
	@# go.mod and go.sum as `go mod tidy` would leave them (-diff prints the
	@# change and writes nothing). It asks the module proxy for what the
	@# cache lacks: offline, a fresh machine's cache has no go.mod of the
	@# modules that only its dependencies' tests import, and tidy needs them.
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum: not tidy (run go mod tidy)"; exit 1; }

fuzz-smoke:
	FUZZTIME=$(FUZZTIME) ./hack/fuzz-smoke.sh

# Benchmarks print figures, never assert them: Go microbenchmarks with
# allocs/op, then the cross-process round trips with medians and ratios, and
# fairness against vhcrd --num-vfs 64 (per-VF throughput max/min with 8 and 64
# busy VFs, a bystander's latency beside a flooding VF), then a guest's bind
# under the poller's default and busy policies.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count 1 $(PKGS) > $(BIN)/bench.out; s=$$?; cat $(BIN)/bench.out; \
	echo "persistence (vhcr/master BenchmarkPersistCost, the run at the full benchtime; targets: vfctl bench's state file cost lines below):"; \
	awk '/^persist cost/ { last[$$3] = $$0 } END { for (k in last) print "  " last[k] }' $(BIN)/bench.out | sort; \
	echo "the PF's side of a NOP on one goroutine (vhcr/master BenchmarkNOPParts; post - scan-idle is vhcrd's own work beyond detection, warm caches, no cache-line transfers):"; \
	awk '/^BenchmarkNOPParts\// { print "  " $$1 " " $$3 " ns/op" }' $(BIN)/bench.out; exit $$s
	./$(BIN)/vfctl bench --vhcrd ./$(BIN)/vhcrd
	@# The poller's policy for guests: a QEMU guest's bind of mlx4_core +
	@# mlx4_ib under the default policy against busy polling, and the idle
	@# CPU with the guest bound (the VM tier's guest; it skips, saying why,
	@# without QEMU or the guest kernel: hack/fetch-vmkernel.sh).
	VHCRD_VMTEST=1 $(GO) test -count=1 -v -run '^$$' -bench '^BenchmarkGuestBindPolicy$$' -benchtime 1x ./hack/vmtest

# hack/deploy through the tools that read it: promtool (alert rules and
# their tests), systemd-analyze verify, the Dockerfile parser and the
# Kubernetes types (Go tests), the dashboard against a live scrape.
deploy-check: build
	GO=$(GO) ./hack/deploy/check.sh

vmtest:
	@if [ -x hack/vmtest.sh ]; then ./hack/vmtest.sh; else echo "vmtest: hack/vmtest.sh not present"; fi

# The whole fault matrix (hack/vmtest/faults_test.go, TestLinuxMLX4Faults):
# every case of injected fault × point against the guest's unmodified mlx4
# driver, then the table into docs/faults.md's matrix section. vmtest runs
# its CI subset (one case or more per class of reaction). FAULTS=REGEXP
# runs the cases whose names match (taken as written: $(value FAULTS)) and
# replaces only their rows.
FAULTS ?= all
faults:
	VHCRD_FAULTS='$(value FAULTS)' VHCRD_FAULTS_DOC=docs/faults.md ./hack/vmtest.sh -run '^TestLinuxMLX4Faults$$' -timeout 120m

# A stopped PF's files (vhcrd clean: the regions of CLEAN_BAR, its VF BAR
# files, state file and sockets; refused while a PF serves them), then bin/.
# CLEAN_BAR defaults to $VHCRD_BAR, as the tools' --bar does.
CLEAN_BAR ?= $(or $(VHCRD_BAR),file:/dev/shm/vhcrd-bar)
clean:
	@if [ -x $(BIN)/vhcrd ]; then ./$(BIN)/vhcrd clean --bar $(CLEAN_BAR); else $(GO) run ./cmd/vhcrd clean --bar $(CLEAN_BAR); fi
	rm -rf $(BIN)
