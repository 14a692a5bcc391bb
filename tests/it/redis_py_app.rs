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
use common::tier;

const APP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/redis_py_app.py");
const WORKLOAD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/clients/redis_py_workload.py"
);
const CLUSTER_APP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/clients/redis_py_cluster_app.py"
);

/// The same verdicts and figures as `redis_py_single_proxy` and `redis_py_multi_proxy` in
/// tests/it/redis_py.rs: in single-proxy redis-py recycles at half the window while DNS still names
/// the retiring proxy and is cut by the close; in multi-proxy, where DNS has moved, it lands on a
/// live proxy well before the close. The app ends when `simulate` stops it (SIGTERM), having
/// done work and printed its figures to the output file. The hand-patched workload, run the same
/// way at the same time, earns the same verdicts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_unmodified_single_and_multi_proxy() {
    let test = "redis_py_unmodified_single_and_multi_proxy";
    let Some((py, version)) = tier::python(test) else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let before = tier::resolver_files();
    let cmd = [py.as_str(), APP];
    // The hand-patched workload of tests/it/redis_py.rs, unchanged, run the same way.
    let patched = format!(
        "exec \"$0\" {WORKLOAD} --host \"$MAINTWATCH_SIM_HOST\" --port \"$MAINTWATCH_SIM_PORT\" \
         --dns \"$MAINTWATCH_SIM_DNS\" --seconds 60"
    );
    let hooked = ["sh", "-c", patched.as_str(), py.as_str()];
    let (single, multi, single_hooked, multi_hooked) = tokio::join!(
        tier::simulate(&redis, "single-proxy", 1.0, &cmd, &[]),
        tier::simulate(&redis, "multi-proxy", 1.0, &cmd, &[]),
        tier::simulate(&redis, "single-proxy", 1.0, &hooked, &[]),
        tier::simulate(&redis, "multi-proxy", 1.0, &hooked, &[]),
    );
    assert_eq!(
        tier::resolver_files(),
        before,
        "the machine's resolver files changed"
    );
    if !tier::resolved_privately(test, &single) {
        return;
    }
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
    assert!(m["cut"].as_u64().unwrap() >= 1, "{}", single.table);
    assert_eq!(m["reacted_to_resent"], 0, "{}", single.table);
    assert!(m["first_new_connection"].as_f64().unwrap() >= m["close"].as_f64().unwrap());
    assert_eq!(single.code, Some(1), "{}", single.table);

    let m = &multi.client("redis-py/")["notifications"][0]["moving"];
    assert!(
        multi.held("redis-py/", "moved-before-close"),
        "{}",
        multi.table
    );
    assert_eq!(m["cut"], 0, "{}", multi.table);
    let first = m["first_new_connection"].as_f64().unwrap();
    assert!(
        first >= 7.5 && first < m["close"].as_f64().unwrap(),
        "{}",
        multi.table
    );
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
}

/// redis-py at `py` (`version`) as a version of the tier: the cluster application where that
/// version's RedisCluster handles the notifications (7.2.0 on, `maintwatch::grading::clients`).
pub(crate) fn tier_version(py: &str, version: &str) -> tier::Version {
    let cluster = maintwatch::grading::clients::has_cluster("redis-py", version) == Some(true);
    tier::Version {
        label: format!("redis-py {version}"),
        standalone: vec![py.to_string(), APP.to_string()],
        cluster: cluster.then(|| vec![py.to_string(), CLUSTER_APP.to_string()]),
        cluster_also: Vec::new(),
        env: Vec::new(),
    }
}

/// What every certified row must show of redis-py: it was graded, opted in on every connection,
/// and the scenarios that judge the timeouts (and, with the cluster client, the refresh) judged
/// them.
fn assert_graded(standalone: &tier::Certified, cluster: Option<&tier::Certified>) {
    let columns = tier::standalone_columns();
    for (scenario, r) in &standalone.runs {
        if !columns.contains(&scenario.as_str()) {
            continue;
        }
        let c = r.client("redis-py/");
        assert_eq!(c["never_opted_in"], 0, "{scenario}: {}", r.table);
        r.assert_maintenance_rules_judged("redis-py/", scenario);
    }
    for (scenario, r) in cluster.iter().flat_map(|c| &c.runs) {
        assert_eq!(r.client("redis-py/")["never_opted_in"], 0, "{}", r.table);
        r.assert_maintenance_rules_judged("redis-py/", scenario);
    }
}

/// The newest redis-py's row of the client matrix, from `maintwatch certify` with no
/// `--scenarios`: the application is played every scenario where a client can act, the row it
/// prints has a cell for each, and the matrix's row is those cells (the cluster column from
/// certify run with `RedisCluster`, `tests/clients/redis_py_cluster_app.py`, on `oss-cluster`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_certified_row() {
    let test = "redis_py_certified_row";
    let Some((py, version)) = tier::python(test) else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let v = tier_version(&py, &version);
    let (standalone, cluster) = tier::certify_version(&redis, &v, true).await;
    let played: Vec<&str> = standalone.row.keys().map(String::as_str).collect();
    let mut all = maintwatch::cli::certify::default_scenarios();
    all.sort_unstable();
    assert_eq!(played, all, "{}", standalone.stdout);
    assert_graded(&standalone, cluster.as_ref());
    crate::tier_matrix::check_rows(&[&v.label]);
}

/// The older redis-py releases of the matrix (`MAINTWATCH_PYTHON_OLDER`, a list of Pythons as
/// in PATH, one venv per release; `.ci/run` and `scripts/clients/matrix.sh` make them), one after
/// another: each certified on the matrix's columns, its row checked. Unset: a SKIP line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_older_certified_rows() {
    let test = "redis_py_older_certified_rows";
    let Some(pythons) = tier::older(test, "MAINTWATCH_PYTHON_OLDER") else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    for py in pythons {
        let version = tier::python_version(&py);
        let v = tier_version(&py, &version);
        let (standalone, cluster) = tier::certify_version(&redis, &v, false).await;
        assert_graded(&standalone, cluster.as_ref());
        crate::tier_matrix::check_rows(&[&v.label]);
    }
}

/// A RedisCluster application with a sharded subscriber, under oss-cluster:
/// `sharded-resubscribe` is judged, PASS or FAIL with the messages counted. Which of the two
/// depends on the machine's load (redis-py 8.1.0 subscribes again about 1 s after the
/// SMIGRATED, when its slot map is reconciled; the rule allows 2 s), so the matrix does not
/// carry it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_sharded_subscriber_is_judged() {
    let test = "redis_py_sharded_subscriber_is_judged";
    let Some((py, _)) = tier::python(test) else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let cmd = [py.as_str(), CLUSTER_APP, "--sharded"];
    let r = tier::simulate(&redis, tier::CLUSTER, 1.0, &cmd, &[]).await;
    if !tier::resolved_privately(test, &r) {
        return;
    }
    r.assert_sharded_judged("redis-py/");
}
