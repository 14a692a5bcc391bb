//! A fleet in one watch: two simulators (a MOVING on one, a failover on the other) and, when the
//! real-server tier is on, a real redis-server that refuses the opt-in. Each endpoint's lines
//! carry its label, and each keeps its own timeline: an event on one endpoint never gives
//! another's lines a `rel` offset, and each gets its own summary.

use crate::common;

use maintwatch::observe::record::{line, OptInOutcome, TaggedLine, WatchLine};
use maintwatch::protocol::notification::{Classified, Kind};
use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator};
use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

/// A hang guard only: no test waits this long unless something is broken.
const GUARD: Duration = Duration::from_secs(60);

async fn sim(scenario: &str, speed: f64) -> Simulator {
    let mut opts = SimOptions::new(scenarios::by_name(scenario).expect("bundled"));
    opts.speed = speed;
    Simulator::start(opts).await.expect("simulator starts")
}

/// The address URL of a simulator's first proxy (an address: no DNS poller for it).
fn url(sim: &Simulator) -> String {
    format!("redis://{}", sim.proxies()[0])
}

fn is_kind(l: &WatchLine, kind: Kind) -> bool {
    matches!(l, WatchLine::Push(line::Push { frame, labels, .. })
        if labels.is_empty()
            && matches!(&frame.parsed, Classified::Maintenance(n) if n.kind == kind))
}

/// The `rel.to` of a line, when it has one.
fn rel_to(l: &WatchLine) -> Option<&str> {
    let rel = match l {
        WatchLine::Push(line::Push { rel, .. })
        | WatchLine::Connected(line::Connected { rel, .. })
        | WatchLine::Closed(line::Closed { rel, .. })
        | WatchLine::Dns(line::Dns { rel, .. })
        | WatchLine::Handoff(line::Handoff { rel, .. })
        | WatchLine::Advertised(line::Advertised { rel, .. })
        | WatchLine::Topology(line::Topology { rel, .. }) => rel,
        _ => return None,
    };
    rel.as_ref().map(|r| r.to.as_str())
}

#[tokio::test]
async fn two_simulators_in_one_watch_keep_their_own_timelines() {
    let moving = sim("single-proxy", 20.0).await;
    let failover = sim("failover", 20.0).await;
    let real =
        common::RealRedis::start("fleet: real redis-server beside the simulators", &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("fleet.jsonl");
    let mut args = vec![url(&moving), url(&failover)];
    args.extend(real.as_ref().map(|r| r.url()));
    let (mut child, mut lines) = common::spawn_lines(
        common::maintwatch_async(["watch"])
            .args(&args)
            .args(["--json", "--heartbeat", "100ms", "--capture"])
            .arg(&capture)
            .stderr(Stdio::piped()),
    );
    let label = |s: &Simulator| s.proxies()[0].to_string();
    let (a, b) = (label(&moving), label(&failover));
    let mut seen: Vec<(String, WatchLine)> = Vec::new();
    let done = |seen: &[(String, WatchLine)]| {
        let closed_after_moving = seen.iter().any(|(ep, l)| {
            *ep == a
                && matches!(
                    l,
                    WatchLine::Closed(line::Closed {
                        announced: true,
                        ..
                    })
                )
        });
        let failed_over = seen
            .iter()
            .any(|(ep, l)| *ep == b && is_kind(l, Kind::FailedOver));
        let beats = |who: &str| {
            seen.iter()
                .filter(|(ep, l)| ep == who && matches!(l, WatchLine::Heartbeat(_)))
                .count()
        };
        closed_after_moving && failed_over && beats(&a) >= 2 && beats(&b) >= 2
    };
    tokio::time::timeout(GUARD, async {
        while !done(&seen) {
            let text = lines.next_line().await.unwrap().expect("the watch runs on");
            let tagged: TaggedLine =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            seen.push((tagged.ep, tagged.line));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("hang guard: {seen:#?}"));
    let pid = child.id().unwrap() as i32;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    while let Some(text) = lines.next_line().await.unwrap() {
        let tagged: TaggedLine = serde_json::from_str(&text).unwrap();
        seen.push((tagged.ep, tagged.line));
    }
    let code = child.wait().await.unwrap().code();
    assert_eq!(code, Some(130), "Ctrl-C stops the whole fleet");

    let mut by_ep: BTreeMap<&str, Vec<&WatchLine>> = BTreeMap::new();
    for (ep, l) in &seen {
        by_ep.entry(ep).or_default().push(l);
    }
    let mut expected: Vec<String> = vec![a.clone(), b.clone()];
    expected.extend(real.as_ref().map(|r| r.addr.to_string()));
    expected.sort();
    assert_eq!(by_ep.keys().copied().collect::<Vec<_>>(), expected);
    for (ep, own) in &by_ep {
        // Its own start line first, its own summary last.
        assert!(
            matches!(own[0], WatchLine::Start(line::Start { endpoint, .. }) if endpoint.ends_with(ep)),
            "{ep}: {own:#?}"
        );
        assert!(matches!(own.last().unwrap(), WatchLine::Summary(_)), "{ep}");
        assert_eq!(
            own.iter()
                .filter(|l| matches!(l, WatchLine::Summary(_)))
                .count(),
            1
        );
    }
    // Offsets name only the endpoint's own events.
    for l in &by_ep[a.as_str()] {
        if let Some(to) = rel_to(l) {
            assert!(to.starts_with("MOVING"), "{a}: {l:?}");
        }
    }
    for l in &by_ep[b.as_str()] {
        if let Some(to) = rel_to(l) {
            assert!(to.starts_with("FAILING_OVER"), "{b}: {l:?}");
        }
        assert!(
            !matches!(l, WatchLine::Handoff(_)),
            "no dry-run on the failover endpoint"
        );
    }
    // Each summary holds its own event, and only that.
    let kinds = |ep: &str| match by_ep[ep].last().unwrap() {
        WatchLine::Summary(s) => s.events.iter().map(|e| e.kind.clone()).collect::<Vec<_>>(),
        _ => unreachable!(),
    };
    assert_eq!(kinds(&a), ["MOVING"]);
    assert_eq!(kinds(&b), ["FAILING_OVER", "FAILED_OVER"]);
    // The heartbeat is per endpoint: the failover one counts its two notifications, the real
    // server (if any) never opts in.
    let last_beat = |ep: &str| {
        by_ep[ep]
            .iter()
            .rev()
            .find_map(|l| match l {
                WatchLine::Heartbeat(h) => Some(h.clone()),
                _ => None,
            })
            .unwrap()
    };
    let beat = last_beat(&b);
    assert_eq!((beat.conns, beat.opted_in), (1, 1), "{beat:?}");
    assert_eq!(beat.notifications, 2, "{beat:?}");
    assert!(beat.since_notification_s.is_some());
    if let Some(real) = &real {
        let ep = real.addr.to_string();
        let refused = by_ep[ep.as_str()]
            .iter()
            .any(|l| matches!(l, WatchLine::Handshake(h) if h.opt_in != OptInOutcome::Accepted));
        assert!(refused, "the real server refuses the opt-in");
        let beat = last_beat(&ep);
        assert_eq!((beat.opted_in, beat.notifications), (0, 0), "{beat:?}");
        assert!(by_ep[ep.as_str()].iter().all(|l| rel_to(l).is_none()));
    }
    // The capture holds the same lines and replays clean, one timeline per endpoint.
    let text = std::fs::read_to_string(&capture).unwrap();
    assert_eq!(text.lines().count(), seen.len());
    let out = common::maintwatch(["replay", "--check"])
        .arg(&capture)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains(" 0 differ"), "{err}");
}

#[tokio::test]
async fn a_fleet_comes_from_a_file_and_never_prints_its_passwords() {
    let mut opts = SimOptions::new(scenarios::by_name("refusing").unwrap());
    opts.password = Some("s3cr3t-fleet-pw".into());
    let guarded = Simulator::start(opts).await.unwrap();
    let open = sim("refusing", 20.0).await;
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("fleet.txt");
    std::fs::write(
        &list,
        format!(
            "# the fleet\nredis://:s3cr3t-fleet-pw@{}\n\n{}  # no password\n",
            guarded.proxies()[0],
            url(&open)
        ),
    )
    .unwrap();
    let out = tokio::time::timeout(
        GUARD,
        common::maintwatch_async(["watch", "--from"])
            .arg(&list)
            .args(["--duration", "1s", "--heartbeat", "200ms"])
            .output(),
    )
    .await
    .expect("hang guard")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stdout.contains("s3cr3t") && !stderr.contains("s3cr3t"),
        "{stdout}{stderr}"
    );
    // Human lines start with the label; one summary section per endpoint.
    for s in [&guarded, &open] {
        let ep = s.proxies()[0].to_string();
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("{ep} ")) && l.contains("heartbeat")),
            "{stdout}"
        );
        assert_eq!(
            stdout.matches(&format!("── {ep} ──")).count(),
            1,
            "{stdout}"
        );
    }
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

