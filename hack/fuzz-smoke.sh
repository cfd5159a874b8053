#!/usr/bin/env bash
# Runs every fuzz target of the module for $FUZZTIME (default 3s) each, on top
# of its seed corpus in testdata/fuzz. A crasher fails the run and is left in
# testdata/fuzz/<target>/ for `go test` to replay.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-3s}
n=0
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "fuzz $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/fuzz-smoke.$$ 2>&1 || {
      cat /tmp/fuzz-smoke.$$; rm -f /tmp/fuzz-smoke.$$; exit 1; }
    n=$((n + 1))
  done
done
rm -f /tmp/fuzz-smoke.$$
echo "fuzz-smoke: $n targets, $fuzztime each, no failures"
