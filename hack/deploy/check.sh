#!/usr/bin/env bash
# make deploy-check: every file of hack/deploy through a real tool that
# parses it. A missing tool skips with its Debian package named, except
# under CI=true, where it fails (as hack/testenv does for Go tests).
#   alerts.yml, alerts_test.yml  promtool check rules, promtool test rules
#   systemd/vhcrd.service        systemd-analyze verify (warnings fail too)
#   Containerfile, kubernetes/   go test ./hack/deploy (BuildKit's Dockerfile
#                                parser; strict decoding into k8s.io/api and
#                                prometheus-operator's types; a pinned image,
#                                HTTP probes, the PF state file on the host,
#                                the node label; the unit's state file and
#                                runtime directory; every alert's runbook,
#                                a firing and a quiet test case per alert)
#   grafana/vhcrd.json           go test ./cmd/vhcrd -run Dashboard (every
#                                query's metric in a live scrape; promtool
#                                parses every query; VFs grouped by instance)
set -euo pipefail
cd "$(dirname "$0")"
GO=${GO:-go}
VHCRD=${VHCRD:-../../bin/vhcrd}

need() { # need TOOL PACKAGE
  if command -v "$1" >/dev/null; then return 0; fi
  if [ "${CI:-}" = true ]; then echo "deploy-check: $1 not installed (Debian package $2)" >&2; exit 1; fi
  echo "deploy-check: SKIP $1 checks: $1 not installed (Debian package $2)" >&2
  return 1
}

if need promtool prometheus; then
  (cd prometheus && promtool check rules alerts.yml && promtool test rules alerts_test.yml)
fi

if need systemd-analyze systemd; then
  # verify checks that ExecStart's binary exists: point it at the one just
  # built. Any message (an unknown key or section is only a warning) fails.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  bin=$(realpath "$VHCRD")
  sed "s|/usr/local/bin/vhcrd|$bin|" systemd/vhcrd.service > "$tmp/vhcrd.service"
  out=$(systemd-analyze verify "$tmp/vhcrd.service" 2>&1) || { echo "$out"; exit 1; }
  if [ -n "$out" ]; then echo "systemd-analyze verify systemd/vhcrd.service:"; echo "$out"; exit 1; fi
  echo "systemd-analyze verify systemd/vhcrd.service: OK"
fi

$GO test -count=1 .
$GO test -count=1 -run 'Dashboard' ../../cmd/vhcrd
