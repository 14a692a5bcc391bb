//! A capture run through the timeline again: every recorded input (frames, connection events,
//! DNS changes, dry-run decisions) is fed to a fresh [`Timeline`] at its recorded time, and what
//! the timeline computes from them (labels, offsets, windows, verdicts, the summary) is set
//! against what the capture recorded.
//!
//! This is what makes "the same logic runs live and in `replay`" true, and what lets
//! `replay --check` catch a change in the timeline, not only in the parser.
//!
//! What is an input is taken as recorded; what the timeline derives is compared. Two facts are
//! not in a line and are read back from their effects: a frame was read with the opt-in's reply
//! when it carries the `catch_up` or `with_opt_in` label, and a connection's endpoint (for the
//! summary) is the one the summary names.

use super::{event, CloseCause, DryRun, Observation, ScenarioClock, Timeline, What};
use crate::network::dns::DnsEventKind;
use crate::observe::record::line;
use crate::observe::record::{ClosedBy, DnsEvent, DryRunOutcome};
use crate::observe::record::{Label, WatchLine};
use serde_json::Value;
use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant, SystemTime};

/// The timeline of one capture, rebuilt line by line.
pub struct Rerun {
    base: Instant,
    timeline: Option<Timeline>,
    clock: ScenarioClock,
    endpoint: String,
    /// Lines the timeline produced that no recorded line has been compared with yet (a verdict
    /// follows the close that produced it).
    computed: VecDeque<WatchLine>,
}

impl Default for Rerun {
    fn default() -> Self {
        Rerun {
            base: Instant::now(),
            timeline: None,
            clock: ScenarioClock::default(),
            endpoint: String::new(),
            computed: VecDeque::new(),
        }
    }
}

impl Rerun {
    /// Feeds one recorded line; returns how what the timeline computes differs from it.
    pub fn line(&mut self, recorded: &WatchLine) -> Vec<String> {
        if let WatchLine::Start(line::Start {
            endpoint, speed, ..
        }) = recorded
        {
            let base = Instant::now();
            // A capture's speed is untrusted: one that no watch could have run at is read as 1.
            let clock = ScenarioClock::new(*speed).unwrap_or_default();
            let mut timeline = Timeline::new(base);
            timeline.set_clock(clock.clone());
            *self = Rerun {
                base,
                timeline: Some(timeline),
                clock,
                endpoint: endpoint.clone(),
                computed: VecDeque::new(),
            };
            return Vec::new();
        }
        if self.timeline.is_none() {
            return vec!["a line before the start line: the timeline cannot be rebuilt".into()];
        }
        let computed = match recorded {
            // Written by the watch loop on its own clock, not computed by the timeline.
            WatchLine::Heartbeat(_) => return Vec::new(),
            WatchLine::Summary(line::Summary { .. }) => Some(self.summary(recorded)),
            WatchLine::Verdict(line::Verdict { .. }) => self.computed.pop_front(),
            _ => {
                self.feed(recorded);
                self.computed.pop_front()
            }
        };
        match computed {
            Some(line) => differences(recorded, &line, self.clock.speed()),
            None => vec![format!(
                "{}: the timeline computes no such line here",
                kind(recorded)
            )],
        }
    }

    /// The monotonic instant and wall-clock time of a line.
    fn when(&self, t: f64, at: &str) -> (Instant, SystemTime) {
        let at = chrono::DateTime::parse_from_rfc3339(at)
            .map(SystemTime::from)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        (self.base + Duration::from_secs_f64(t.max(0.0)), at)
    }

    fn feed(&mut self, recorded: &WatchLine) {
        let Some((t, at, conn, what)) = self.input(recorded) else {
            return;
        };
        let (at, wall) = self.when(t, &at);
        if let What::Handshake(event::Handshake {
            sim_speed: Some(s), ..
        }) = &what
        {
            // The watch loop adopted (or not) the simulator's speed before the timeline saw it.
            if s.used != self.clock.speed() {
                let _ = self.clock.adopt(s.used);
            }
        }
        let timeline = self.timeline.as_mut().expect("started");
        let step = timeline.observe(Observation {
            at,
            wall,
            conn,
            what,
        });
        self.computed.extend(step.lines);
    }

