//! The judge on hand-built observations: each rule, each "what could the client know" condition.

use super::*;
use std::net::{IpAddr, SocketAddr};

const OLD: &str = "127.0.0.2:12000";
const NEW: &str = "127.0.0.3:12000";
const NAME: &str = "db.example.test";

pub(super) fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// A client connection (lib `lib/1`), opted in with `internal-fqdn`.
pub(super) fn conn(id: u64, server: &str, opened: f64, reached: Reached) -> Connection {
    let client = SocketAddr::new(ip("127.0.0.1"), 40000 + id as u16);
    let opt_in = OptIn::Accepted {
        endpoint_type: Some("internal-fqdn".into()),
    };
    let mut c = Connection::opened(id, (client, addr(server)), opened, reached, opt_in);
    c.lib_name = Some("lib".into());
    c.lib_ver = Some("1".into());
    c
}

fn by_name() -> Reached {
    Reached::Name { name: NAME.into() }
}

pub(super) fn got(mut c: Connection, at: f64) -> Connection {
    c.received.push(Received {
        notification: 0,
        at,
    });
    c
}

fn closed(mut c: Connection, at: f64, by: Side) -> Connection {
    c.closed = Some(Closed { at, by });
    c
}

/// A MOVING seq 0 at 0 on the old proxy (window 15 s, `target`), closed at 16.6 s, DNS naming
/// the old proxy from the start.
fn world(target: Target, connections: Vec<Connection>) -> Observations {
    Observations {
        source: "test".into(),
        connections,
        notifications: vec![Notification {
            at: 0.0,
            kind: "MOVING".into(),
            seq: Some(0),
            window: 15.0,
            target: Some(target),
            retiring: vec![addr(OLD)],
            moves: Vec::new(),
        }],
        closes: vec![NodeClose {
            at: 16.6,
            server: addr(OLD),
        }],
        dns: vec![DnsAnswer {
            at: -5.0,
            name: NAME.into(),
            records: vec![ip("127.0.0.2")],
            to: None,
            ttl: None,
        }],
        unread_dns_ports: Vec::new(),
        client_process: None,
        stalls: Vec::new(),
        speed: None,
        publications: Vec::new(),
        ended: None,
    }
}

/// redis-py's single-proxy run: recycled at half the window onto the retiring proxy, cut by the
/// close, reconnected to the new proxy after it.
fn recycle_run(reached: Reached) -> Observations {
    let first = closed(
        got(conn(1, OLD, -3.0, reached.clone()), 0.0),
        7.5,
        Side::Client,
    );
    let second = closed(
        got(conn(2, OLD, 7.5, reached.clone()), 7.5),
        16.6,
        Side::Server,
    );
    let third = conn(3, NEW, 16.7, reached);
    world(Target::Null, vec![first, second, third])
}

fn rule<'a>(g: &'a Grade, name: &str) -> &'a Rule {
    g.clients[0].notifications[0]
        .rules
        .iter()
        .find(|r| r.rule == name)
        .unwrap()
}

fn verdicts(g: &Grade) -> Vec<(String, String)> {
    g.clients[0].notifications[0]
        .moving
        .as_ref()
        .unwrap()
        .verdicts
        .iter()
        .map(|v| (v.verdict.clone(), v.text.clone()))
        .collect()
}

#[test]
fn by_address_with_a_null_target_staying_until_the_close_is_a_pass() {
    let g = judge(&recycle_run(Reached::Address));
    let r = rule(&g, "moved-before-close");
    assert!(r.held, "{r:?}");
    assert!(
        r.detail.starts_with("stayed: nothing else was offered"),
        "{r:?}"
    );
    assert!(r.detail.contains("by address 127.0.0.2:12000"), "{r:?}");
    assert!(r.detail.contains("target was null"), "{r:?}");
    let v = verdicts(&g);
    assert_eq!(v[0].0, "recycled");
    assert_eq!(
        v[0].1,
        "recycled at +7.5 s after its MOVING seq 0 onto the same retiring proxy"
    );
    assert_eq!(v[1].0, "stayed");
    assert!(v[1]
        .1
        .starts_with("stayed: nothing else was offered; cut by the close"));
    assert_eq!(g.counts.fail, 0, "{}", g.table());
}

