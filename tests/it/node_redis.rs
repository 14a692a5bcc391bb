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
use common::tier::{self, NODE_REDIS};

tier::tier_tests! {
    /// Single proxy and multi-proxy (both a MOVING with a null target): node-redis opts in, then its
    /// MOVING handler asserts that a null target comes only with endpoint type `none`; the assertion
    /// throws in an async push handler, an unhandled rejection that ends the process at once. The
    /// grade names it as a client-side fact, and the hand-patched app
    /// (`tests/clients/node_redis_hooked.js`) earns the same verdicts.
    node_redis_unmodified_single_and_multi_proxy: moving_with_a_null_target_ends_the_process(NODE_REDIS);

    /// The newest node-redis's row of the client matrix, from `maintwatch certify` with no
    /// `--scenarios` (`tier::certified_row`; the cluster column from certify run with
    /// `createCluster`, `tests/clients/node_redis_cluster_app.js`, on `oss-cluster`, from 5.11.0).
    node_redis_certified_row: tier::certified_row(NODE_REDIS, assert_graded);

    /// The older node-redis releases of the matrix (`MAINTWATCH_NODE_REDIS_OLDER`, a list of
    /// folders as in PATH, one npm prefix per release; `.ci/run` and `scripts/clients/matrix.sh` make them),
    /// one after another: each certified on the matrix's columns, its row checked. Unset: a SKIP
    /// line.
    node_redis_older_certified_rows: tier::older_certified_rows(NODE_REDIS, assert_graded);

    /// A createCluster application with a sharded subscriber, under oss-cluster:
    /// `sharded-resubscribe` is judged, PASS or FAIL with the messages counted (node-redis 6.3.1
    /// subscribes again within 0.02 s of the SMIGRATED).
    node_redis_sharded_subscriber_is_judged: tier::sharded_subscriber_is_judged(NODE_REDIS);
}

async fn moving_with_a_null_target_ends_the_process(test: &str, lib: &tier::Library) -> Option<()> {
    let (dir, version, redis) = lib.with_redis(test)?;
    let app = lib.command(&dir, lib.app, &[]);
    let hooked = lib.command(&dir, "node_redis_hooked.js", &[]);
    let env = lib.env(&dir);
    let (app, hooked, env) = (tier::strs(&app), tier::strs(&hooked), tier::pairs(&env));
    let [single, multi, single_hooked, multi_hooked] =
        tier::single_and_multi_proxy(test, &redis, &app, &hooked, &env).await?;
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
    Some(())
}

/// What every certified row must show of node-redis: it was graded under its own name, and its
/// cluster client opted in on three connections (its seed, used for the topology, never does).
/// Its verdicts are the row's cells, which the row check holds.
fn assert_graded(standalone: &tier::Certified, cluster: Option<&tier::Certified>) {
    tier::assert_graded_in_columns(standalone, "node-redis/");
    for (scenario, r) in cluster.iter().flat_map(|c| &c.runs) {
        assert!(
            tier::opted_in(r, "node-redis/") >= 3,
            "{scenario}: {}",
            r.table
        );
    }
}
