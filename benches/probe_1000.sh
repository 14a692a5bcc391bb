#!/usr/bin/env bash
# Benchmark: probe 1,000 simulated endpoints (release build) and print the wall time.
#
# 1. The library path (conn::probe::probe_all, what `maintwatch probe` runs), timed inside
#    examples/probe_1000.rs.
# 2. The binary end to end: the example serves the 1,000 endpoints and lists them in a file,
#    and `maintwatch probe --from FILE --quiet` is timed with bash's `time`.
#
# Target: under 2 s with the CLI defaults (--concurrency 512, --linger 50ms). The linger alone
# puts a floor of rounds x 50 ms on it: 2 rounds at 512 (16 at the former default of 64).
# 10,000 endpoints: scripts/bench/all.sh probe10k.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"

cargo build --release --quiet --example probe_1000
echo "== library: conn::probe::probe_all"
"$target"/release/examples/probe_1000 "$@"

if ! cargo build --release --quiet --bin maintwatch 2>/dev/null \
    || ! "$target"/release/maintwatch probe --help >/dev/null 2>&1; then
    echo "== binary: skipped (maintwatch has no probe subcommand in this build)"
    exit 0
fi

dir=$(mktemp -d)
list="$dir/urls.txt"
"$target"/release/examples/probe_1000 --serve "$list" 2>/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 500); do
    [[ -f "$list" ]] && break
    sleep 0.02
done
[[ -f "$list" ]] || { echo "the endpoints did not come up" >&2; exit 1; }

echo "== binary: maintwatch probe --from $(wc -l <"$list") endpoints --quiet"
status=0
time "$target"/release/maintwatch probe --from "$list" --quiet || status=$?
echo "exit code: $status (0: every endpoint accepted)"
exit "$status"
