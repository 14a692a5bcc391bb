# The client releases of the client matrix (docs/matrix.md), each pinned: sourced by .ci/run and
# scripts/clients/matrix.sh (from the repository's root). redis-py 7.0 brought maintenance notifications
# and 7.2 its cluster client's; node-redis 5.9 brought them (off unless RESP3) and 5.11 its
# cluster client's. Each older minor is pinned at its latest patch (PyPI, npm, 2026-12-03; 8.2.0
# and 6.4.0, the newest, on 2026-12-06); the newest of each library lives in target/mw-venv and
# target/mw-node, with what other tests need. report_newer_releases, below, says in CI's log when
# a registry serves a newer one.
REDIS_PY_NEWEST=8.2.0
REDIS_PY_OLDER="7.0.1 7.2.2 8.1.0"
NODE_REDIS_NEWEST=6.4.0
NODE_REDIS_OLDER="5.9.0 5.11.0 6.3.1"
# ioredis: `maintNotifications` came in 6.1.0 (npm, 2026-11-23), the newest served on 2026-12-05,
# so the first release with the feature is the newest; its Cluster turns the feature off.
IOREDIS_NEWEST=6.1.0

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
  install_older_go_redis
  install_older_jvm_clients
}

# The JVM libraries (Maven Central, asked with `mvn dependency:get` and the artifacts' metadata on
# 2026-12-04). Lettuce: 7.0 brought maintenance notifications, on by default; 7.0.3 is the latest
# 7.0 patch served; 7.7.0 the newest 7.x. Lettuce has no cluster handling of SMIGRATING /
# SMIGRATED in any of them, but its cluster client opts in on every node, so its cluster
# application is certified too. Jedis: maintenance notifications came in 8.1.0-beta1; Maven
# Central serves no 8.1 (8.0.2 is the newest), so Jedis has no matrix row: 8.0.2 is built to
# measure how it answers the opt-in (tests/it/jedis.rs).
LETTUCE_NEWEST=7.7.0.RELEASE
LETTUCE_OLDER="7.0.3.RELEASE"
JEDIS_NEWEST=8.0.2

# Builds one release of a JVM library's applications (a Maven project under tests/clients/) into
# target/clients/NAME-VERSION (classes and a classpath file), only when missing; the local Maven
# repository is target/m2, so a warm build is offline. Prints the folder.
build_jvm_clients() {
  local name="$1" property="$2" version="$3"
  local d="$PWD/target/clients/$name-$version"
  # Built again when a source changed since (a build without a newer application would run
  # its tests on a class that is not there).
  if [ ! -s "$d/classpath" ] || [ ! -d "$d/classes/maintwatch" ] ||
    [ -n "$(find "tests/clients/$name" tests/clients/jvm-common -type f -newer "$d/classpath" 2>/dev/null | head -n 1)" ]; then
    mvn -q -B -f "tests/clients/$name/pom.xml" -Dmaven.repo.local="$PWD/target/m2" \
      "-D$property=$version" -Dout="$d" compile >&2
    touch "$d/classpath"
  fi
  echo "$d"
}

# The older Lettuce releases, as install_older_clients does for Python and Node: exports
# MAINTWATCH_LETTUCE_OLDER (build folders, a list as in PATH). Without mvn and java, nothing.
install_older_jvm_clients() {
  local v list=""
  command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1 || return 0
  for v in $LETTUCE_OLDER; do
    list="${list:+$list:}$(build_jvm_clients lettuce lettuce.version "$v")"
  done
  export MAINTWATCH_LETTUCE_OLDER="$list"
}

# go-redis (the Go module proxy, `go list -m -versions github.com/redis/go-redis/v9`, 2026-12-04:
# v9.16.0 is the only 9.16 served, and no 9.15): 9.16.0 is the first release with maintenance
# notifications (package maintnotifications); 9.18.0 the first whose ClusterClient handles
# SMIGRATING / SMIGRATED; 9.23.0 the newest v9 served then, 9.24.0 from 2026-12-06. The newest is what
# tests/clients/go-redis/go.mod and go.sum pin; the others are built from a copy of that module
# with the requirement swapped. The checksums were checked against sum.golang.org, which was
# reached.
GO_REDIS_NEWEST=9.24.0
GO_REDIS_OLDER="9.16.0 9.18.0 9.23.0"

