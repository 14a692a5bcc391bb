//! The timeout rules' reading of a give-up that keeps the connection (`rules::give_up`): waits
//! built by hand, and a recorded Lettuce run. Kept apart from the other rules' tests so that
//! neither file grows past what reads at once.

use super::tests::*;
use super::*;

/// A wait on one connection shared by three callers, each with a 1 s timeout (Lettuce's
/// synchronous API, three threads): their first commands within 20 ms of the hold, then, when
/// `gives_up`, each caller's next command about 1.06 s later (its timeout and the application's
/// pause), written while the reply is still held; the connection is never closed.
fn shared(at: f64, gives_up: bool) -> Wait {
    let mut writes = vec![0.008, 0.016];
    if gives_up {
        writes.extend([1.062, 1.069, 1.078]);
    }
    Wait {
        writes,
        ..wait(at, 1.5, false)
    }
}

/// Lettuce 7.7.0's synchronous API as the issue's application showed it: it gives up after its
/// 1 s timeout inside the window exactly as at the baseline, and keeps the connection. The
/// writes after the silence show it: FAIL, the give-up named; after the tail it gives up again,
/// back to its own timeout.
#[test]
fn a_give_up_that_keeps_the_connection_fails_relaxed_timeout() {
    let obs = failover(vec![
        shared(1.0, true),
        shared(4.5, true),
        shared(27.0, true),
    ]);
    let g = judge(&obs);
    let why = judged(&g, "relaxed-timeout", Verdict::Fail);
    assert_eq!(
        why,
        "gave up after 1.1 s on a reply held 1.5 s at +0.5 s inside the FAILING_OVER seq 1's window, and kept the connection (it wrote its next command while that reply was still held): its own timeout (1.1 s), not the relaxed 10 s"
    );
    let why = judged(&g, "timeout-restored", Verdict::Pass);
    assert!(
        why.starts_with(
            "gave up after 1.1 s on a reply held 1.5 s at +23.0 s after the FAILING_OVER seq 1"
        ),
        "{why}"
    );
    assert!(why.contains(", and kept the connection"), "{why}");
}

/// The same client relaxed: inside the window its callers send their first commands and then
/// nothing until the stall ends. It waited past the give-up time the baseline showed: PASS.
#[test]
fn callers_that_wait_through_the_window_pass_relaxed_timeout() {
    let obs = failover(vec![
        shared(1.0, true),
        shared(4.5, false),
        shared(27.0, true),
    ]);
    let why = judged(&judge(&obs), "relaxed-timeout", Verdict::Pass);
    assert!(
        why.starts_with("waited 1.5 s through a 1.5 s stall at +0.5 s inside the FAILING_OVER seq 1's window, past its own timeout (1.1 s): relaxed"),
        "{why}"
    );
}

/// A write after a silence that comes much sooner than the give-up time the baseline showed is a
/// caller slow to send its first command (a thread the machine's load held back), not a
/// give-up at the client's timeout, which never fires early: it does not make a FAIL.
#[test]
fn a_late_first_command_is_not_read_as_a_give_up() {
    let late = Wait {
        writes: vec![0.008, 0.35],
        ..wait(4.5, 1.5, false)
    };
    let obs = failover(vec![shared(1.0, true), late, shared(27.0, true)]);
    judged(&judge(&obs), "relaxed-timeout", Verdict::Pass);
    // At the give-up time, or later (a timer the load fired late), it is one.
    let late = Wait {
        writes: vec![0.008, 1.3],
        ..wait(4.5, 1.5, false)
    };
    let obs = failover(vec![shared(1.0, true), late, shared(27.0, true)]);
    let why = judged(&judge(&obs), "relaxed-timeout", Verdict::Fail);
    assert!(why.starts_with("gave up after 1.3 s"), "{why}");
}

