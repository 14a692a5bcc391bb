//! The timeline's rules, one observation at a time.

use super::*;
use crate::network::dns::DnsEventKind;
use crate::network::handoff::Outcome;
use crate::observe::record::{line, EventRow, Rel, WatchLine};
use crate::observe::record::{FrameRecord, Label};
use crate::protocol::resp::{Scan, Scanner};
use std::net::IpAddr;
use std::time::{Duration, Instant, SystemTime};

const MOVING: &[u8] = b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n";
const MIGRATING: &[u8] = b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n";
const MIGRATED: &[u8] = b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n";

fn record(raw: &[u8]) -> FrameRecord {
    match Scanner::default().scan(raw).unwrap() {
        Scan::Frame(f, _) => FrameRecord::new(&f, raw, 0),
        _ => unreachable!(),
    }
}

struct Fixture {
    tl: Timeline,
    t0: Instant,
}

impl Fixture {
    fn new() -> Fixture {
        let t0 = Instant::now();
        let mut tl = Timeline::new(t0);
        tl.observe(obs(
            t0,
            0.0,
            1,
            What::Connected(event::Connected {
                addr: "127.0.0.2:6379".parse().unwrap(),
                tls: false,
                endpoint: "db:6379".into(),
            }),
        ));
        Fixture { tl, t0 }
    }
    /// A fixture whose connection has just received a MOVING (at 0 s, live).
    fn after_moving() -> Fixture {
        let mut f = Fixture::new();
        f.frame(0.0, MOVING, false);
        f
    }
    fn at(&mut self, s: f64, conn: u32, what: What) -> Step {
        let o = obs(self.t0, s, conn, what);
        self.tl.observe(o)
    }
    fn server_close(&mut self, s: f64) -> Step {
        self.at(
            s,
            1,
            What::Closed(event::Closed {
                cause: CloseCause::Server,
                error: None,
                retry_in: None,
            }),
        )
    }
    /// The dry-run's answer for the first event on connection 1.
    fn handoff(&mut self, s: f64, outcome: Outcome) -> Step {
        self.at(s, 1, What::Handoff(event::Handoff { event: 0, outcome }))
    }
    /// A resolution of the database's name, `db`.
    fn dns(&mut self, s: f64, kind: DnsEventKind) -> Step {
        let host = "db".into();
        self.at(s, 0, What::Dns(event::Dns { host, kind }))
    }
    /// The summary line as the watch ends now with `reason`.
    fn summary(&self, reason: &str) -> line::Summary {
        match self.tl.summary(self.t0, SystemTime::UNIX_EPOCH, reason) {
            WatchLine::Summary(s) => s,
            other => panic!("{other:?}"),
        }
    }
    fn frame(&mut self, s: f64, raw: &[u8], early: bool) -> Step {
        self.at(
            s,
            1,
            What::Frame(event::Frame {
                record: record(raw),
                early,
            }),
        )
    }
}

fn obs(t0: Instant, s: f64, conn: u32, what: What) -> Observation {
    Observation {
        at: t0 + Duration::from_secs_f64(s),
        wall: SystemTime::UNIX_EPOCH,
        conn,
        what,
    }
}

fn closed(step: &Step) -> (bool, Option<f64>, Option<Rel>) {
    step.lines
        .iter()
        .find_map(|l| match l {
            WatchLine::Closed(line::Closed {
                announced,
                past_s,
                rel,
                ..
            }) => Some((*announced, *past_s, rel.clone())),
            _ => None,
        })
        .expect("a closed line")
}

#[test]
fn moving_then_close_reports_the_overshoot_and_starts_one_handoff() {
    let mut f = Fixture::new();
    let step = f.frame(1.0, MOVING, false);
    assert_eq!(step.notifications, 1);
    assert!(matches!(
        step.actions.as_slice(),
        [Action::StartHandoff {
            window_s: 15,
            successor: None,
            current: Some(_),
            ..
        }]
    ));
    let step = f.server_close(17.6);
    let (announced, past, rel) = closed(&step);
    assert!(announced);
    assert!((past.unwrap() - 1.6).abs() < 1e-6, "{past:?}");
    assert_eq!(rel.unwrap().to, "MOVING seq 0");
}

