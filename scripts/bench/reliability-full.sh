#!/usr/bin/env bash
# The reliability tests (tests/it/reliability.rs) at full count: 100 server restarts during one
# watch instead of CI's 10 (MAINTWATCH_RESTARTS), in release mode. The hostile-server and SIGKILL
# tests run as in CI. About a minute.
#
#   scripts/bench/reliability-full.sh
#   MAINTWATCH_RESTARTS=500 scripts/bench/reliability-full.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
MAINTWATCH_RESTARTS="${MAINTWATCH_RESTARTS:-100}" cargo test --release --test it reliability:: -- --nocapture
