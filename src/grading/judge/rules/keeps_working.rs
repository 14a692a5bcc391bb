//! `keeps-working`: after a frame the scenario sends as exact bytes (a `push P raw` step, which
//! is how every case of the robustness set sends its frame), the client's commands still reach
//! the server, on the same connection or a new one, with no pause longer than [`HUNG_S`], no
//! reconnect loop and no storm of new connections (scenarios/README.md, "The robustness set").
//!
//! Why commands read tell that replies came: the robustness apps' callers wait on each reply
//! before sending the next command, so a client whose reader died, or that waits forever on a
//! frame it cannot finish, stops sending; one that dropped the connection and reconnected sends
//! again on the new one. The server reads every command, so the pause is measured where the
//! commands arrive.
//!
//! Raw frames carry no sequence id the simulator numbers, so they have no notification grade:
//! the rule is about the run, and says what happened after the first frame.

use super::{Check, STORM_PER_CONNECTION};
use crate::grading::judge::{Observations, Rule};
use crate::observe::evidence::{Connection, Side};

/// The longest pause in the client's commands after the frame, real seconds, before it counts
/// as hung: the robustness apps give up on a reply after 1 s (their own timeout), and a
/// reconnect on loopback takes milliseconds; 3 s leaves a loaded machine twice that again.
pub const HUNG_S: f64 = 3.0;

/// Connections opened after the frame and closed again by the client before the end, per
/// connection open at the frame, before it is a reconnect loop: one replacement each that is
/// itself replaced once may be a client recovering by steps; more is a loop (the same bound as
/// `no-loop`'s).
pub const LOOP_CLOSES: usize = super::LOOP_REACTIONS;

/// The kind the simulator's evidence gives a frame sent as exact bytes.
pub const RAW: &str = "raw";

pub struct KeepsWorking;

impl Check for KeepsWorking {
    fn name(&self) -> &'static str {
        "keeps-working"
    }

    fn code(&self) -> &'static str {
        "kw"
    }

    fn doc(&self) -> &'static str {
        "after the first frame the scenario sends as exact bytes"
    }

    fn on_run(&self, obs: &Observations) -> Option<Rule> {
        let sent = obs.notifications.iter().any(|n| n.kind == RAW);
        if !sent {
            return None;
        }
        // When the client first had it: a push that waits for a connection's state goes out
        // after its step.
        let receipt = super::earliest(
            obs.connections
                .iter()
                .flat_map(|c| c.received.iter())
                .filter(|r| {
                    obs.notifications
                        .get(r.notification)
                        .is_some_and(|n| n.kind == RAW)
                })
                .map(|r| r.at),
        );
        Some(match receipt {
            Some(frame) => judge(obs, frame),
            None => Rule::not_judged(
                self.name(),
                "the frame reached none of its connections: none was opted in, or none was in the state the push waited for (`push P when STATE`: a pipeline, a MULTI, a BLPOP, a subscription)".into(),
            ),
        })
    }
}

/// The rule's result for a run whose first raw frame went out at `frame`.
fn judge(obs: &Observations, frame: f64) -> Rule {
    let name = KeepsWorking.name();
    let Some(p) = obs.client_process.as_ref() else {
        return Rule::not_judged(
            name,
            "the run's end was not observed: the rule needs the client process started by maintwatch (simulate -- CMD or certify)".into(),
        );
    };
    let busy_before = commands_at(obs).any(|t| t <= frame);
    if !busy_before {
        return Rule::not_judged(
            name,
            format!("no command of the client reached the server before the frame at +{frame:.1} s: the rule needs a client busy with commands (the robustness apps in tests/clients) and the traffic narrated (simulate --grade)"),
        );
    }
    if !p.stopped && obs.ended.is_none_or(|end| p.at < end) {
        return ended_on_its_own(p, frame);
    }
    // What the client did after the scenario's end is its shutdown (closes, a slow exit).
    let end = obs.ended.map_or(p.at, |e| e.min(p.at));
    let speed = obs.speed.unwrap_or(1.0);
    let mut faults = Vec::new();
    if let Some(storm) = storm(obs, frame, end) {
        faults.push(storm);
    }
    if let Some(looped) = reconnect_loop(obs, frame, end) {
        faults.push(looped);
    }
    let (gap, from) = longest_pause(obs, frame, end);
    if gap / speed >= HUNG_S {
        faults.push(hung(obs, frame, (gap, from), speed, end));
    }
    if !faults.is_empty() {
        return Rule::decided(name, false, faults.join("; "));
    }
    Rule::decided(name, true, kept(obs, frame, gap / speed, end))
}

