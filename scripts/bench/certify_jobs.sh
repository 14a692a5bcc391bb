#!/bin/sh
# One client's default certification at --jobs 1 and at the default, side by side in one run,
# with the peak memory of maintwatch and its redis-servers (the client's processes left out):
# the resident sets of every maintwatch and redis-server process under the run, summed, sampled
# every half second. Prints the machine's load before and after each run. docs/benchmarks.md has the
# figures. JOBS lists the --jobs values to compare, in order (`default`: no --jobs flag); OUT is
# where each run's output goes.
#
#   [JOBS="1 default"] [OUT=/tmp] scripts/bench/certify_jobs.sh MAINTWATCH -- CLIENT COMMAND...
set -eu
bin=$1
shift 2
sample() {
    # The sum of VmRSS (kB) of the maintwatch and redis-server processes descending from $1.
    peak=0
    # Until it exits (a zombie, not yet waited for, still answers kill -0).
    while [ "$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true)" != Z ] &&
        [ -e "/proc/$1" ]; do
        pids=$(ps -e -o pid=,ppid=,comm= | awk -v root="$1" '
            { parent[$1] = $2; name[$1] = $3 }
            END { for (p in parent) { q = p; while (q > 1) { if (q == root) { if (name[p] ~ /^(maintwatch|redis-server)$/) print p; break } q = parent[q] } } }')
        sum=0
        for p in $pids; do
            kb=$(awk '/^VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)
            sum=$((sum + ${kb:-0}))
        done
        [ "$sum" -gt "$peak" ] && peak=$sum
        sleep 0.5
    done
    echo "$peak"
}
out_dir=${OUT:-/tmp}
for jobs in ${JOBS:-1 default}; do
    flag=""
    [ "$jobs" = default ] || flag="--jobs $jobs"
    echo "load before --jobs $jobs: $(cut -d' ' -f1-3 /proc/loadavg)"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$bin" certify $flag -- "$@" >"$out_dir/bench-certify-$jobs.out" 2>&1 &
    pid=$!
    peak=$(sample "$pid")
    wait "$pid" || true
    end=$(date +%s.%N)
    row=$(grep -c '^  [a-z]' "$out_dir/bench-certify-$jobs.out" || true)
    echo "--jobs $jobs: $(echo "$end - $start" | bc) s wall, peak RSS $((peak / 1024)) MiB (maintwatch + redis-server), $row lines of row and rules"
    echo "load after --jobs $jobs: $(cut -d' ' -f1-3 /proc/loadavg)"
done