#[test]
fn by_name_with_dns_naming_another_proxy_before_the_close_fails() {
    let mut obs = recycle_run(by_name());
    let answer = |at: f64, r: &str, to: Option<&str>| DnsAnswer {
        at,
        name: format!("{NAME}."),
        records: vec![ip(r)],
        to: to.map(ip),
        ttl: None,
    };
    obs.dns.push(answer(7.5, "127.0.0.2", Some("127.0.0.1")));
    obs.dns.push(answer(9.7, "127.0.0.3", None));
    obs.dns.push(answer(16.7, "127.0.0.3", Some("127.0.0.1")));
    let g = judge(&obs);
    let r = rule(&g, "moved-before-close");
    assert!(!r.held, "{r:?}");
    assert!(
        r.detail.contains(
            "DNS named 127.0.0.3 at +9.7 s after the MOVING seq 0, 6.9 s before the close"
        ),
        "{r:?}"
    );
    let m = g.clients[0].notifications[0].moving.as_ref().unwrap();
    assert!(m
        .known
        .iter()
        .any(|k| k
            == "resolved db.example.test. -> 127.0.0.2 (stale) at +7.5 s after the MOVING seq 0"));
    // The answer after the close is not an offer, and not shown as one.
    assert!(!m.known.iter().any(|k| k.contains("+16.7")), "{m:?}");
    let v = verdicts(&g);
    assert_eq!(v[0].0, "recycled");
    assert_eq!(v[1].0, "cut");
    // Measured from the connection's own (re-sent) MOVING, and saying so.
    assert_eq!(
        v[1].1,
        "cut by the close at +9.1 s after its MOVING seq 0 (re-sent); moved to 127.0.0.3 after the close"
    );
    assert!(!g.passed);
}

#[test]
fn by_name_with_dns_stale_until_the_close_stays() {
    let g = judge(&recycle_run(by_name()));
    let r = rule(&g, "moved-before-close");
    assert!(r.held, "{r:?}");
    assert!(r
        .detail
        .contains("DNS named only the retiring address until the close"));
}

/// A capture sees DNS only when somebody asks: an answer given at +7.5 s with a TTL of 5 s says
/// nothing of what DNS named from +12.5 s to the close at +16.6 s.
fn captured_run(answers: &[(f64, u32)]) -> Observations {
    let mut obs = recycle_run(by_name());
    obs.dns = answers
        .iter()
        .map(|&(at, ttl)| DnsAnswer {
            at,
            name: NAME.into(),
            records: vec![ip("127.0.0.2")],
            to: Some(ip("127.0.0.1")),
            ttl: Some(ttl),
        })
        .collect();
    obs
}

#[test]
fn a_capture_whose_last_answer_went_stale_before_the_close_is_not_judged() {
    let g = judge(&captured_run(&[(-5.0, 5), (7.5, 5)]));
    let r = rule(&g, "moved-before-close");
    assert_eq!(r.verdict, Verdict::NotJudged, "{r:?}");
    assert!(
        r.detail
            .contains("what DNS named from +12.5 s after the MOVING seq 0 on was not seen"),
        "{r:?}"
    );
    let m = g.clients[0].notifications[0].moving.as_ref().unwrap();
    assert_eq!(m.dns_unseen_from, Some(12.5));
    assert!(
        !m.known.iter().any(|k| k.contains("until the close")),
        "{m:?}"
    );
}

#[test]
fn a_capture_whose_answers_cover_the_window_still_judges_a_stay() {
    // Somebody asked again at +12.0 s: that answer holds to +17.0 s, past the close.
    let g = judge(&captured_run(&[(-5.0, 5), (7.5, 5), (12.0, 5)]));
    let r = rule(&g, "moved-before-close");
    assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
    assert!(r.detail.contains("until the close"), "{r:?}");
}

#[test]
fn a_sibling_already_advertised_before_the_moving_is_an_offer() {
    let mut obs = recycle_run(by_name());
    obs.dns[0].records.push(ip("127.0.0.3"));
    let g = judge(&obs);
    assert!(!rule(&g, "moved-before-close").held);
}

#[test]
fn by_address_ignores_dns_but_a_named_successor_is_an_offer() {
    let mut obs = recycle_run(Reached::Address);
    obs.dns.push(DnsAnswer {
        at: 9.7,
        name: NAME.into(),
        records: vec![ip("127.0.0.3")],
        to: None,
        ttl: None,
    });
    assert!(rule(&judge(&obs), "moved-before-close").held);
    obs.notifications[0].target = Some(Target::parse(NEW));
    let r = judge(&obs);
    let r = rule(&r, "moved-before-close");
    assert!(!r.held, "{r:?}");
    assert!(r.detail.contains("target was 127.0.0.3:12000"), "{r:?}");
    // A target naming the retiring proxy itself offers nothing.
    obs.notifications[0].target = Some(Target::parse(OLD));
    assert!(rule(&judge(&obs), "moved-before-close").held);
    // A name is something to resolve: an offer.
    obs.notifications[0].target = Some(Target::parse("node3.example.test:12000"));
    assert!(!rule(&judge(&obs), "moved-before-close").held);
}

#[test]
fn a_move_before_the_close_is_named_with_its_margin() {
    let old = closed(got(conn(1, OLD, -3.0, by_name()), 0.0), 10.5, Side::Client);
    let new = conn(2, NEW, 10.4, by_name());
    let g = judge(&world(Target::Null, vec![old, new]));
    let v = verdicts(&g);
    assert_eq!(v[0].0, "moved");
    assert_eq!(
        v[0].1,
        "moved to 127.0.0.3 at +10.4 s after its MOVING seq 0, 6.2 s before the close"
    );
    let r = rule(&g, "moved-before-close");
    assert!(
        r.held
            && r.detail
                .starts_with("no connection on the retiring address")
    );
}