# Go with everything it writes under target/go/ (module cache, checksum database cache, build
# cache), so that nothing lands in the home folder and `rm -rf target` removes it all
# (-modcacherw: the module cache is otherwise read-only). The toolchain is the one installed: no
# download of another. Sets GO_REDIS_GO to the go binary (PATH's, else the official tarball's
# /usr/local/go/bin/go) and exports Go's variables; returns 1 where there is none. Not to be run
# in a subshell: the exports are the point.
go_redis_go() {
  GO_REDIS_GO="$(command -v go 2>/dev/null || true)"
  if [ -z "$GO_REDIS_GO" ] && [ -x /usr/local/go/bin/go ]; then
    GO_REDIS_GO=/usr/local/go/bin/go
  fi
  [ -n "$GO_REDIS_GO" ] || return 1
  export GOPATH="$PWD/target/go" GOMODCACHE="$PWD/target/go/mod" GOCACHE="$PWD/target/go/cache"
  export GOFLAGS=-modcacherw GOTOOLCHAIN=local
}

# Builds the two go-redis applications (go_redis_app, go_redis_cluster_app) of release $1 into
# the folder $2: the newest from tests/clients/go-redis as it is, an older one from a copy under
# target/ whose go.mod requires that release instead (`go mod tidy` then fetches its go.sum).
go_redis_build() {
  local v="$1" out="$2" src
  go_redis_go || return 1
  src="$PWD/tests/clients/go-redis"
  if [ "$v" != "$GO_REDIS_NEWEST" ]; then
    src="$PWD/target/clients/go-redis-src-$v"
    rm -rf "$src"
    mkdir -p "$src"
    cp -R tests/clients/go-redis/. "$src/"
    (cd "$src" && "$GO_REDIS_GO" mod edit -require="github.com/redis/go-redis/v9@v$v" && "$GO_REDIS_GO" mod tidy)
  fi
  mkdir -p "$out"
  (cd "$src" && "$GO_REDIS_GO" build -o "$out/" ./go_redis_app ./go_redis_cluster_app ./go_redis_robust_app)
  [ "$("$out/go_redis_app" --version)" = "$v" ]
}

# The older go-redis releases, each in target/clients/go-redis-V/, exported as
# MAINTWATCH_GO_REDIS_OLDER (a list as in PATH) for tests/it/go_redis.rs; without Go, nothing (the
# test prints a SKIP line).
install_older_go_redis() {
  local v list=""
  go_redis_go || return 0
  for v in $GO_REDIS_OLDER; do
    go_redis_build "$v" "$PWD/target/clients/go-redis-$v"
    list="${list:+$list:}$PWD/target/clients/go-redis-$v"
  done
  export MAINTWATCH_GO_REDIS_OLDER="$list"
}

# newer_than PINNED: of the versions on stdin (a registry's answer: one a line, or separated by
# commas, spaces, brackets or quotes; a leading `v` dropped), the releases newer than PINNED,
# oldest first, one a line. Pre-releases (anything but digits and dots) are left out: the matrix
# pins releases.
newer_than() {
  local pinned="$1"
  { tr ',[]" ' '\n\n\n\n\n' | sed 's/^v//' | grep -E '^[0-9]+(\.[0-9]+)*$'; echo "$pinned"; } |
    sort -u -V | sed -n "/^${pinned//./\\.}\$/,\$p" | sed 1d
}

# The newest releases the registries serve, each asked by its own client (at most 30 s each);
# a line per library that has a release newer than the newest pinned above, so that a reader of
# CI's log sees that a matrix row is due. A registry that does not answer is said, not failed.
report_newer_releases() {
  local lib pinned newer answer
  while read -r lib pinned cmd; do
    if ! answer=$(timeout 30 bash -c "$cmd" 2>/dev/null); then
      echo "client-versions: $lib: the registry did not answer (asked: $cmd)"
      continue
    fi
    newer=$(newer_than "$pinned" <<<"$answer" | tr '\n' ' ')
    if [ -n "$newer" ]; then
      echo "client-versions: $lib ${newer% } served, newer than the pinned $pinned: a matrix row is due (scripts/clients/client-versions.sh)"
    else
      echo "client-versions: $lib: $pinned is the newest release served"
    fi
  done <<EOF2
redis-py $REDIS_PY_NEWEST pip index versions redis | sed -n 's/^Available versions: //p'
node-redis $NODE_REDIS_NEWEST npm view redis versions --json
ioredis $IOREDIS_NEWEST npm view ioredis versions --json
go-redis $GO_REDIS_NEWEST cd tests/clients/go-redis && go list -m -versions github.com/redis/go-redis/v9
EOF2
}
