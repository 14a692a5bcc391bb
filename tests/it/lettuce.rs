//! The Lettuce tier: Lettuce (Maven `io.lettuce:lettuce-core`, 7.0 on) as unmodified
//! applications, `tests/clients/lettuce/` (a Maven project: `LettuceApp`, `LettuceClusterApp`),
//! certified by `maintwatch certify -- java -cp CP MAIN`. Each release's row of the
//! client matrix: the newest (`MAINTWATCH_LETTUCE`, a build folder `.ci/run` makes) with every
//! scenario certify plays, its cluster application on `oss-cluster` and `cascading-smigrated`;
//! the older ones (`MAINTWATCH_LETTUCE_OLDER`, `install_older_clients` in
//! scripts/clients/client-versions.sh) on the matrix's columns.
//!
//! Needs `java`, `MAINTWATCH_LETTUCE` and `MAINTWATCH_REDIS_SERVER`. Unset or absent: a SKIP
//! line. Set but unusable: the test fails.

use crate::common;
use common::tier::{self, LETTUCE};

/// What every certified Lettuce row must show: graded under its own name, a `relaxed-timeout`
/// that fails on a give-up naming it, and the cluster client opted in on every node's
/// connection. Its verdicts are the row's cells, which the row check holds.
fn assert_graded(standalone: &tier::Certified, cluster: Option<&tier::Certified>) {
    tier::assert_graded_in_columns(standalone, "Lettuce/");
    for (scenario, r) in &standalone.runs {
        if ["shard-migration", "failover"].contains(&scenario.as_str()) {
            assert_gave_up_keeping_the_connection(scenario, r);
        }
    }
    for (scenario, r) in cluster.iter().flat_map(|c| &c.runs) {
        assert!(
            tier::opted_in(r, "Lettuce/") >= 3,
            "{scenario}: {}",
            r.table
        );
    }
}

/// Lettuce's synchronous API is not relaxed: inside the window it gives up at its own 1 s, as at
/// the baseline stall, and keeps the connection (issue 56). `relaxed-timeout` fails on the
/// opening notification, and its line names the give-up that kept the connection. In 1 run of
/// 20 of `failover` no caller was in flight through the stall and the rule was NOT JUDGED: the
/// row's cell counts that, so here a verdict other than FAIL is left to the row check.
fn assert_gave_up_keeping_the_connection(scenario: &str, r: &tier::TierRun) {
    let n = &r.client("Lettuce/")["notifications"][0];
    let rule = n["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|x| x["rule"] == "relaxed-timeout")
        .unwrap_or_else(|| panic!("{scenario}: no relaxed-timeout: {}", r.table));
    if rule["verdict"] != "fail" {
        return;
    }
    let detail = rule["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("gave up after") && detail.contains("kept the connection"),
        "{scenario}: {detail}"
    );
}

tier::tier_tests! {
    /// The newest Lettuce's row of the client matrix, from `maintwatch certify` with no
    /// `--scenarios`: every scenario certify plays has a cell, and the matrix's row is the cells of
    /// the matrix's columns (the cluster column from `LettuceClusterApp`, which is also certified on
    /// `cascading-smigrated`).
    lettuce_certified_row: tier::certified_row(LETTUCE, assert_graded);

    /// The older Lettuce releases of the matrix (`MAINTWATCH_LETTUCE_OLDER`, build folders as in
    /// PATH), one after another: each certified on the matrix's columns, its row checked. Unset: a
    /// SKIP line.
    lettuce_older_certified_rows: tier::older_certified_rows(LETTUCE, assert_graded);

    /// The cluster application with a sharded subscriber, under oss-cluster: `sharded-resubscribe`
    /// is judged, PASS or FAIL with the messages counted.
    lettuce_sharded_subscriber_is_judged: tier::sharded_subscriber_is_judged(LETTUCE);

    /// The JVM caches DNS answers (`networkaddress.cache.ttl`, 30 s by default), but Lettuce resolves
    /// with Netty's own DNS resolver (`netty-resolver-dns`, a dependency of lettuce-core), which
    /// reads the system's resolv.conf and keeps an answer for its record's TTL. So the JVM's cache
    /// plays no part: in single-proxy, where DNS moves mid-window, the application with the JVM's
    /// cache at its default and with it off (`-Dsun.net.inetaddr.ttl=0`) earns the same verdicts.
    lettuce_verdict_does_not_depend_on_the_jvm_dns_cache: jvm_dns_cache_plays_no_part(LETTUCE);
}

async fn jvm_dns_cache_plays_no_part(test: &str, lib: &tier::Library) -> Option<()> {
    let (dir, _, redis) = lib.with_redis(test)?;
    let cmd = lib.command(&dir, lib.app, &[]);
    let cmd = tier::strs(&cmd);
    let no_cache = [("JAVA_TOOL_OPTIONS", "-Dsun.net.inetaddr.ttl=0")];
    let (default, uncached) = tokio::join!(
        tier::simulate(&redis, "single-proxy", 1.0, &cmd, &[]),
        tier::simulate(&redis, "single-proxy", 1.0, &cmd, &no_cache),
    );
    tier::resolved_privately(test, &default).then_some(())?;
    assert!(
        uncached.output.contains("Picked up JAVA_TOOL_OPTIONS"),
        "{}",
        uncached.output
    );
    assert_eq!(
        tier::verdicts(&default, lib.client),
        tier::verdicts(&uncached, lib.client),
        "{}\n{}",
        default.table,
        uncached.table
    );
    Some(())
}