#[test]
fn offsets_are_from_the_connections_own_moving() {
    // This connection heard the MOVING 2 s after it was first pushed.
    let c = closed(
        got(conn(1, OLD, -3.0, Reached::Address), 2.0),
        16.6,
        Side::Server,
    );
    let g = judge(&world(Target::Null, vec![c]));
    assert!(verdicts(&g)[0]
        .1
        .contains("cut by the close at +14.6 s after its MOVING seq 0"));
}

#[test]
fn opt_in_counts_refusals_and_leaves_unseen_handshakes_out() {
    let mut a = got(conn(1, OLD, -3.0, Reached::Address), 0.0);
    let mut b = conn(2, OLD, -3.0, Reached::Address);
    b.opt_in = OptIn::Unknown;
    let g = judge(&world(Target::Null, vec![a.clone(), b.clone()]));
    let r = rule(&g, "opt-in");
    assert!(r.held, "{r:?}");
    assert!(r.detail.contains("1 whose handshake was not observed"));
    a.opt_in = OptIn::NotSent;
    let g = judge(&world(Target::Null, vec![a, b]));
    assert!(!rule(&g, "opt-in").held);
}

/// `optin-lost`: connections that asked and were refused by the server did their part. The
/// rule passes and says how many were refused; one that never asked still fails it.
#[test]
fn opt_in_counts_a_refused_connection_as_having_asked() {
    let used = got(conn(1, OLD, -3.0, Reached::Address), 0.0);
    let refused: Vec<Connection> = (2..5)
        .map(|id| {
            let mut c = conn(id, OLD, 2.1, Reached::Address);
            c.opt_in = OptIn::Refused;
            c
        })
        .collect();
    let mut all = vec![used.clone()];
    all.extend(refused.iter().cloned());
    let g = judge(&world(Target::Null, all.clone()));
    let r = rule(&g, "opt-in");
    assert!(r.held, "{r:?}");
    assert_eq!(
        r.detail,
        "0 connection(s) never opted in; 3 asked and were refused by the server"
    );
    assert_eq!(g.clients[0].never_opted_in, 0);
    assert_eq!(g.clients[0].refused_opt_in, 3);
    assert!(
        g.table()
            .contains("never opted in: 0, refused by the server: 3,"),
        "{}",
        g.table()
    );
    let mut silent = conn(5, OLD, 2.1, Reached::Address);
    silent.opt_in = OptIn::NotSent;
    all.push(silent);
    let r = rule(&judge(&world(Target::Null, all)), "opt-in").clone();
    assert!(!r.held, "{r:?}");
    assert_eq!(
        r.detail,
        "1 connection(s) never opted in; 3 asked and were refused by the server"
    );
    let mut one = refused[0].clone();
    one.id = 9;
    let r = rule(&judge(&world(Target::Null, vec![used, one])), "opt-in").clone();
    assert!(
        r.detail
            .ends_with("; 1 asked and was refused by the server"),
        "{r:?}"
    );
}

/// A loaded client gives up on a handshake (its own timeout, before its opt-in) and closes that
/// connection before the maintenance: it could not miss the MOVING and is not counted. One
/// closed after the MOVING went out still is, and so is one opened after it.
#[test]
fn opt_in_leaves_out_connections_closed_before_the_notification() {
    let mut abandoned = conn(2, OLD, -3.0, Reached::Address);
    abandoned.opt_in = OptIn::NotSent;
    let used = got(conn(1, OLD, -3.0, Reached::Address), 0.0);
    let before = closed(abandoned.clone(), -2.0, Side::Client);
    let g = judge(&world(Target::Null, vec![used.clone(), before]));
    let r = rule(&g, "opt-in");
    assert!(r.held, "{r:?}");
    assert_eq!(
        g.clients[0].never_opted_in, 1,
        "the client's totals keep it"
    );
    let after = closed(abandoned.clone(), 0.5, Side::Client);
    let g = judge(&world(Target::Null, vec![used.clone(), after]));
    assert!(!rule(&g, "opt-in").held);
    let mut later = conn(3, NEW, 16.7, Reached::Address);
    later.opt_in = OptIn::NotSent;
    let g = judge(&world(Target::Null, vec![used, later]));
    assert!(!rule(&g, "opt-in").held);
}

#[test]
fn lost_commands_count_and_say_when_there_was_nowhere_else_to_go() {
    let mut c = got(conn(1, OLD, -3.0, Reached::Address), 0.0);
    c.traffic.push(Traffic {
        at: 16.6,
        commands: 0,
        errors: 0,
        unanswered: 2,
    });
    let c = closed(c, 16.6, Side::Server);
    let g = judge(&world(Target::Null, vec![c.clone()]));
    let r = rule(&g, "no-lost-commands");
    assert!(!r.held, "{r:?}");
    assert!(
        r.detail
            .contains("(2 of them cut by the close on connections that had nowhere else to go)"),
        "{r:?}"
    );
    let g = judge(&world(Target::parse(NEW), vec![c]));
    let r = rule(&g, "no-lost-commands");
    assert!(!r.held && !r.detail.contains("nowhere"), "{r:?}");
}

