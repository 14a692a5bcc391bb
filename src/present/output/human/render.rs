//! One renderer per line type: what each event of the timeline reads as, at 80 columns, with
//! the exact bytes under every frame.

use super::rel;
use super::style::{clock, clock_into, Role, Style};
use super::wrap::{wrap_with, AFTER_REFUSAL, AZURE_REFUSAL, CONTINUATION};
use crate::network::handoff::Advertised;
use crate::observe::record::line;
use crate::observe::record::{ClosedBy, DnsEvent, OursChange, TopologyReason};
use crate::observe::record::{Label, OptInOutcome, WatchLine};
use crate::protocol::notification::Classified;

/// What the watch made of the speed a simulator announced in its HELLO reply.
fn speed_note(speed: &crate::observe::record::SimSpeed, style: &Style) -> String {
    if speed.announced == speed.used {
        format!(
            "      simulator at speed {}x (adopted): offsets are scenario seconds",
            speed.announced
        )
    } else {
        format!(
            "      {}",
            style.paint(
                Role::Error,
                &format!(
                    "warning: the simulator runs at speed {}x but --sim-speed {} was given: offsets are read at {}x",
                    speed.announced, speed.used, speed.used
                )
            )
        )
    }
}

pub(super) fn render_safe(line: &WatchLine, style: &Style) -> Vec<String> {
    match line {
        WatchLine::Start(line::Start { .. }) => line_start(line, style),
        WatchLine::Connected(line::Connected { .. }) => line_connected(line, style),
        WatchLine::ConnectFailed(line::ConnectFailed { .. }) => line_connect_failed(line, style),
        WatchLine::Handshake(line::Handshake { .. }) => line_handshake(line, style),
        WatchLine::Push(line::Push { .. }) => line_push(line, style),
        WatchLine::AzureEvent(l) => line_azure(l, style),
        WatchLine::AzureRefused(l) => vec![
            format!(
                "{} {}",
                head(style, &l.at, Some(l.conn)),
                style.paint(
                    Role::Error,
                    &format!(
                        "SUBSCRIBE {} refused: {}",
                        crate::protocol::azure::CHANNEL,
                        l.error
                    )
                )
            ),
            format!("      {}", l.fix),
        ],
        WatchLine::Malformed(line::Malformed { .. }) => line_malformed(line, style),
        WatchLine::Closed(line::Closed { .. }) => line_closed(line, style),
        WatchLine::Dns(line::Dns { .. }) => line_dns(line, style),
        WatchLine::Handoff(line::Handoff { .. }) => line_handoff(line, style),
        WatchLine::Verdict(line::Verdict { .. }) => line_verdict(line, style),
        WatchLine::Advertised(line::Advertised { .. }) => line_advertised(line, style),
        WatchLine::Ping(line::Ping { .. }) => line_ping(line, style),
        WatchLine::Topology(line::Topology { .. }) => line_topology(line, style),
        WatchLine::Summary(line::Summary { .. }) => super::summary::render(line, style.width),
        WatchLine::Heartbeat(beat) => vec![line_heartbeat(beat, style)],
    }
}

/// `--heartbeat`: connections up, opt-ins, and how long since the latest notification.
fn line_heartbeat(beat: &line::Heartbeat, style: &Style) -> String {
    let last = match beat.since_notification_s {
        Some(s) => format!(
            "last notification {s:.1} s ago ({} in all)",
            beat.notifications
        ),
        None => "no notification yet".to_string(),
    };
    format!(
        "{} heartbeat: {}/{} connection(s) up, {} opted in, {last}",
        head(style, &beat.at, None),
        beat.up,
        beat.conns,
        beat.opted_in
    )
}

/// The start of every line: the time and the connection (`[-]` for none).
fn head(style: &Style, at: &str, conn: Option<u32>) -> String {
    use std::fmt::Write;
    // Room for the rest of a common line, which callers append.
    let mut out = String::with_capacity(128);
    if style.color {
        style.paint_into(&mut out, Role::Dim, &clock(at, style.time));
    } else {
        clock_into(&mut out, at, style.time);
    }
    let _ = match conn {
        Some(c) => write!(out, " [{c}]"),
        None => write!(out, " [-]"),
    };
    out
}

fn line_start(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        WatchLine::Start(line::Start {
            at,
            endpoint,
            version,
            ..
        }) => vec![format!(
            "{} watching {endpoint} (v{version})",
            head(at, None)
        )],
        _ => Vec::new(),
    }
}

