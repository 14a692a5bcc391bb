#!/usr/bin/env bash
# The client libraries' own maintenance test suites, run against `maintwatch simulate
# --proxy-api` in place of the Docker proxy (cae-resp-proxy) they are written for, and their
# real-cluster suites against `maintwatch simulate --fault-injector-api` in place of Redis
# Enterprise and its fault injector.
#
#   scripts/clients/peer-suites.sh [redis-py|go-redis|all|redis-py-fi|go-redis-fi|fi|fi-ci]
#
# `all` (the default) is the mock level; `fi` the real-cluster level (tens of minutes: the
# suites wait on real-time maintenance windows), `redis-py-fi` and `go-redis-fi` one of it.
# `fi-ci` is the part of the real-cluster level CI runs after `all` (docs/peer-suites.md, "In our
# CI"): a few minutes, and every action type either suite sends.
#
# Their code is fetched from the registries into target/peer at run time, never committed:
# redis-py's sdist from PyPI (pip download), go-redis' module from the Go module proxy (go mod
# download). Each suite's failures are checked against scripts/clients/peer-suites.expected: a failure
# not listed there fails this script; a listed one that passes is reported. Where Python or Go
# is absent, a SKIP line. docs/peer-suites.md says what runs, how, and why each expected failure
# is expected.
#
# Environment: MAINTWATCH (the binary; default target/debug/maintwatch), PYTHON (default
# python3), GO (default go, then /usr/local/go/bin/go).
set -euo pipefail

REDIS_PY_VERSION=8.1.0
GO_REDIS_VERSION=v9.23.0
# What redis-py's suites need beside it, from PyPI.
PYTEST_VERSION=9.2.0
PYTEST_ASYNCIO_VERSION=1.5.0
PYTEST_TIMEOUT_VERSION=2.4.0
PYBREAKER_VERSION=1.4.1

root="$(cd "$(dirname "$0")/../.." && pwd)"
peer="$root/target/peer"
expected="$root/scripts/clients/peer-suites.expected"
bin="${MAINTWATCH:-$root/target/debug/maintwatch}"
which_suite="${1:-all}"
mkdir -p "$peer"
status=0
sim_pid=""
fi_pid=""

# Stops what a suite started: the simulator (SIGINT: it stops its redis-server) and go-redis'
# fault-injector server.
stop_sim() {
    for pid in "$sim_pid" "$fi_pid"; do
        if [ -n "$pid" ]; then
            kill -INT "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    sim_pid=""
    fi_pid=""
}

# start_sim API_PORT LISTEN INTERCEPTORS LOG [FLAG...]: as the suite's compose file starts the
# proxy, with a redis-server of the run's own behind it; returns when the API answers.
start_sim() {
    "$bin" simulate --proxy-api "$1" --listen "$2" --upstream spawn \
        --default-interceptors "$3" --quiet "${@:5}" >"$4" 2>&1 &
    sim_pid=$!
    listening "$1" "$sim_pid" || {
        echo "peer-suites: maintwatch simulate did not start; its output:" >&2
        cat "$4" >&2
        return 1
    }
}

# listening PORT PID: waits until something accepts on 127.0.0.1:PORT while PID lives (10 s).
listening() {
    for _ in $(seq 1 200); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
            return 0
        fi
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# check SUITE FAILED_FILE PASSED_FILE: compares the failures with the expected ones. Under a new
# failure, the end of what the test printed (FAILED_FILE's .reasons sibling, when there is one).
check() {
    local suite="$1" failed="$2" passed="$3" new=0
    while IFS= read -r id; do
        [ -z "$id" ] && continue
        if ! grep -qxF "$suite $id" "$expected"; then
            echo "peer-suites: $suite: NEW FAILURE: $id"
            awk -F '\t' -v id="$id" '$1 == id' "${failed%.failed}.reasons" 2>/dev/null |
                cut -f2- | shown "$suite"
            new=1
        fi
    done <"$failed"
    while IFS= read -r line; do
        case "$line" in "$suite "*) ;; *) continue ;; esac
        local id="${line#"$suite "}"
        if grep -qxF "$id" "$passed"; then
            echo "peer-suites: $suite: expected to fail, but passed: $id"
        fi
    done < <(grep -v '^#' "$expected")
    return $new
}