    /// The observation a recorded line came from, if it came from one.
    fn input(&self, line: &WatchLine) -> Option<(f64, String, u32, What)> {
        let what = match line {
            WatchLine::Connected(l) => What::Connected(event::Connected {
                addr: l.addr.parse().ok()?,
                tls: l.tls,
                endpoint: self.endpoint.clone(),
            }),
            WatchLine::ConnectFailed(l) => What::ConnectFailed(event::ConnectFailed {
                error: l.error.clone(),
                retry_in: duration(l.retry_in_s),
            }),
            WatchLine::Handshake(l) => handshake(l),
            WatchLine::Push(l) => What::Frame(event::Frame {
                record: l.frame.clone(),
                early: l
                    .labels
                    .iter()
                    .any(|l| matches!(l, Label::CatchUp | Label::WithOptIn)),
            }),
            WatchLine::AzureEvent(l) => What::Frame(event::Frame {
                record: l.frame.clone(),
                early: false,
            }),
            WatchLine::AzureRefused(l) => What::AzureRefused(event::AzureRefused {
                error: l.error.clone(),
            }),
            WatchLine::Malformed(l) => What::Malformed(event::Malformed {
                offset: l.offset,
                error: l.error.clone(),
            }),
            WatchLine::Closed(l) => closed(l),
            WatchLine::Dns(l) => What::Dns(event::Dns {
                host: l.host.clone(),
                kind: dns_kind(l.event, &l.before, &l.after, l.ttl, l.reason.clone())?,
            }),
            WatchLine::Handoff(l) => self.handoff(l)?,
            WatchLine::Advertised(l) => What::Advertised(event::Advertised {
                addr: l.addr.parse().ok()?,
                answer: l.answer,
            }),
            WatchLine::Ping(l) => What::Ping(event::Ping {
                latency: l
                    .latency_ms
                    .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1e3)),
                error: l.error.clone(),
            }),
            WatchLine::Topology(l) => What::Topology(event::Topology {
                reason: l.reason,
                nodes: l.nodes.clone(),
                added: l.added.clone(),
                removed: l.removed.clone(),
                replicas: l.replicas.clone(),
                roles: l.roles.clone(),
                moved: l.moved.clone(),
            }),
            WatchLine::Start(_)
            | WatchLine::Verdict(_)
            | WatchLine::Summary(_)
            | WatchLine::Heartbeat(_) => return None,
        };
        Some((
            line.t(),
            line.at().to_string(),
            line.conn().unwrap_or(0),
            what,
        ))
    }

    /// A dry-run's decision, or the topology refresh an SMIGRATED asked for.
    fn handoff(&self, l: &line::Handoff) -> Option<What> {
        let event = self.timeline.as_ref()?.event_named(&l.event)?;
        if l.outcome == DryRunOutcome::RefreshTopology {
            return Some(What::Refresh(event::Refresh {
                event,
                jitter_s: l.at_s,
                sources: refresh_sources(&l.text),
            }));
        }
        let dry_run = DryRun {
            outcome: l.outcome,
            at_s: l.at_s,
            moves: l.moves,
            text: l.text.clone(),
            to: l.to.clone(),
        };
        Some(What::DryRun(event::RecordedDryRun { event, dry_run }))
    }

    /// The summary the timeline computes at the recorded summary's time. What the watch loop
    /// (not the timeline) counted, and the connections' endpoints, are taken as recorded.
    fn summary(&mut self, recorded: &WatchLine) -> WatchLine {
        let WatchLine::Summary(line::Summary {
            t,
            at,
            reason,
            conns: recorded_conns,
            notes: recorded_notes,
            topology: recorded_topology,
            ..
        }) = recorded
        else {
            unreachable!("called with a summary");
        };
        let (now, wall) = self.when(*t, at);
        let timeline = self.timeline.as_ref().expect("started");
        let mut line = timeline.summary(now, wall, reason);
        if let WatchLine::Summary(line::Summary {
            conns,
            notes,
            topology,
            ..
        }) = &mut line
        {
            // A capture written before the summary listed topology changes has none: its
            // topology lines are checked one by one all the same.
            if recorded_topology.is_empty() {
                topology.clear();
            }
            notes.skipped_dry_runs = recorded_notes.skipped_dry_runs;
            notes.capped_windows = recorded_notes.capped_windows;
            notes.session_errors = recorded_notes.session_errors;
            for c in conns.iter_mut() {
                if let Some(r) = recorded_conns.iter().find(|r| r.conn == c.conn) {
                    c.endpoint = r.endpoint.clone();
                }
            }
        }
        line
    }
}