fn line_connected(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        WatchLine::Connected(line::Connected {
            at,
            conn,
            addr,
            tls,
            session,
            rel: r,
            ..
        }) => {
            let verb = if *session > 1 {
                "reconnected"
            } else {
                "connected"
            };
            let what = format!(
                "{}{verb} to {addr} ({}{})",
                rel(r, None),
                if *tls { "tls" } else { "tcp" },
                if *session > 1 {
                    format!(", session {session}")
                } else {
                    String::new()
                }
            );
            vec![format!(
                "{} {}",
                head(at, Some(*conn)),
                style.paint(Role::Socket, &what)
            )]
        }
        _ => Vec::new(),
    }
}

fn line_connect_failed(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        WatchLine::ConnectFailed(line::ConnectFailed {
            at,
            conn,
            error,
            retry_in_s,
            ..
        }) => {
            let retry = retry_in_s.map_or(String::new(), |s| format!("; retrying in {s:.1} s"));
            vec![format!(
                "{} {}",
                head(at, Some(*conn)),
                style.paint(Role::Error, &format!("connect failed: {error}{retry}"))
            )]
        }
        _ => Vec::new(),
    }
}

/// A retry of a connection that is still failing, said as such: `still unreachable: 7 attempts
/// in 18.0 s; last: ...`. The error loses its own "; failing for" note, which says the same.
pub(super) fn still_unreachable(
    line: &WatchLine,
    attempts: u32,
    secs: f64,
    style: &Style,
) -> Vec<String> {
    let WatchLine::ConnectFailed(line::ConnectFailed {
        at,
        conn,
        error,
        retry_in_s,
        ..
    }) = line
    else {
        return Vec::new();
    };
    let error = crate::shared::escape::sanitize(error);
    let error = error.split("; failing for ").next().unwrap_or_default();
    let retry = retry_in_s.map_or(String::new(), |s| format!("; retrying in {s:.1} s"));
    vec![format!(
        "{} {}",
        head(style, at, Some(*conn)),
        style.paint(
            Role::Error,
            &format!("still unreachable: {attempts} attempts in {secs:.1} s; last: {error}{retry}")
        )
    )]
}

/// The line before a connection's `connected` line when it had failed more than once.
pub(super) fn back(line: &WatchLine, attempts: u32, secs: f64, style: &Style) -> Vec<String> {
    let WatchLine::Connected(line::Connected { at, conn, .. }) = line else {
        return Vec::new();
    };
    vec![format!(
        "{} reachable again after {attempts} failed attempts in {secs:.1} s",
        head(style, at, Some(*conn)),
    )]
}

fn line_handshake(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        // A cluster whose nodes all refuse says so once; the summary counts them.
        WatchLine::Handshake(line::Handshake {
            repeat_of: Some(_), ..
        }) => Vec::new(),
        WatchLine::Handshake(line::Handshake {
            at,
            conn,
            opt_in,
            text,
            server,
            version,
            mode,
            sent,
            sim_speed,
            ..
        }) => {
            let server = match (server, version, mode) {
                (Some(s), Some(v), Some(m)) => format!(" [{s} {v}, {m}]"),
                (Some(s), Some(v), None) => format!(" [{s} {v}]"),
                _ => String::new(),
            };
            let (role, what) = match opt_in {
                OptInOutcome::Accepted => (Role::Closing, "opt-in accepted".to_string()),
                OptInOutcome::Refused => (
                    Role::Error,
                    format!("opt-in refused: {}", text.as_deref().unwrap_or("")),
                ),
                OptInOutcome::Resp3Unavailable => (
                    Role::Error,
                    format!(
                        "RESP3 unavailable, no push frames possible: {}",
                        text.as_deref().unwrap_or("")
                    ),
                ),
                OptInOutcome::AuthFailed => (
                    Role::Error,
                    format!("authentication failed: {}", text.as_deref().unwrap_or("")),
                ),
            };
            let mut out = vec![format!(
                "{} {}{server}",
                head(at, Some(*conn)),
                style.paint(role, &what)
            )];
            if let Some(sent) = sent {
                out.push(format!("      sent {}", style.paint(Role::Dim, sent)));
            }
            // After a refusal nothing may show for hours: say what the watch still does.
            if matches!(
                opt_in,
                OptInOutcome::Refused | OptInOutcome::Resp3Unavailable
            ) {
                let after = match (opt_in, style.azure) {
                    (OptInOutcome::Refused, true) => AZURE_REFUSAL,
                    _ => AFTER_REFUSAL,
                };
                let note = format!("{CONTINUATION}{after}");
                for piece in wrap_with(&note, style.width, CONTINUATION) {
                    let words = piece.trim_start();
                    out.push(format!("{CONTINUATION}{}", style.paint(Role::Dim, words)));
                }
            }
            // Said when the speed was adopted or disagrees with --sim-speed; an agreement with
            // what the user said is no news.
            if let Some(speed) = sim_speed.filter(|s| !s.given || s.announced != s.used) {
                out.push(speed_note(&speed, style));
            }
            out
        }
        _ => Vec::new(),
    }
}

