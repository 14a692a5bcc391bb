# The client releases of the README's client matrix, each pinned: sourced by .ci/run and
# scripts/matrix.sh (from the repository's root). redis-py 7.0 brought maintenance notifications
# and 7.2 its cluster client's; node-redis 5.9 brought them (off unless RESP3) and 5.11 its
# cluster client's. Each older minor is pinned at its latest patch (PyPI, npm, 2026-12-03); the
# newest of each library lives in target/mw-venv and target/mw-node, with what other tests need.
REDIS_PY_NEWEST=8.1.0
REDIS_PY_OLDER="7.0.1 7.2.2"
NODE_REDIS_NEWEST=6.3.1
NODE_REDIS_OLDER="5.9.0 5.11.0"

# Installs each older release in a folder of its own under target/clients/ (a venv, an npm
# prefix), only when missing, and exports MAINTWATCH_PYTHON_OLDER and MAINTWATCH_NODE_REDIS_OLDER
# (lists as in PATH) for the tier. Needs python3 with venv (.ci/run installs python3-venv first)
# and npm; a library without its runtime is left out (its test prints a SKIP line).
install_older_clients() {
  local v d list
  if command -v python3 >/dev/null 2>&1; then
    list=""
    for v in $REDIS_PY_OLDER; do
      d="target/clients/redis-py-$v"
      if [ "$("$d/bin/python" -c 'import redis.maint_notifications, redis; print(redis.__version__)' 2>/dev/null)" != "$v" ]; then
        rm -rf "$d"
        python3 -m venv "$d"
        "$d/bin/pip" install -q "redis==$v"
      fi
      list="${list:+$list:}$PWD/$d/bin/python"
    done
    export MAINTWATCH_PYTHON_OLDER="$list"
  fi
  if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    list=""
    for v in $NODE_REDIS_OLDER; do
      d="target/clients/node-redis-$v"
      if [ "$(cd "$d" 2>/dev/null && node -p 'require("redis/package.json").version' 2>/dev/null)" != "$v" ]; then
        mkdir -p "$d"
        npm install --prefix "$d" --no-audit --no-fund --silent "redis@$v" >/dev/null
      fi
      list="${list:+$list:}$PWD/$d"
    done
    export MAINTWATCH_NODE_REDIS_OLDER="$list"
  fi
}
