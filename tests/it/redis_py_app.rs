//! redis-py as an unmodified application: `tests/clients/redis_py_app.py` (only
//! `redis.Redis(host=..., port=...)` and `os.environ`, no resolver code) run by `maintwatch
//! simulate --upstream spawn --grade -- python APP`, which gives it a resolv.conf naming the
//! simulator's DNS. Its grades in single-proxy and multi-proxy are those of the hand-patched tier
//! (`tests/it/redis_py.rs`, whose workload wraps `socket.getaddrinfo`); its grade in every scenario
//! where a client can act, by `maintwatch certify`, is the client matrix's row (docs/matrix.md) of that
//! version: the newest (`MAINTWATCH_PYTHON`) with every scenario certify plays, the older ones
//! (`MAINTWATCH_PYTHON_OLDER`) with the matrix's columns.
//!
//! Needs `MAINTWATCH_PYTHON` (redis-py 7.0 or later) and `MAINTWATCH_REDIS_SERVER`. Unset or
//! empty: a SKIP line. Set but unusable: the test fails.

use crate::common;
use common::tier::{self, REDIS_PY};

const WORKLOAD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/clients/redis_py_workload.py"
);

tier::tier_tests! {
    /// The same verdicts and figures as `redis_py_single_proxy` and `redis_py_multi_proxy` in
    /// tests/it/redis_py.rs: in single-proxy redis-py recycles at half the window while DNS still names
    /// the retiring proxy and is cut by the close; in multi-proxy, where DNS has moved, it lands on a
    /// live proxy well before the close. The app ends when `simulate` stops it (SIGTERM), having
    /// done work and printed its figures to the output file. The hand-patched workload, run the same
    /// way at the same time, earns the same verdicts.
    redis_py_unmodified_single_and_multi_proxy: verdicts_of_the_hand_patched_workload(REDIS_PY);

    /// The newest redis-py's row of the client matrix, from `maintwatch certify` with no
    /// `--scenarios` (`tier::certified_row`; the cluster column from certify run with
    /// `RedisCluster`, `tests/clients/redis_py_cluster_app.py`, on `oss-cluster`).
    redis_py_certified_row: tier::certified_row(REDIS_PY, assert_graded);

    /// The older redis-py releases of the matrix (`MAINTWATCH_PYTHON_OLDER`, a list of Pythons as
    /// in PATH, one venv per release; `.ci/run` and `scripts/clients/matrix.sh` make them), one after
    /// another: each certified on the matrix's columns, its row checked. Unset: a SKIP line.
    redis_py_older_certified_rows: tier::older_certified_rows(REDIS_PY, assert_graded);

    /// A RedisCluster application with a sharded subscriber, under oss-cluster:
    /// `sharded-resubscribe` is judged, PASS or FAIL with the messages counted. Which of the two
    /// depends on the machine's load (redis-py 8.1.0 subscribes again about 1 s after the
    /// SMIGRATED, when its slot map is reconciled; the rule allows 2 s), so the matrix does not
    /// carry it.
    redis_py_sharded_subscriber_is_judged: tier::sharded_subscriber_is_judged(REDIS_PY);
}

async fn verdicts_of_the_hand_patched_workload(test: &str, lib: &tier::Library) -> Option<()> {
    let (py, version, redis) = lib.with_redis(test)?;
    let cmd = lib.command(&py, lib.app, &[]);
    let cmd = tier::strs(&cmd);
    // The hand-patched workload of tests/it/redis_py.rs, unchanged, run the same way.
    let patched = format!(
        "exec \"$0\" {WORKLOAD} --host \"$MAINTWATCH_SIM_HOST\" --port \"$MAINTWATCH_SIM_PORT\" \
         --dns \"$MAINTWATCH_SIM_DNS\" --seconds 60"
    );
    let hooked = ["sh", "-c", patched.as_str(), py.as_str()];
    let [single, multi, single_hooked, multi_hooked] =
        tier::single_and_multi_proxy(test, &redis, &cmd, &hooked, &[]).await?;
    for r in [&single, &multi] {
        let c = r.client("redis-py/");
        assert_eq!(c["never_opted_in"], 0, "{}", r.table);
        assert!(
            c["opted_in"]["internal-fqdn"].as_u64().unwrap() >= 1,
            "{}",
            r.table
        );
        assert!(r.held("redis-py/", "opt-in") && r.held("redis-py/", "no-loop"));
        assert!(r.held("redis-py/", "no-storm"), "{}", r.table);
        let p = &r.grade["client_process"];
        assert_eq!(p["stopped"], true, "{}", r.table);
        assert_eq!(p["exit_code"], 0, "{}", r.table);
        let figures: serde_json::Value =
            serde_json::from_str(r.output.trim()).unwrap_or_else(|e| panic!("{e}: {}", r.output));
        assert!(figures["ops"].as_u64().unwrap() > 0, "{}", r.output);
    }
    let m = &single.client("redis-py/")["notifications"][0]["moving"];
    assert!(
        !single.held("redis-py/", "moved-before-close"),
        "{}",
        single.table
    );
    crate::redis_py::assert_cut_by_the_close(m, &single.table);
    assert_eq!(single.code, Some(1), "{}", single.table);

    let m = &multi.client("redis-py/")["notifications"][0]["moving"];
    assert!(
        multi.held("redis-py/", "moved-before-close"),
        "{}",
        multi.table
    );
    crate::redis_py::assert_on_a_live_proxy_before_the_close(m, &multi.table);
    assert_eq!(multi.code, Some(0), "{}", multi.table);

    // The same verdicts as the hand-patched workload's, rule by rule (but the racy one).
    for (r, hooked) in [(&single, &single_hooked), (&multi, &multi_hooked)] {
        assert_eq!(
            tier::verdicts(r, "redis-py/"),
            tier::verdicts(hooked, "redis-py/"),
            "{}\n{}",
            r.table,
            hooked.table
        );
    }
    assert!(version.starts_with(char::is_numeric), "{version}");
    Some(())
}

/// What every certified row must show of redis-py: it was graded under its own name, the
/// cluster client too (its verdicts are the row's cells, which the row check holds).
fn assert_graded(standalone: &tier::Certified, cluster: Option<&tier::Certified>) {
    tier::assert_graded_in_columns(standalone, "redis-py/");
    for (scenario, r) in cluster.iter().flat_map(|c| &c.runs) {
        assert!(r.client("redis-py/").is_object(), "{scenario}: {}", r.table);
    }
}