fn line_push(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        // Every cluster node broadcasts the same event: one entry, then one short line per copy.
        WatchLine::Push(line::Push {
            at,
            conn,
            copy_of: Some(copy),
            frame,
            ..
        }) => vec![format!(
            "{} {}",
            head(at, Some(*conn)),
            style.paint(
                Role::Dim,
                &copy_words(&copied_event(&frame.parsed), copy.after_ms, copy.conn)
            )
        )],
        WatchLine::Push(line::Push {
            at,
            conn,
            labels,
            rel: r,
            frame,
            sources_ours,
            ..
        }) => {
            let role = match &frame.parsed {
                crate::protocol::notification::Classified::Maintenance(n) if n.opens() => {
                    Role::Opening
                }
                crate::protocol::notification::Classified::Maintenance(_) => Role::Closing,
                _ => Role::Plain,
            };
            // A MOVING that came with our opt-in and was not seen before: a server re-sends an
            // open window's MOVING to a new opt-in, so it may have opened before we joined.
            let joined = labels.as_slice() == [Label::WithOptIn];
            let labels: String = labels
                .iter()
                .map(|l| match l {
                    Label::CatchUp => " [catch-up replay]",
                    Label::Resent => " [re-sent]",
                    Label::WithOptIn => " [with opt-in]",
                })
                .collect();
            // Built by appending: this is the line a flood is made of.
            let mut first = head(at, Some(*conn));
            first.push(' ');
            if let Some(to) = r.as_ref().map(|r| r.to.as_str()) {
                // Its own event's name, when it is a maintenance notification.
                let own = match &frame.parsed {
                    Classified::Maintenance(n) => {
                        crate::protocol::notification::event_name(n.kind, n.seq) == to
                    }
                    _ => false,
                };
                first.push_str(&rel(r, own.then_some(to)));
            }
            if crate::observe::timeline::is_scenario_end(&frame.parsed) {
                first.push_str("scenario ended (the simulator's end-of-scenario marker)");
            } else {
                style.paint_with(&mut first, role, |out| frame.parsed.describe_into(out));
            }
            first.push_str(&labels);
            let mut bytes = String::with_capacity(frame.raw.len_hint() + 32);
            bytes.push_str("      ");
            style.paint_with(&mut bytes, Role::Dim, |out| frame.raw.escape_into(out));
            let mut out = vec![first, bytes];
            if !sources_ours.is_empty() {
                out.push(format!(
                    "      source(s) we are connected to: {}",
                    sources_ours.join(", ")
                ));
            }
            if let crate::protocol::notification::Classified::Maintenance(n) = &frame.parsed {
                if joined && n.opens() {
                    out.push(
                        "      note: came with the opt-in: its window may have opened before we \
                         joined; offsets count from receipt"
                            .into(),
                    );
                }
                for note in &n.notes {
                    out.push(format!("      note: {note}"));
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

/// An Azure Cache event: what it says and when it starts, its bytes, and what the reference
/// client does with it.
/// A copy of an event already shown, in words: the line's own `[N]` is the connection that got
/// it, so the words say what it got and how long after the first one did (issue 50: `[3] also
/// from [3], 7661.4 ms after [1]` read like a typo). A re-sent MOVING on a new connection comes
/// seconds later, a cluster node's copy milliseconds later: each in its own unit.
fn copy_words(event: &str, after_ms: f64, first: u32) -> String {
    let after = if after_ms.abs() < 1000.0 {
        format!("{after_ms:.1} ms")
    } else {
        format!("{:.1} s", after_ms / 1000.0)
    };
    format!("  got the same {event} too, {after} after [{first}] did")
}

/// What a copy is of: the notification's name (`MOVING seq 0`).
fn copied_event(parsed: &crate::protocol::notification::Classified) -> String {
    match parsed {
        crate::protocol::notification::Classified::Maintenance(n) => n.event_name(),
        _ => "notification".into(),
    }
}

fn line_azure(l: &line::AzureEvent, style: &Style) -> Vec<String> {
    let mut first = head(style, &l.at, Some(l.conn));
    first.push(' ');
    if let Some(copy) = &l.copy_of {
        first.push_str(&style.paint(
            Role::Dim,
            &copy_words("Azure event", copy.after_ms, copy.conn),
        ));
        return vec![first];
    }
    if let Some(to) = l.rel.as_ref().map(|r| r.to.as_str()) {
        let own = l.event.kind.map(|k| k.wire_name()) == Some(to);
        first.push_str(&rel(&l.rel, own.then_some(to)));
    }
    let role = match l.event.kind {
        Some(k) if k.opens_window() => Role::Opening,
        Some(k) if k.closes_window() => Role::Closing,
        _ => Role::Plain,
    };
    first.push_str(&style.paint(role, &format!("azure {}", l.event.describe())));
    if let Some(s) = l.starts_in_s {
        first.push_str(&if s >= 0.0 {
            format!(" (starts in {s:.1} s)")
        } else {
            format!(" (started {:.1} s ago)", -s)
        });
    }
    let mut bytes = String::from("      ");
    style.paint_with(&mut bytes, Role::Dim, |out| l.frame.raw.escape_into(out));
    let mut out = vec![first, bytes];
    out.push(format!("      StackExchange.Redis: {}", l.reaction));
    if let Some(why) = &l.event.reference_ignores {
        out.push(format!(
            "      note: StackExchange.Redis would not read it so: {why}"
        ));
    }
    for note in &l.event.notes {
        out.push(format!("      note: {note}"));
    }
    out
}

fn line_malformed(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        WatchLine::Malformed(line::Malformed {
            at,
            conn,
            offset,
            error,
            ..
        }) => vec![format!(
            "{} {}",
            head(at, Some(*conn)),
            style.paint(
                Role::Error,
                &format!("malformed stream at connection byte {offset}: {error}")
            )
        )],
        _ => Vec::new(),
    }
}

fn line_closed(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        WatchLine::Closed(line::Closed {
            at,
            conn,
            by,
            error,
            announced,
            window_s,
            past_s,
            rel: r,
            joined_open,
            ..
        }) => {
            let mut what = match by {
                ClosedBy::Server => "closed by the server".to_string(),
                // With its reason when it has one: a node that left the cluster.
                ClosedBy::Watch => match error {
                    Some(e) => format!("closed by maintwatch: {e}"),
                    None => "closed by maintwatch".to_string(),
                },
                ClosedBy::Client => "closed by the application".to_string(),
                ClosedBy::ScenarioEnd => {
                    "scenario ended: the simulator closed the connection (not an incident)"
                        .to_string()
                }
                ClosedBy::Error => {
                    format!("connection lost: {}", error.as_deref().unwrap_or("error"))
                }
            };
            if *announced {
                if let (true, Some(w), Some(p)) = (*joined_open, window_s, past_s) {
                    // The window may have opened before we joined: counted from receipt, its end
                    // is a latest possible end, so the overshoot is a lower bound.
                    let bound = if *p >= 0.0 {
                        format!("at least {p:.1} s past")
                    } else {
                        format!("at most {:.1} s before it ended", -p)
                    };
                    what.push_str(&format!(
                        ", window {w} s counted from receipt (it may have opened before we \
                         joined): {bound}"
                    ));
                } else if let (Some(w), Some(p)) = (window_s, past_s) {
                    // Within a tenth of a second either way is at the end, not "0.0 s past".
                    if p.abs() < 0.05 {
                        what.push_str(&format!(", window {w} s, at its end"));
                    } else if *p >= 0.0 {
                        what.push_str(&format!(", window {w} s, {p:.1} s past"));
                    } else {
                        what.push_str(&format!(", window {w} s, {:.1} s before it ended", -p));
                    }
                }
            } else if !matches!(by, ClosedBy::Watch | ClosedBy::ScenarioEnd)
                && !error
                    .as_deref()
                    .is_some_and(|e| e.starts_with(crate::observe::record::line::DURING_HANDSHAKE))
            {
                what.push_str(" (unannounced: no MOVING before it)");
            }
            // An announced close is measured from its connection's own MOVING.
            let own = r.as_ref().filter(|_| *announced).map(|r| r.to.as_str());
            vec![format!(
                "{} {}{}",
                head(at, Some(*conn)),
                rel(r, own),
                style.paint(Role::Socket, &what)
            )]
        }
        _ => Vec::new(),
    }
}

fn line_dns(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        WatchLine::Dns(line::Dns {
            at,
            host,
            event,
            before,
            after,
            ttl,
            reason,
            ours,
            rel: r,
            ..
        }) => {
            let set = |v: &Vec<String>| format!("{{{}}}", v.join(", "));
            let ttl = ttl.map_or(String::new(), |t| format!(" ttl {t}"));
            let what = match event {
                DnsEvent::Changed => format!("DNS {host} {} -> {}{ttl}", set(before), set(after)),
                DnsEvent::CannotTell => format!(
                    "DNS {host} cannot tell ({}): not read as a change",
                    reason.as_deref().unwrap_or("no answer")
                ),
                DnsEvent::Recovered => format!("DNS {host} answers again: {}{ttl}", set(after)),
                DnsEvent::Waiting => format!(
                    "DNS {host}: still waiting for {}",
                    reason.as_deref().unwrap_or("an answer")
                ),
                DnsEvent::Initial => format!("DNS {host} {}{ttl}", set(after)),
            };
            let ours = match ours {
                Some(OursChange::Left) => " (our address left the record)",
                Some(OursChange::Rejoined) => " (our address is back in the record)",
                None => "",
            };
            vec![format!(
                "{} {}{}{}",
                head(at, None),
                rel(r, None),
                style.paint(Role::Dns, &what),
                ours
            )]
        }
        _ => Vec::new(),
    }
}

fn line_handoff(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        WatchLine::Handoff(line::Handoff {
            at,
            conn,
            event,
            text,
            rel: r,
            ..
        }) => vec![format!(
            "{} {}{}",
            head(at, Some(*conn)),
            rel(r, Some(event)),
            style.paint(
                Role::Handoff,
                &format!("dry-run handoff for {event}: {text}")
            )
        )],
        _ => Vec::new(),
    }
}

