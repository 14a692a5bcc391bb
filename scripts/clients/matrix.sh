#!/usr/bin/env bash
# Regenerates the client matrix (docs/matrix.md) from a fresh measurement: installs the pinned client
# releases (scripts/clients/client-versions.sh; the newest where .ci/run puts them), runs the client
# tier (`maintwatch certify` per release: tests/it/redis_py_app.rs, node_redis.rs, ioredis.rs,
# go_redis.rs, lettuce.rs) with MAINTWATCH_REGENERATE=1 to rewrite the rows and their date line,
# then once more without it, one run each, as CI checks them: a cell outside what the runs
# recorded is named. The newest release of each library is certified with `--runs` (RUNS, 20 by
# default: how often each verdict comes, written in its cells), the older ones once. One library
# at a time, so that the load is each library's own: about 12 minutes a library at 20 runs on
# 2 cores, Lettuce (certified at --jobs 2) about four times that. The date line of each row says
# the day, the runs and the highest load average seen at the end of a certification.
# Needs root (the tier gives each client a private resolv.conf), python3, node and npm, Go, Java
# and Maven, and redis-server. Usage: [RUNS=N] [LIBS="redis_py go_redis"]
# scripts/clients/matrix.sh [--once | --robustness]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/clients/client-versions.sh

MW_VENV=target/mw-venv
if [ "$("$MW_VENV/bin/python" -c 'import redis.maint_notifications, redis; print(redis.__version__)' 2>/dev/null)" != "$REDIS_PY_NEWEST" ]; then
  python3 -m venv "$MW_VENV"
  "$MW_VENV/bin/pip" install -q "redis==$REDIS_PY_NEWEST"
fi
MW_NODE=target/mw-node
if [ "$(cd "$MW_NODE" 2>/dev/null && node -p 'require("redis/package.json").version' 2>/dev/null)" != "$NODE_REDIS_NEWEST" ]; then
  mkdir -p "$MW_NODE"
  npm install --prefix "$MW_NODE" --no-audit --no-fund --silent "redis@$NODE_REDIS_NEWEST" >/dev/null
fi
MW_IOREDIS=target/mw-ioredis
if [ "$(cd "$MW_IOREDIS" 2>/dev/null && node -p 'require("ioredis/package.json").version' 2>/dev/null)" != "$IOREDIS_NEWEST" ]; then
  mkdir -p "$MW_IOREDIS"
  npm install --prefix "$MW_IOREDIS" --no-audit --no-fund --silent "ioredis@$IOREDIS_NEWEST" >/dev/null
fi
# go-redis: the newest built from tests/clients/go-redis as .ci/run builds it (the older ones by
# install_older_clients); without Go, its tests print a SKIP line.
if go_redis_go; then
  go_redis_build "$GO_REDIS_NEWEST" "$PWD/target/mw-go-redis"
  export MAINTWATCH_GO_REDIS="$PWD/target/mw-go-redis"
fi
install_older_clients
# The JVM libraries' newest builds (Lettuce's row; Jedis's opt-in line), as .ci/run makes them.
MAINTWATCH_LETTUCE="$(build_jvm_clients lettuce lettuce.version "$LETTUCE_NEWEST")"
MAINTWATCH_JEDIS="$(build_jvm_clients jedis jedis.version "$JEDIS_NEWEST")"
export MAINTWATCH_LETTUCE MAINTWATCH_JEDIS
export MAINTWATCH_PYTHON="$PWD/$MW_VENV/bin/python" MAINTWATCH_NODE_REDIS="$PWD/$MW_NODE" \
  MAINTWATCH_IOREDIS="$PWD/$MW_IOREDIS"
export MAINTWATCH_REDIS_SERVER="${MAINTWATCH_REDIS_SERVER:-$(command -v redis-server)}"

# Each library's tests are named after it (tests/it/redis_py_app.rs: redis_py_certified_row).
LIBS="${LIBS:-redis_py node_redis ioredis go_redis lettuce}"
# --robustness: the robustness columns instead (tests/it/robustness.rs), each newest release over
# RUNS runs of the whole set, rewritten with its line of runs; then each checked once, as CI does.
if [ "${1:-}" = "--robustness" ]; then
  for lib in $LIBS; do
    MAINTWATCH_REGENERATE=1 MAINTWATCH_MATRIX_RUNS="${RUNS:-20}" \
      cargo test --locked --test it -- "${lib}_robustness_column"
  done
  for lib in $LIBS; do
    cargo test --locked --test it -- "${lib}_robustness_column"
  done
  git --no-pager diff --stat -- docs/matrix.md
  exit 0
fi
for lib in $LIBS; do
  MAINTWATCH_REGENERATE=1 MAINTWATCH_MATRIX_RUNS="${RUNS:-20}" \
    cargo test --locked --test it -- "${lib}_certified_row"
  MAINTWATCH_REGENERATE=1 cargo test --locked --test it -- "${lib}_older_certified_rows"
done
if [ "${1:-}" != "--once" ]; then
  for lib in $LIBS; do
    cargo test --locked --test it -- "${lib}_certified_row" "${lib}_older_certified_rows"
  done
fi
git --no-pager diff --stat -- docs/matrix.md
