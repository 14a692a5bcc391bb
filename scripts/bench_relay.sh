#!/usr/bin/env bash
# The relay's throughput (BENCHMARKS.md, "The simulator as a relay"): redis-benchmark against a
# redis-server directly and through `maintwatch simulate --upstream`, alternating, in one run.
#
#   scripts/bench_relay.sh                 # 3 rounds of 200,000 requests per test
#   ROUNDS=5 REQUESTS=500000 scripts/bench_relay.sh
#   BIN=path/to/maintwatch scripts/bench_relay.sh    # a binary built elsewhere (another commit)
#   INSTRUCTIONS=1 scripts/bench_relay.sh            # also the simulator's user-space
#                                                    # instructions per request (valgrind)
#
# Needs: redis-server and redis-benchmark (Debian: redis-server, redis-tools). Builds the release
# binary into $CARGO_TARGET_DIR (default: the tree's target/). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${ROUNDS:-3}"
requests="${REQUESTS:-200000}"
if [ -n "${BIN:-}" ]; then
    bin=$BIN
else
    bin="${CARGO_TARGET_DIR:-target}/release/maintwatch"
    cargo build --release --quiet --bin maintwatch
fi

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.05; done

# single-proxy waits for an opt-in that redis-benchmark never sends: the clock never starts and
# the simulator is a pure relay.
"$bin" simulate --scenario single-proxy --upstream "redis://127.0.0.1:$redis_port" --quiet \
    >"$work/sim.out" &
pids+=($!)
for _ in $(seq 100); do grep -q '^ *upstream' "$work/sim.out" 2>/dev/null && break; sleep 0.05; done
proxy=$(awk '$1 == "proxies" {print $2; exit}' "$work/sim.out")
sim_host=${proxy%:*}
sim_port=${proxy##*:}

echo "relay benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'), binary $bin"
echo "machine: $(nproc) cores; $(redis-server --version | cut -d' ' -f1-3); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "direct:  redis-benchmark -h 127.0.0.1 -p $redis_port -P 16 -t set,get -n $requests -q"
echo "through: redis-benchmark -h $sim_host -p $sim_port -P 16 -t set,get -n $requests -q"

# "SET: 657894.75 requests per second, p50=..." -> 657894.75
rate() { awk -v t="$1" -F'[ :]+' '$1 == t {print $2}' "$2"; }
# CPU seconds (user + system) a process has used; throughput on a shared machine is noisy, CPU
# per request is not.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); print ($12 + $13) / hz}' "/proc/$1/stat"; }
redis_pid=${pids[0]}
sim_pid=${pids[1]}
sim_cpu=0; redis_cpu=0; relayed=0

printf '%-5s %12s %12s %6s %12s %12s %6s\n' run 'SET direct' 'SET relay' ratio 'GET direct' 'GET relay' ratio
for r in $(seq "$rounds"); do
    redis-benchmark -h 127.0.0.1 -p "$redis_port" -P 16 -t set,get -n "$requests" -q 2>/dev/null \
        | tr '\r' '\n' | grep 'requests per second' >"$work/direct"
    s0=$(cpu "$sim_pid"); r0=$(cpu "$redis_pid")
    redis-benchmark -h "$sim_host" -p "$sim_port" -P 16 -t set,get -n "$requests" -q 2>/dev/null \
        | tr '\r' '\n' | grep 'requests per second' >"$work/relay"
    s1=$(cpu "$sim_pid"); r1=$(cpu "$redis_pid")
    sim_cpu=$(echo "$sim_cpu + $s1 - $s0" | bc -l); redis_cpu=$(echo "$redis_cpu + $r1 - $r0" | bc -l)
    relayed=$((relayed + 2 * requests))
    sd=$(rate SET "$work/direct"); sr=$(rate SET "$work/relay")
    gd=$(rate GET "$work/direct"); gr=$(rate GET "$work/relay")
    awk -v r="$r" -v sd="$sd" -v sr="$sr" -v gd="$gd" -v gr="$gr" 'BEGIN {
        printf "%-5s %12.0f %12.0f %6.2f %12.0f %12.0f %6.2f\n", r, sd, sr, sr / sd, gd, gr, gr / gd
    }'
done
awk -v s="$sim_cpu" -v r="$redis_cpu" -v n="$relayed" 'BEGIN {
    printf "CPU per relayed request: simulator %.2f us, redis-server %.2f us (%d requests)\n", s / n * 1e6, r / n * 1e6, n
}'
echo "simulator peak RSS: $(awk '/VmHWM/ {print $2, $3}' "/proc/$sim_pid/status")"

# Instructions do not depend on the neighbours at all: the simulator under callgrind, relaying
# REQUESTS/4 SETs and as many GETs at -P 16 (the batches are the same as at full speed: each of
# redis-benchmark's connections has one batch in flight), less an idle start and stop.
[ "${INSTRUCTIONS:-0}" = 1 ] || exit 0
if ! command -v valgrind >/dev/null; then
    echo "instructions: SKIP, no valgrind"
    exit 0
fi
instructions() {
    local n=$1 out="$work/cg.$1" port
    port=$(free_port)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" simulate --scenario single-proxy \
        --port "$port" --upstream "redis://127.0.0.1:$redis_port" --quiet >"$work/cg.sim" 2>/dev/null &
    local pid=$!
    for _ in $(seq 600); do grep -q '^ *upstream' "$work/cg.sim" 2>/dev/null && break; sleep 0.1; done
    if [ "$n" -gt 0 ]; then
        redis-benchmark -h "$sim_host" -p "$port" -P 16 -t set,get -n "$n" -q >/dev/null 2>&1
    fi
    kill -TERM "$pid"
    wait "$pid" || true
    awk '$1 == "summary:" || $1 == "totals:" {print $2; exit}' "$out"
}
n=$((requests / 4))
idle=$(instructions 0)
busy=$(instructions "$n")
awk -v i="$idle" -v b="$busy" -v n="$n" 'BEGIN {
    printf "simulator user-space instructions per relayed request: %.0f (%d requests, callgrind)\n", (b - i) / (2 * n), 2 * n
}'