/// The connection that got the MOVING at 0 s and was closed by the client at 1 s.
fn acted_on_the_moving() -> Connection {
    let got_it = got(conn(1, OLD, -3.0, Reached::Address), 0.0);
    closed(got_it, 1.0, Side::Client)
}

#[test]
fn a_storm_of_reconnects_fails() {
    let mut conns = vec![acted_on_the_moving()];
    for i in 0..4 {
        let t = 1.0 + f64::from(i);
        conns.push(closed(
            conn(2 + u64::from(i as u8), NEW, t, Reached::Address),
            t + 0.5,
            Side::Client,
        ));
    }
    let g = judge(&world(Target::Null, conns));
    let r = rule(&g, "no-storm");
    assert!(!r.held, "{r:?}");
}

#[test]
fn acting_on_a_re_sent_moving_again_is_a_loop() {
    let mut conns = vec![acted_on_the_moving()];
    for i in 0..2u64 {
        let t = 1.0 + i as f64;
        conns.push(closed(
            got(conn(2 + i, OLD, t, Reached::Address), t),
            t + 0.5,
            Side::Client,
        ));
    }
    let g = judge(&world(Target::Null, conns));
    let r = rule(&g, "no-loop");
    assert!(!r.held, "{r:?}");
    assert!(r.detail.starts_with("2 of 2"));
}

/// go-redis's handoff, make before break: at +7.0 s it opens two replacements on the retiring
/// proxy (DNS still names it), which get the re-sent copy, and closes the old connection 5 ms
/// later; at +14 s it hands the replacements off again. They count as opened after it acted,
/// though they opened before its first close: a loop. A connection the pool opened long before
/// that first close and closed at it is not.
#[test]
fn a_make_before_break_replacement_acting_again_is_a_loop() {
    let pool = closed(
        got(conn(9, OLD, 0.002, Reached::Address), 0.002),
        7.005,
        Side::Client,
    );
    let mut conns = vec![
        closed(
            got(conn(1, OLD, -3.0, Reached::Address), 0.0),
            7.005,
            Side::Client,
        ),
        pool,
    ];
    for i in 0..2u64 {
        conns.push(closed(
            got(conn(2 + i, OLD, 7.0, Reached::Address), 7.001),
            14.0,
            Side::Client,
        ));
    }
    let g = judge(&world(Target::Null, conns));
    let r = rule(&g, "no-loop");
    assert!(!r.held, "{r:?}");
    assert!(r.detail.starts_with("2 of 3"), "{r:?}");
}

#[test]
fn clients_are_grouped_by_library_else_name_else_host() {
    let mut a = conn(1, OLD, 0.0, Reached::Address);
    let mut b = conn(2, OLD, 0.0, Reached::Address);
    b.lib_name = None;
    b.lib_ver = None;
    b.name = Some("worker".into());
    a.lib_ver = None;
    let mut c = conn(3, OLD, 0.0, Reached::Address);
    c.lib_name = None;
    c.lib_ver = None;
    let g = judge(&world(Target::Null, vec![a, b, c]));
    let names: Vec<&str> = g.clients.iter().map(|c| c.client.as_str()).collect();
    assert_eq!(names, ["127.0.0.1", "lib", "worker"]);
}

#[test]
fn a_client_without_a_resolver_naming_the_simulator_is_not_passed_for_staying() {
    let mut obs = recycle_run(Reached::Address);
    let process = ClientProcess {
        program: "python".into(),
        exit_code: None,
        signal: None,
        at: 18.0,
        stopped: true,
        stderr_tail: vec![],
        output_file: None,
        no_resolver: None,
    };
    obs.client_process = Some(process.clone());
    // With its own resolver, a client that reached the proxy by address stayed by choice.
    assert_eq!(
        rule(&judge(&obs), "moved-before-close").verdict,
        Verdict::Pass
    );
    obs.client_process = Some(ClientProcess {
        no_resolver: Some("cannot serve DNS on 127.0.53.1:53".into()),
        ..process
    });
    let r = rule(&judge(&obs), "moved-before-close").clone();
    assert_eq!(r.verdict, Verdict::NotJudged, "{r:?}");
    assert!(
        r.detail.contains("no resolver naming the simulator's DNS"),
        "{r:?}"
    );
}

/// A client that ignored SIGTERM is killed after the grace, past the scenario's end: the grade
/// says the signal and when, in the words the report's heading uses (the terminal said
/// "scenario ended (+11.0 s)" where the page said "signal 9").
#[test]
fn a_client_stopped_by_maintwatch_is_said_as_the_report_says_it() {
    let mut obs = recycle_run(by_name());
    let process = ClientProcess {
        signal: Some(9),
        exit_code: None,
        stopped: true,
        ..died("app", 11.004, "")
    };
    obs.client_process = Some(process.clone());
    let g = judge(&obs);
    let r = g
        .rules
        .iter()
        .find(|r| r.rule == "survives")
        .unwrap()
        .clone();
    assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
    assert_eq!(
        r.detail,
        "still running when the scenario ended; stopped by maintwatch (signal 9) at +11.0 s"
    );
    assert!(r.detail.contains(&process.how_it_ended()));
}

