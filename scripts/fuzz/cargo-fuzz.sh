#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer via cargo-fuzz) of the RESP3 scanner and the notification
# parser, on stable Rust: `-s none` needs no nightly flag. The targets and what they check are in
# fuzz/fuzz_targets/*.rs; the corpus of interesting inputs is committed under fuzz/corpus/.
#
#   scripts/fuzz/cargo-fuzz.sh              # 10,000,000 inputs per target (the figure in docs/benchmarks.md)
#   scripts/fuzz/cargo-fuzz.sh 200000       # a quick pass
#   MINIMIZE=1 scripts/fuzz/cargo-fuzz.sh   # afterwards, shrink each corpus to a small set of inputs
#                                       # that still reaches every coverage edge (what is committed;
#                                       # a run adds every new interesting input to fuzz/corpus/)
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`); builds into $CARGO_TARGET_DIR (default
# /tmp/mw-fuzz) so the main build is not disturbed. Exits non-zero on the first crash, leaving
# the input in fuzz/artifacts/<target>/.
set -euo pipefail
runs="${1:-${FUZZ_RUNS:-10000000}}"
if ! [[ "$runs" =~ ^[0-9]+$ ]] || (( runs < 1 )); then
    echo "usage: $0 [RUNS]  (a positive number; default 10000000)" >&2
    exit 2
fi
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/tmp/mw-fuzz}"
command -v cargo-fuzz >/dev/null || { echo "fuzz: needs cargo-fuzz: cargo install cargo-fuzz" >&2; exit 2; }

cargo fuzz build -s none -O
bin="$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release"
status=0
for target in scanner notification; do
    mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
    max_len=4096
    [[ $target == notification ]] && max_len=1024
    log=$(mktemp)
    start=$(date +%s)
    set +e
    "$bin/$target" "fuzz/corpus/$target" -runs="$runs" -max_len="$max_len" \
        -artifact_prefix="fuzz/artifacts/$target/" -print_final_stats=1 >"$log" 2>&1
    code=$?
    set -e
    end=$(date +%s)
    done_line=$(grep -E '^Done [0-9]+ runs' "$log" || true)
    cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[^ ]+' || true)
    echo "fuzz $target: ${done_line:-no Done line} ($(( end - start )) s wall), $cov, exit $code"
    if (( code != 0 )); then
        grep -E 'panicked|ERROR|artifact' "$log" | head -20 >&2
        status=$code
    fi
    rm -f "$log"
    if [[ "${MINIMIZE:-0}" == 1 && $code == 0 ]]; then
        tmp=$(mktemp -d)
        "$bin/$target" -set_cover_merge=1 -use_counters=0 "$tmp" "fuzz/corpus/$target" >/dev/null 2>&1
        rm -rf "fuzz/corpus/$target" && mv "$tmp" "fuzz/corpus/$target"
        echo "fuzz $target: corpus minimized to $(ls "fuzz/corpus/$target" | wc -l) inputs"
    fi
done
exit "$status"
