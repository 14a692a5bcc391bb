//! The node-redis tier: node-redis (the npm package `redis`, 5.9 on) as an unmodified application,
//! `tests/clients/node_redis_app.js`, run by `maintwatch simulate --upstream spawn --grade -- node
//! APP` and graded; the same application with docs/simulate.md's Node recipe (a `socket.lookup` hook on
//! MAINTWATCH_SIM_DNS and an explicit endpoint type, `tests/clients/node_redis_hooked.js`) must
//! earn the same grade. Each release's row of the client matrix (docs/matrix.md) is `maintwatch certify
//! -- node APP`: the newest (`MAINTWATCH_NODE_REDIS`) with every scenario certify plays, the older
//! ones (`MAINTWATCH_NODE_REDIS_OLDER`) with the matrix's columns.
//!
//! Needs `MAINTWATCH_NODE_REDIS` (a folder whose `node_modules` has `redis`; `.ci/run` makes one)
//! and `MAINTWATCH_REDIS_SERVER`. Unset or empty: a SKIP line. Set but unusable: the test fails.
//! A simulate test's scenarios run at once, each with its own simulator; certify plays its
//! scenarios one after another.

use crate::common;
use common::tier;

const NODE_VAR: &str = "MAINTWATCH_NODE_REDIS";
const APP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/clients/node_redis_app.js"
);
const CLUSTER_APP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/clients/node_redis_cluster_app.js"
);
const HOOKED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/clients/node_redis_hooked.js"
);

/// NODE_PATH for the configured node-redis, and its version; `None` after a SKIP line.
pub(crate) fn node_redis(test: &str) -> Option<(String, String)> {
    let (dir, version) = tier::client_runtime(
        test,
        NODE_VAR,
        ".ci/run installs node-redis when node and npm exist",
        |dir| {
            let mut c = std::process::Command::new("node");
            c.args(["-e", "console.log(require('redis/package.json').version)"])
                .current_dir(dir);
            c
        },
    )?;
    let node_path = std::path::Path::new(&dir).join("node_modules");
    Some((node_path.to_string_lossy().into_owned(), version))
}

/// Single proxy and multi-proxy (both a MOVING with a null target): node-redis opts in, then its
/// MOVING handler asserts that a null target comes only with endpoint type `none`; the assertion
/// throws in an async push handler, an unhandled rejection that ends the process at once. The
/// grade names it as a client-side fact, and the hand-patched app earns the same verdicts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_redis_unmodified_single_and_multi_proxy() {
    let test = "node_redis_unmodified_single_and_multi_proxy";
    let Some((node_path, version)) = node_redis(test) else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let before = tier::resolver_files();
    let env = [("NODE_PATH", node_path.as_str())];
    let run = |scenario: &'static str, app: &'static str| {
        let (redis, env) = (redis.clone(), env);
        async move { tier::simulate(&redis, scenario, 1.0, &["node", app], &env).await }
    };
    let (single, multi, single_hooked, multi_hooked) = tokio::join!(
        run("single-proxy", APP),
        run("multi-proxy", APP),
        run("single-proxy", HOOKED),
        run("multi-proxy", HOOKED),
    );
    assert_eq!(
        tier::resolver_files(),
        before,
        "the machine's resolver files changed"
    );
    if !tier::resolved_privately(test, &single) {
        return;
    }
    for (r, hooked) in [(&single, &single_hooked), (&multi, &multi_hooked)] {
        let c = r.client("node-redis/");
        assert_eq!(c["never_opted_in"], 0, "{}", r.table);
        assert!(
            r.client("node-redis/")["notifications"][0]["received"]
                .as_u64()
                .unwrap()
                >= 1
        );
        let p = &r.grade["client_process"];
        assert_eq!(p["program"], "node", "{}", r.table);
        assert_eq!(p["exit_code"], 1, "{}", r.table);
        assert_eq!(p["stopped"], false, "{}", r.table);
        assert!(p["at"].as_f64().unwrap() < 15.0, "{}", r.table);
        assert!(
            r.output.contains("AssertionError") && r.output.contains("onMoving"),
            "{}",
            r.output
        );
        assert!(
            r.table.contains("client process node exited 1 at +")
                && r.table.contains(": AssertionError"),
            "{}",
            r.table
        );
        // The run ended with the client, and a failed client fails the command.
        assert!(r
            .table
            .contains("the client exited before the scenario ended"));
        assert_eq!(r.code, Some(1), "{}", r.table);
        assert_eq!(
            tier::verdicts(r, "node-redis/"),
            tier::verdicts(hooked, "node-redis/"),
            "{}\n{}",
            r.table,
            hooked.table
        );
        assert_eq!(
            hooked.grade["client_process"]["exit_code"], 1,
            "{}",
            hooked.table
        );
    }
    assert!(version.starts_with(char::is_numeric), "{version}");
}