#[test]
fn a_window_is_open_from_its_notification_until_its_declared_end_or_its_closing_notification() {
    let mut f = Fixture::new();
    let t0 = f.t0;
    let at = |s: f64| t0 + Duration::from_secs_f64(s);
    assert_eq!(f.tl.window_open_until(3600), None);
    // MIGRATING declares 2 s: open until 2 s + 5 s of slack after it arrived.
    f.frame(1.0, MIGRATING, false);
    assert_eq!(f.tl.window_open_until(3600), Some(at(8.0)));
    // MIGRATED closes it.
    f.frame(2.0, MIGRATED, false);
    assert_eq!(f.tl.window_open_until(3600), None);
    // A MOVING's 15 s, read at the simulator's speed 10, outlives its socket's close.
    f.tl.set_clock(ScenarioClock::new(10.0).unwrap());
    f.frame(3.0, MOVING, false);
    f.server_close(3.5);
    assert_eq!(f.tl.window_open_until(3600), Some(at(5.0)));
    // A declared window is capped.
    assert_eq!(f.tl.window_open_until(5), Some(at(4.0)));
}

#[test]
fn a_resent_moving_is_labelled_and_starts_no_second_decision() {
    let mut f = Fixture::after_moving();
    let step = f.frame(3.0, MOVING, true);
    assert_eq!(push_labels(&step), vec![Label::Resent, Label::WithOptIn]);
    assert!(step.actions.is_empty());
    let events = f.summary("ended").events;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].copies, 1);
}

#[test]
fn catch_up_is_labelled_and_closes_nothing() {
    let mut f = Fixture::new();
    let step = f.frame(0.1, MIGRATED, true);
    assert_eq!(push_labels(&step), vec![Label::CatchUp]);
    assert!(step.actions.is_empty(), "a replayed MIGRATED is old news");
}

#[test]
fn closing_notification_is_relative_to_what_it_closes() {
    let mut f = Fixture::new();
    f.frame(1.0, MIGRATING, false);
    let step = f.frame(3.5, MIGRATED, false);
    let WatchLine::Push(line::Push { rel, .. }) = &step.lines[0] else {
        panic!()
    };
    let rel = rel.clone().unwrap();
    assert_eq!(rel.to, "MIGRATING seq 0");
    assert!((rel.s - 2.5).abs() < 1e-6);
    assert!(matches!(
        step.actions.as_slice(),
        [Action::CheckAdvertised { .. }]
    ));
}

#[test]
fn a_close_without_moving_is_unannounced() {
    let mut f = Fixture::new();
    f.frame(1.0, MIGRATING, false);
    let step = f.server_close(35.0);
    let (announced, past, rel) = closed(&step);
    assert!(!announced);
    assert_eq!(past, None);
    assert!((rel.unwrap().s - 34.0).abs() < 1e-6);
}

#[test]
fn verdict_compares_the_dry_run_with_the_close_in_either_order() {
    let mut f = Fixture::after_moving();
    let step = f.handoff(9.8, moved_to_3(Duration::from_millis(9800), 10));
    assert!(!step
        .lines
        .iter()
        .any(|l| matches!(l, WatchLine::Verdict(line::Verdict { .. }))));
    let step = f.server_close(16.6);
    let margin = step.lines.iter().find_map(|l| match l {
        WatchLine::Verdict(line::Verdict { margin_s, text, .. }) => {
            assert!(text.contains("6.8 s before the close at +16.6 s"), "{text}");
            *margin_s
        }
        _ => None,
    });
    assert!((margin.unwrap() - 6.8).abs() < 1e-6);

    // Close first, then a stale dry-run.
    let mut f = Fixture::after_moving();
    f.server_close(15.7);
    let step = f.handoff(
        15.8,
        Outcome::StaleAtExpiry {
            at: Duration::from_secs(15),
            polls: 15,
            cannot_tell: 0,
            window: Duration::from_secs(15),
        },
    );
    assert!(step
        .lines
        .iter()
        .any(|l| matches!(l, WatchLine::Verdict(line::Verdict { text, .. }) if text.contains("would have stayed: nothing else was offered (the record was still stale"))));
}