/// A client process that was not running at the end: crashed, or left on its own.
fn ended_on_its_own(p: &crate::observe::evidence::ClientProcess, frame: f64) -> Rule {
    let name = KeepsWorking.name();
    if p.at < frame {
        return Rule::not_judged(
            name,
            format!(
                "the client process ended at +{:.1} s, before the frame at +{frame:.1} s",
                p.at
            ),
        );
    }
    let why = crate::observe::evidence::process::headline(&p.stderr_tail)
        .map_or(String::new(), |l| format!(": {l}"));
    let what = if p.exit_code == Some(0) {
        "stopped working: it exited 0 on its own".to_string()
    } else {
        format!("crashed: {}", p.how_it_ended())
    };
    Rule::decided(
        name,
        false,
        format!(
            "{what} at +{:.1} s, {:.1} s after the frame{why}",
            p.at,
            p.at - frame
        ),
    )
}

/// When each batch of the client's commands reached the server, on any of its connections.
fn commands_at(obs: &Observations) -> impl Iterator<Item = f64> + '_ {
    obs.connections
        .iter()
        .flat_map(|c| c.traffic.iter())
        .filter(|t| t.commands > 0)
        .map(|t| t.at)
}

/// The longest time without a command between the frame and the end, and when it began.
fn longest_pause(obs: &Observations, frame: f64, end: f64) -> (f64, f64) {
    let mut times: Vec<f64> = commands_at(obs)
        .filter(|t| *t > frame && *t <= end)
        .collect();
    times.sort_by(f64::total_cmp);
    let mut best = (0.0, frame);
    let mut last = frame;
    for t in times.into_iter().chain([end]) {
        if t - last > best.0 {
            best = (t - last, last);
        }
        last = t;
    }
    best
}

fn open_at(c: &Connection, t: f64) -> bool {
    c.opened <= t && c.closed.is_none_or(|x| x.at > t)
}

/// How many of the client's connections were open at the frame (at least 1, to divide by).
fn open_at_frame(obs: &Observations, frame: f64) -> usize {
    obs.connections
        .iter()
        .filter(|c| open_at(c, frame))
        .count()
        .max(1)
}

/// More new connections after the frame than [`STORM_PER_CONNECTION`] per connection open at
/// it.
fn storm(obs: &Observations, frame: f64, end: f64) -> Option<String> {
    let open = open_at_frame(obs, frame);
    let new = obs
        .connections
        .iter()
        .filter(|c| c.opened > frame && c.opened <= end)
        .count();
    let per = new as f64 / open as f64;
    (per > STORM_PER_CONNECTION as f64).then(|| {
        format!(
            "storm: {new} new connection(s) after the frame, {per:.1} per connection open at it (at most {STORM_PER_CONNECTION})"
        )
    })
}

/// Connections opened after the frame that the client itself closed again before the end,
/// [`LOOP_CLOSES`] or more per connection open at the frame: a client that replaces each of its
/// connections once, and drops a short-lived try on the way, is not looping.
fn reconnect_loop(obs: &Observations, frame: f64, end: f64) -> Option<String> {
    let again = obs
        .connections
        .iter()
        .filter(|c| c.opened > frame)
        .filter(|c| c.closed.is_some_and(|x| x.by == Side::Client && x.at < end))
        .count();
    let per = again as f64 / open_at_frame(obs, frame) as f64;
    (per >= LOOP_CLOSES as f64).then(|| {
        format!(
            "reconnect loop: {again} connection(s) opened after the frame were closed by the client again before the end, {per:.1} per connection open at it (fewer than {LOOP_CLOSES})"
        )
    })
}

/// The line of a hung client: how long, from when, and what became of the connections that got
/// the frame.
fn hung(obs: &Observations, frame: f64, (gap, from): (f64, f64), speed: f64, end: f64) -> String {
    let since = if from == frame {
        "the frame".to_string()
    } else {
        format!("its last command at +{from:.1} s")
    };
    let until = if from + gap >= end {
        "the end".to_string()
    } else {
        format!("+{:.1} s", from + gap)
    };
    format!(
        "hung: no command of it reached the server for {:.1} s (at most {HUNG_S:.0} s), from {since} to {until}{}",
        gap / speed,
        receivers_fate(obs, frame, end)
    )
}

