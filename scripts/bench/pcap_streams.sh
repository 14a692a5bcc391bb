#!/usr/bin/env bash
# Reproduces docs/benchmarks.md "`pcap`: open streams": writes captures of 20k, 40k and 80k RESP
# connections left open (scripts/bench/gen_open_streams.py), then reads each with maintwatch,
# alternating, RUNS times each, with /usr/bin/time. Files live in DIR and are deleted at the end.
#
#   scripts/bench/pcap_streams.sh [MAINTWATCH_BINARY]
#   env: RUNS (3), DIR (/dev/shm), SIZES ("20000 40000 80000")
set -euo pipefail

MW=${1:-target/release/maintwatch}
RUNS=${RUNS:-3}
DIR=${DIR:-/dev/shm}
SIZES=${SIZES:-20000 40000 80000}
HERE=$(cd "$(dirname "$0")" && pwd)

for tool in python3 /usr/bin/time "$MW"; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 2; }
done
files=()
cleanup() { rm -f "${files[@]}"; }
trap cleanup EXIT
for n in $SIZES; do
    f="$DIR/maintwatch-open-$n-$$.pcap"
    files+=("$f")
    python3 "$HERE/gen_open_streams.py" "$n" "$f"
    ls -l "$f"
done

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$RUNS"); do
    for f in "${files[@]}"; do
        /usr/bin/time -f "$(basename "$f") %e %U %S %M" "$MW" pcap "$f" >/dev/null 2>"$f.time" || true
        tail -1 "$f.time"
        rm -f "$f.time"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