#[test]
fn a_dry_run_on_the_clock_is_a_recycle_and_one_too_late_is_cut() {
    let mut f = Fixture::after_moving();
    f.handoff(
        0.1,
        Outcome::ReconnectOnClock {
            at: Duration::from_millis(7500),
            reason: crate::network::handoff::ClockReason::AddressEndpoint,
        },
    );
    let step = f.server_close(16.6);
    let text = step.lines.iter().find_map(|l| match l {
        WatchLine::Verdict(line::Verdict { text, margin_s, .. }) => {
            assert!((margin_s.unwrap() - 9.1).abs() < 1e-6);
            Some(text.clone())
        }
        _ => None,
    });
    assert!(text.unwrap().contains("would have recycled at +7.5 s"));
    let mut f = Fixture::after_moving();
    f.server_close(15.7);
    let step = f.handoff(18.0, moved_to_3(Duration::from_secs(18), 18));
    assert!(step.lines.iter().any(|l| matches!(l,
        WatchLine::Verdict(line::Verdict { text, margin_s: Some(m), .. })
            if text.contains("would have been cut by the close at +15.7 s") && *m < 0.0)));
}

#[test]
fn dns_change_marks_our_address_leaving_and_the_event_row() {
    let mut f = Fixture::after_moving();
    let a2: IpAddr = "127.0.0.2".parse().unwrap();
    let a3: IpAddr = "127.0.0.3".parse().unwrap();
    let step = f.dns(
        9.7,
        DnsEventKind::Changed {
            before: [a2].into(),
            after: [a3].into(),
            ttl: Some(5),
        },
    );
    let WatchLine::Dns(line::Dns { ours, rel, .. }) = &step.lines[0] else {
        panic!()
    };
    assert_eq!(ours.map(|o| o.as_str()), Some("left"));
    assert!((rel.clone().unwrap().s - 9.7).abs() < 1e-6);
    let events = f.summary("x").events;
    assert!((events[0].dns_moved_s.unwrap() - 9.7).abs() < 1e-6);
}

/// The poller's first answer, taken after a MOVING that came as soon as the opt-in was
/// accepted: it is the baseline, not something that followed the MOVING.
#[test]
fn the_first_answer_is_not_put_after_the_event() {
    let mut f = Fixture::new();
    f.frame(1.0, MOVING, false);
    let a2: IpAddr = "127.0.0.2".parse().unwrap();
    let step = f.dns(
        1.2,
        DnsEventKind::Initial {
            addrs: [a2].into(),
            ttl: Some(5),
        },
    );
    let WatchLine::Dns(line::Dns { rel, .. }) = &step.lines[0] else {
        panic!()
    };
    assert!(rel.is_none(), "{rel:?}");
}

#[test]
fn speed_scales_offsets_into_scenario_seconds() {
    let mut f = Fixture::new();
    f.tl.set_clock(ScenarioClock::new(10.0).unwrap());
    f.frame(0.0, MOVING, false);
    let step = f.server_close(1.66);
    let (_, past, _) = closed(&step);
    assert!((past.unwrap() - 1.6).abs() < 1e-6, "{past:?}");
}
fn summary_rows(f: &Fixture) -> Vec<EventRow> {
    f.summary("x").events
}

#[test]
fn count_is_of_logical_events_not_copies() {
    let mut f = Fixture::new();
    assert_eq!(f.frame(0.0, MOVING, false).notifications, 1);
    // The same (type, seq) from a second cluster node, and re-sent to an opt-in.
    let copy = f.at(
        0.01,
        2,
        What::Frame(event::Frame {
            record: record(MOVING),
            early: false,
        }),
    );
    assert_eq!(copy.notifications, 0);
    assert_eq!(f.frame(3.0, MOVING, true).notifications, 0);
    assert_eq!(
        f.frame(4.0, MIGRATED, true).notifications,
        0,
        "a catch-up replay"
    );
    assert_eq!(f.frame(5.0, MIGRATING, false).notifications, 1);
}

