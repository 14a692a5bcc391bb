#!/usr/bin/env bash
# Long fuzz run of the RESP3 scanner: every `fuzz_*` test of tests/it/resp_props.rs (arbitrary bytes,
# mutated and truncated valid frames, huge declared sizes), in release mode, with CASES cases each
# (default 1,000,000). Prints each test's case count and the total wall time.
#
#   scripts/fuzz/proptest-long.sh            # 1,000,000 cases per fuzz test
#   scripts/fuzz/proptest-long.sh 5000000    # more
#   PROPTEST_RNG_SEED=42 scripts/fuzz/proptest-long.sh   # reproducible inputs
set -euo pipefail

cases="${1:-${FUZZ_CASES:-1000000}}"
if ! [[ "$cases" =~ ^[0-9]+$ ]] || (( cases < 1 )); then
    echo "usage: $0 [CASES]  (a positive number; default 1000000)" >&2
    exit 2
fi
cd "$(dirname "$0")/../.."

echo "fuzz-long: building tests/it/resp_props.rs in release mode"
cargo test --release --test it resp_props:: --no-run

echo "fuzz-long: running every fuzz_* test with PROPTEST_CASES=$cases"
start=$(date +%s)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
PROPTEST_CASES="$cases" cargo test --release --test it resp_props::fuzz -- --nocapture 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
end=$(date +%s)

tests=$(grep -c 'cases passed' "$log" || true)
total=$(( tests * cases ))
echo "fuzz-long: $tests fuzz tests x $cases cases = $total inputs, $(( end - start )) s wall time, exit $status"
if (( status == 0 )) && (( tests == 0 )); then
    echo "fuzz-long: no fuzz test ran" >&2
    exit 1
fi
exit "$status"