fn duration(secs: Option<f64>) -> Option<Duration> {
    secs.map(|s| Duration::from_secs_f64(s.max(0.0)))
}

fn handshake(l: &line::Handshake) -> What {
    What::Handshake(event::Handshake {
        opt_in: l.opt_in,
        text: l.text.clone(),
        server: l.server.clone(),
        version: l.version.clone(),
        mode: l.mode.clone(),
        sent: l.sent.clone(),
        sim_speed: l.sim_speed,
    })
}

fn closed(l: &line::Closed) -> What {
    let cause = match l.by {
        // The timeline tells a scenario's end from the simulator's marker before it.
        ClosedBy::Server | ClosedBy::ScenarioEnd => CloseCause::Server,
        // pcap's application closes are the watch's own close cause, renamed on the line.
        ClosedBy::Watch | ClosedBy::Client => CloseCause::Watch,
        ClosedBy::Error => CloseCause::Error,
    };
    What::Closed(event::Closed {
        cause,
        error: l.error.clone(),
        retry_in: duration(l.retry_in_s),
    })
}

/// The DNS poller's event a `dns` line reports.
fn dns_kind(
    event: DnsEvent,
    before: &[String],
    after: &[String],
    ttl: Option<u32>,
    reason: Option<String>,
) -> Option<DnsEventKind> {
    let set = |list: &[String]| -> Option<BTreeSet<std::net::IpAddr>> {
        list.iter().map(|a| a.parse().ok()).collect()
    };
    Some(match event {
        DnsEvent::Initial => DnsEventKind::Initial {
            addrs: set(after)?,
            ttl,
        },
        DnsEvent::Changed => DnsEventKind::Changed {
            before: set(before)?,
            after: set(after)?,
            ttl,
        },
        DnsEvent::CannotTell => DnsEventKind::CannotTell {
            reason: reason.unwrap_or_default(),
        },
        DnsEvent::Recovered => DnsEventKind::Recovered {
            addrs: set(after)?,
            ttl,
        },
        DnsEvent::Waiting => DnsEventKind::Waiting {
            what: reason.unwrap_or_default(),
        },
    })
}

/// The sources a `refresh_topology` line's text names (`... for source(s) a:1, b:2`).
fn refresh_sources(text: &str) -> Vec<String> {
    match text.rsplit_once("for source(s) ") {
        Some((_, list)) if !list.is_empty() => list.split(", ").map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

/// A line's `type`.
fn kind(line: &WatchLine) -> String {
    match serde_json::to_value(line) {
        Ok(Value::Object(m)) => m
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
        _ => "?".into(),
    }
}

/// The fields in which `computed` differs from `recorded`, one sentence each. Numbers are equal
/// within what microsecond timestamps allow (scaled by the speed offsets are read at).
fn differences(recorded: &WatchLine, computed: &WatchLine, speed: f64) -> Vec<String> {
    // The common case, exactly equal, without building two JSON trees.
    if recorded == computed {
        return Vec::new();
    }
    let (Ok(Value::Object(r)), Ok(Value::Object(c))) = (
        serde_json::to_value(recorded),
        serde_json::to_value(computed),
    ) else {
        return vec!["a line that cannot be compared".into()];
    };
    let tolerance = 1e-5 * speed.max(1.0);
    let kind = kind(recorded);
    let mut out = Vec::new();
    for (key, rv) in &r {
        let cv = c.get(key).unwrap_or(&Value::Null);
        if !same(rv, cv, field_tolerance(key, tolerance)) {
            out.push(format!(
                "{kind}: {key} recorded {rv}, the timeline computes {cv}"
            ));
        }
    }
    for (key, cv) in &c {
        if !r.contains_key(key) && !cv.is_null() {
            out.push(format!(
                "{kind}: {key} not recorded, the timeline computes {cv}"
            ));
        }
    }
    out
}

/// Whether two values are equal, numbers within `tolerance` seconds (a field named `..._ms`
/// counts in milliseconds).
fn same(a: &Value, b: &Value, tolerance: f64) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() <= tolerance,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y, tolerance))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.get(k)
                        .is_some_and(|w| same(v, w, field_tolerance(k, tolerance)))
                })
        }
        _ => a == b,
    }
}

fn field_tolerance(key: &str, tolerance: f64) -> f64 {
    if key.ends_with("_ms") {
        tolerance * 1e3
    } else {
        tolerance
    }
}