#[test]
fn silent_shrink_row_records_the_dns_drop_and_the_silent_close() {
    let mut f = Fixture::new();
    f.frame(4.3, MIGRATING, false);
    f.frame(16.6, MIGRATED, false);
    let a2: IpAddr = "127.0.0.2".parse().unwrap();
    let a3: IpAddr = "127.0.0.3".parse().unwrap();
    f.dns(
        21.4,
        DnsEventKind::Changed {
            before: [a2, a3].into(),
            after: [a3].into(),
            ttl: Some(5),
        },
    );
    let step = f.server_close(34.7);
    let (announced, _, rel) = closed(&step);
    assert!(!announced);
    assert_eq!(rel.unwrap().to, "MIGRATING seq 0");
    let rows = summary_rows(&f);
    let row = &rows[0];
    assert_eq!(row.kind, "MIGRATING");
    assert!((row.dns_moved_s.unwrap() - 17.1).abs() < 1e-6, "{row:?}");
    assert!(
        (row.socket_closed_s.unwrap() - 30.4).abs() < 1e-6,
        "{row:?}"
    );
    assert!(row.silent_close);
    assert_eq!(
        row.overshoot_s, None,
        "nothing announced, nothing to overshoot"
    );
}

#[test]
fn a_moving_received_with_the_opt_in_is_a_window_we_joined_open() {
    let mut f = Fixture::new();
    let step = f.frame(0.2, MOVING, true);
    assert_eq!(push_labels(&step), vec![Label::WithOptIn]);
    let step = f.server_close(1.8);
    let joined = step.lines.iter().find_map(|l| match l {
        WatchLine::Closed(line::Closed {
            joined_open,
            past_s,
            ..
        }) => Some((*joined_open, *past_s)),
        _ => None,
    });
    let (joined, past) = joined.expect("a closed line");
    assert!(joined, "the close line carries the caveat");
    assert!(
        (past.unwrap() + 13.4).abs() < 1e-6,
        "from receipt: {past:?}"
    );
    assert!(summary_rows(&f)[0].joined_open);
    // A MOVING seen live is not one we joined.
    let f = Fixture::after_moving();
    assert!(!summary_rows(&f)[0].joined_open);
}

#[test]
fn pings_are_summarised_with_percentiles_and_the_window_of_each_failure() {
    let mut f = Fixture::new();
    for ms in 1..=100u64 {
        f.at(
            0.0,
            1,
            What::Ping(event::Ping {
                latency: Some(Duration::from_millis(ms)),
                error: None,
            }),
        );
    }
    f.frame(1.0, MOVING, false);
    for _ in 0..2 {
        f.at(
            2.0,
            1,
            What::Ping(event::Ping {
                latency: None,
                error: Some("connection closed".into()),
            }),
        );
    }
    let pings = f.summary("x").pings;
    let p = pings.expect("ping figures");
    assert_eq!((p.sent, p.answered, p.failures), (102, 100, 2));
    let near = |v: Option<f64>, want: f64| (v.unwrap() - want).abs() <= want * 0.011;
    assert!(near(p.p50_ms, 50.0), "{p:?}");
    assert!(near(p.p99_ms, 99.0), "{p:?}");
    assert_eq!(p.max_ms, Some(100.0));
    assert_eq!(p.failure_windows.len(), 1);
    assert_eq!(p.failure_windows[0].window, "MOVING seq 0");
    assert_eq!(p.failure_windows[0].failures, 2);
    // No PING, no figures.
    let f = Fixture::new();
    let pings = f.summary("x").pings;
    assert!(pings.is_none());
}