# shown NAME: standard input, each line after "peer-suites: NAME: | ", control characters made
# spaces. .ci/run prints every "peer-suites:" line again at its end, so that a failure is on CI's
# last screen, where a reader of a long log looks first.
shown() {
    sed 's/[[:cntrl:]]/ /g; s/^/peer-suites: '"$1"': | /'
}

# unfinished NAME LOG: a suite that did not finish, and the last lines of the log that says why.
unfinished() {
    echo "peer-suites: $1: the suite did not finish; the end of ${2#"$root/"}:"
    tail -n 30 "$2" 2>/dev/null | shown "$1"
}

# redis_py_fetch: redis-py's sdist unpacked and a venv for its suites (1 when there is no
# Python, after a SKIP line).
redis_py_fetch() {
    local python="${PYTHON:-python3}"
    if ! command -v "$python" >/dev/null; then
        echo "SKIP: peer-suites: redis-py: no $python"
        return 1
    fi
    local src="$peer/redis-$REDIS_PY_VERSION" venv="$peer/venv-redis-py"
    if [ ! -d "$src" ]; then
        "$python" -m pip download -q --no-binary :all: --no-deps "redis==$REDIS_PY_VERSION" -d "$peer"
        tar -xzf "$peer/redis-$REDIS_PY_VERSION.tar.gz" -C "$peer"
    fi
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
        # What the suite imports of dev_requirements.txt (the rest is linters, coverage and
        # other suites' needs), pinned to the releases the counts in docs/peer-suites.md were
        # measured with, so that a new pytest cannot change a count unseen.
        "$venv/bin/pip" install -q "pytest==$PYTEST_VERSION" \
            "pytest-asyncio==$PYTEST_ASYNCIO_VERSION" "pytest-timeout==$PYTEST_TIMEOUT_VERSION"
    fi
}

redis_py() {
    redis_py_fetch || return 0
    local src="$peer/redis-$REDIS_PY_VERSION" venv="$peer/venv-redis-py"
    start_sim 4000 15379,15380,15381 cluster,hitless,logger "$peer/redis-py-sim.log" || return 1
    local xml="$peer/redis-py.xml" start=$SECONDS
    rm -f "$xml"
    # As redis-py's CI (`invoke fixed-client-tests`): the proxy's tests are `-m fixed_client`.
    (cd "$src" && "$venv/bin/python" -m pytest tests/maint_notifications -m fixed_client \
        -p no:cacheprovider -q --junit-xml "$xml" >"$peer/redis-py.log" 2>&1) || true
    stop_sim
    if [ ! -s "$xml" ]; then
        unfinished redis-py "$peer/redis-py.log"
        return 1
    fi
    junit "$xml" "$peer/redis-py" || return 1
    echo "peer-suites: redis-py $REDIS_PY_VERSION tests/maint_notifications -m fixed_client:" \
        "$(summary "$peer/redis-py")," "$((SECONDS - start)) s"
    check redis-py "$peer/redis-py.failed" "$peer/redis-py.passed" || status=1
}

# The real-cluster suite, tests/test_scenario/test_maint_notifications.py, in its default Redis
# Enterprise mode: the simulator serves the fault injector's API on redis-py's default port and
# runs pytest as its client, so the database names resolve through its DNS.
# redis_py_fi [PYTEST-ARG...]: the arguments select tests (`-k …`); none, the whole file.
redis_py_fi() {
    redis_py_fetch || return 0
    local src="$peer/redis-$REDIS_PY_VERSION" venv="$peer/venv-redis-py"
    # tests/test_scenario's conftest imports redis.multidb, which needs pybreaker.
    "$venv/bin/python" -c "import pybreaker" 2>/dev/null ||
        "$venv/bin/pip" install -q "pybreaker==$PYBREAKER_VERSION"
    local xml="$peer/redis-py-fi.xml" endpoints="$peer/redis-py-fi-endpoints.json" start=$SECONDS
    rm -f "$xml"
    (cd "$src" && "$bin" simulate --fault-injector-api 20324 --endpoints-file "$endpoints" \
        --upstream spawn --quiet --client-output "$peer/redis-py-fi.log" -- \
        env REDIS_ENDPOINTS_CONFIG_PATH="$endpoints" FAULT_INJECTION_API_URL=http://127.0.0.1:20324 \
        "$venv/bin/python" -m pytest tests/test_scenario/test_maint_notifications.py "$@" \
        -p no:cacheprovider -q --junit-xml "$xml" >"$peer/redis-py-fi-sim.log" 2>&1) || true
    if [ ! -s "$xml" ]; then
        unfinished redis-py-fi "$peer/redis-py-fi-sim.log"
        return 1
    fi
    junit "$xml" "$peer/redis-py-fi" || return 1
    echo "peer-suites: redis-py $REDIS_PY_VERSION tests/test_scenario/test_maint_notifications.py" \
        "(fault injector): $(summary "$peer/redis-py-fi")," "$((SECONDS - start)) s"
    share "$peer/redis-py-fi" redis-py-fi
    check redis-py-fi "$peer/redis-py-fi.failed" "$peer/redis-py-fi.passed" || status=1
}

