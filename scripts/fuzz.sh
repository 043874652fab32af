#!/usr/bin/env bash
# Run every Go fuzz target briefly (the seed corpus always runs in go test).
#
# The budget is a count of inputs (-fuzztime=Nx), not a duration: with a
# duration, Go 1.26's coordinator can fail a target with a bare "context
# deadline exceeded" as the time runs out under load, having found nothing
# (go.dev/issue/75804). A count sets no deadline, so that cannot happen, and
# a loaded CI host fuzzes as many inputs as an idle laptop.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20000x}
case $n in
  *x) ;;
  *) echo "fuzz.sh: the budget is a count of inputs such as 20000x, not $n" >&2; exit 2 ;;
esac
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
    echo "fuzz $pkg $f ($n)"
    # Quiet when it passes; a failure shows go test's output (the input,
    # the message), which otherwise only says that make failed.
    if ! out=$(go test -run='^$' -fuzz="^$f\$" -fuzztime="$n" "$pkg" 2>&1); then
      printf '%s\n' "$out" | tail -n 60
      exit 1
    fi
  done
done
