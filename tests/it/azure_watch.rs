//! `watch --azure-events`: Azure Cache for Redis's AzureRedisEvents messages as events of the
//! timeline, against the simulator's azure-failover scenario (the capture replays clean), and a
//! SUBSCRIBE refused by a real redis-server's ACL (one line with the fix, and the watch goes on).

use crate::common;
use maintwatch::observe::record::{line, ClosedBy, WatchLine};
use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Turns a hang into a failure; waiting is on lines, never on time.
const GUARD: Duration = Duration::from_secs(60);

fn azure_kind(l: &WatchLine) -> Option<&'static str> {
    match l {
        WatchLine::AzureEvent(a) if a.copy_of.is_none() => a.event.kind.map(|k| k.wire_name()),
        _ => None,
    }
}

/// Every message in order, beside its bytes; the close announced by NodeMaintenanceStarting and
/// timed from it; the summary's rows with their outcome; and `replay --check` of the capture
/// computes the same lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_failover_is_watched_as_a_maintenance_and_its_capture_replays_clean() {
    let mut opts = SimOptions::new(scenarios::by_name("azure-failover").unwrap());
    opts.speed = 5.0;
    let sim = Simulator::start(opts).await.expect("simulator starts");
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("azure.jsonl");
    let mut child = common::maintwatch_async(["watch", &sim.url(), "--json", "--azure-events"])
        .args([
            "--dns-server",
            &sim.dns_addr().to_string(),
            "--sim-speed",
            "5",
        ])
        // The five messages are the five events: the watch ends after the last.
        .args(["--count", "5", "--capture"])
        .arg(&capture)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen: Vec<WatchLine> = Vec::new();
    tokio::time::timeout(GUARD, async {
        while let Some(l) = lines.next_line().await.unwrap() {
            seen.push(serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}")));
        }
    })
    .await
    .expect("hang guard");
    sim.shutdown().await;
    let kinds: Vec<&str> = seen.iter().filter_map(azure_kind).collect();
    assert_eq!(
        kinds,
        [
            "NodeMaintenanceScheduled",
            "NodeMaintenanceStarting",
            "NodeMaintenanceStart",
            "NodeMaintenanceFailoverComplete",
            "NodeMaintenanceEnded"
        ],
        "{seen:#?}"
    );
    let starting = seen
        .iter()
        .find_map(|l| match l {
            WatchLine::AzureEvent(a) if azure_kind(l) == Some("NodeMaintenanceStarting") => Some(a),
            _ => None,
        })
        .unwrap();
    let raw = starting.frame.raw.escaped();
    assert!(
        raw.starts_with(r">3\r\n$7\r\nmessage\r\n$16\r\nAzureRedisEvents\r\n"),
        "{raw}"
    );
    assert_eq!(starting.event.is_replica, Some(false));
    assert!(starting.starts_in_s.is_some(), "{starting:?}");
    // The node-wide close comes after Starting, announced by it and timed from it.
    let close = seen
        .iter()
        .find_map(|l| match l {
            WatchLine::Closed(c) if c.by == ClosedBy::Server => Some(c),
            _ => None,
        })
        .expect("the failover's close");
    assert!(close.announced, "{close:?}");
    let rel = close.rel.as_ref().unwrap();
    assert_eq!(rel.to, "NodeMaintenanceStarting");
    assert!(rel.s > 0.0, "{rel:?}");
    let Some(WatchLine::Summary(summary)) = seen.last() else {
        panic!("no summary last: {seen:#?}");
    };
    let row = |k: &str| summary.events.iter().find(|e| e.kind == k).unwrap();
    let outcome = Some("NodeMaintenanceFailoverComplete".to_string());
    assert_eq!(row("NodeMaintenanceStarting").outcome, outcome);
    assert_eq!(row("NodeMaintenanceScheduled").outcome, outcome);
    assert!(row("NodeMaintenanceStarting").socket_closed_s.is_some());
    // The capture holds every line, and a rerun of the timeline computes them again.
    let text = std::fs::read_to_string(&capture).unwrap();
    assert_eq!(text.lines().count(), seen.len());
    let out = common::maintwatch(["replay", "--check"])
        .arg(&capture)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains(" 0 differ"), "{err}");
}