/// A client process that exited with 1 at `at`, its stderr ending with `last`.
fn died(program: &str, at: f64, last: &str) -> ClientProcess {
    ClientProcess {
        program: program.into(),
        exit_code: Some(1),
        signal: None,
        at,
        stopped: false,
        stderr_tail: vec![last.into()],
        output_file: None,
        no_resolver: None,
    }
}

#[test]
fn the_client_process_is_a_fact_of_the_grade_and_observations_round_trip() {
    let mut obs = recycle_run(by_name());
    obs.client_process = Some(died("python", 12.0, "Traceback"));
    let g = judge(&obs);
    assert_eq!(g.client_process, obs.client_process);
    let table = g.table();
    assert!(
        table.contains("client process python exited 1 at +12 s: Traceback\n  stderr| Traceback"),
        "{table}"
    );
    assert!(
        table.find("client process").unwrap() < table.find("rule").unwrap_or(usize::MAX),
        "the process comes before the rules: {table}"
    );
    let text = serde_json::to_string(&obs).unwrap();
    let back: Observations = serde_json::from_str(&text).unwrap();
    assert_eq!(back, obs);
    assert_eq!(judge(&back), g);
}

pub(super) fn verdict_of(g: &Grade, name: &str) -> (Verdict, String) {
    let r = rule(g, name);
    (r.verdict, r.detail.clone())
}

/// The rule's reason, once its verdict is asserted to be `want` (the reason shown if not).
pub(super) fn judged(g: &Grade, name: &str, want: Verdict) -> String {
    let (v, why) = verdict_of(g, name);
    assert_eq!(v, want, "{name}: {why}");
    why
}

/// A failover: FAILING_OVER at 4 s (window 2 s), FAILED_OVER at 6 s; stalls of 1.5 s at 1 s
/// (baseline), 4.5 s (inside the window) and 27 s (after the 20 s tail); one connection.
pub(super) fn failover(waits: Vec<Wait>) -> Observations {
    let mut c = got(conn(1, OLD, 0.0, by_name()), 4.0);
    c.waits = waits;
    let stall = |at: f64| Stall {
        at,
        until: at + 1.5,
        seconds: 1.5,
        servers: vec![addr(OLD)],
    };
    let note = |at: f64, kind: &str, seq: i64, window: f64| Notification {
        at,
        kind: kind.into(),
        seq: Some(seq),
        window,
        target: None,
        retiring: vec![addr(OLD)],
        moves: Vec::new(),
    };
    Observations {
        source: "test".into(),
        connections: vec![c],
        notifications: vec![
            note(4.0, "FAILING_OVER", 1, 2.0),
            note(6.0, "FAILED_OVER", 2, 0.0),
        ],
        stalls: vec![stall(1.0), stall(4.5), stall(27.0)],
        ..Observations::default()
    }
}

/// [`failover`] with one wait in each stall (at 1 s, 4.5 s and 27 s): how long it waited and
/// whether it gave up.
fn failover_waiting(waited: [(f64, bool); 3]) -> Observations {
    let at = [1.0, 4.5, 27.0];
    let waits = at.into_iter().zip(waited);
    failover(
        waits
            .map(|(at, (w, gave_up))| wait(at, w, gave_up))
            .collect(),
    )
}

pub(super) fn wait(at: f64, waited: f64, gave_up: bool) -> Wait {
    Wait {
        at,
        waited,
        gave_up,
        writes: Vec::new(),
    }
}

/// Gives up after 1 s at the baseline and after the tail, waits inside the window: relaxed as
/// the reference does.
#[test]
fn a_client_that_relaxes_and_restores_passes_both_timeout_rules() {
    let obs = failover_waiting([(1.0, true), (1.5, false), (1.0, true)]);
    let g = judge(&obs);
    let why = judged(&g, "relaxed-timeout", Verdict::Pass);
    assert!(why.contains("waited 1.5 s through a 1.5 s stall at +0.5 s inside the FAILING_OVER seq 1's window, past its own timeout (1.0 s)"), "{why}");
    let why = judged(&g, "timeout-restored", Verdict::Pass);
    assert!(why.contains("back to its own timeout (1.0 s)"), "{why}");
    assert_eq!(g.verdict, Verdict::Pass);
    assert!(g.passed);
}

#[test]
fn a_client_that_never_relaxes_fails_relaxed_timeout() {
    let obs = failover_waiting([(1.0, true), (1.0, true), (1.0, true)]);
    let g = judge(&obs);
    let why = judged(&g, "relaxed-timeout", Verdict::Fail);
    assert!(
        why.starts_with("gave up after 1.0 s on a reply held 1.5 s"),
        "{why}"
    );
    assert_eq!(g.verdict, Verdict::Fail);
    assert_eq!(g.verdict.exit_code(), crate::exit::FAILURE);
}

