//! The ioredis tier: ioredis (npm `ioredis`, 6.1 on: the first release with `maintNotifications`)
//! as an unmodified application, `tests/clients/ioredis_app.js`. Its row of the client matrix is
//! `maintwatch certify -- node APP` with every scenario certify plays by default. It has no
//! cluster column: ioredis 6.1.0's `Cluster` turns the feature off on every connection it makes
//! (`maintNotifications: "disabled"` in its connection pool and subscribers), so the cell is
//! `n/a` (`maintwatch::grading::clients`, `cluster_since: None`).
//!
//! Needs `MAINTWATCH_IOREDIS` (a folder whose `node_modules` has `ioredis`; `.ci/run` makes one)
//! and `MAINTWATCH_REDIS_SERVER`. Unset or empty: a SKIP line. Set but unusable: the test fails.

use crate::common;
use common::tier;

const VAR: &str = "MAINTWATCH_IOREDIS";
const APP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/ioredis_app.js");
/// The grade's client name: ioredis sends `ioredis` as its `LIB-NAME`... or nothing; the
/// prefix matches how the grade names it.
const CLIENT: &str = "ioredis";

/// The folder holding `node_modules/ioredis`, and the version; `None` after a SKIP line.
fn ioredis(test: &str) -> Option<(String, String)> {
    tier::client_runtime(
        test,
        VAR,
        ".ci/run installs ioredis when node and npm exist",
        |dir| {
            let mut c = std::process::Command::new("node");
            c.args(["-e", "console.log(require('ioredis/package.json').version)"])
                .current_dir(dir);
            c
        },
    )
}

fn tier_version(dir: &str, version: &str) -> tier::Version {
    let node_path = std::path::Path::new(dir).join("node_modules");
    tier::Version {
        label: format!("ioredis {version}"),
        standalone: vec!["node".into(), APP.into()],
        cluster: None,
        cluster_also: Vec::new(),
        env: vec![("NODE_PATH".into(), node_path.to_string_lossy().into_owned())],
    }
}

/// ioredis's row of the client matrix, from `maintwatch certify` with no `--scenarios`: every
/// default scenario played, every connection opted in where the matrix has a column, the
/// maintenance rules judged, and the matrix's row equal to what certify printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ioredis_certified_row() {
    let test = "ioredis_certified_row";
    let Some((dir, version)) = ioredis(test) else {
        return;
    };
    let Some(redis) = common::redis_server_binary(test) else {
        return;
    };
    let v = tier_version(&dir, &version);
    let (standalone, cluster) = tier::certify_version(&redis, &v, true).await;
    assert!(cluster.is_none());
    let played: Vec<&str> = standalone.row.keys().map(String::as_str).collect();
    let mut all = maintwatch::cli::certify::default_scenarios();
    all.sort_unstable();
    assert_eq!(played, all, "{}", standalone.stdout);
    for (scenario, r) in &standalone.runs {
        if !tier::standalone_columns().contains(&scenario.as_str()) {
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
    crate::tier_matrix::check_rows(&[&v.label]);
}
