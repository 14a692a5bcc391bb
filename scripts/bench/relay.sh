#!/usr/bin/env bash
# The relay's throughput (docs/benchmarks.md, "The simulator as a relay"): redis-benchmark against a
# redis-server directly and through `maintwatch simulate --upstream` to its TCP port and to its
# Unix socket, alternating, in one run, with the CPU each of the three processes used.
#
#   scripts/bench/relay.sh                 # 3 rounds of 200,000 requests per test
#   ROUNDS=5 REQUESTS=500000 scripts/bench/relay.sh
#   BIN=path/to/maintwatch scripts/bench/relay.sh    # a binary built elsewhere (another commit)
#   INSTRUCTIONS=1 scripts/bench/relay.sh            # also the simulator's user-space
#                                                    # instructions per request (valgrind)
#
# Needs: redis-server and redis-benchmark (Debian: redis-server, redis-tools). Builds the release
# binary into $CARGO_TARGET_DIR (default: the tree's target/). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/../.."
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
redis-server --port "$redis_port" --bind 127.0.0.1 --unixsocket "$work/redis.sock" \
    --unixsocketperm 700 --save '' --appendonly no >/dev/null &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.05; done

# single-proxy waits for an opt-in that redis-benchmark never sends: the clock never starts and
# the simulator is a pure relay. One simulator relays to the server's TCP port, one to its Unix
# socket (what `--upstream spawn` does).
# Sets $proxy and $pid (not in a subshell: the process must stay the script's child).
start_sim() {
    "$bin" simulate --scenario single-proxy --upstream "$1" --quiet >"$work/$2.out" &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 100); do grep -q '^ *upstream' "$work/$2.out" 2>/dev/null && break; sleep 0.05; done
    proxy=$(awk '$1 == "proxies" {print $2; exit}' "$work/$2.out")
}
start_sim "redis://127.0.0.1:$redis_port" tcp
tcp_proxy=$proxy tcp_pid=$pid
start_sim "unix://$work/redis.sock" unix
unix_proxy=$proxy unix_pid=$pid
redis_pid=${pids[0]}
sim_host=${tcp_proxy%:*}
sim_port=${tcp_proxy##*:}

echo "relay benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'), binary $bin"
echo "machine: $(nproc) cores; $(redis-server --version | cut -d' ' -f1-3); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "direct:        redis-benchmark -h 127.0.0.1 -p $redis_port -P 16 -t set,get -n $requests -q"
echo "relay (tcp):   redis-benchmark -h $sim_host -p $sim_port -P 16 -t set,get -n $requests -q   (simulate --upstream redis://127.0.0.1:$redis_port)"
echo "relay (unix):  redis-benchmark -h ${unix_proxy%:*} -p ${unix_proxy##*:} -P 16 -t set,get -n $requests -q   (simulate --upstream unix://.../redis.sock)"

# "SET: 657894.75 requests per second, p50=..." -> 657894.75
rate() { awk -v t="$1" -F'[ :]+' '$1 == t {print $2}' "$2"; }
# CPU seconds (user + system) a process has used; throughput on a shared machine is noisy, CPU
# per request is not.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); print ($12 + $13) / hz}' "/proc/$1/stat"; }
add() { echo "$1 + $2" | bc -l; }
declare -A cpu_sim=([direct]=0 [tcp]=0 [unix]=0) cpu_redis=([direct]=0 [tcp]=0 [unix]=0) \
    cpu_bench=([direct]=0 [tcp]=0 [unix]=0)
# One run of redis-benchmark against $2:$3, its rates in $work/$1, the CPU each process used
# (the benchmark's own from bash's `time`) added to the run's kind.
run() {
    local kind=$1 sim=${4:-}
    local s0=0 r0 s1=0 r1
    [ -n "$sim" ] && s0=$(cpu "$sim")
    r0=$(cpu "$redis_pid")
    { TIMEFORMAT='%U %S'; time redis-benchmark -h "$2" -p "$3" -P 16 -t set,get -n "$requests" -q \
        2>/dev/null | tr '\r' '\n' | grep 'requests per second' >"$work/$kind"; } 2>"$work/$kind.time"
    [ -n "$sim" ] && s1=$(cpu "$sim")
    r1=$(cpu "$redis_pid")
    cpu_sim[$kind]=$(add "${cpu_sim[$kind]}" "$s1 - $s0")
    cpu_redis[$kind]=$(add "${cpu_redis[$kind]}" "$r1 - $r0")
    cpu_bench[$kind]=$(add "${cpu_bench[$kind]}" "$(awk '{print $1 + $2}' "$work/$kind.time")")
}

printf '%-4s %10s %10s %5s %10s %5s   %10s %10s %5s %10s %5s\n' run \
    'SET direct' 'SET tcp' ratio 'SET unix' ratio 'GET direct' 'GET tcp' ratio 'GET unix' ratio
for r in $(seq "$rounds"); do
    run direct 127.0.0.1 "$redis_port"
    run tcp "$sim_host" "$sim_port" "$tcp_pid"
    run unix "${unix_proxy%:*}" "${unix_proxy##*:}" "$unix_pid"
    awk -v r="$r" -v sd="$(rate SET "$work/direct")" -v st="$(rate SET "$work/tcp")" \
        -v su="$(rate SET "$work/unix")" -v gd="$(rate GET "$work/direct")" \
        -v gt="$(rate GET "$work/tcp")" -v gu="$(rate GET "$work/unix")" 'BEGIN {
        printf "%-4s %10.0f %10.0f %5.2f %10.0f %5.2f   %10.0f %10.0f %5.2f %10.0f %5.2f\n",
            r, sd, st, st / sd, su, su / sd, gd, gt, gt / gd, gu, gu / gd
    }'
done
n=$((rounds * 2 * requests))
echo "CPU per request (us), $n requests each way: redis-benchmark + redis-server + simulator = total"
for kind in direct tcp unix; do
    awk -v k="$kind" -v b="${cpu_bench[$kind]}" -v r="${cpu_redis[$kind]}" -v s="${cpu_sim[$kind]}" -v n="$n" 'BEGIN {
        printf "  %-7s %.2f + %.2f + %.2f = %.2f\n", k, b / n * 1e6, r / n * 1e6, s / n * 1e6, (b + r + s) / n * 1e6
    }'
done
echo "simulator peak RSS: tcp $(awk '/VmHWM/ {print $2, $3}' "/proc/$tcp_pid/status"), unix $(awk '/VmHWM/ {print $2, $3}' "/proc/$unix_pid/status")"

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
