#!/usr/bin/env bash
# Runs every fuzz target of the module for $FUZZTIME (default 3s) each, on top
# of its seed corpus in testdata/fuzz. A crasher fails the run and is left in
# testdata/fuzz/<target>/ for `go test` to replay.
#
# Each package's test binary is built once, instrumented as `go test -fuzz`
# builds it, and run once per target from the package's directory with the
# flags `go test -fuzz` passes (the corpus cache under GOCACHE/fuzz, as go
# test keeps it): one `go test -fuzz` per target would link the binary again
# and again, seven seconds a target on the 2-CPU machine, more than the
# fuzzing itself.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-3s}
cache=$(go env GOCACHE)/fuzz
bin=$(mktemp -d)
out=$bin/out
trap 'rm -rf "$bin"' EXIT
# The packages with fuzz targets: the directories of the test files that
# declare one (listing every package's tests would build them all), or
# those of $FUZZ_DIRS.
dirs=${FUZZ_DIRS:-$(git grep -l -E '^func Fuzz[A-Z0-9_]' -- '*_test.go' | xargs -n1 dirname | sort -u)}
n=0
for dir in $dirs; do
  pkg=$(go list "./$dir")
  test=$bin/$(echo "$pkg" | tr '/' '_').test
  go test -c -fuzz '^Fuzz' -o "$test" "./$dir"
  for target in $(cd "$dir" && "$test" -test.list '^Fuzz'); do
    echo "fuzz $pkg $target ($fuzztime)"
    for attempt in 1 2 3; do
      if (cd "$dir" && "$test" -test.run '^$' -test.fuzz "^${target}\$" -test.fuzztime "$fuzztime" \
          -test.fuzzcachedir "$cache" -test.paniconexit0 >"$out" 2>&1); then
        break
      fi
      # The fuzzing engine sometimes gives up with "context deadline exceeded"
      # when the machine is busy at the end of a short -fuzztime; that is not
      # a finding (no failing input is written). Anything else fails at once.
      if [ "$attempt" -lt 3 ] && grep -q 'context deadline exceeded' "$out" &&
         ! grep -q 'Failing input written' "$out"; then
        echo "  engine deadline without a finding; running $target again"
        continue
      fi
      cat "$out"; exit 1
    done
    n=$((n + 1))
  done
done
echo "fuzz-smoke: $n targets, $fuzztime each, no failures"
