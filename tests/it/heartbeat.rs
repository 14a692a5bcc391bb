//! `--heartbeat`: a quiet watch says it is alive. Asserted by content and order in the stream
//! (what each heartbeat says against the lines before it), never by when it came.

use crate::common;

use maintwatch::observe::record::{line, OptInOutcome, WatchLine};
use maintwatch::protocol::notification::Classified;
use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator};
use std::process::Stdio;
use std::time::Duration;

const GUARD: Duration = Duration::from_secs(60);

/// Starts `watch --json --heartbeat 50ms` on the simulator's proxy; its lines until `done`.
async fn heartbeats(scenario: &str, done: impl Fn(&[WatchLine]) -> bool) -> Vec<WatchLine> {
    let mut opts = SimOptions::new(scenarios::by_name(scenario).unwrap());
    opts.speed = 20.0;
    let sim = Simulator::start(opts).await.unwrap();
    let (_child, mut lines) = common::spawn_lines(
        common::maintwatch_async(["watch", &format!("redis://{}", sim.proxies()[0])])
            .args(["--json", "--heartbeat", "50ms"])
            .stderr(Stdio::null()),
    );
    let mut seen = Vec::new();
    common::read_until(&mut lines, &mut seen, GUARD, "heartbeats", done).await;
    seen
}

/// A new maintenance notification, as the watch counts them (not a replay, not a re-send).
fn counted(l: &WatchLine) -> bool {
    matches!(l, WatchLine::Push(line::Push { frame, labels, .. })
        if labels.is_empty() && matches!(frame.parsed, Classified::Maintenance(_)))
}

fn beats_after(seen: &[WatchLine], kind: &str) -> usize {
    let Some(at) = seen.iter().position(|l| {
        matches!(l, WatchLine::Push(line::Push { frame, .. })
            if matches!(&frame.parsed, Classified::Maintenance(n) if n.event_name().starts_with(kind)))
    }) else {
        return 0;
    };
    seen[at..]
        .iter()
        .filter(|l| matches!(l, WatchLine::Heartbeat(_)))
        .count()
}

#[tokio::test]
async fn a_heartbeat_says_sessions_up_opt_in_and_the_latest_notification() {
    let seen = heartbeats("shard-migration", |s| beats_after(s, "MIGRATED") >= 2).await;
    let mut notifications = 0u64;
    let mut up = false;
    let mut opted_in = false;
    for l in &seen {
        match l {
            WatchLine::Handshake(h) => {
                up = true;
                opted_in = h.opt_in == OptInOutcome::Accepted;
            }
            WatchLine::Closed(_) => up = false,
            WatchLine::Heartbeat(beat) => {
                // Every heartbeat agrees with the lines written before it.
                assert_eq!(beat.notifications, notifications, "{beat:?}");
                assert_eq!(beat.since_notification_s.is_some(), notifications > 0);
                assert_eq!(beat.conns, 1);
                assert_eq!(beat.up, u32::from(up), "{beat:?}");
                assert_eq!(beat.opted_in, u32::from(up && opted_in), "{beat:?}");
                assert!(beat.t >= 0.0);
            }
            l if counted(l) => notifications += 1,
            _ => {}
        }
    }
    assert_eq!(notifications, 2, "MIGRATING and MIGRATED: {seen:#?}");
    let last = seen.iter().rev().find_map(|l| match l {
        WatchLine::Heartbeat(b) => Some(b),
        _ => None,
    });
    assert!(matches!(last, Some(b) if b.up == 1 && b.opted_in == 1 && b.notifications == 2));
}

#[tokio::test]
async fn a_refused_opt_in_shows_in_the_heartbeat() {
    let seen = heartbeats("refusing", |s| {
        s.iter()
            .filter(|l| matches!(l, WatchLine::Heartbeat(_)))
            .count()
            >= 3
    })
    .await;
    for l in &seen {
        if let WatchLine::Heartbeat(beat) = l {
            assert_eq!((beat.opted_in, beat.notifications), (0, 0), "{beat:?}");
            assert_eq!(beat.since_notification_s, None);
        }
    }
}

#[test]
fn the_human_heartbeat_names_what_it_counts() {
    let beat = WatchLine::Heartbeat(line::Heartbeat {
        v: 1,
        t: 60.0,
        at: "2026-11-30T23:00:00.000000Z".into(),
        conns: 2,
        up: 1,
        opted_in: 1,
        notifications: 3,
        since_notification_s: Some(42.0),
    });
    let style = maintwatch::present::output::human::Style {
        color: false,
        time: maintwatch::present::output::human::TimeFormat::Rfc3339,
        ..Default::default()
    };
    let text = maintwatch::present::output::human::render(&beat, &style).join("\n");
    assert!(
        text.contains("heartbeat: 1/2 connection(s) up, 1 opted in"),
        "{text}"
    );
    assert!(
        text.contains("last notification 42.0 s ago (3 in all)"),
        "{text}"
    );
}
