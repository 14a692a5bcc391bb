//! `maintwatch watch` as a user runs it: the real binary against the built-in simulator, over
//! real TCP on loopback and the simulator's real authoritative DNS.
//!
//! Every assertion is about outcomes and order (the DNS change before the close, the close after
//! the MOVING and past its window), never wall-clock durations. The simulator runs faster than
//! real time and the watch is told so with `--sim-speed`, so offsets come out in scenario seconds
//! and the dry-run decides on the scenario's clock.

use crate::common;

use maintwatch::observe::record::line;
use maintwatch::observe::record::{Label, OptInOutcome, WatchLine};
use maintwatch::protocol::notification::{Classified, Kind};
use maintwatch::shared::escape::unescape;
use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator, What as SimWhat};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

/// A hang guard only: no test waits this long unless something is broken.
const GUARD: Duration = Duration::from_secs(60);

struct Run {
    sim: Simulator,
    child: Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    seen: Vec<WatchLine>,
    sent: tokio::sync::broadcast::Receiver<maintwatch::simulator::sim::SimEvent>,
}

async fn start(scenario: &str, speed: f64, extra: &[&str]) -> Run {
    let scenario = scenarios::by_name(scenario).expect("a bundled scenario");
    start_with(scenario, speed, extra).await
}

async fn start_with(
    scenario: maintwatch::simulator::sim::Scenario,
    speed: f64,
    extra: &[&str],
) -> Run {
    let mut opts = SimOptions::new(scenario);
    opts.speed = speed;
    let sim = Simulator::start(opts).await.expect("simulator starts");
    let sent = sim.events();
    let url = sim.url();
    let mut child = common::maintwatch_async(["watch", &url, "--json", "--dns-server"])
        .arg(sim.dns_addr().to_string())
        .args(["--sim-speed", &speed.to_string()])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary runs");
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    Run {
        sim,
        child,
        lines,
        seen: Vec::new(),
        sent,
    }
}

impl Run {
    /// Reads lines until `done` holds over everything seen so far.
    async fn until(&mut self, what: &str, done: impl Fn(&[WatchLine]) -> bool) {
        common::read_until(&mut self.lines, &mut self.seen, GUARD, what, done).await;
    }

    /// Ctrl-C, then the rest of the output; returns the exit code.
    async fn interrupt(&mut self) -> i32 {
        let pid = self.child.id().expect("running");
        let status = std::process::Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        while let Some(line) = self.lines.next_line().await.unwrap() {
            self.seen.push(serde_json::from_str(&line).unwrap());
        }
        self.child.wait().await.unwrap().code().expect("exit code")
    }

    /// Every frame the simulator wrote so far, in order.
    fn sent_frames(&mut self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Ok(ev) = self.sent.try_recv() {
            if let SimWhat::Sent { bytes, .. } = ev.what {
                out.push(bytes);
            }
        }
        out
    }
}