#[test]
fn a_client_that_relaxes_forever_fails_timeout_restored() {
    let obs = failover_waiting([(1.0, true), (1.5, false), (1.5, false)]);
    let why = judged(&judge(&obs), "timeout-restored", Verdict::Fail);
    assert!(why.contains("still relaxed"), "{why}");
    assert!(why.contains("plus the 20 s tail"), "{why}");
}

/// Without a reaction at the baseline, waiting inside the window proves nothing: the client may
/// have no timeout at all.
#[test]
fn no_reaction_at_the_baseline_leaves_both_timeout_rules_not_judged() {
    let obs = failover_waiting([(1.5, false), (1.5, false), (1.5, false)]);
    let g = judge(&obs);
    for name in ["relaxed-timeout", "timeout-restored"] {
        let why = judged(&g, name, Verdict::NotJudged);
        assert_eq!(
            why,
            "the client's timeout was never seen: during the baseline stall (1.5 s at +1.0 s) it neither closed the connection nor wrote on it again while the reply was held: its timeout is longer than the stall, it has none, or after giving up it sent nothing more on that connection before the stall ended"
        );
    }
    assert_eq!(g.verdict, Verdict::NotJudged);
    assert!(!g.passed);
    assert_eq!(g.verdict.exit_code(), crate::exit::NOT_JUDGED);
    assert!(
        g.table().contains("NOT JUDGED relaxed-timeout"),
        "{}",
        g.table()
    );
}

#[test]
fn no_stall_and_a_sped_up_run_are_not_judged() {
    let mut obs = failover(vec![wait(1.0, 1.0, true)]);
    obs.stalls.truncate(1);
    let g = judge(&obs);
    let (v, why) = verdict_of(&g, "relaxed-timeout");
    assert_eq!(v, Verdict::NotJudged);
    assert!(why.starts_with("no stall was seen inside"), "{why}");
    // A run without any stall never tested a timeout: both rules are left out, said so, and
    // counted neither way.
    let mut obs = failover(vec![]);
    obs.stalls.clear();
    let g = judge(&obs);
    let names: Vec<&str> = g.not_exercised.iter().map(|r| r.rule.as_str()).collect();
    assert_eq!(names, ["relaxed-timeout", "timeout-restored"]);
    assert!(g.all_rules().all(|r| !r.rule.contains("timeout")));
    assert_eq!(g.verdict, Verdict::Pass, "{}", g.table());
    assert!(
        g.table().contains(
            "not exercised: relaxed-timeout, timeout-restored (the server never held a reply"
        ),
        "{}",
        g.table()
    );
    let mut obs = failover(vec![wait(1.0, 1.0, true), wait(27.0, 1.0, true)]);
    obs.speed = Some(10.0);
    let (v, why) = verdict_of(&judge(&obs), "timeout-restored");
    assert_eq!(v, Verdict::NotJudged);
    assert!(why.contains("10x real time"), "{why}");
}

/// A stall inside the window with no command waiting: nothing to judge.
#[test]
fn an_idle_client_inside_the_window_is_not_judged() {
    let obs = failover(vec![wait(1.0, 1.0, true), wait(27.0, 1.0, true)]);
    let (v, why) = verdict_of(&judge(&obs), "relaxed-timeout");
    assert_eq!(v, Verdict::NotJudged);
    assert!(
        why.starts_with("no command of a connection that got the FAILING_OVER seq 1 was waiting"),
        "{why}"
    );
}

/// The no-closing-notification scenario: MIGRATING at 5 s (window 2 s) and never a MIGRATED;
/// stalls of 1.5 s at 1 s (baseline) and 5.2 s (inside the window), and of 3 s at 36 s, after
/// the 30 s backstop; one connection of `lib`, which received the MIGRATING at `receipt`.
fn no_closing(lib: &str, receipt: f64, waits: Vec<Wait>) -> Observations {
    let mut c = got(conn(1, OLD, 0.0, by_name()), receipt);
    c.lib_name = Some(lib.into());
    c.waits = waits;
    let stall = |at: f64, seconds: f64| Stall {
        at,
        until: at + seconds,
        seconds,
        servers: vec![addr(OLD)],
    };
    Observations {
        source: "test".into(),
        connections: vec![c],
        notifications: vec![Notification {
            at: 5.0,
            kind: "MIGRATING".into(),
            seq: Some(0),
            window: 2.0,
            target: None,
            retiring: vec![addr(OLD)],
            moves: Vec::new(),
        }],
        stalls: vec![stall(1.0, 1.5), stall(5.2, 1.5), stall(36.0, 3.0)],
        ..Observations::default()
    }
}

/// The baseline and the window as every relaxing client shows them, then `last` at the backstop.
fn relaxing_then(last: Option<Wait>) -> Vec<Wait> {
    let mut w = vec![wait(1.0, 1.0, true), wait(5.2, 1.5, false)];
    w.extend(last);
    w
}