/// node-redis in the folder `dir` (`version`) as a version of the tier: the cluster
/// application where that version's createCluster handles the notifications (5.11.0 on,
/// `maintwatch::grading::clients`).
pub(crate) fn tier_version(dir: &str, version: &str) -> tier::Version {
    let node_path = std::path::Path::new(dir).join("node_modules");
    let cluster = maintwatch::grading::clients::has_cluster("node-redis", version) == Some(true);
    tier::Version {
        label: format!("node-redis {version}"),
        standalone: vec!["node".into(), APP.into()],
        cluster: cluster.then(|| vec!["node".into(), CLUSTER_APP.into()]),
        cluster_also: Vec::new(),
        env: vec![("NODE_PATH".into(), node_path.to_string_lossy().into_owned())],
    }
}

/// What every certified row must show of node-redis: it was graded and opted in (the cluster
/// client on three connections: its seed, used for the topology, never does), and the
/// scenarios that judge the timeouts (and, with the cluster client, the refresh) judged them.
fn assert_graded(standalone: &tier::Certified, cluster: Option<&tier::Certified>) {
    let columns = tier::standalone_columns();
    for (scenario, r) in &standalone.runs {
        if !columns.contains(&scenario.as_str()) {
            continue;
        }
        let c = r.client("node-redis/");
        assert_eq!(c["never_opted_in"], 0, "{scenario}: {}", r.table);
        r.assert_maintenance_rules_judged("node-redis/", scenario);
    }
    for (scenario, r) in cluster.iter().flat_map(|c| &c.runs) {
        let opted: u64 = r.client("node-redis/")["opted_in"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum();
        assert!(opted >= 3, "{scenario}: {}", r.table);
        r.assert_maintenance_rules_judged("node-redis/", scenario);
    }
}

/// The newest node-redis's row of the client matrix, from `maintwatch certify` with no
/// `--scenarios`: the application is played every scenario where a client can act, the row it
/// prints has a cell for each, and the matrix's row is those cells (the cluster column from
/// certify run with `createCluster`, `tests/clients/node_redis_cluster_app.js`, on `oss-cluster`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_redis_certified_row() {
    let test = "node_redis_certified_row";
    let Some((node_path, version)) = node_redis(test) else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let dir = std::path::Path::new(&node_path)
        .parent()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let v = tier_version(&dir, &version);
    let (standalone, cluster) = tier::certify_version(&redis, &v, true).await;
    let played: Vec<&str> = standalone.row.keys().map(String::as_str).collect();
    let mut all = maintwatch::cli::certify::default_scenarios();
    all.sort_unstable();
    assert_eq!(played, all, "{}", standalone.stdout);
    assert_graded(&standalone, cluster.as_ref());
    crate::tier_matrix::check_rows(&[&v.label]);
}

/// The older node-redis releases of the matrix (`MAINTWATCH_NODE_REDIS_OLDER`, a list of
/// folders as in PATH, one npm prefix per release; `.ci/run` and `scripts/clients/matrix.sh` make them),
/// one after another: each certified on the matrix's columns, its row checked. Unset: a SKIP
/// line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_redis_older_certified_rows() {
    let test = "node_redis_older_certified_rows";
    let Some(dirs) = tier::older(test, "MAINTWATCH_NODE_REDIS_OLDER") else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    for dir in dirs {
        let version = tier::node_redis_version(&dir);
        let v = tier_version(&dir, &version);
        let (standalone, cluster) = tier::certify_version(&redis, &v, false).await;
        assert_graded(&standalone, cluster.as_ref());
        crate::tier_matrix::check_rows(&[&v.label]);
    }
}

/// A createCluster application with a sharded subscriber, under oss-cluster:
/// `sharded-resubscribe` is judged, PASS or FAIL with the messages counted (node-redis 6.3.1
/// subscribes again within 0.02 s of the SMIGRATED).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_redis_sharded_subscriber_is_judged() {
    let test = "node_redis_sharded_subscriber_is_judged";
    let Some((node_path, _)) = node_redis(test) else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let env = [("NODE_PATH", node_path.as_str())];
    let r = tier::simulate(
        &redis,
        tier::CLUSTER,
        1.0,
        &["node", CLUSTER_APP, "--sharded"],
        &env,
    )
    .await;
    if !tier::resolved_privately(test, &r) {
        return;
    }
    r.assert_sharded_judged("node-redis/");
}
