//! The judge's cluster rules on hand-built observations: `smigrated-refresh` (what moved the
//! client to the target, and how many `-MOVED` it took) and `sharded-resubscribe`. Kept apart from
//! the other rules' tests so that neither file grows past what reads at once.

use super::tests::{addr, conn, got, judged, verdict_of};
use super::*;

const SOURCE: &str = "127.0.0.3:7000";
const TARGET: &str = "127.0.0.5:7000";
const OTHER: &str = "127.0.0.2:7000";

/// An SMIGRATED seq 19 at 2.0 moving 8892-8991 from SOURCE to TARGET, pushed on every node; the
/// client's connections on `servers`, opened at 0, busy throughout.
fn smigrated(servers: &[&str]) -> Observations {
    let connections = servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut c = got(conn(i as u64 + 1, s, 0.0, Reached::Address), 2.0);
            c.traffic.push(Traffic {
                at: 3.0,
                commands: 10,
                errors: 0,
                unanswered: 0,
            });
            c
        })
        .collect();
    Observations {
        source: "test".into(),
        connections,
        notifications: vec![Notification {
            at: 2.0,
            kind: "SMIGRATED".into(),
            seq: Some(19),
            window: 0.0,
            target: None,
            retiring: vec![addr(OTHER), addr(SOURCE)],
            moves: vec![SlotMove {
                source: SOURCE.into(),
                target: TARGET.into(),
                slots: "8892-8991".into(),
            }],
        }],
        ..Observations::default()
    }
}

/// The client reads the topology once, at once: pass. Once per copy of the notification:
/// a storm, fail.
#[test]
fn one_topology_read_per_burst_passes_and_one_per_copy_fails() {
    let mut obs = smigrated(&[OTHER, SOURCE]);
    obs.connections[0].topology_queries.push(2.01);
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Pass);
    assert!(
        why.starts_with("read the topology again (a CLUSTER query) at +0.010 s"),
        "{why}"
    );
    obs.connections[1].topology_queries.push(2.02);
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Fail);
    assert!(
        why.contains("a refresh per copy of the notification"),
        "{why}"
    );
}

/// Applying the triplet (a connection to the target, as node-redis does) is taking the move into
/// account too.
#[test]
fn connecting_to_the_target_at_once_passes() {
    let mut obs = smigrated(&[SOURCE]);
    obs.connections
        .push(conn(9, TARGET, 2.004, Reached::Address));
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Pass);
    assert!(
        why.contains("connected to the target 127.0.0.5:7000"),
        "{why}"
    );
}

/// A `-MOVED` at `at` for slot 8899, one of those the SMIGRATED moved, naming TARGET.
fn moved(at: f64) -> Redirect {
    Redirect {
        at,
        slot: Some(8899),
        to: Some(addr(TARGET)),
    }
}