# junit XML PREFIX: writes PREFIX.failed and PREFIX.passed (test ids file::Class::name),
# PREFIX.counts (passed failed skipped) and PREFIX.reasons (id TAB line: the last 30 lines of each
# failure's text, each cut at 300 characters).
junit() {
    "${PYTHON:-python3}" - "$1" "$2" <<'EOF'
import sys, xml.etree.ElementTree as ET
xml, prefix = sys.argv[1], sys.argv[2]
failed, passed, skipped, reasons = [], [], 0, []
for case in ET.parse(xml).iter("testcase"):
    parts = (case.get("classname") or "").split(".")
    # tests.maint_notifications.test_x.Class -> tests/maint_notifications/test_x.py::Class
    mods = [p for p in parts if not p[:1].isupper()]
    klass = [p for p in parts if p[:1].isupper()]
    tid = "/".join(mods) + ".py::" + "::".join(klass + [case.get("name") or "?"])
    bad = case.find("failure")
    bad = bad if bad is not None else case.find("error")
    if bad is not None:
        failed.append(tid)
        text = (bad.get("message") or "") + "\n" + (bad.text or "")
        reasons += [tid + "\t" + line[:300] for line in text.splitlines()[-30:]]
    elif case.find("skipped") is not None:
        skipped += 1
    else:
        passed.append(tid)
open(prefix + ".failed", "w").write("".join(t + "\n" for t in failed))
open(prefix + ".passed", "w").write("".join(t + "\n" for t in passed))
open(prefix + ".counts", "w").write(f"{len(passed)} {len(failed)} {skipped}\n")
open(prefix + ".reasons", "w").write("".join(r + "\n" for r in reasons))
EOF
}

summary() {
    read -r p f s <"$1.counts"
    echo "$p passed, $f failed, $s skipped"
}

# share PREFIX NAME: the share of passes the real-cluster level is measured by (docs/peer-suites.md),
# over tests and subtests together (PREFIX.every: passed failed skipped, where subtests are counted
# apart; else PREFIX.counts), of those that ran and of those listed; then each test the suite
# skipped itself, with the reason it gave (PREFIX.skips, when there is one).
share() {
    local p f s every="$1.every"
    [ -s "$every" ] || every="$1.counts"
    read -r p f s <"$every"
    local ran=$((p + f)) listed=$((p + f + s))
    [ "$listed" -gt 0 ] || return 0
    echo "peer-suites: $2: tests and subtests: $p passed of the $ran that ran" \
        "($((ran ? 100 * p / ran : 0)) %), of the $listed listed ($((100 * p / listed)) %)"
    if [ -s "$1.skips" ]; then
        sed "s/^/peer-suites: $2: skipped by the suite: /" "$1.skips"
    fi
}