/// A real redis-server whose default user may not SUBSCRIBE: one `azure_refused` line naming the
/// fix, and the watch carries on (its PINGs keep being answered).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribe_refused_by_an_acl_is_one_line_with_the_fix_and_the_watch_goes_on() {
    let Some(redis) = common::RealRedis::start(
        "a_subscribe_refused_by_an_acl_is_one_line_with_the_fix_and_the_watch_goes_on",
        &[],
    )
    .await
    else {
        return;
    };
    let set = common::command(redis.addr, &["ACL", "SETUSER", "default", "-subscribe"]).await;
    assert_eq!(set, b"+OK\r\n", "{}", String::from_utf8_lossy(&set));
    let (mut child, mut lines) = common::spawn_lines(
        common::maintwatch_async(["watch", &redis.url(), "--json", "--azure-events"])
            .args(["--traffic", "0.05"])
            .stderr(Stdio::null()),
    );
    let mut seen = Vec::new();
    common::read_until(
        &mut lines,
        &mut seen,
        GUARD,
        "a PING answered after the refusal",
        |s| {
            let refused = s
                .iter()
                .position(|l| matches!(l, WatchLine::AzureRefused(_)));
            refused.is_some_and(|i| {
                s[i..].iter().any(|l| {
                    matches!(
                        l,
                        WatchLine::Ping(line::Ping {
                            latency_ms: Some(_),
                            ..
                        })
                    )
                })
            })
        },
    )
    .await;
    let _ = child.kill().await;
    let refusals: Vec<&line::AzureRefused> = seen
        .iter()
        .filter_map(|l| match l {
            WatchLine::AzureRefused(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(refusals.len(), 1, "{seen:#?}");
    assert!(refusals[0].error.contains("NOPERM"), "{:?}", refusals[0]);
    assert!(
        refusals[0].fix.contains("+subscribe &AzureRedisEvents"),
        "{:?}",
        refusals[0]
    );
    // Not mistaken for a frame, and the connection was never dropped for it.
    assert!(
        !seen.iter().any(|l| matches!(l, WatchLine::Closed(_))),
        "{seen:#?}"
    );
}

/// `doctor --azure-events`: whether this user may SUBSCRIBE to the channel (allowed on the
/// simulator; refused, with the ACL to change, on a real redis-server whose user may not), who
/// listens to it, and that Azure Managed Redis uses the push notifications instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_says_whether_the_azure_channel_may_be_subscribed_to() {
    let sim = Simulator::start(SimOptions::new(
        scenarios::by_name("azure-failover").unwrap(),
    ))
    .await
    .unwrap();
    let doctor = |url: String| async move {
        let out = common::maintwatch_async(["doctor", &url, "--azure-events", "--json"])
            .output()
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        v["azure"].clone()
    };
    let allowed = doctor(format!("redis://{}", sim.proxies()[0])).await;
    assert_eq!(allowed["subscribe"], "allowed", "{allowed}");
    assert!(allowed["note"]
        .as_str()
        .unwrap()
        .contains("Azure Managed Redis"));
    assert!(allowed["listening"][0]
        .as_str()
        .unwrap()
        .starts_with("StackExchange.Redis, from 2.2.79"));
    sim.shutdown().await;
    let Some(redis) = common::RealRedis::start(
        "doctor_says_whether_the_azure_channel_may_be_subscribed_to",
        &[],
    )
    .await
    else {
        return;
    };
    common::command(redis.addr, &["ACL", "SETUSER", "default", "-subscribe"]).await;
    let refused = doctor(redis.url()).await;
    assert_eq!(refused["subscribe"], "refused", "{refused}");
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.contains("NOPERM") && detail.contains("+subscribe &AzureRedisEvents"),
        "{detail}"
    );
}