/// The line says what moved the client to the target: a connection to it before any -MOVED is
/// its handling of the SMIGRATED; one after a -MOVED naming it is the redirect (go-redis at its
/// defaults). A -MOVED for a slot that did not move, or naming another node, is not the cause.
/// Either way the verdict is the outcome's.
#[test]
fn the_line_says_whether_the_smigrated_or_a_moved_took_the_client_to_the_target() {
    let mut obs = smigrated(&[SOURCE]);
    obs.connections
        .push(conn(9, TARGET, 2.996, Reached::Address));
    obs.connections[0].redirects = vec![moved(2.99)];
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Pass);
    assert_eq!(
        why,
        "connected to the target 127.0.0.5:7000 at +0.996 s after the SMIGRATED seq 19, after a -MOVED for slot 8899 naming 127.0.0.5:7000 at +0.990 s: the redirect moved it, not its handling of the SMIGRATED (1 -MOVED for the moved slots after it)"
    );
    obs.connections[0].redirects = vec![Redirect {
        slot: Some(100),
        ..moved(2.99)
    }];
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Pass);
    assert!(
        why.starts_with("applied the triplet (connected to the target 127.0.0.5:7000) at +0.996 s after the SMIGRATED seq 19, before any -MOVED for the moved slots: its handling of the SMIGRATED moved it"),
        "{why}"
    );
    // A topology read after a -MOVED: the redirect again.
    let mut obs = smigrated(&[SOURCE]);
    obs.connections[0].redirects = vec![moved(2.5)];
    obs.connections[0].topology_queries.push(2.501);
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Pass);
    assert!(
        why.contains(
            "a CLUSTER query) at +0.501 s after the SMIGRATED seq 19, after a -MOVED for slot 8899"
        ),
        "{why}"
    );
    // Several reads at once after a -MOVED (Lettuce asks every node in one refresh): the
    // redirect's answer, not a refresh per copy of the notification.
    obs.connections.push(conn(7, OTHER, 0.0, Reached::Address));
    obs.connections[1].topology_queries.push(2.502);
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Pass);
    assert!(
        why.starts_with("read the topology again (2 CLUSTER queries) at +0.501 s after the SMIGRATED seq 19, after a -MOVED"),
        "{why}"
    );
    // A -MOVED naming the target an instant before the SMIGRATED went out (the slots moved,
    // then the notification) is still this move's redirect.
    obs.connections[0].redirects[0].at = 1.999;
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Pass);
    assert!(
        why.contains("after a -MOVED for slot 8899 naming 127.0.0.5:7000 0.001 s before it: the redirect moved it"),
        "{why}"
    );
    // The same reads before any -MOVED: a refresh per copy.
    obs.connections[0].redirects[0].at = 2.6;
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Fail);
    assert!(
        why.contains("before any -MOVED for the moved slots: a refresh per copy"),
        "{why}"
    );
    // One -MOVED and nothing else seen: not a lack of keys in the moved slots.
    let mut obs = smigrated(&[SOURCE]);
    obs.connections[0].redirects = vec![moved(2.5)];
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::NotJudged);
    assert!(why.starts_with("1 -MOVED for the moved slots after it, and neither a topology read nor a new connection to a target (127.0.0.5:7000)"), "{why}");
}

/// An older `grade_input` line holds each -MOVED as its time alone: it still reads.
#[test]
fn a_redirect_written_as_a_time_alone_still_reads() {
    let r: Redirect = serde_json::from_str("2.5").unwrap();
    assert_eq!((r.at, r.slot, r.to), (2.5, None, None));
    let r: Redirect = serde_json::from_str(&serde_json::to_string(&moved(2.5)).unwrap()).unwrap();
    assert_eq!(r, moved(2.5));
}

/// A client that ignores the SMIGRATED collects -MOVED from the source; one that learns only
/// late fails too.
#[test]
fn never_refreshing_or_refreshing_late_fails() {
    let mut obs = smigrated(&[SOURCE]);
    obs.connections[0].redirects = [2.1, 2.2, 2.3].map(moved).to_vec();
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Fail);
    assert!(why.starts_with("conn 1 got 3 -MOVED"), "{why}");
    let mut obs = smigrated(&[SOURCE]);
    obs.connections[0].redirects = vec![moved(6.0)];
    obs.connections[0].topology_queries.push(6.01);
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Fail);
    assert!(why.contains("only at +4.0 s"), "{why}");
}

/// No connection to a source: leaving the topology alone passes, refreshing fails.
#[test]
fn a_client_the_move_does_not_concern_leaves_its_topology_alone() {
    let obs = smigrated(&[OTHER]);
    assert_eq!(
        verdict_of(&judge(&obs), "smigrated-refresh").0,
        Verdict::Pass
    );
    let mut obs = smigrated(&[OTHER]);
    obs.connections[0].topology_queries.push(2.5);
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::Fail);
    assert!(why.contains("concerned none of its nodes"), "{why}");
}