fn line_verdict(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        WatchLine::Verdict(line::Verdict { at, conn, text, .. }) => vec![format!(
            "{} {}",
            head(at, Some(*conn)),
            style.paint(Role::Handoff, &format!("=> {text}"))
        )],
        _ => Vec::new(),
    }
}

fn line_advertised(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        WatchLine::Advertised(line::Advertised {
            at,
            conn,
            addr,
            answer,
            rel: r,
            ..
        }) => {
            let what = match answer {
                Advertised::Yes => format!("{addr} is still advertised"),
                Advertised::No => format!(
                    "{addr} is no longer advertised: expect this connection to be closed without notice"
                ),
                Advertised::CannotTell => {
                    format!("cannot tell whether {addr} is still advertised (DNS gave no answer)")
                }
            };
            vec![format!(
                "{} {}{}",
                head(at, Some(*conn)),
                rel(r, None),
                style.paint(Role::Dns, &what)
            )]
        }
        _ => Vec::new(),
    }
}

fn line_ping(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        WatchLine::Ping(line::Ping {
            at,
            conn,
            latency_ms,
            error,
            window,
            ..
        }) => {
            let what = match (latency_ms, error) {
                (_, Some(e)) => style.paint(Role::Error, &format!("PING failed: {e}")),
                (Some(ms), None) => format!("PING {ms:.3} ms"),
                (None, None) => "PING".into(),
            };
            let window = window
                .as_ref()
                .map_or(String::new(), |w| format!(" (during {w})"));
            vec![format!("{} {what}{window}", head(at, Some(*conn)))]
        }
        _ => Vec::new(),
    }
}

fn line_topology(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| head(style, at, conn);
    match line {
        WatchLine::Topology(
            t @ line::Topology {
                at,
                reason,
                nodes,
                rel: r,
                ..
            },
        ) => {
            let reason = match reason {
                TopologyReason::Interval => "read again",
                TopologyReason::ConnectionLost => "read again after a connection was lost",
                other => other.as_str(),
            };
            let mut what = format!("cluster topology {reason}: {} node(s)", nodes.len());
            for part in super::topology::topology_change(&t.added, &t.removed, &t.roles, &t.moved) {
                what.push_str(", ");
                what.push_str(&part);
            }
            vec![format!(
                "{} {}{}",
                head(at, None),
                rel(r, None),
                style.paint(Role::Socket, &what)
            )]
        }
        _ => Vec::new(),
    }
}