/// Without a closing notification, the stall after the 30 s backstop decides: given up after the
/// client's own timeout, PASS; waited through, FAIL with how long after the MIGRATING it still
/// was relaxed; no command waiting, NOT JUDGED naming what is missing.
#[test]
fn the_backstop_stall_judges_a_window_that_never_closes() {
    let restores = no_closing("lib", 5.0, relaxing_then(Some(wait(36.0, 1.0, true))));
    let why = judged(&judge(&restores), "timeout-restored", Verdict::Pass);
    assert_eq!(why, "gave up after 1.0 s on a reply held 3.0 s at +31.0 s after the MIGRATING seq 0 (no closing notification: the 30 s backstop): back to its own timeout (1.0 s)");

    let forever = no_closing("lib", 5.0, relaxing_then(Some(wait(36.0, 3.0, false))));
    let g = judge(&forever);
    let why = judged(&g, "timeout-restored", Verdict::Fail);
    assert!(
        why.starts_with("waited 3.0 s through a 3.0 s stall at +31.0 s after the MIGRATING seq 0"),
        "{why}"
    );
    assert!(
        why.ends_with(": still relaxed 31 s after the opening notification with no closing one (backstop 30 s)"),
        "{why}"
    );
    assert_eq!(verdict_of(&g, "relaxed-timeout").0, Verdict::Pass);

    let idle = no_closing("lib", 5.0, relaxing_then(None));
    let why = judged(&judge(&idle), "timeout-restored", Verdict::NotJudged);
    assert!(
        why.starts_with("no command of the client was waiting during the 3.0 s stall at +31.0 s after the MIGRATING seq 0"),
        "{why}"
    );
}

/// A wait no longer than the client's own timeout plus a timer's lateness shows nothing either
/// way: a command sent near the end of the stall, or a timer a loaded machine fired late. Only a
/// wait clearly past the timeout is relaxed.
#[test]
fn a_wait_within_a_late_timer_of_the_own_timeout_is_not_judged() {
    let late = no_closing("lib", 5.0, relaxing_then(Some(wait(37.9, 1.1, false))));
    let why = judged(&judge(&late), "timeout-restored", Verdict::NotJudged);
    assert!(
        why.starts_with("no command waited longer than its own timeout (1.0 s) during the 3.0 s stall at +31.0 s after the MIGRATING seq 0 (the longest waited 1.1 s)"),
        "{why}"
    );
    let past = no_closing("lib", 5.0, relaxing_then(Some(wait(37.5, 1.5, false))));
    assert_eq!(
        verdict_of(&judge(&past), "timeout-restored").0,
        Verdict::Fail
    );
}

/// The backstop counts from when the client received the opening notification: a stall that
/// begins less than 30 s after the receipt tells nothing about it.
#[test]
fn the_backstop_counts_from_the_clients_receipt() {
    let obs = no_closing("lib", 6.5, relaxing_then(Some(wait(36.0, 3.0, false))));
    let why = judged(&judge(&obs), "timeout-restored", Verdict::NotJudged);
    assert!(
        why.starts_with(
            "no stall was seen after +31.5 s (no closing notification: the 30 s backstop)"
        ),
        "{why}"
    );
}

/// Jedis documents a 60 s `relaxedWindowMaxDuration`: at a stall 31 s after the MIGRATING the
/// reason names both bounds, and the verdict still follows the 30 s backstop. A library without
/// a bound of its own, or a window that closed, gets no such words.
#[test]
fn a_library_bound_longer_than_the_stall_is_named_beside_the_backstop() {
    let jedis = no_closing("jedis", 5.0, relaxing_then(Some(wait(36.0, 3.0, false))));
    let why = judged(&judge(&jedis), "timeout-restored", Verdict::Fail);
    assert!(
        why.ends_with("(backstop 30 s); Jedis documents its own bound, relaxedWindowMaxDuration 60 s, longer than these 31 s: the rule holds to the reference's 30 s backstop"),
        "{why}"
    );
    let restores = no_closing("jedis", 5.0, relaxing_then(Some(wait(36.0, 1.0, true))));
    let why = judged(&judge(&restores), "timeout-restored", Verdict::Pass);
    assert!(why.contains("Jedis documents its own bound"), "{why}");
    let other = no_closing("lib", 5.0, relaxing_then(Some(wait(36.0, 3.0, false))));
    let (_, why) = verdict_of(&judge(&other), "timeout-restored");
    assert!(!why.contains("documents"), "{why}");
    let mut closed = failover_waiting([(1.0, true), (1.5, false), (1.5, false)]);
    closed.connections[0].lib_name = Some("jedis".into());
    let (_, why) = verdict_of(&judge(&closed), "timeout-restored");
    assert!(!why.contains("documents"), "{why}");
}

