#!/usr/bin/env bash
# Reproduces every figure in docs/benchmarks.md, in one run, printing each with the command that made
# it; a copy of the output goes to $BENCH_LOG (default /tmp/maintwatch-bench.txt).
#
#   scripts/bench/all.sh                    # everything (~10 minutes on 2 cores, plus ~25 for fuzz)
#   scripts/bench/all.sh decode latency     # only some parts
#
# Parts: decode flood latency dns conns conns10k probe10k fleet soak replay startup fuzz reliability
#
# Knobs (environment): FLOOD_MESSAGES (1000000), FLOOD_REPEAT (3), LATENCY_PUSHES (10000),
# LATENCY_ROUNDS (4), DNS_CHANGES (40), CONNECTIONS (1000), FLEET_ENDPOINTS (1000),
# SOAK_ROUNDS (200), FUZZ_RUNS (10000000), MAINTWATCH_RESTARTS (100).
# Needs: redis-server, redis-cli, redis-benchmark, jq, python3; cargo-fuzz for the fuzz part.
# Everything listens on loopback only. Builds go to $CARGO_TARGET_DIR (default /tmp/mw-bench) so
# a shared target directory is not locked for long.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/tmp/mw-bench}"
log="${BENCH_LOG:-/tmp/maintwatch-bench.txt}"
parts=("$@")
all_parts=(decode flood latency dns conns conns10k probe10k fleet soak replay startup fuzz reliability)
(( ${#parts[@]} )) || parts=("${all_parts[@]}")
bin="$CARGO_TARGET_DIR/release/maintwatch"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

exec > >(tee "$log") 2>&1

load() { echo "   (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"; }
step() { echo; echo "== $1"; echo "   \$ $2"; load; }

echo "maintwatch benchmarks, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/ {print $2}') GiB; $(rustc --version)"
echo "peers: $(redis-server --version | cut -d' ' -f1-3), $(jq --version)"

cargo build --release --quiet --bin maintwatch

for part in "${parts[@]}"; do
    case "$part" in
    decode)
        step "decode throughput: project scanner vs redis-protocol 6, same 1M-frame buffer" \
            "cargo bench --bench decode"
        # (criterion's comparison with a previous run, the lines with %, is left out)
        cargo bench --quiet --bench decode 2>&1 | grep -E '^decode_1M|^on-CPU|time:|thrpt:' | grep -v '%' \
            | sed 's/^/   /'
        ;;
    flood)
        step "push flood: ${FLOOD_MESSAGES:-1000000} PUBLISH from redis-benchmark, watch --json vs redis-cli -3" \
            "scripts/bench/flood.py --bin $bin --messages ${FLOOD_MESSAGES:-1000000} --repeat ${FLOOD_REPEAT:-3} --human --capture FILE"
        python3 scripts/bench/flood.py --bin "$bin" --messages "${FLOOD_MESSAGES:-1000000}" \
            --repeat "${FLOOD_REPEAT:-3}" --human --capture "$work/flood.jsonl" | sed 's/^/   /'
        ;;
    latency)
        # Both readers in the same run, in alternating rounds, and what the watch adds.
        step "latency from bytes arriving to their timestamp: the watch beside the do-nothing reader, same run" \
            "cargo build --release --manifest-path benches/harness/Cargo.toml && $CARGO_TARGET_DIR/release/latency --bin $bin --pushes ${LATENCY_PUSHES:-10000} --reader both --rounds ${LATENCY_ROUNDS:-4}"
        cargo build --release --quiet --manifest-path benches/harness/Cargo.toml
        "$CARGO_TARGET_DIR/release/latency" --bin "$bin" --pushes "${LATENCY_PUSHES:-10000}" \
            --reader both --rounds "${LATENCY_ROUNDS:-4}" | sed 's/^/   /'
        ;;
    dns)
        step "DNS change lag against the simulator's nameserver: no window open (500 ms) and a window open (100 ms)" \
            "cargo run --release --example dns_lag -- ${DNS_CHANGES:-40}"
        cargo build --release --quiet --example dns_lag
        "$CARGO_TARGET_DIR/release/examples/dns_lag" "${DNS_CHANGES:-40}" | sed 's/^/   /'
        ;;
    conns10k)
        step "10,000 connections watched by one process: RSS and idle CPU" \
            "scripts/bench/tools.py conns --bin $bin --connections 10000"
        python3 scripts/bench/tools.py conns --bin "$bin" --connections 10000 | sed 's/^/   /'
        ;;
    probe10k)
        step "probe of 10,000 endpoints (two simulators, two redis-servers on 127.0.0.x), default concurrency and the previous default 64" \
            "scripts/bench/tools.py probe --bin $bin --endpoints 10000 --concurrency default --concurrency 64"
        python3 scripts/bench/tools.py probe --bin "$bin" --endpoints 10000 --concurrency default \
            --concurrency 64 | sed 's/^/   /'
        ;;
    conns)
        step "${CONNECTIONS:-1000} connections watched by one process: RSS and idle CPU" \
            "scripts/bench/tools.py conns --bin $bin --connections ${CONNECTIONS:-1000}"
        python3 scripts/bench/tools.py conns --bin "$bin" --connections "${CONNECTIONS:-1000}" | sed 's/^/   /'
        ;;
    fleet)
        step "a fleet of ${FLEET_ENDPOINTS:-1000} endpoints in one watch --from FILE: RSS and idle CPU" \
            "scripts/bench/tools.py fleet --bin $bin --endpoints ${FLEET_ENDPOINTS:-1000}"
        python3 scripts/bench/tools.py fleet --bin "$bin" --endpoints "${FLEET_ENDPOINTS:-1000}" | sed 's/^/   /'
        ;;
    soak)
        step "soak: ${SOAK_ROUNDS:-200} rounds of simulate --loop watched by one watch: RSS at round 10 and at the last" \
            "scripts/bench/tools.py soak --bin $bin --rounds ${SOAK_ROUNDS:-200}"
        python3 scripts/bench/tools.py soak --bin "$bin" --rounds "${SOAK_ROUNDS:-200}" | sed 's/^/   /'
        ;;
    replay)
        if [[ ! -s "$work/flood.jsonl" ]]; then
            echo; echo "== (making the capture for replay: one flood run of maintwatch)"
            python3 scripts/bench/flood.py --bin "$bin" --messages "${FLOOD_MESSAGES:-1000000}" \
                --capture "$work/flood.jsonl" --capture-only | sed 's/^/   /'
        fi
        step "replay of the flood capture vs jq -c . on the same file" \
            "scripts/bench/tools.py replay --bin $bin --capture FILE"
        python3 scripts/bench/tools.py replay --bin "$bin" --capture "$work/flood.jsonl" | sed 's/^/   /'
        ;;
    startup)
        step "start-up plus probe of one loopback endpoint vs redis-cli -3 CLIENT MAINT_NOTIFICATIONS ON" \
            "scripts/bench/tools.py startup --bin $bin"
        python3 scripts/bench/tools.py startup --bin "$bin" | sed 's/^/   /'
        ;;
    fuzz)
        step "fuzzing: scanner and notification parser, ${FUZZ_RUNS:-10000000} inputs each" \
            "scripts/fuzz/cargo-fuzz.sh ${FUZZ_RUNS:-10000000}"
        CARGO_TARGET_DIR=/tmp/mw-fuzz scripts/fuzz/cargo-fuzz.sh "${FUZZ_RUNS:-10000000}" 2>&1 | grep -E '^fuzz ' | sed 's/^/   /'
        ;;
    reliability)
        step "reliability tests at full count (${MAINTWATCH_RESTARTS:-100} restarts)" \
            "scripts/bench/reliability-full.sh"
        MAINTWATCH_RESTARTS="${MAINTWATCH_RESTARTS:-100}" scripts/bench/reliability-full.sh 2>&1 \
            | grep -E '^test |test result' | sed 's/^/   /'
        ;;
    *)
        echo "unknown part $part (${all_parts[*]})" >&2
        exit 2
        ;;
    esac
done
echo
echo "done; output also in $log"