#[tokio::test]
async fn a_bad_line_in_the_file_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("fleet.txt");
    std::fs::write(&list, "redis://127.0.0.1:1\nredis://:pw@host:notaport\n").unwrap();
    let out = common::maintwatch_async(["watch", "--from"])
        .arg(&list)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
    assert!(!stderr.contains(":pw@"), "{stderr}");
}

#[test]
fn labels_are_host_and_port_without_secrets_and_unique() {
    use clap::Parser;
    use maintwatch::network::conn::url::RedisUrl;
    let cli = maintwatch::cli::Cli::try_parse_from(["maintwatch", "watch"]).unwrap();
    let maintwatch::cli::Command::Watch(args) = cli.command else {
        panic!()
    };
    let config = args.connect.config();
    let options: Vec<_> = [
        "redis://alice:hunter2@db.example:6379/3",
        "redis://db.example:6379",
        "redis://[::1]:7000",
    ]
    .iter()
    .map(|u| config.options_for(&RedisUrl::parse(u).unwrap()).unwrap())
    .collect();
    assert_eq!(
        maintwatch::watch::labels(&options),
        ["db.example:6379", "db.example:6379#2", "[::1]:7000"]
    );
}

#[tokio::test]
async fn under_require_a_refusing_endpoint_stops_alone_and_sets_the_exit_code() {
    let accepting = sim("shard-migration", 20.0).await;
    let refusing = sim("refusing", 20.0).await;
    let out = tokio::time::timeout(
        GUARD,
        common::maintwatch_async(["watch", &url(&accepting), &url(&refusing)])
            .args(["--json", "--require", "--duration", "1s"])
            .output(),
    )
    .await
    .expect("hang guard")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = |ep: String| {
        stdout
            .lines()
            .map(|l| serde_json::from_str::<TaggedLine>(l).unwrap())
            .find_map(|t| match t.line {
                WatchLine::Summary(s) if t.ep == ep => Some(s.reason),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no summary for {ep}: {stdout}"))
    };
    assert_eq!(
        summary(refusing.proxies()[0].to_string()),
        "opt-in not accepted"
    );
    assert_eq!(summary(accepting.proxies()[0].to_string()), "duration");
    // The worst endpoint decides: --require's code for a refused opt-in.
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