/// node-redis 6.3.1 in single-proxy: it dies 0.09 s after the MOVING. `survives` fails and the
/// MOVING's rules, whose evidence ends at the close, are not judged.
#[test]
fn a_client_that_died_fails_survives_and_its_later_rules_are_not_judged() {
    let mut obs = recycle_run(Reached::Address);
    obs.client_process = Some(died(
        "node",
        0.09,
        "AssertionError [ERR_ASSERTION]: false == true",
    ));
    let g = judge(&obs);
    assert_eq!(g.rules[0].rule, "survives");
    assert_eq!(g.rules[0].verdict, Verdict::Fail);
    assert_eq!(
        g.rules[0].detail,
        "exited 1 at +0.1 s: AssertionError [ERR_ASSERTION]: false == true"
    );
    let (v, why) = verdict_of(&g, "moved-before-close");
    assert_eq!(v, Verdict::NotJudged);
    assert!(
        why.starts_with("the client process died at +0.1 s"),
        "{why}"
    );
    assert_eq!(verdict_of(&g, "opt-in").0, Verdict::Pass);
    assert_eq!(g.verdict, Verdict::Fail);
    let stopped = ClientProcess {
        stopped: true,
        signal: Some(15),
        exit_code: None,
        at: 18.0,
        ..obs.client_process.clone().unwrap()
    };
    obs.client_process = Some(stopped);
    let g = judge(&obs);
    assert_eq!(g.rules[0].verdict, Verdict::Pass);
    assert_eq!(verdict_of(&g, "moved-before-close").0, Verdict::Pass);
}

/// A capture without DNS: a cut connection reached in a way not seen, and a null target.
#[test]
fn a_cut_connection_reached_in_a_way_not_observed_is_not_judged() {
    let mut obs = recycle_run(Reached::Unknown);
    obs.dns.clear();
    let g = judge(&obs);
    let why = judged(&g, "moved-before-close", Verdict::NotJudged);
    assert!(
        why.contains("capture the resolver's port too (tcpdump ... or port 53)"),
        "{why}"
    );
    // The same with the MOVING naming a successor: the offer is seen, so it fails.
    let mut obs = recycle_run(Reached::Unknown);
    obs.notifications[0].target = Some(Target::Address(NEW.into()));
    assert_eq!(
        verdict_of(&judge(&obs), "moved-before-close").0,
        Verdict::Fail
    );
}

/// DNS answers to a host another client connected from too: which client asked cannot be told.
/// Where the MOVING offered nothing, the cut is NOT JUDGED with that reason, never a pass nor a
/// FAIL on DNS that may be the other client's; where the MOVING named a successor, it fails.
#[test]
fn a_cut_connection_whose_dns_was_not_told_apart_is_not_judged() {
    let shared = || Reached::SharedHost {
        name: NAME.into(),
        others: vec!["127.0.0.1".into()],
    };
    let mut obs = recycle_run(shared());
    obs.dns.push(DnsAnswer {
        at: 9.7,
        name: NAME.into(),
        records: vec![ip("127.0.0.3")],
        to: Some(ip("127.0.0.1")),
        ttl: None,
    });
    let g = judge(&obs);
    let why = judged(&g, "moved-before-close", Verdict::NotJudged);
    assert!(
        why.contains("a capture cannot tell which client asked"),
        "{why}"
    );
    assert!(
        why.contains("a client that does not name itself (127.0.0.1)"),
        "{why}"
    );
    assert!(!verdicts(&g).iter().any(|(word, _)| word == "stayed"));
    let mut obs = recycle_run(shared());
    obs.notifications[0].target = Some(Target::Address(NEW.into()));
    assert_eq!(
        verdict_of(&judge(&obs), "moved-before-close").0,
        Verdict::Fail
    );
}

/// A capture whose DNS is on a port not read: the reason names the port and the flag.
#[test]
fn dns_on_a_port_not_read_is_named_with_its_flag() {
    let mut obs = recycle_run(Reached::Unknown);
    obs.dns.clear();
    obs.unread_dns_ports = vec![5354, 40000];
    let why = judged(&judge(&obs), "moved-before-close", Verdict::NotJudged);
    assert!(
        why.contains("DNS on UDP ports 5354, 40000, which was not read"),
        "{why}"
    );
    assert!(
        why.ends_with("grade it again with --dns-port 5354 --dns-port 40000"),
        "{why}"
    );
}

#[test]
fn a_client_that_never_connected_is_never_a_pass() {
    let mut obs = recycle_run(by_name());
    obs.connections.clear();
    let g = judge(&obs);
    assert_eq!(g.verdict, Verdict::NotJudged);
    assert!(!g.passed);
    assert_eq!(g.counts, Counts::default());
    assert!(
        g.table().ends_with("grade: nothing was judged: the client never connected (check that it resolves the simulator's name and reaches its port)\n"),
        "{}",
        g.table()
    );
}

/// Every rule is registered once, by the name the grade JSON carries, with a docs line.
#[test]
fn the_rule_table_names_each_rule_once() {
    let names: Vec<&str> = rules::RULES.iter().map(|r| r.name()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "{names:?}");
    assert!(
        rules::RULES.iter().all(|r| !r.doc().is_empty()),
        "{names:?}"
    );
}
