#!/usr/bin/env bash
# Reproduces docs/benchmarks.md "`pcap`: reading a capture vs `tcpdump -r`": makes a packet-heavy
# capture of real redis-server + redis-benchmark traffic on loopback (needs root for tcpdump),
# then reads it with tcpdump, maintwatch, a second maintwatch build when given (the one to compare
# with, e.g. main's) and (when installed) tshark, alternating, RUNS times each, with /usr/bin/time.
# The capture lives in DIR (tmpfs by default) and is deleted at the end.
#
#   scripts/bench/pcap.sh [MAINTWATCH_BINARY [BASELINE_BINARY]]
#   env: RUNS (3), DIR (/dev/shm), PORT (16500), REQUESTS (1500000), VALUE (64), KEEP=1 keeps it,
#        TSHARK=0 leaves tshark out
set -euo pipefail

MW=${1:-target/release/maintwatch}
BASE=${2:-}
RUNS=${RUNS:-3}
DIR=${DIR:-/dev/shm}
PORT=${PORT:-16500}
REQUESTS=${REQUESTS:-1500000}
VALUE=${VALUE:-64}
FILE="$DIR/maintwatch-bench-$$.pcap"

for tool in redis-server redis-benchmark tcpdump /usr/bin/time "$MW"; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 2; }
done

cleanup() {
    redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
    [ "${KEEP:-0}" = 1 ] || rm -f "$FILE"
}
trap cleanup EXIT

redis-server --port "$PORT" --save '' --appendonly no --daemonize yes >/dev/null
sleep 0.5
tcpdump -i lo -B 524288 -w "$FILE" port "$PORT" 2>"$FILE.tcpdump.log" &
dump=$!
sleep 1
redis-benchmark -p "$PORT" -3 -t set,get -n "$REQUESTS" -d "$VALUE" -P 1 -c 8 -q >/dev/null
sleep 1
kill -INT "$dump"
wait "$dump" || true
grep -E "captured|dropped" "$FILE.tcpdump.log" || true
rm -f "$FILE.tcpdump.log"
ls -l "$FILE"

# Fields: wall s, user s, sys s, peak RSS KiB.
measure() {
    local name=$1
    shift
    /usr/bin/time -f "$name %e %U %S %M" "$@" >/dev/null 2>"$FILE.time" || true
    tail -1 "$FILE.time"
    rm -f "$FILE.time"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# A first read of each puts the file in the page cache for all of them.
tcpdump -r "$FILE" -w /dev/null 2>/dev/null
for _ in $(seq "$RUNS"); do
    measure tcpdump tcpdump -r "$FILE" -w /dev/null
    if [ -n "$BASE" ]; then
        measure baseline "$BASE" pcap --port "$PORT" "$FILE"
    fi
    measure maintwatch "$MW" pcap --port "$PORT" "$FILE"
    if [ "${TSHARK:-1}" != 0 ] && command -v tshark >/dev/null; then
        measure tshark tshark -r "$FILE" -q -z conv,tcp
    fi
done
command -v tshark >/dev/null || echo "tshark: not installed, column not measured"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
