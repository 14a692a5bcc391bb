//! The go-redis tier: go-redis (the Go module `github.com/redis/go-redis/v9`, 9.16 on) as
//! unmodified applications, `tests/clients/go-redis/` (one Go module: `go_redis_app` with
//! `redis.NewClient`, `go_redis_cluster_app` with `redis.NewClusterClient`), built ahead by
//! `.ci/run` and `scripts/clients/client-versions.sh`. Each release's row of the client matrix (docs/matrix.md)
//! is `maintwatch certify -- go_redis_app` (and `go_redis_cluster_app` on the cluster
//! scenarios): the newest (`MAINTWATCH_GO_REDIS`) with every scenario certify plays, the cluster
//! application on `oss-cluster` and `cascading-smigrated`; the older ones
//! (`MAINTWATCH_GO_REDIS_OLDER`) with the matrix's columns.
//!
//! Needs `MAINTWATCH_GO_REDIS` (a folder holding both built applications) and
//! `MAINTWATCH_REDIS_SERVER`. Unset or empty: a SKIP line (where Go is absent, `.ci/run` builds
//! nothing and leaves it unset). Set but unusable: the test fails. The applications resolve the
//! simulator's name through Go's default resolver and the private /etc/resolv.conf `simulate`
//! gives them, as a user's application would.

use crate::common::tier::{self, GO_REDIS};

/// The grade's client name: go-redis sends `go-redis(,go1.26.8)` as its `LIB-NAME`.
const CLIENT: &str = GO_REDIS.client;

/// What every certified row must show of go-redis: it was graded under its own name and opted in
/// on every connection, and the scenarios that judge the timeouts judged them. With the cluster
/// client, every connection opted in and every SMIGRATED has a `smigrated-refresh` verdict: at
/// its default configuration go-redis's ClusterClient never reloads on it (its reload is wired
/// only when `MaintNotificationsConfig` is set), and as the application's keys miss the moved
/// slots that verdict is NOT JUDGED (docs/clients.md, "go-redis, measured").
fn assert_graded(standalone: &tier::Certified, cluster: Option<&tier::Certified>) {
    tier::assert_graded_in_columns(standalone, CLIENT);
    for (scenario, r) in cluster.iter().flat_map(|c| &c.runs) {
        let c = r.client(CLIENT);
        let smigrated: Vec<&serde_json::Value> = c["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| {
                n["notification"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("SMIGRATED")
            })
            .collect();
        assert!(!smigrated.is_empty(), "{scenario}: {}", r.table);
        for n in smigrated {
            let rules = n["rules"].as_array().unwrap();
            assert!(
                rules.iter().any(|x| x["rule"] == "smigrated-refresh"),
                "{scenario}: {}",
                r.table
            );
        }
    }
}

tier::tier_tests! {
    /// The newest go-redis's row of the client matrix, from `maintwatch certify` with no
    /// `--scenarios` (`tier::certified_row`; the cluster column from certify run with the
    /// ClusterClient application on `oss-cluster`; it plays `cascading-smigrated` too).
    go_redis_certified_row: tier::certified_row(GO_REDIS, assert_graded);

    /// The older go-redis releases of the matrix (`MAINTWATCH_GO_REDIS_OLDER`, a list of folders as
    /// in PATH, one per release; `scripts/clients/client-versions.sh`'s `install_older_clients` builds them),
    /// one after another: each certified on the matrix's columns, its row checked. Unset: a SKIP
    /// line.
    go_redis_older_certified_rows: tier::older_certified_rows(GO_REDIS, assert_graded);

    /// A ClusterClient application with a sharded subscriber, under oss-cluster. go-redis rewrites
    /// the loopback node addresses of `CLUSTER SLOTS` to the seed's host name (`replaceLoopbackHost`,
    /// for containers; the simulator's nodes are 127.0.0.x), so its SSUBSCRIBE goes to whichever node
    /// the name resolves to first, is refused with -MOVED, and is not tried again: nothing is
    /// subscribed, so nothing is published and `sharded-resubscribe` is not exercised. The test
    /// asserts that outcome, measured in go-redis 9.23.0; a release (or a simulator) that changes it
    /// fails here, and then `sharded-resubscribe` must be judged.
    go_redis_sharded_subscriber_is_refused_by_moved: sharded_subscriber_is_refused(GO_REDIS);
}

async fn sharded_subscriber_is_refused(test: &str, lib: &tier::Library) -> Option<()> {
    let r = tier::sharded_subscriber(test, lib).await?;
    assert!(
        r.output.contains("\"pubsub server MOVED\":1"),
        "{}",
        r.output
    );
    assert!(
        r.table.contains("not exercised: sharded-resubscribe"),
        "{}",
        r.table
    );
    Some(())
}