/// A client whose callers do not wait on each reply (pipelined or asynchronous) writes on
/// through the stall: no silence, so no write tells a give-up apart, and the reason says so.
#[test]
fn a_client_that_keeps_writing_through_the_baseline_is_not_judged() {
    let busy = |at: f64| Wait {
        writes: (1..150).map(|i| f64::from(i) * 0.01).collect(),
        ..wait(at, 1.5, false)
    };
    let obs = failover(vec![busy(1.0), busy(4.5), busy(27.0)]);
    let g = judge(&obs);
    for name in ["relaxed-timeout", "timeout-restored"] {
        let why = judged(&g, name, Verdict::NotJudged);
        assert!(
            why.ends_with("it kept writing on the held connection without a pause, so its callers do not wait on each reply (pipelined or asynchronous) and no write tells a give-up apart"),
            "{why}"
        );
    }
}

/// What the simulator wrote is what the judge reads back: a wait's writes survive the
/// `grade_input` line, and an old line without them still reads.
#[test]
fn a_waits_writes_round_trip_and_may_be_absent() {
    let obs = failover(vec![shared(1.0, true)]);
    let text = serde_json::to_string(&obs).unwrap();
    assert!(
        text.contains("\"writes\":[0.008,0.016,1.062,1.069,1.078]"),
        "{text}"
    );
    let back: Observations = serde_json::from_str(&text).unwrap();
    assert_eq!(back, obs);
    let old: Wait = serde_json::from_str(r#"{"at":1.0,"waited":1.0,"gave_up":true}"#).unwrap();
    assert!(old.writes.is_empty());
}

/// A recorded run: Lettuce 7.7.0's synchronous application (three threads on one connection,
/// 1 s timeout) under `shard-migration`, as `simulate --grade-json` wrote it (its traffic merged
/// into one bucket a second to keep the file small).
fn lettuce_shard_migration() -> Observations {
    let line = include_str!("../../../tests/fixtures/grades/lettuce-7.7.0-shard-migration.jsonl");
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    serde_json::from_value(v["observations"].clone()).unwrap()
}

fn timeout_rule(g: &Grade, name: &str) -> (Verdict, String) {
    let r = g.clients[0]
        .notifications
        .iter()
        .flat_map(|n| &n.rules)
        .find(|r| r.rule == name)
        .unwrap();
    (r.verdict, r.detail.clone())
}

/// What the recorded run shows: in each stall the threads' first commands at once, then each
/// thread's next one about 1.06 s later on the same connection, the reply still held. Inside the
/// MIGRATING's window as at the baseline: FAIL, the give-up named.
#[test]
fn lettuce_gives_up_inside_the_window_and_keeps_the_connection() {
    let g = judge(&lettuce_shard_migration());
    let (v, why) = timeout_rule(&g, "relaxed-timeout");
    assert_eq!(v, Verdict::Fail, "{why}");
    assert_eq!(
        why,
        "gave up after 1.1 s on a reply held 1.5 s at +0.2 s inside the MIGRATING seq 0's window, and kept the connection (it wrote its next command while that reply was still held): its own timeout (1.1 s), not the relaxed 10 s"
    );
    assert_eq!(timeout_rule(&g, "timeout-restored").0, Verdict::Pass);
}

/// The same run with the window's give-ups taken out, as a relaxed client's would be: its
/// threads wrote their first commands and then waited for the stall's end. PASS. And with every
/// give-up taken out, the client neither closed nor wrote: NOT JUDGED, saying that.
#[test]
fn the_recorded_run_waiting_through_passes_and_silent_is_not_judged() {
    let mut obs = lettuce_shard_migration();
    let first_writes = |w: &mut Wait| w.writes.retain(|x| *x < 0.1);
    first_writes(&mut obs.connections[0].waits[1]);
    let (v, why) = timeout_rule(&judge(&obs), "relaxed-timeout");
    assert_eq!(v, Verdict::Pass, "{why}");
    assert!(
        why.starts_with("waited 1.5 s through a 1.5 s stall"),
        "{why}"
    );
    obs.connections[0].waits.iter_mut().for_each(first_writes);
    let g = judge(&obs);
    for name in ["relaxed-timeout", "timeout-restored"] {
        let (v, why) = timeout_rule(&g, name);
        assert_eq!(v, Verdict::NotJudged, "{why}");
        assert!(
            why.contains(
                "it neither closed the connection nor wrote on it again while the reply was held"
            ),
            "{why}"
        );
        assert!(!why.contains("give the application a timeout"), "{why}");
    }
}