#[test]
fn the_handoff_line_names_its_destination() {
    let mut f = Fixture::after_moving();
    let step = f.handoff(
        0.3,
        Outcome::SteppedSideways {
            to: "127.0.0.3".parse().unwrap(),
            at: Duration::from_millis(300),
        },
    );
    let WatchLine::Handoff(line::Handoff { to, .. }) = &step.lines[0] else {
        panic!()
    };
    assert_eq!(to.as_deref(), Some("127.0.0.3"));
}

const MOVING_2: &[u8] = b">4\r\n$6\r\nMOVING\r\n:2\r\n:15\r\n_\r\n";

/// The dry-run found the new address, 127.0.0.3, at `at` after `polls` polls.
fn moved_to_3(at: Duration, polls: u32) -> Outcome {
    let to = "127.0.0.3".parse().unwrap();
    Outcome::Moved { to, at, polls }
}

fn push_labels(step: &Step) -> Vec<Label> {
    match &step.lines[0] {
        WatchLine::Push(line::Push { labels, .. }) => labels.clone(),
        other => panic!("{other:?}"),
    }
}

fn push_rel(step: &Step) -> Rel {
    match &step.lines[0] {
        WatchLine::Push(line::Push { rel, .. }) => rel.clone().expect("an offset"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_connections_lines_are_measured_from_what_it_received_itself() {
    let mut f = Fixture::new();
    f.at(
        0.0,
        2,
        What::Connected(event::Connected {
            addr: "127.0.0.3:6379".parse().unwrap(),
            tls: false,
            endpoint: "db:6379".into(),
        }),
    );
    f.frame(1.0, MOVING, false);
    // Another connection's MIGRATING is the latest event, but not one connection 1 received.
    f.at(
        2.0,
        2,
        What::Frame(event::Frame {
            record: record(MIGRATING),
            early: false,
        }),
    );
    let step = f.at(
        3.0,
        1,
        What::Frame(event::Frame {
            record: record(b">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n"),
            early: false,
        }),
    );
    let rel = push_rel(&step);
    assert_eq!(rel.to, "MOVING seq 0");
    assert!((rel.s - 2.0).abs() < 1e-6, "{rel:?}");
}

#[test]
fn a_moving_replaced_on_its_connection_names_the_one_that_superseded_it() {
    let mut f = Fixture::after_moving();
    f.frame(0.5, MOVING_2, false);
    let rows = summary_rows(&f);
    assert_eq!(rows[0].superseded_by.as_deref(), Some("MOVING seq 2"));
    assert_eq!(rows[1].superseded_by, None);
}

#[test]
fn the_summary_says_how_long_the_watch_was_in_scenario_seconds() {
    let mut f = Fixture::new();
    let summary = |f: &Fixture| match f.tl.summary(
        f.t0 + Duration::from_millis(1500),
        SystemTime::UNIX_EPOCH,
        "x",
    ) {
        WatchLine::Summary(s) => s,
        _ => unreachable!(),
    };
    assert_eq!(summary(&f).scenario_s, None, "at real speed, t says it");
    f.tl.set_clock(ScenarioClock::new(4.0).unwrap());
    let s = summary(&f);
    assert!((s.t - 1.5).abs() < 1e-6);
    assert!((s.scenario_s.unwrap() - 6.0).abs() < 1e-6, "{s:?}");
}

#[test]
fn a_late_arrival_never_shows_a_time_before_the_line_above_it() {
    let mut f = Fixture::new();
    let stamped = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
    let seen = |f: &mut Fixture, s: f64, wall: SystemTime| {
        let step = f.tl.observe(Observation {
            at: f.t0 + Duration::from_secs_f64(s),
            wall,
            conn: 1,
            what: What::Frame(event::Frame {
                record: record(MOVING),
                early: false,
            }),
        });
        (step.lines[0].t(), step.lines[0].at().to_string())
    };
    let later = seen(&mut f, 2.0, stamped(2));
    // Stamped earlier on another thread, arrived after.
    let earlier = seen(&mut f, 1.0, stamped(1));
    assert_eq!(earlier, later);
}