/// `; the client closed 2 of the 3 connection(s) that got the frame`, or the server did, or
/// nothing when they stayed open.
fn receivers_fate(obs: &Observations, frame: f64, end: f64) -> String {
    let got: Vec<&Connection> = obs
        .connections
        .iter()
        .filter(|c| c.received.iter().any(|r| r.at >= frame))
        .collect();
    let closed_by = |side: Side| {
        got.iter()
            .filter(|c| c.closed.is_some_and(|x| x.by == side && x.at < end))
            .count()
    };
    let (client, server) = (closed_by(Side::Client), closed_by(Side::Server));
    let new = obs.connections.iter().filter(|c| c.opened > frame).count();
    match (client, server) {
        (0, 0) => format!(
            "; the {} connection(s) that got the frame stayed open",
            got.len()
        ),
        (n, 0) => format!(
            "; the connection closed: the client closed {n} of the {} that got the frame, and opened {new} after it",
            got.len()
        ),
        (_, n) => format!(
            "; the connection closed: the server closed {n} of the {} that got the frame (it could not read the client), and the client opened {new} after it",
            got.len()
        ),
    }
}

/// The line of a client that kept working: its commands after the frame, where, and its
/// longest pause.
fn kept(obs: &Observations, frame: f64, pause: f64, end: f64) -> String {
    let after: u64 = obs
        .connections
        .iter()
        .flat_map(|c| c.traffic.iter())
        .filter(|t| t.at > frame && t.at <= end)
        .map(|t| t.commands)
        .sum();
    let new = obs
        .connections
        .iter()
        .filter(|c| c.opened > frame && c.traffic.iter().any(|t| t.commands > 0))
        .count();
    let closed = obs
        .connections
        .iter()
        .filter(|c| c.received.iter().any(|r| r.at >= frame))
        .filter(|c| c.closed.is_some_and(|x| x.by == Side::Client && x.at < end))
        .count();
    let place = match (closed, new) {
        (0, 0) => "on the same connection(s)".to_string(),
        (0, n) => format!("on the same connection(s) and {n} new one(s)"),
        (c, n) => format!(
            "after closing {c} connection(s) that got the frame, on {n} new one(s) and those left"
        ),
    };
    format!(
        "{after} command(s) reached the server after the frame, {place}; its longest pause {pause:.1} s (at most {HUNG_S:.0} s), no reconnect loop, no storm"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grading::judge::{judge, Verdict};
    use crate::observe::evidence::{
        ClientProcess, Closed, Notification, OptIn, Reached, Received, Traffic,
    };
    use std::net::SocketAddr;

    const FRAME: f64 = 1.0;
    const END: f64 = 6.0;

    fn conn(id: u64, opened: f64) -> Connection {
        let client = SocketAddr::from(([127, 0, 0, 1], 40000 + id as u16));
        let server = SocketAddr::from(([127, 0, 0, 2], 12000));
        let opt_in = OptIn::Accepted {
            endpoint_type: None,
        };
        let mut c = Connection::opened(id, (client, server), opened, Reached::Address, opt_in);
        c.lib_name = Some("lib".into());
        c.lib_ver = Some("1".into());
        c
    }

    /// A connection that sends a command every 0.1 s over `[from, to)` and got the frame when
    /// open at it.
    fn busy(id: u64, from: f64, to: f64) -> Connection {
        let mut c = conn(id, from);
        let mut t = from;
        while t < to {
            c.traffic.push(Traffic {
                at: t,
                commands: 1,
                errors: 0,
                unanswered: 0,
            });
            t += 0.1;
        }
        if from <= FRAME && to > FRAME {
            c.received.push(Received {
                notification: 0,
                at: FRAME,
            });
        }
        c
    }

    fn closed(mut c: Connection, at: f64, by: Side) -> Connection {
        c.closed = Some(Closed { at, by });
        c
    }

    fn stopped() -> ClientProcess {
        ClientProcess {
            program: "app".into(),
            exit_code: None,
            signal: Some(15),
            at: END,
            stopped: true,
            stderr_tail: Vec::new(),
            output_file: None,
            no_resolver: None,
        }
    }

    fn run(connections: Vec<Connection>, process: Option<ClientProcess>) -> Rule {
        let obs = Observations {
            source: "scenario robust-test".into(),
            connections,
            notifications: vec![Notification {
                at: FRAME,
                kind: RAW.into(),
                seq: None,
                window: 0.0,
                target: None,
                retiring: vec![SocketAddr::from(([127, 0, 0, 2], 12000))],
                moves: Vec::new(),
            }],
            client_process: process,
            speed: Some(1.0),
            ended: Some(END),
            ..Observations::default()
        };
        let grade = judge(&obs);
        grade
            .rules
            .iter()
            .find(|r| r.rule == "keeps-working")
            .cloned()
            .expect("keeps-working judged on a raw frame")
    }

    /// The verdict is `verdict` and its reason says `text`.
    fn says(r: &Rule, verdict: Verdict, text: &str) {
        assert_eq!(r.verdict, verdict, "{}", r.detail);
        assert!(r.detail.contains(text), "{}", r.detail);
    }

    #[test]
    fn a_client_that_carries_on_on_the_same_connection_passes() {
        let r = run(vec![busy(1, 0.0, END)], Some(stopped()));
        says(&r, Verdict::Pass, "on the same connection(s)");
    }

    #[test]
    fn a_client_that_drops_the_connection_and_carries_on_on_a_new_one_passes() {
        let old = closed(busy(1, 0.0, 1.05), 1.05, Side::Client);
        let r = run(vec![old, busy(2, 1.3, END)], Some(stopped()));
        says(&r, Verdict::Pass, "after closing 1 connection(s)");
    }

    #[test]
    fn a_client_that_dies_on_the_frame_fails_with_its_error() {
        let dead = ClientProcess {
            exit_code: Some(1),
            signal: None,
            at: 1.1,
            stopped: false,
            stderr_tail: vec!["AssertionError: false == true".into()],
            ..stopped()
        };
        let r = run(
            vec![closed(busy(1, 0.0, 1.1), 1.1, Side::Client)],
            Some(dead),
        );
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(
            r.detail.starts_with("crashed: exited 1 at +1.1 s"),
            "{}",
            r.detail
        );
        assert!(r.detail.contains("AssertionError"), "{}", r.detail);
    }

    #[test]
    fn a_client_that_stops_sending_after_the_frame_is_hung_for_as_long_as_it_was() {
        let r = run(vec![busy(1, 0.0, 1.05)], Some(stopped()));
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(r.detail.starts_with("hung: "), "{}", r.detail);
        assert!(r.detail.contains("for 5.0 s"), "{}", r.detail);
        assert!(r.detail.contains("stayed open"), "{}", r.detail);
        // A pause shorter than the bound, then work again, is not a hang.
        let mut c = busy(1, 0.0, 1.05);
        c.traffic.extend(busy(1, 3.0, END).traffic);
        assert_eq!(run(vec![c], Some(stopped())).verdict, Verdict::Pass);
    }

    #[test]
    fn a_client_that_closes_and_never_comes_back_fails_naming_the_close() {
        let r = run(
            vec![closed(busy(1, 0.0, 1.05), 1.05, Side::Client)],
            Some(stopped()),
        );
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(
            r.detail
                .contains("the connection closed: the client closed 1 of the 1"),
            "{}",
            r.detail
        );
    }

    #[test]
    fn a_client_that_reconnects_over_and_over_loops_and_storms() {
        let mut conns = vec![closed(busy(1, 0.0, 1.05), 1.05, Side::Client)];
        for i in 0u32..6 {
            let at = 1.1 + f64::from(i) * 0.5;
            conns.push(closed(
                busy(2 + u64::from(i), at, at + 0.4),
                at + 0.4,
                Side::Client,
            ));
        }
        let r = run(conns, Some(stopped()));
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(
            r.detail.contains("storm: 6 new connection(s)"),
            "{}",
            r.detail
        );
        assert!(
            r.detail.contains("reconnect loop: 6 connection(s)"),
            "{}",
            r.detail
        );
        // Two replacements closed again are a loop without a storm.
        let r = run(
            vec![
                closed(busy(1, 0.0, 1.05), 1.05, Side::Client),
                closed(busy(2, 1.1, 2.0), 2.0, Side::Client),
                closed(busy(3, 2.1, 3.0), 3.0, Side::Client),
                busy(4, 3.1, END),
            ],
            Some(stopped()),
        );
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(r.detail.starts_with("reconnect loop: 2"), "{}", r.detail);
    }

    #[test]
    fn what_is_missing_is_named() {
        let r = run(vec![busy(1, 0.0, END)], None);
        assert_eq!(r.verdict, Verdict::NotJudged);
        assert!(r.detail.contains("client process"), "{}", r.detail);
        let mut idle = busy(1, 2.0, END);
        idle.opened = 0.5;
        idle.received.push(Received {
            notification: 0,
            at: FRAME,
        });
        let r = run(vec![idle], Some(stopped()));
        assert_eq!(r.verdict, Verdict::NotJudged);
        assert!(r.detail.contains("busy with commands"), "{}", r.detail);
        // A push that waited for a state no connection was in reached nobody.
        let mut missed = busy(1, 0.0, END);
        missed.received.clear();
        let r = run(vec![missed], Some(stopped()));
        assert_eq!(r.verdict, Verdict::NotJudged);
        assert!(
            r.detail.contains("reached none of its connections"),
            "{}",
            r.detail
        );
    }
}
