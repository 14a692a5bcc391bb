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

use crate::common;
use common::tier;

const GO_VAR: &str = "MAINTWATCH_GO_REDIS";
/// The grade's client name: go-redis sends `go-redis(,go1.26.8)` as its `LIB-NAME`.
const CLIENT: &str = "go-redis(";
const APP: &str = "go_redis_app";
const CLUSTER_APP: &str = "go_redis_cluster_app";

/// The folder of the newest release's applications and its go-redis version; `None` after a SKIP
/// line.
fn go_redis(test: &str) -> Option<(String, String)> {
    tier::client_runtime(
        test,
        GO_VAR,
        ".ci/run builds the go-redis applications when Go exists",
        version_command,
    )
}

/// `DIR/go_redis_app --version`: the go-redis release the application was built with.
fn version_command(dir: &str) -> std::process::Command {
    let mut c = std::process::Command::new(app(dir, APP));
    c.arg("--version");
    c
}

fn app(dir: &str, name: &str) -> String {
    std::path::Path::new(dir)
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// The go-redis version a folder's application was built with; panics when it has none.
fn version_of(dir: &str) -> String {
    let out = version_command(dir)
        .output()
        .unwrap_or_else(|e| panic!("{dir}/{APP} does not run: {e}"));
    assert!(out.status.success(), "{dir}/{APP} --version failed");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The release built into `dir` (`version`) as a version of the tier: the cluster application
/// where that release's ClusterClient handles the notifications (9.18.0 on,
/// `maintwatch::grading::clients`), played `cascading-smigrated` too when the row is certified in full.
fn tier_version(dir: &str, version: &str) -> tier::Version {
    let cluster = maintwatch::grading::clients::has_cluster("go-redis", version) == Some(true);
    tier::Version {
        label: format!("go-redis {version}"),
        standalone: vec![app(dir, APP)],
        cluster: cluster.then(|| vec![app(dir, CLUSTER_APP)]),
        cluster_also: vec!["cascading-smigrated"],
        env: Vec::new(),
    }
}

/// What every certified row must show of go-redis: it was graded under its own name and opted in
/// on every connection, and the scenarios that judge the timeouts judged them. With the cluster
/// client, every connection opted in and every SMIGRATED has a `smigrated-refresh` verdict: at
/// its default configuration go-redis's ClusterClient never reloads on it (its reload is wired
/// only when `MaintNotificationsConfig` is set), and as the application's keys miss the moved
/// slots that verdict is NOT JUDGED (docs/clients.md, "go-redis, measured").
fn assert_graded(standalone: &tier::Certified, cluster: Option<&tier::Certified>) {
    let columns = tier::standalone_columns();
    for (scenario, r) in &standalone.runs {
        if !columns.contains(&scenario.as_str()) {
            continue;
        }
        assert_eq!(
            r.client(CLIENT)["never_opted_in"],
            0,
            "{scenario}: {}",
            r.table
        );
        r.assert_maintenance_rules_judged(CLIENT, scenario);
    }
    for (scenario, r) in cluster.iter().flat_map(|c| &c.runs) {
        let c = r.client(CLIENT);
        assert_eq!(c["never_opted_in"], 0, "{scenario}: {}", r.table);
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

/// The newest go-redis's row of the client matrix, from `maintwatch certify` with no
/// `--scenarios`: the application is played every scenario where a client can act, the row it
/// prints has a cell for each, and the matrix's row is those cells (the cluster column from
/// certify run with the ClusterClient application on `oss-cluster`; it plays
/// `cascading-smigrated` too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_redis_certified_row() {
    let test = "go_redis_certified_row";
    let Some((dir, version)) = go_redis(test) else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let v = tier_version(&dir, &version);
    let (standalone, cluster) = tier::certify_version(&redis, &v, true).await;
    let played: Vec<&str> = standalone.row.keys().map(String::as_str).collect();
    let mut all = maintwatch::cli::certify::default_scenarios();
    all.sort_unstable();
    assert_eq!(played, all, "{}", standalone.stdout);
    let cluster = cluster.expect("the newest go-redis has a cluster client");
    let cluster_played: Vec<&str> = cluster.row.keys().map(String::as_str).collect();
    assert_eq!(
        cluster_played,
        ["cascading-smigrated", tier::CLUSTER],
        "{}",
        cluster.stdout
    );
    assert_graded(&standalone, Some(&cluster));
    crate::tier_matrix::check_rows(&[&v.label]);
}

/// The older go-redis releases of the matrix (`MAINTWATCH_GO_REDIS_OLDER`, a list of folders as
/// in PATH, one per release; `scripts/clients/client-versions.sh`'s `install_older_clients` builds them),
/// one after another: each certified on the matrix's columns, its row checked. Unset: a SKIP
/// line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_redis_older_certified_rows() {
    let test = "go_redis_older_certified_rows";
    let Some(dirs) = tier::older(test, "MAINTWATCH_GO_REDIS_OLDER") else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    for dir in dirs {
        let version = version_of(&dir);
        let v = tier_version(&dir, &version);
        let (standalone, cluster) = tier::certify_version(&redis, &v, false).await;
        assert_graded(&standalone, cluster.as_ref());
        crate::tier_matrix::check_rows(&[&v.label]);
    }
}

/// A ClusterClient application with a sharded subscriber, under oss-cluster. go-redis rewrites
/// the loopback node addresses of `CLUSTER SLOTS` to the seed's host name (`replaceLoopbackHost`,
/// for containers; the simulator's nodes are 127.0.0.x), so its SSUBSCRIBE goes to whichever node
/// the name resolves to first, is refused with -MOVED, and is not tried again: nothing is
/// subscribed, so nothing is published and `sharded-resubscribe` is not exercised. The test
/// asserts that outcome, measured in go-redis 9.23.0; a release (or a simulator) that changes it
/// fails here, and then `sharded-resubscribe` must be judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_redis_sharded_subscriber_is_refused_by_moved() {
    let test = "go_redis_sharded_subscriber_is_refused_by_moved";
    let Some((dir, _)) = go_redis(test) else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let cluster_app = app(&dir, CLUSTER_APP);
    let r = tier::simulate(
        &redis,
        tier::CLUSTER,
        1.0,
        &[&cluster_app, "--sharded"],
        &[],
    )
    .await;
    if !tier::resolved_privately(test, &r) {
        return;
    }
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
}