# go_redis_fetch: go-redis' module in a writable copy; sets `go` (1 when there is no Go, after a
# SKIP line).
go_redis_fetch() {
    go="${GO:-}"
    [ -z "$go" ] && go="$(command -v go || true)"
    [ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
    if [ -z "$go" ]; then
        echo "SKIP: peer-suites: go-redis: no go"
        return 1
    fi
    export GOMODCACHE="$peer/gomod" GOFLAGS=-mod=mod
    local src="$peer/go-redis-$GO_REDIS_VERSION"
    if [ ! -d "$src" ]; then
        local dir
        dir="$("$go" mod download -json "github.com/redis/go-redis/v9@$GO_REDIS_VERSION" |
            sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
        # The module cache is read-only; the tests run in a writable copy.
        cp -r "$dir" "$src"
        chmod -R u+w "$src"
    fi
}

go_redis() {
    local go
    go_redis_fetch || return 0
    local src="$peer/go-redis-$GO_REDIS_VERSION"
    # As go-redis' compose file (profile e2e): four nodes, the API on 18100, and the suite's own
    # fault-injector server (built from the module) on 15000 driving that API.
    start_sim 18100 17000,17001,17002,17003 cluster,hitless "$peer/go-redis-sim.log" || return 1
    (cd "$src" && "$go" build -o "$peer/proxy-fi-server" ./maintnotifications/e2e/cmd/proxy-fi-server)
    "$peer/proxy-fi-server" --listen 127.0.0.1:15000 --proxy-api-url http://127.0.0.1:18100 \
        >"$peer/proxy-fi-server.log" 2>&1 &
    fi_pid=$!
    listening 15000 "$fi_pid" || {
        echo "peer-suites: go-redis' proxy-fi-server did not start:" >&2
        cat "$peer/proxy-fi-server.log" >&2
        return 1
    }
    local start=$SECONDS
    # As go-redis' CI (test-e2e.yml, "E2E Tests (Mock Proxy)"), without -race (it would double
    # the build and the run on two cores). -count=1: go test would otherwise replay a cached
    # pass, since nothing it tracks says the simulator behind the proxy API changed.
    (cd "$src" && E2E_SCENARIO_TESTS=true "$go" test ./maintnotifications/e2e/ -v -count=1 \
        -timeout 10m >"$peer/go-redis.log" 2>&1) || true
    stop_sim
    gotest "$peer/go-redis.log" "$peer/go-redis"
    echo "peer-suites: go-redis $GO_REDIS_VERSION maintnotifications/e2e (mock proxy):" \
        "$(summary "$peer/go-redis")," "$((SECONDS - start)) s"
    check go-redis "$peer/go-redis.failed" "$peer/go-redis.passed" || status=1
}

# The e2e suite in fault-injector mode (REDIS_ENDPOINTS_CONFIG_PATH set): the test binary is
# built first (under the simulator its resolver answers the simulator's names only), then run as
# the simulator's client.
# go_redis_fi [PATTERN]: the tests `-test.run` selects; none, every test.
go_redis_fi() {
    local go run=()
    [ -n "${1:-}" ] && run=(-test.run "$1")
    go_redis_fetch || return 0
    local src="$peer/go-redis-$GO_REDIS_VERSION" endpoints="$peer/go-redis-fi-endpoints.json"
    (cd "$src" && "$go" test -c -o "$peer/go-redis-e2e.test" ./maintnotifications/e2e/) || return 1
    local start=$SECONDS
    rm -f "$peer/go-redis-fi.log"
    # The suite's TestUnifiedInjector_* tests inject through the mock proxy's API whatever the
    # mode, and skip when none answers: served beside the fault injector, as at the mock level,
    # they run in this invocation too (docs/peer-suites.md says how each count is made).
    [ -n "${1:-}" ] || start_sim 18100 17000,17001,17002,17003 cluster,hitless \
        "$peer/go-redis-fi-proxy.log" || return 1
    (cd "$src/maintnotifications/e2e" && "$bin" simulate --fault-injector-api 20325 \
        --endpoints-file "$endpoints" --upstream spawn --quiet \
        --client-output "$peer/go-redis-fi.log" -- \
        env E2E_SCENARIO_TESTS=true REDIS_ENDPOINTS_CONFIG_PATH="$endpoints" \
        FAULT_INJECTION_API_URL=http://127.0.0.1:20325 \
        "$peer/go-redis-e2e.test" -test.v -test.timeout 30m "${run[@]}" \
        >"$peer/go-redis-fi-sim.log" 2>&1) || true
    if ! grep -q '^--- ' "$peer/go-redis-fi.log" 2>/dev/null; then
        unfinished go-redis-fi "$peer/go-redis-fi-sim.log"
        return 1
    fi
    gotest "$peer/go-redis-fi.log" "$peer/go-redis-fi"
    echo "peer-suites: go-redis $GO_REDIS_VERSION maintnotifications/e2e (fault injector):" \
        "$(summary "$peer/go-redis-fi")," "$((SECONDS - start)) s"
    share "$peer/go-redis-fi" go-redis-fi
    check go-redis-fi "$peer/go-redis-fi.failed" "$peer/go-redis-fi.passed" || status=1
}

# gotest LOG PREFIX: top-level results of `go test -v`.
gotest() {
    grep -E '^--- (PASS|FAIL|SKIP): ' "$1" | awk '{print $2, $3}' >"$2.all" || true
    awk '$1 == "FAIL:" {print $2}' "$2.all" >"$2.failed"
    awk '$1 == "PASS:" {print $2}' "$2.all" >"$2.passed"
    echo "$(wc -l <"$2.passed") $(wc -l <"$2.failed") $(awk '$1 == "SKIP:"' "$2.all" | wc -l)" >"$2.counts"
    # Subtests too (their result lines are indented), and the reason each skip gave: `go test -v`
    # prints a test's t.Skip message before its result line.
    awk '/^ *--- (PASS|FAIL|SKIP): / {n[$2]++} END {print n["PASS:"] + 0, n["FAIL:"] + 0, n["SKIP:"] + 0}' \
        "$1" >"$2.every"
    awk '/^ *--- SKIP: / {sub(/^ +[^ ]+\.go:[0-9]+: /, "", last); print $3 ": " last}
        {last = $0}' "$1" >"$2.skips"
    # The last 30 lines a failed top-level test printed before its result line, each cut at 300
    # characters.
    awk '/^=== RUN   [^\/]+$/ {n = 0}
        /^--- FAIL: / {for (i = (n > 30 ? n - 30 : 0); i < n; i++) print $3 "\t" buf[i % 30]}
        {buf[n % 30] = substr($0, 1, 300); n++}' "$1" >"$2.reasons"
}

# The CI part of the real-cluster level. redis-py: the notification-handling tests of a migrate
# (topology_change_standalone data_movement_no_conn_drop), of a migrate then bind
# (data_movement_conn_drop) and of three slot migrations (slot_migrate slot-shuffle, remove-add,
# remove), each creating and deleting its database and finding it with rladmin status. go-redis:
# TestEndpointTypesPushNotifications/ExternalIP (a failover, a migrate and a bind) and a
# slot-shuffle through its POST /slot-migrate. sequence_of_actions and
# wait_for_database_active, which neither suite sends, are in our own tests
# (tests/it/fault_injector.rs).
redis_py_fi_ci() {
    redis_py_fi -k "test_notification_handling_during_data_movements_no_conn_drop or \
test_notification_handling_during_data_movements_with_conn_drop or \
test_notification_handling_during_node_shuffle_no_node_replacement or \
test_notification_handling_with_node_replace or test_notification_handling_with_node_remove"
}

go_redis_fi_ci() {
    go_redis_fi '^(TestEndpointTypesPushNotifications|TestProxyFaultInjectorServer_ClusterExistingE2ETest)$/^ExternalIP$'
}

# Each suite in a subshell of its own, which stops what it started however it ends. The two
# use different ports and mostly wait on their clients, so `all` runs them side by side.
suite() {
    trap stop_sim EXIT
    status=0
    "$1" || status=1
    exit $status
}

case "$which_suite" in
redis-py) (suite redis_py) || status=1 ;;
go-redis) (suite go_redis) || status=1 ;;
redis-py-fi) (suite redis_py_fi) || status=1 ;;
go-redis-fi) (suite go_redis_fi) || status=1 ;;
fi-ci)
    (suite redis_py_fi_ci) &
    py=$!
    (suite go_redis_fi_ci) &
    gr=$!
    wait $py || status=1
    wait $gr || status=1
    ;;
fi)
    (suite redis_py_fi) &
    py=$!
    (suite go_redis_fi) &
    gr=$!
    wait $py || status=1
    wait $gr || status=1
    ;;
all)
    (suite redis_py) &
    py=$!
    (suite go_redis) &
    gr=$!
    wait $py || status=1
    wait $gr || status=1
    ;;
*)
    echo "usage: scripts/clients/peer-suites.sh [redis-py|go-redis|all|redis-py-fi|go-redis-fi|fi|fi-ci]" >&2
    exit 2
    ;;
esac
exit $status