fn pushes(lines: &[WatchLine]) -> Vec<(Vec<u8>, Classified, Vec<Label>)> {
    lines
        .iter()
        .filter_map(|l| match l {
            WatchLine::Push(line::Push { frame, labels, .. }) => Some((
                unescape(&frame.raw.escaped()).unwrap(),
                frame.parsed.clone(),
                labels.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn position(lines: &[WatchLine], pred: impl Fn(&WatchLine) -> bool) -> Option<usize> {
    lines.iter().position(pred)
}

fn is_kind(l: &WatchLine, kind: Kind) -> bool {
    matches!(l, WatchLine::Push(line::Push { frame, .. })
        if matches!(&frame.parsed, Classified::Maintenance(n) if n.kind == kind))
}

fn reconnected(l: &[WatchLine]) -> bool {
    l.iter()
        .any(|l| matches!(l, WatchLine::Connected(line::Connected { session: 2, .. })))
        && l.iter()
            .filter(|l| matches!(l, WatchLine::Handshake(line::Handshake { .. })))
            .count()
            >= 2
}

/// Asserts the watch printed exactly the frames the simulator sent, byte for byte, in order.
fn assert_nothing_missing(run: &mut Run) {
    let sent = run.sent_frames();
    let got: Vec<Vec<u8>> = pushes(&run.seen).into_iter().map(|p| p.0).collect();
    assert!(!sent.is_empty(), "the scenario sent something");
    assert_eq!(
        got, sent,
        "every notification the simulator wrote is in the watch output, byte for byte"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_proxy_maintenance_is_timed_against_the_moving() {
    let mut run = start("single-proxy", 5.0, &[]).await;
    run.until("the reconnect after the close", reconnected)
        .await;
    let code = run.interrupt().await;
    assert_eq!(code, 130, "Ctrl-C exits 130");
    let seen = &run.seen;

    let (raw, parsed, labels) = &pushes(seen)[0];
    assert_eq!(raw, b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n");
    // The scenario sends its MOVING the moment the first connection opts in, so it is read in
    // the same read as the opt-in's +OK in some runs (a loaded machine makes it likelier), and is
    // then rightly labelled as having come with the opt-in (where a re-send would come): the
    // watch cannot tell the two apart. Never a catch-up, never a re-send.
    assert!(
        labels.is_empty() || labels == &[Label::WithOptIn],
        "{labels:?}"
    );
    let Classified::Maintenance(n) = parsed else {
        panic!("MOVING parsed as maintenance")
    };
    assert_eq!((n.kind, n.seq, n.time), (Kind::Moving, Some(0), Some(15)));

    let moving = position(seen, |l| is_kind(l, Kind::Moving)).unwrap();
    let dns = position(
        seen,
        |l| matches!(l, WatchLine::Dns(line::Dns { event, .. }) if event == "changed"),
    )
    .expect("the DNS change is reported");
    let close = position(
        seen,
        |l| matches!(l, WatchLine::Closed(line::Closed { by, .. }) if by == "server"),
    )
    .expect("the close is reported");
    let again = position(seen, |l| {
        matches!(l, WatchLine::Connected(line::Connected { session: 2, .. }))
    })
    .unwrap();
    assert!(
        moving < dns && dns < close && close < again,
        "MOVING, DNS, close, reconnect in order"
    );

    let WatchLine::Dns(line::Dns {
        before,
        after,
        ours,
        ttl,
        ..
    }) = &seen[dns]
    else {
        unreachable!()
    };
    assert_eq!(
        (before.as_slice(), after.as_slice()),
        (
            &["127.0.0.2".to_string()][..],
            &["127.0.0.3".to_string()][..]
        )
    );
    assert_eq!(ours.map(|o| o.as_str()), Some("left"));
    assert_eq!(
        *ttl,
        Some(run.sim.ttl()),
        "the record's TTL as served (5 s, scaled by the speed)"
    );

    let WatchLine::Closed(line::Closed {
        announced,
        window_s,
        past_s,
        rel,
        ..
    }) = &seen[close]
    else {
        unreachable!()
    };
    assert!(*announced, "the MOVING announced this close");
    assert_eq!(*window_s, Some(15));
    assert!(
        past_s.unwrap() > 0.0,
        "closed past the declared window: {past_s:?}"
    );
    assert_eq!(rel.as_ref().unwrap().to, "MOVING seq 0");
    assert!(rel.as_ref().unwrap().s > 15.0);

    let WatchLine::Connected(line::Connected { addr, .. }) = &seen[again] else {
        unreachable!()
    };
    assert_eq!(
        addr,
        &format!("127.0.0.3:{}", run.sim.port()),
        "the hostname was re-resolved"
    );

    // The dry-run moved after the DNS change and before the close. "After" is causal: it polled
    // the record stale first and moved to the address only the change brought. "Before" compares
    // the two offsets after the MOVING, both on the scenario clock (the two observers poll DNS
    // independently, so their lines' order in the output is not what is asserted).
    let handoff = position(seen, |l| {
        matches!(l, WatchLine::Handoff(line::Handoff { .. }))
    })
    .expect("a dry-run");
    let WatchLine::Handoff(line::Handoff {
        outcome,
        moves,
        at_s,
        text,
        ..
    }) = &seen[handoff]
    else {
        unreachable!()
    };
    assert_eq!(outcome, "moved", "{text}");
    assert!(*moves);
    assert!(text.contains("moved to 127.0.0.3 after"), "{text}");
    let closed_at = rel.as_ref().unwrap().s;
    assert!(
        *at_s < closed_at,
        "moved at +{at_s} s, before the close at +{closed_at} s"
    );
    assert!(seen.iter().any(
        |l| matches!(l, WatchLine::Verdict(line::Verdict { margin_s: Some(m), .. }) if *m > 0.0)
    ));
    assert_eq!(
        seen.iter()
            .filter(|l| matches!(l, WatchLine::Handoff(line::Handoff { .. })))
            .count(),
        1,
        "one MOVING, one decision"
    );

    let WatchLine::Summary(line::Summary {
        reason,
        events,
        conns,
        ..
    }) = seen.last().unwrap()
    else {
        panic!("the last line is the summary")
    };
    assert_eq!(reason, "interrupted");
    assert_eq!(events.len(), 1);
    assert!(events[0].socket_closed_s.is_some() && events[0].dns_moved_s.is_some());
    assert_eq!((conns[0].closes, conns[0].reconnects), (1, 1));
    assert_nothing_missing(&mut run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_proxy_rebind_steps_sideways_at_once() {
    let mut run = start("multi-proxy", 10.0, &[]).await;
    run.until("the dry-run outcome", |l| {
        l.iter()
            .any(|l| matches!(l, WatchLine::Handoff(line::Handoff { .. })))
    })
    .await;
    run.interrupt().await;
    let h = run
        .seen
        .iter()
        .find_map(|l| match l {
            WatchLine::Handoff(line::Handoff { outcome, text, .. }) => {
                Some((*outcome, text.clone()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(h.0, "stepped_sideways", "{}", h.1);
    assert!(h.1.contains("127.0.0.3"), "{}", h.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_losing_the_race_is_stale_at_expiry_and_closes_first() {
    // Speed 4 leaves 0.75 s of real time between the close and the DNS change.
    let mut run = start("dns-race", 4.0, &[]).await;
    run.until("the DNS change after the close", |l| {
        l.iter()
            .any(|l| matches!(l, WatchLine::Dns(line::Dns { event, .. }) if event == "changed"))
    })
    .await;
    run.interrupt().await;
    let seen = &run.seen;
    let close = position(
        seen,
        |l| matches!(l, WatchLine::Closed(line::Closed { by, .. }) if by == "server"),
    )
    .unwrap();
    let dns = position(
        seen,
        |l| matches!(l, WatchLine::Dns(line::Dns { event, .. }) if event == "changed"),
    )
    .unwrap();
    assert!(close < dns, "the close came before the DNS change");
    let outcome = seen.iter().find_map(|l| match l {
        WatchLine::Handoff(line::Handoff { outcome, .. }) => Some(outcome.as_str()),
        _ => None,
    });
    assert_eq!(outcome, Some("stale_at_expiry"));
    assert!(seen.iter().any(
        |l| matches!(l, WatchLine::Verdict(line::Verdict { text, margin_s: None, .. }) if text.contains("stale"))
    ));
    // The reconnect went back to the old proxy (DNS still named it) while the window was open:
    // no second decision for the same MOVING.
    assert_eq!(
        seen.iter()
            .filter(|l| matches!(l, WatchLine::Handoff(line::Handoff { .. })))
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_migration_closes_its_window_without_a_drop() {
    let mut run = start("shard-migration", 10.0, &["--count", "2"]).await;
    run.until("the end of the watch", |l| {
        l.iter()
            .any(|l| matches!(l, WatchLine::Summary(line::Summary { .. })))
    })
    .await;
    let code = run.child.wait().await.unwrap().code();
    assert_eq!(code, Some(0), "--count ends the watch with success");
    let seen = &run.seen;
    let p = pushes(seen);
    assert_eq!(
        p[0].0,
        b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n"
    );
    assert_eq!(p[1].0, b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n");
    let migrated = position(seen, |l| is_kind(l, Kind::Migrated)).unwrap();
    let WatchLine::Push(line::Push { rel, .. }) = &seen[migrated] else {
        unreachable!()
    };
    assert_eq!(rel.as_ref().unwrap().to, "MIGRATING seq 0");
    assert!(!seen
        .iter()
        .any(|l| matches!(l, WatchLine::Closed(line::Closed { by, .. }) if by != "watch")));
    let WatchLine::Summary(line::Summary { reason, events, .. }) = seen.last().unwrap() else {
        panic!()
    };
    assert_eq!(reason, "count");
    assert!(events[0].closed_by_notification_s.is_some());
    assert_nothing_missing(&mut run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_pairs_failing_over_with_failed_over() {
    let mut run = start("failover", 10.0, &["--count", "2"]).await;
    run.until("the summary", |l| {
        l.iter()
            .any(|l| matches!(l, WatchLine::Summary(line::Summary { .. })))
    })
    .await;
    let p = pushes(&run.seen);
    assert_eq!(
        p[0].0,
        b">4\r\n$12\r\nFAILING_OVER\r\n:0\r\n:2\r\n$6\r\n[\"21\"]\r\n"
    );
    assert_eq!(
        p[1].0,
        b">3\r\n$11\r\nFAILED_OVER\r\n:1\r\n$6\r\n[\"21\"]\r\n"
    );
    let WatchLine::Summary(line::Summary { events, .. }) = run.seen.last().unwrap() else {
        panic!()
    };
    assert_eq!(events[0].kind, "FAILING_OVER");
    assert!(events[0].closed_by_notification_s.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_shrink_shows_our_address_leaving_before_the_unannounced_close() {
    let mut run = start("silent-shrink", 20.0, &[]).await;
    run.until("the reconnect after the silent close", reconnected)
        .await;
    run.interrupt().await;
    let seen = &run.seen;
    let migrated = position(seen, |l| is_kind(l, Kind::Migrated)).unwrap();
    let advertised = position(seen, |l| {
        matches!(l, WatchLine::Advertised(line::Advertised { .. }))
    })
    .expect("after a MIGRATED: still advertised?");
    assert!(migrated < advertised);
    let left = position(
        seen,
        |l| matches!(l, WatchLine::Dns(line::Dns { ours: Some(o), .. }) if o == "left"),
    )
    .expect("our address leaves the record");
    let close = position(
        seen,
        |l| matches!(l, WatchLine::Closed(line::Closed { by, .. }) if by == "server"),
    )
    .unwrap();
    assert!(
        left < close,
        "the record stopped naming us before the close"
    );
    let WatchLine::Closed(line::Closed { announced, .. }) = &seen[close] else {
        unreachable!()
    };
    assert!(!announced, "no MOVING announced this close");
    // The reconnect's opt-in replays the retained MIGRATED: labelled, not a new event.
    let catch_up = seen.iter().skip(close).find_map(|l| match l {
        WatchLine::Push(line::Push { labels, frame, .. }) if labels.contains(&Label::CatchUp) => {
            Some(frame.clone())
        }
        _ => None,
    });
    let frame = catch_up.expect("the catch-up replay after reconnecting");
    assert!(matches!(&frame.parsed, Classified::Maintenance(n) if n.kind == Kind::Migrated));
    let WatchLine::Summary(line::Summary { events, .. }) = seen.last().unwrap() else {
        panic!()
    };
    assert_eq!(
        events.len(),
        2,
        "MIGRATING and MIGRATED; the replay is not a new event"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusal_is_reported_with_the_servers_text_and_require_exits() {
    let mut run = start("refusing", 10.0, &["--require"]).await;
    run.until("the summary", |l| {
        l.iter()
            .any(|l| matches!(l, WatchLine::Summary(line::Summary { .. })))
    })
    .await;
    let code = run.child.wait().await.unwrap().code();
    assert_eq!(code, Some(maintwatch::exit::REFUSED));
    let hs = run.seen.iter().find_map(|l| match l {
        WatchLine::Handshake(line::Handshake { opt_in, text, .. }) => Some((*opt_in, text.clone())),
        _ => None,
    });
    assert_eq!(
        hs,
        Some((
            OptInOutcome::Refused,
            Some("ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.".into())
        ))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_variants_all_arrive_parsed_and_the_message_is_not_maintenance() {
    let mut run = start("peer-variants", 10.0, &[]).await;
    run.until("the pub/sub message", |l| {
        l.iter().any(|l| matches!(l, WatchLine::Push(line::Push { frame, .. }) if matches!(frame.parsed, Classified::OtherPush(_))))
    })
    .await;
    run.interrupt().await;
    let p = pushes(&run.seen);
    let maintenance = p
        .iter()
        .filter(|p| matches!(p.1, Classified::Maintenance(_)))
        .count();
    assert_eq!(
        maintenance,
        p.len() - 1,
        "every variant but the message is maintenance"
    );
    assert!(matches!(p.last().unwrap().1, Classified::OtherPush(_)));
    assert_nothing_missing(&mut run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oss_cluster_one_entry_per_event_one_refresh_and_the_new_node_is_watched() {
    let mut run = start("oss-cluster", 10.0, &[]).await;
    let port = run.sim.port();
    let new_node = format!("127.0.0.5:{port}");
    run.until("a watch on the node the migration added", |l| {
        l.iter()
            .any(|l| matches!(l, WatchLine::Connected(line::Connected { addr, .. }) if *addr == new_node))
    })
    .await;
    run.interrupt().await;
    let seen = &run.seen;

    let WatchLine::Topology(line::Topology { nodes, reason, .. }) = seen
        .iter()
        .find(|l| matches!(l, WatchLine::Topology(line::Topology { .. })))
        .unwrap()
    else {
        unreachable!()
    };
    assert_eq!(reason, "discovered");
    assert_eq!(nodes.len(), 3);
    for n in 2..=4 {
        let addr = format!("127.0.0.{n}:{port}");
        assert!(
            seen.iter().any(
                |l| matches!(l, WatchLine::Connected(line::Connected { addr: a, .. }) if *a == addr)
            ),
            "a watching connection to {addr}"
        );
    }

    for kind in [Kind::SMigrating, Kind::SMigrated] {
        let copies: Vec<_> = seen
            .iter()
            .filter_map(|l| match l {
                WatchLine::Push(line::Push { frame, copy_of, .. })
                    if matches!(&frame.parsed, Classified::Maintenance(n) if n.kind == kind) =>
                {
                    Some(copy_of.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            copies.len(),
            3,
            "{kind}: one copy per node in the JSON lines"
        );
        assert_eq!(
            copies.iter().filter(|c| c.is_none()).count(),
            1,
            "{kind}: one entry, the other copies point at it"
        );
    }
    // A copy reads as words on screen (issue 50), not `[3] also from [3], ... after [1]`.
    let copy = seen
        .iter()
        .find(|l| {
            matches!(
                l,
                WatchLine::Push(line::Push {
                    copy_of: Some(_),
                    ..
                })
            )
        })
        .expect("a copy");
    let shown = maintwatch::present::output::human::render(copy, &Default::default()).join("\n");
    // Named, with a cluster node's few milliseconds in ms: "got the same SMIGRATING seq 3 too,
    // 1.2 ms after [1] did".
    assert!(shown.contains("got the same S"), "{shown}");
    assert!(
        shown.contains(" too, ") && shown.contains(" ms after [") && shown.ends_with("] did"),
        "{shown}"
    );
    assert!(!shown.contains("also from"), "{shown}");

    let smigrated = seen
        .iter()
        .find_map(|l| match l {
            WatchLine::Push(line::Push {
                frame,
                copy_of: None,
                sources_ours,
                ..
            }) => match &frame.parsed {
                Classified::Maintenance(n) if n.kind == Kind::SMigrated => {
                    Some((n.clone(), sources_ours.clone()))
                }
                _ => None,
            },
            _ => None,
        })
        .unwrap();
    let m = &smigrated.0.migrations.as_ref().unwrap().moves[0];
    assert_eq!(
        m.source.as_deref(),
        Some(format!("127.0.0.3:{port}").as_str())
    );
    assert_eq!(m.target, new_node);
    assert_eq!(m.slots.ranges, Some(vec![(8892, 8991)]));
    assert_eq!(
        smigrated.1,
        vec![format!("127.0.0.3:{port}")],
        "the source is a node we watch"
    );

    let refreshes = seen
        .iter()
        .filter(
            |l| matches!(l, WatchLine::Handoff(line::Handoff { outcome, .. }) if outcome == "refresh_topology"),
        )
        .count();
    assert_eq!(refreshes, 1, "three copies of SMIGRATED, one refresh");
    let refreshed = position(
        seen,
        |l| matches!(l, WatchLine::Topology(line::Topology { reason, .. }) if reason == "refreshed"),
    )
    .expect("the topology is read again");
    let WatchLine::Topology(line::Topology {
        added,
        removed,
        roles,
        moved,
        ..
    }) = &seen[refreshed]
    else {
        unreachable!()
    };
    assert_eq!(added, &vec![new_node.clone()]);
    assert!(removed.is_empty() && roles.is_empty());
    // The slots the SMIGRATED named, read in the topology too (issue 61).
    assert_eq!(
        moved,
        &vec![line::SlotsMoved {
            first: 8892,
            last: 8991,
            from: Some(format!("127.0.0.3:{port}")),
            to: Some(new_node.clone()),
        }]
    );
    // Nothing changes unannounced in this scenario: no other topology line than these two.
    let topology_lines = seen
        .iter()
        .filter(|l| matches!(l, WatchLine::Topology(_)))
        .count();
    assert_eq!(topology_lines, 2, "the discovery and the refresh");
    let joined = position(
        seen,
        |l| matches!(l, WatchLine::Connected(line::Connected { addr, .. }) if *addr == new_node),
    )
    .unwrap();
    assert!(refreshed < joined);
    let WatchLine::Summary(line::Summary { conns, .. }) = seen.last().unwrap() else {
        panic!()
    };
    assert_eq!(
        conns.len(),
        4,
        "per node totals: three nodes and the one that joined"
    );
}

/// Reads JSON lines of a watch of a real server until `done`.
async fn real_watch(
    url: &str,
    extra: &[&str],
) -> (
    Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) {
    let mut child = common::maintwatch_async(["watch", url, "--json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

async fn read_until(
    lines: &mut common::JsonLines,
    seen: &mut Vec<WatchLine>,
    what: &str,
    done: impl Fn(&[WatchLine]) -> bool,
) {
    common::read_until(lines, seen, GUARD, what, done).await;
}

fn other_push_names(seen: &[WatchLine]) -> Vec<(String, usize)> {
    seen.iter()
        .filter_map(|l| match l {
            WatchLine::Push(line::Push { frame, .. }) => match &frame.parsed {
                Classified::OtherPush(p) => Some((
                    p.name.as_deref().unwrap_or_default().to_string(),
                    p.elements,
                )),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_server_refusal_pubsub_tracking_and_a_restart() {
    let test = "real_server_refusal_pubsub_tracking_and_a_restart";
    let Some(mut redis) = common::RealRedis::start(test, &[]).await else {
        return;
    };
    let (mut child, mut lines) =
        real_watch(&redis.url(), &["--subscribe", "ch1", "--tracking"]).await;
    let mut seen = Vec::new();
    read_until(&mut lines, &mut seen, "the subscription", |l| {
        other_push_names(l).iter().any(|(n, _)| n == "subscribe")
    })
    .await;
    let refusal = seen.iter().find_map(|l| match l {
        WatchLine::Handshake(line::Handshake { opt_in, text, .. }) => Some((*opt_in, text.clone())),
        _ => None,
    });
    assert_eq!(
        refusal,
        Some((
            OptInOutcome::Refused,
            Some("ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.".into())
        ))
    );
    common::command(redis.addr, &["PUBLISH", "ch1", "hello"]).await;
    common::command(redis.addr, &["SET", "k", "1"]).await;
    common::command(redis.addr, &["FLUSHALL"]).await;
    read_until(&mut lines, &mut seen, "the null invalidation after FLUSHALL", |l| {
        l.iter().any(|l| matches!(l, WatchLine::Push(line::Push { frame, .. }) if frame.raw == ">2\\r\\n$10\\r\\ninvalidate\\r\\n_\\r\\n"))
    })
    .await;
    let names = other_push_names(&seen);
    assert!(names.contains(&("message".into(), 3)), "{names:?}");
    assert!(names.contains(&("invalidate".into(), 2)), "{names:?}");
    assert!(
        !seen.iter().any(|l| matches!(l, WatchLine::Push(line::Push { frame, .. }) if matches!(frame.parsed, Classified::Maintenance(_)))),
        "nothing here is a maintenance notification"
    );

    redis.restart().await;
    read_until(
        &mut lines,
        &mut seen,
        "the reconnect and a new opt-in",
        |l| {
            l.iter()
                .any(|l| matches!(l, WatchLine::Connected(line::Connected { session: 2, .. })))
                && l.iter()
                    .filter(|l| matches!(l, WatchLine::Handshake(line::Handshake { .. })))
                    .count()
                    == 2
        },
    )
    .await;
    let close = position(&seen, |l| {
        matches!(l, WatchLine::Closed(line::Closed { .. }))
    })
    .unwrap();
    let WatchLine::Closed(line::Closed { announced, .. }) = &seen[close] else {
        unreachable!()
    };
    assert!(!announced, "a killed server announces nothing");
    let pid = child.id().unwrap();
    std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert_eq!(child.wait().await.unwrap().code(), Some(130));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_cluster_every_node_watched_and_the_refusal_reported_once() {
    let test = "real_cluster_every_node_watched_and_the_refusal_reported_once";
    let Some(_) = common::redis_server_binary(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut nodes = Vec::new();
    for i in 0..3 {
        let conf = dir.path().join(format!("nodes-{i}.conf"));
        let node = common::RealRedis::start(
            test,
            &[
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                conf.to_str().unwrap(),
                "--dir",
                dir.path().to_str().unwrap(),
            ],
        )
        .await
        .unwrap();
        nodes.push(node);
    }
    let ranges = [("0", "5460"), ("5461", "10922"), ("10923", "16383")];
    for (node, (a, b)) in nodes.iter().zip(ranges) {
        let reply = common::command(node.addr, &["CLUSTER", "ADDSLOTSRANGE", a, b]).await;
        assert_eq!(reply, b"+OK\r\n");
    }
    for node in &nodes[1..] {
        let port = node.addr.port().to_string();
        common::command(nodes[0].addr, &["CLUSTER", "MEET", "127.0.0.1", &port]).await;
    }
    // Wait for gossip to agree (readiness, not timing).
    let mut agreed = false;
    for _ in 0..500 {
        let mut all = true;
        for n in &nodes {
            let info = common::command(n.addr, &["CLUSTER", "INFO"]).await;
            let info = String::from_utf8_lossy(&info);
            all &= info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3");
        }
        if all {
            agreed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(agreed, "the three nodes formed a cluster");

    let (mut child, mut lines) = real_watch(&nodes[0].url(), &[]).await;
    let mut seen = Vec::new();
    read_until(&mut lines, &mut seen, "a handshake on every node", |l| {
        l.iter()
            .filter(|l| matches!(l, WatchLine::Handshake(line::Handshake { .. })))
            .count()
            == 3
    })
    .await;
    let pid = child.id().unwrap();
    std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    while let Some(line) = lines.next_line().await.unwrap() {
        seen.push(serde_json::from_str(&line).unwrap());
    }
    child.wait().await.unwrap();
    let WatchLine::Topology(line::Topology { nodes: found, .. }) = seen
        .iter()
        .find(|l| matches!(l, WatchLine::Topology(line::Topology { .. })))
        .unwrap()
    else {
        unreachable!()
    };
    let mut expected: Vec<String> = nodes.iter().map(|n| n.addr.to_string()).collect();
    expected.sort();
    let mut found = found.clone();
    found.sort();
    assert_eq!(found, expected, "discovered through CLUSTER SHARDS");
    let human: Vec<String> = seen
        .iter()
        .flat_map(|l| {
            maintwatch::present::output::human::render(
                l,
                &maintwatch::present::output::human::Style::default(),
            )
        })
        .collect();
    let refusals = human
        .iter()
        .filter(|l| l.contains("opt-in refused"))
        .count();
    assert_eq!(
        refusals, 2,
        "one timeline line and one summary line, not one per node: {human:#?}"
    );
    assert!(
        human
            .iter()
            .any(|l| l.contains("opt-in refused on 3 connection(s)")),
        "{human:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resent_moving_is_labelled_and_gets_exactly_one_decision() {
    // Two connections to one proxy: the second opts in either before the MOVING (and hears the
    // broadcast) or after it (and is sent it again with its +OK). Either way the same
    // (type, seq) arrives twice, and only the first starts a dry-run.
    let scenario = maintwatch::simulator::sim::Scenario::parse(
        "resend.scn",
        "name resend\nabout one MOVING, two connections\nproxies 127.0.0.2 127.0.0.3\n\
         dns 127.0.0.2 127.0.0.3\nstart opt-in\n\
         at 0.0 push 127.0.0.2 MOVING time=15 target=null\nend 30.0\n",
    )
    .unwrap();
    // A sibling is advertised, so a decision ends at its first poll; the unit tests of the
    // timeline pin the rule itself, this shows it end to end.
    let mut run = start_with(scenario, 10.0, &["--connections", "2"]).await;
    run.until("both copies and the decision", |l| {
        l.iter().filter(|l| is_kind(l, Kind::Moving)).count() == 2
            && l.iter()
                .any(|l| matches!(l, WatchLine::Handoff(line::Handoff { .. })))
    })
    .await;
    run.interrupt().await;
    let seen = &run.seen;
    let movings: Vec<&Vec<Label>> = seen
        .iter()
        .filter_map(|l| match l {
            WatchLine::Push(line::Push { labels, .. }) if is_kind(l, Kind::Moving) => Some(labels),
            _ => None,
        })
        .collect();
    assert_eq!(movings.len(), 2);
    assert!(
        !movings[0].contains(&Label::Resent),
        "the first copy is the event"
    );
    assert!(movings[1].contains(&Label::Resent));
    assert_eq!(
        seen.iter()
            .filter(|l| matches!(l, WatchLine::Handoff(line::Handoff { .. })))
            .count(),
        1,
        "exactly one decision for one MOVING"
    );
    let WatchLine::Summary(line::Summary { events, .. }) = seen.last().unwrap() else {
        panic!()
    };
    assert_eq!((events.len(), events[0].copies), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_check_passes_on_a_capture_and_names_the_line_of_a_changed_byte() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("capture.jsonl");
    let mut run = start(
        "shard-migration",
        10.0,
        &["--count", "2", "--capture", capture.to_str().unwrap()],
    )
    .await;
    run.until("the summary", |l| {
        l.iter()
            .any(|l| matches!(l, WatchLine::Summary(line::Summary { .. })))
    })
    .await;
    assert_eq!(run.child.wait().await.unwrap().code(), Some(0));
    let ok = common::maintwatch(["replay", "--check", "-v"])
        .arg(&capture)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let text = String::from_utf8_lossy(&ok.stdout);
    assert!(
        text.contains("MIGRATING seq 0 window 2 s shards 27"),
        "{text}"
    );

    // One raw byte changed: MIGRATED's seq 1 becomes 7 in the bytes, not in the recorded parse.
    let original = std::fs::read_to_string(&capture).unwrap();
    let (n, _) = original
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(r"$8\\r\\nMIGRATED\\r\\n:1\\r\\n"))
        .expect("the MIGRATED line");
    let changed: Vec<String> = original
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == n {
                l.replacen(r"MIGRATED\\r\\n:1\\r\\n", r"MIGRATED\\r\\n:7\\r\\n", 1)
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&capture, changed.join("\n") + "\n").unwrap();
    let bad = common::maintwatch(["replay", "--check"])
        .arg(&capture)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains(&format!("capture.jsonl:{}: parse differs", n + 1)),
        "names the line: {err}"
    );

    // A torn last line (killed mid-write) is reported and tolerated.
    let torn = original.clone() + "{\"type\":\"push\",\"v\":1,\"t\":9.9";
    std::fs::write(&capture, torn).unwrap();
    let tolerated = common::maintwatch(["replay", "--check"])
        .arg(&capture)
        .output()
        .unwrap();
    assert!(tolerated.status.success());
    assert!(String::from_utf8_lossy(&tolerated.stderr).contains("torn last line"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_password_in_any_output_or_capture() {
    const SECRET: &str = "s3cret-Pw-4711";
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("c.jsonl");
    for (right, json) in [(true, false), (true, true), (false, false)] {
        // A fresh simulator each time: the scenario plays once.
        let mut opts = SimOptions::new(scenarios::by_name("shard-migration").unwrap());
        opts.speed = 10.0;
        opts.password = Some(SECRET.into());
        let sim = Simulator::start(opts).await.unwrap();
        let host = sim.host().to_string();
        let dns = sim.dns_addr().to_string();
        let good = format!("redis://:{SECRET}@{host}:{}", sim.port());
        let wrong = format!("redis://:{SECRET}-wrong@{host}:{}", sim.port());
        let url = if right { &good } else { &wrong };
        let mut args = vec![
            "watch",
            url.as_str(),
            "--dns-server",
            &dns,
            "--sim-speed",
            "10",
        ];
        // The same file each round: --force says to empty it (an existing capture is refused).
        args.extend(["--capture", capture.to_str().unwrap(), "--force"]);
        if json {
            args.push("--json");
        }
        if url == &wrong {
            args.push("--require");
        } else {
            args.extend(["--count", "2"]);
        }
        let out = tokio::time::timeout(GUARD, common::maintwatch_async(&args).output())
            .await
            .expect("the watch ends")
            .unwrap();
        let all = [
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            std::fs::read_to_string(&capture).unwrap(),
        ];
        for text in &all {
            assert!(!text.contains(SECRET), "the password leaked: {text}");
        }
        if url == &wrong {
            assert_eq!(out.status.code(), Some(maintwatch::exit::AUTH_FAILED));
            assert!(all[0].contains("authentication failed"), "{}", all[0]);
        } else {
            assert_eq!(out.status.code(), Some(0), "{}", all[1]);
            assert!(
                all[2].contains("MIGRATED"),
                "the capture has the notifications"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decide_steps_sideways_against_the_simulators_dns() {
    let sim = Simulator::start(SimOptions::new(scenarios::by_name("multi-proxy").unwrap()))
        .await
        .unwrap();
    let endpoint = format!("{}:{}", sim.host(), sim.port());
    let out = common::maintwatch_async([
        "decide",
        "--endpoint",
        &endpoint,
        "--current",
        "127.0.0.2",
        "--json",
    ])
    .args(["--dns-server", &sim.dns_addr().to_string()])
    .output()
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "stepped_sideways");
    assert_eq!(v["to"], "127.0.0.3");
}

// ---- A2: what the watch prints and computes per line (issues 12 and 14) ----

/// A RESP3 server written for one test: each command a client sends is answered by `answer`
/// (given the command's words, upper-cased), and whatever `answer` returns is written as is.
/// Counts the PINGs it answered.
struct Scripted {
    addr: std::net::SocketAddr,
    pings: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

async fn scripted_server(answer: fn(&[String]) -> Vec<u8>) -> Scripted {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let pings = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = pings.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut reader = maintwatch::protocol::resp::StreamReader::default();
                let mut buf = [0u8; 4096];
                loop {
                    let n = match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    reader.extend(&buf[..n]);
                    let mut commands = Vec::new();
                    let parsed = reader.drain(|frame, _, _| {
                        if let maintwatch::protocol::resp::Frame::Array(items) = frame {
                            commands.push(
                                items
                                    .iter()
                                    .map(|i| {
                                        String::from_utf8_lossy(i.as_text().unwrap_or_default())
                                            .to_ascii_uppercase()
                                    })
                                    .collect::<Vec<_>>(),
                            );
                        }
                    });
                    if parsed.is_err() {
                        return;
                    }
                    for cmd in commands {
                        if cmd.first().map(String::as_str) == Some("PING") {
                            counter.fetch_add(1, Ordering::SeqCst);
                        }
                        if s.write_all(&answer(&cmd)).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    Scripted { addr, pings }
}

fn blob(out: &mut Vec<u8>, text: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", text.len()).as_bytes());
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

/// A HELLO 3 reply naming `server`.
fn hello_reply(server: &[u8]) -> Vec<u8> {
    let mut out = b"%3\r\n".to_vec();
    blob(&mut out, b"server");
    blob(&mut out, server);
    blob(&mut out, b"version");
    blob(&mut out, b"8.0.2");
    blob(&mut out, b"proto");
    out.extend_from_slice(b":3\r\n");
    out
}

const FORGED: &[u8] = b"\r\n00:00:00.000000 [1] opt-in accepted FAKE\r\n";

/// Runs the binary to its end and returns (exit code, stdout, stderr).
async fn run_watch(args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = tokio::time::timeout(
        GUARD,
        common::maintwatch_async(["watch"])
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the watch ends")
    .unwrap();
    (
        out.status.code().expect("exit code"),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Terminal escapes, title changes (OSC), CR/LF and C1/bidi characters from the server, in HELLO's
/// `server`, the opt-in's refusal, a push's name and a MOVING's target: the human output carries
/// every one escaped, and no line a server forged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_text_is_escaped_before_it_reaches_the_terminal() {
    let server = scripted_server(|cmd| match cmd.first().map(String::as_str) {
        Some("HELLO") => {
            let mut name = b"redis\x1b[2J\x1b]0;pwned\x07".to_vec();
            name.extend_from_slice(FORGED);
            hello_reply(&name)
        }
        Some("CLIENT") => {
            // A blob error: the only kind of error that can hold CR/LF.
            let mut text = b"ERR no\x1b[31m\xc2\x9b\xe2\x80\xae".to_vec();
            text.extend_from_slice(FORGED);
            let mut out = format!("!{}\r\n", text.len()).into_bytes();
            out.extend_from_slice(&text);
            out.extend_from_slice(b"\r\n");
            // Then the pushes: a named one and a MOVING whose target forges a line.
            let mut push = b">2\r\n".to_vec();
            let mut name = b"evil\x1b[H".to_vec();
            name.extend_from_slice(FORGED);
            blob(&mut push, &name);
            blob(&mut push, b"x");
            out.extend_from_slice(&push);
            let mut moving = b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n".to_vec();
            let mut target = b"db\x1b]0;t\x07".to_vec();
            target.extend_from_slice(FORGED);
            target.extend_from_slice(b":6379");
            blob(&mut moving, &target);
            out.extend_from_slice(&moving);
            out
        }
        _ => b"+OK\r\n".to_vec(),
    })
    .await;
    let url = format!("redis://{}", server.addr);
    let (code, stdout, stderr) = run_watch(&[
        &url,
        "--count",
        "1",
        "--no-dns",
        "--no-handoff",
        "--color",
        "never",
    ])
    .await;
    assert_eq!(code, 0, "{stderr}");
    for bad in [0x1bu8, b'\r', 0x07] {
        assert!(
            !stdout.contains(&bad),
            "byte {bad:#04x} reached stdout:\n{}",
            String::from_utf8_lossy(&stdout)
        );
    }
    let text = String::from_utf8(stdout).unwrap();
    assert!(
        !text
            .chars()
            .any(|c| c != '\n' && maintwatch::shared::escape::is_unsafe_char(c)),
        "{text}"
    );
    for line in text.lines() {
        // An entry wrapped at 80 columns continues on an indented line; a forged line would
        // start at the margin.
        if let Some(at) = line.find("opt-in accepted FAKE") {
            assert!(
                line[..at].contains("\\r\\n") || line.starts_with(' '),
                "a forged line, not escaped text inside one: {line:?}"
            );
        }
        assert!(!line.starts_with("00:00:00.000000"), "forged: {line:?}");
    }
    // Everything was shown (escaped), not dropped.
    for shown in [
        "redis\\x1b[2J\\x1b]0;pwned\\x07\\r\\n",
        "ERR no\\x1b[31m\\u{9b}\\u{202e}\\r\\n",
        "evil\\x1b[H\\r\\n",
        "db\\x1b]0;t\\x07\\r\\n",
    ] {
        assert!(text.contains(shown), "{shown:?} missing from:\n{text}");
    }
}

/// `--tracking`: the +OK to our own CLIENT TRACKING is not shown as a stray reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracking_ok_is_not_shown_as_a_reply() {
    let server = scripted_server(|cmd| {
        let words: Vec<&str> = cmd.iter().map(String::as_str).collect();
        match words.as_slice() {
            ["HELLO", ..] => hello_reply(b"redis"),
            ["CLIENT", "TRACKING", ..] => {
                // The +OK, then a notification so that --count ends the watch after it.
                b"+OK\r\n>4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n_\r\n".to_vec()
            }
            _ => b"+OK\r\n".to_vec(),
        }
    })
    .await;
    let url = format!("redis://{}", server.addr);
    let (code, stdout, stderr) = run_watch(&[
        &url,
        "--tracking",
        "--count",
        "1",
        "--no-dns",
        "--no-handoff",
        "--json",
    ])
    .await;
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<WatchLine> = String::from_utf8(stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.iter().any(|l| is_kind(l, Kind::Moving)),
        "the MOVING after it is shown: {lines:#?}"
    );
    let replies: Vec<&WatchLine> = lines
        .iter()
        .filter(
            |l| matches!(l, WatchLine::Push(line::Push { frame, .. }) if frame.parsed == Classified::NotPush),
        )
        .collect();
    assert!(replies.is_empty(), "a stray reply line: {replies:#?}");
}

/// `--traffic`: the summary has p50, p99, max and failures; the per-PING lines only with -v;
/// and `--traffic 0` is raised to the 10 ms floor, said on stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_is_summarised_and_per_ping_lines_need_verbose() {
    let server = scripted_server(|cmd| match cmd.first().map(String::as_str) {
        Some("HELLO") => hello_reply(b"redis"),
        Some("PING") => b"+PONG\r\n".to_vec(),
        _ => b"+OK\r\n".to_vec(),
    })
    .await;
    let url = format!("redis://{}", server.addr);
    let base = [url.as_str(), "--no-dns", "--no-handoff", "--color", "never"];
    let (code, quiet, stderr) =
        run_watch(&[&base[..], &["--traffic", "20ms", "--duration", "500ms"]].concat()).await;
    assert_eq!(code, 0, "{stderr}");
    let quiet = String::from_utf8(quiet).unwrap();
    assert!(
        !quiet.lines().any(|l| l.contains("] PING ")),
        "per-PING lines without -v:\n{quiet}"
    );
    let figures = quiet
        .lines()
        .find(|l| l.starts_with("traffic: ") && l.contains("p50"))
        .unwrap_or_else(|| panic!("no traffic figures in the summary:\n{quiet}"));
    assert!(
        figures.contains("p99") && figures.contains("max"),
        "{figures}"
    );
    assert!(quiet.contains("traffic: none failed"), "{quiet}");

    let (code, verbose, stderr) = run_watch(
        &[
            &base[..],
            &["--traffic", "20ms", "--duration", "300ms", "-v"],
        ]
        .concat(),
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    let verbose = String::from_utf8(verbose).unwrap();
    assert!(
        verbose.lines().any(|l| l.contains("] PING ")),
        "-v shows each PING:\n{verbose}"
    );

    let before = server.pings.load(std::sync::atomic::Ordering::SeqCst);
    let (code, json, stderr) = run_watch(
        &[
            &base[..],
            &["--traffic", "0", "--duration", "300ms", "--json"],
        ]
        .concat(),
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("below the 10 ms floor"), "{stderr}");
    let lines: Vec<WatchLine> = String::from_utf8(json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let Some(WatchLine::Summary(line::Summary { t, pings, .. })) = lines.last() else {
        panic!("no summary")
    };
    let sent = server.pings.load(std::sync::atomic::Ordering::SeqCst) - before;
    // At one PING per 10 ms at most, a watch of t seconds sends at most t / 0.01 + 1.
    let bound = (t / 0.010).floor() as usize + 1;
    assert!(
        sent <= bound,
        "{sent} PINGs in {t} s: the floor did not hold"
    );
    // The summary counts every PING answered; one may still have been in flight at the stop.
    let counted = pings.as_ref().map_or(0, |p| p.sent as usize);
    assert!(
        counted > 0 && (sent == counted || sent == counted + 1),
        "{counted} vs {sent}"
    );
}

/// `--count` counts logical events: the copy every connection gets of one MOVING is not a
/// second event, so `--count 2` waits for the MIGRATING that follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_is_of_events_not_of_copies() {
    let scenario = maintwatch::simulator::sim::Scenario::parse(
        "count.scn",
        "name count\nabout one MOVING then one MIGRATING, two connections\n\
         proxies 127.0.0.2 127.0.0.3\ndns 127.0.0.2 127.0.0.3\nstart opt-in 2\n\
         at 0.0 push 127.0.0.2 MOVING time=15 target=null\n\
         at 2.0 push 127.0.0.2 MIGRATING time=2 shards=[\"1\"]\nend 30.0\n",
    )
    .unwrap();
    let mut run = start_with(scenario, 10.0, &["--connections", "2", "--count", "2"]).await;
    run.until("the summary", |l| {
        matches!(l.last(), Some(WatchLine::Summary(line::Summary { .. })))
    })
    .await;
    let seen = &run.seen;
    let Some(WatchLine::Summary(line::Summary { reason, events, .. })) = seen.last() else {
        unreachable!()
    };
    assert_eq!(reason, "count");
    assert!(
        seen.iter().any(|l| is_kind(l, Kind::Migrating)),
        "two copies of the MOVING are one event: the watch waited for the MIGRATING"
    );
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(
        events[0].copies, 1,
        "the MOVING's copy is counted as a copy"
    );
}

/// A silent shrink: the MIGRATING's summary row holds the DNS drop and the silent close,
/// relative to it, like the lines do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_shrink_summary_row_has_the_dns_drop_and_the_silent_close() {
    let mut run = start("silent-shrink", 20.0, &[]).await;
    run.until("the reconnect after the silent close", reconnected)
        .await;
    run.interrupt().await;
    let seen = &run.seen;
    let dns_rel = seen
        .iter()
        .find_map(|l| match l {
            WatchLine::Dns(line::Dns {
                ours: Some(o),
                rel: Some(r),
                ..
            }) if o == "left" => Some(r.s),
            _ => None,
        })
        .expect("our address leaves the record");
    let close_rel = seen
        .iter()
        .find_map(|l| match l {
            WatchLine::Closed(line::Closed {
                by, rel: Some(r), ..
            }) if by == "server" => Some(r.s),
            _ => None,
        })
        .expect("the silent close");
    let WatchLine::Summary(line::Summary { events, .. }) = seen.last().unwrap() else {
        panic!()
    };
    let row = &events[0];
    assert_eq!(row.kind, "MIGRATING");
    assert_eq!(
        row.dns_moved_s,
        Some(dns_rel),
        "the row says what the DNS line said"
    );
    assert_eq!(
        row.socket_closed_s,
        Some(close_rel),
        "and what the close line said"
    );
    assert!(row.silent_close);
    assert!(dns_rel < close_rel);
}

/// Joining mid-window against `simulate --speed 8` without `--sim-speed`: the watch adopts the
/// speed the simulator announces, and the MOVING re-sent with the opt-in is a window already
/// open, its close stated from receipt with that caveat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joining_mid_window_adopts_the_simulators_speed_and_says_the_window_was_open() {
    let scenario = maintwatch::simulator::sim::Scenario::parse(
        "joined.scn",
        "name joined\nabout a MOVING whose window is open before the watch connects\n\
         proxies 127.0.0.2\ndns 127.0.0.2\nstart now\n\
         at 0.5 push 127.0.0.2 MOVING time=60 target=null\n\
         at 61.0 close 127.0.0.2\nend 70.0\n",
    )
    .unwrap();
    let mut opts = SimOptions::new(scenario);
    opts.speed = 8.0;
    let sim = Simulator::start(opts).await.expect("simulator starts");
    let mut events = sim.events();
    tokio::time::timeout(GUARD, async {
        loop {
            if let Ok(ev) = events.recv().await {
                if matches!(ev.what, SimWhat::Pushed { .. }) {
                    return;
                }
            }
        }
    })
    .await
    .expect("the MOVING step ran before anyone connected");
    let url = sim.url();
    let (_child, mut lines) = common::spawn_lines(
        common::maintwatch_async(["watch", &url, "--json", "--no-handoff", "--dns-server"])
            .arg(sim.dns_addr().to_string())
            .stderr(Stdio::piped()),
    );
    let mut seen = Vec::new();
    common::read_until(&mut lines, &mut seen, GUARD, "the close", |l| {
        l.iter()
            .any(|l| matches!(l, WatchLine::Closed(line::Closed { by, .. }) if by == "server"))
    })
    .await;
    let speed = seen.iter().find_map(|l| match l {
        WatchLine::Handshake(line::Handshake { sim_speed, .. }) => *sim_speed,
        _ => None,
    });
    let speed = speed.expect("the simulator announced its speed");
    assert_eq!(
        (speed.announced, speed.used, speed.given),
        (8.0, 8.0, false)
    );
    let labels = seen.iter().find_map(|l| match l {
        WatchLine::Push(line::Push { labels, .. }) if is_kind(l, Kind::Moving) => {
            Some(labels.clone())
        }
        _ => None,
    });
    assert_eq!(labels, Some(vec![Label::WithOptIn]));
    let (joined_open, rel) = seen
        .iter()
        .find_map(|l| match l {
            WatchLine::Closed(line::Closed {
                by,
                joined_open,
                rel,
                ..
            }) if by == "server" => Some((*joined_open, rel.clone())),
            _ => None,
        })
        .unwrap();
    assert!(joined_open, "the close carries the caveat");
    // In scenario seconds: above the 61 / 8 s a watch reading real seconds would have said. No
    // upper bound: how late the close is seen after the simulator's 61.0 s depends on the load of
    // the machine, not on the watch.
    let s = rel.unwrap().s;
    assert!(
        s > 61.0 / 8.0,
        "offsets are in the simulator's seconds: {s}"
    );
}

/// `decide` on a name the nameserver does not know: its own outcome, not "window expired ...
/// (a normal outcome)"; and `--json` carries `type` and `v` like every JSON line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decide_on_a_name_that_never_resolves_says_so() {
    let sim = Simulator::start(SimOptions::new(scenarios::by_name("multi-proxy").unwrap()))
        .await
        .unwrap();
    let endpoint = format!("nosuch.{}:{}", sim.host(), sim.port());
    let decide = |json: bool| {
        let mut c =
            common::maintwatch_async(["decide", "--endpoint", &endpoint, "--current", "127.0.0.2"]);
        c.args(["--window", "2s", "--poll", "500ms"])
            .args(["--dns-server", &sim.dns_addr().to_string()]);
        if json {
            c.arg("--json");
        }
        c.output()
    };
    let out = decide(true).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["type"], "decision");
    assert_eq!(v["v"], 1);
    assert_eq!(v["outcome"], "unresolved");
    assert_eq!(v["destination"], serde_json::Value::Null);
    assert_eq!(v["reason"], "no A or AAAA records");
    let text = String::from_utf8(decide(false).await.unwrap().stdout).unwrap();
    assert!(text.contains("could not be resolved at all"), "{text}");
    assert!(!text.contains("normal outcome"), "{text}");
}

/// A 2 s window against a nameserver that never answers: the outcome says DNS never answered,
/// and when it comes after the window it says why (the query's timeout ran past it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decide_against_a_silent_nameserver_explains_a_late_outcome() {
    let silent = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let out = common::maintwatch_async([
        "decide",
        "--endpoint",
        "db.example.test:6379",
        "--current",
        "127.0.0.2",
    ])
    .args(["--window", "2s", "--json"])
    .args(["--dns-server", &silent.local_addr().unwrap().to_string()])
    .output()
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "unresolved", "{v}");
    let at = v["at_s"].as_f64().unwrap();
    let window = v["window_s"].as_f64().unwrap();
    assert_eq!(window, 2.0);
    let text = String::from_utf8(
        common::maintwatch_async([
            "decide",
            "--endpoint",
            "db.example.test:6379",
            "--current",
            "127.0.0.2",
        ])
        .args(["--window", "2s"])
        .args(["--dns-server", &silent.local_addr().unwrap().to_string()])
        .output()
        .await
        .unwrap()
        .stdout,
    )
    .unwrap();
    assert!(text.contains("could not be resolved at all"), "{text}");
    // The first query is never cut short; with a 2 s query timeout it ends at or after the
    // window, and the text must then say why the outcome is late.
    if at > window + 0.1 {
        assert!(text.contains("ran past"), "at +{at} s: {text}");
    }
}

/// `--sim-speed` that disagrees with the speed the simulator announces is kept, and warned
/// about (stderr and the handshake line).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sim_speed_that_disagrees_with_the_simulator_is_warned_about() {
    let mut opts = SimOptions::new(scenarios::by_name("single-proxy").unwrap());
    opts.speed = 8.0;
    let sim = Simulator::start(opts).await.expect("simulator starts");
    let url = sim.url();
    let (code, stdout, stderr) = run_watch(&[
        &url,
        "--json",
        "--no-handoff",
        "--sim-speed",
        "2",
        "--count",
        "1",
        "--dns-server",
        &sim.dns_addr().to_string(),
    ])
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("announces speed 8 but --sim-speed 2 was given"),
        "{stderr}"
    );
    let speed = String::from_utf8(stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<WatchLine>(l).unwrap())
        .find_map(|l| match l {
            WatchLine::Handshake(line::Handshake { sim_speed, .. }) => sim_speed,
            _ => None,
        })
        .expect("the announced speed");
    assert_eq!((speed.announced, speed.used, speed.given), (8.0, 2.0, true));
}