/// Nothing to see (no command for the moved slots, or triplets not read): not judged.
#[test]
fn smigrated_refresh_without_evidence_is_not_judged() {
    let obs = smigrated(&[SOURCE]);
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::NotJudged);
    assert!(why.contains("use keys across all slots"), "{why}");
    let mut obs = smigrated(&[SOURCE]);
    obs.notifications[0].moves.clear();
    let why = judged(&judge(&obs), "smigrated-refresh", Verdict::NotJudged);
    assert!(why.contains("triplets were not read"), "{why}");
}

/// The client on SOURCE subscribed to `channel` (slot `slot`) at 1.0; the server ends it with
/// the move at 2.0; the simulator publishes at 3.0, 4.5 and 5.0, sent to `recipients` each.
fn sharded(channel: &str, slot: u16, recipients: &[&[u64]]) -> Observations {
    let mut obs = smigrated(&[SOURCE]);
    let sub = |at, on, by_server| Subscription {
        at,
        channel: channel.into(),
        slot,
        on,
        by_server,
    };
    obs.connections[0].sharded = vec![sub(1.0, true, false), sub(2.0, false, true)];
    obs.publications = [3.0, 4.5, 5.0]
        .iter()
        .zip(recipients)
        .map(|(at, to)| Publication {
            at: *at,
            channel: channel.into(),
            slot,
            recipients: to.to_vec(),
        })
        .collect();
    obs
}

/// Subscribing again at the new owner keeps the messages coming: pass. Dropping the
/// subscription with the move loses every later message: fail, with the count.
#[test]
fn a_sharded_subscription_made_again_passes_and_one_dropped_fails() {
    let mut obs = sharded("orders", 8900, &[&[1], &[9], &[9]]);
    obs.connections.push(conn(9, TARGET, 2.3, Reached::Address));
    obs.connections[1].sharded.push(Subscription {
        at: 2.31,
        channel: "orders".into(),
        slot: 8900,
        on: true,
        by_server: false,
    });
    let why = judged(&judge(&obs), "sharded-resubscribe", Verdict::Pass);
    assert!(why.contains("received all 2 message(s)"), "{why}");
    assert!(why.contains("subscribed again +0.310 s"), "{why}");
    let obs = sharded("orders", 8900, &[&[], &[], &[]]);
    let why = judged(&judge(&obs), "sharded-resubscribe", Verdict::Fail);
    assert!(why.starts_with("2 of 2 message(s)"), "{why}");
    assert!(why.contains("the first at +2.5 s"), "{why}");
}

/// A channel outside the moved slots, or nothing published after the grace: not judged. No
/// publication at all: not exercised.
#[test]
fn sharded_resubscribe_without_evidence_is_not_judged_or_not_exercised() {
    let obs = sharded("calm", 100, &[&[1], &[1], &[1]]);
    let why = judged(&judge(&obs), "sharded-resubscribe", Verdict::NotJudged);
    assert!(
        why.contains("in none of the moved slots (8892-8991)"),
        "{why}"
    );
    let mut obs = sharded("orders", 8900, &[&[1]]);
    obs.publications.truncate(1);
    let why = judged(&judge(&obs), "sharded-resubscribe", Verdict::NotJudged);
    assert!(why.contains("the scenario ended too soon"), "{why}");
    // A subscription made only after the SMIGRATED (at +2.0 s) had nothing to lose: not
    // judged, with when it came, rather than left out of the grade.
    let mut obs = sharded("orders", 8900, &[&[1], &[1], &[1]]);
    obs.connections[0].sharded.retain(|x| x.on);
    obs.connections[0].sharded[0].at = 2.5;
    let why = judged(&judge(&obs), "sharded-resubscribe", Verdict::NotJudged);
    assert!(why.contains("no sharded subscription was open"), "{why}");
    assert!(
        why.contains("orders (slot 8900)) came +0.500 s after it"),
        "{why}"
    );
    let mut obs = sharded("orders", 8900, &[&[1]]);
    obs.publications.clear();
    let g = judge(&obs);
    assert!(
        g.not_exercised
            .iter()
            .any(|n| n.rule == "sharded-resubscribe"),
        "{}",
        g.table()
    );
}
