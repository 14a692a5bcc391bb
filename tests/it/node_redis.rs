//! The node-redis tier: node-redis (the npm package `redis`, 6.x) as an unmodified application,
//! `tests/clients/node_redis_app.js`, run by `maintwatch simulate --upstream spawn --grade -- node
//! APP` in every scenario where a client can act, and graded. The same application with the
//! README's Node recipe (a `socket.lookup` hook on MAINTWATCH_SIM_DNS and an explicit endpoint
//! type, `tests/clients/node_redis_hooked.js`) must earn the same grade.
//!
//! Needs `MAINTWATCH_NODE_REDIS` (a folder whose `node_modules` has `redis`; `.ci/run` makes one)
//! and `MAINTWATCH_REDIS_SERVER`. Unset or empty: a SKIP line. Set but unusable: the test fails.
//! Each test's scenarios run at once, each with its own simulator.

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
fn node_redis(test: &str) -> Option<(String, String)> {
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
    let label = format!("node-redis {version}");
    tier::record(&label, "single-proxy", &single.grade);
    tier::record(&label, "multi-proxy", &multi.grade);
}

/// The other scenarios where a client can act (oss-cluster with `createCluster`,
/// `tests/clients/node_redis_cluster_app.js`): what node-redis earns is recorded for the README's
/// matrix (tests/it/tier_matrix.rs compares), and each run must have graded node-redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_redis_every_scenario() {
    let test = "node_redis_every_scenario";
    let Some((node_path, version)) = node_redis(test) else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let app = |scenario: &str| {
        let app = if scenario == tier::CLUSTER {
            CLUSTER_APP
        } else {
            APP
        };
        vec!["node".to_string(), app.to_string()]
    };
    let env = [("NODE_PATH", node_path.as_str())];
    let Some(runs) = tier::every_scenario(test, &redis, app, &env).await else {
        return;
    };
    for (scenario, r) in &runs {
        let c = r.client("node-redis/");
        if *scenario == tier::CLUSTER {
            // The cluster client's seed connection, used for the topology, never opts in.
            let opted: u64 = c["opted_in"]
                .as_object()
                .unwrap()
                .values()
                .map(|n| n.as_u64().unwrap())
                .sum();
            assert!(opted >= 3, "{scenario}: {}", r.table);
        } else {
            assert_eq!(c["never_opted_in"], 0, "{scenario}: {}", r.table);
        }
        r.assert_maintenance_rules_judged("node-redis/", scenario);
        tier::record(&format!("node-redis {version}"), scenario, &r.grade);
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
