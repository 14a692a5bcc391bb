//! Human lines for the watch timeline: one entry per event, readable at 80 columns, with the
//! exact bytes under every frame and `+s.mmm` offsets relative to the latest opening event.

use crate::output::text;
use crate::record::{Label, OptInOutcome, Rel, WatchLine};
use chrono::{DateTime, Local};

/// Colour roles; the palette is chosen in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Opening,
    Closing,
    Dns,
    Socket,
    Handoff,
    Error,
    Dim,
    Plain,
}

/// Whether to colour, decided once by the caller (flag, `NO_COLOR`, terminal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    pub color: bool,
}

impl Style {
    pub fn paint(&self, role: Role, s: &str) -> String {
        if !self.color {
            return s.to_string();
        }
        let code = match role {
            Role::Opening => "1;33",
            Role::Closing => "1;32",
            Role::Dns => "36",
            Role::Socket => "1;35",
            Role::Handoff => "34",
            Role::Error => "1;31",
            Role::Dim => "2",
            Role::Plain => return s.to_string(),
        };
        format!("\x1b[{code}m{s}\x1b[0m")
    }
}

/// The wall-clock prefix: local time to the microsecond.
pub fn clock(at: &str) -> String {
    DateTime::parse_from_rfc3339(at)
        .map(|t| t.with_timezone(&Local).format("%H:%M:%S%.6f").to_string())
        .unwrap_or_else(|_| at.to_string())
}

fn rel(r: &Option<Rel>) -> String {
    match r {
        Some(r) => format!("+{:.3} ", r.s),
        None => String::new(),
    }
}

/// Renders one line of the timeline as one or more lines of text.
pub fn render(line: &WatchLine, style: &Style) -> Vec<String> {
    let head = |at: &str, conn: Option<u32>| {
        let who = conn.map_or("[-]".to_string(), |c| format!("[{c}]"));
        format!("{} {who}", style.paint(Role::Dim, &clock(at)))
    };
    match line {
        WatchLine::Start {
            at,
            endpoint,
            version,
            ..
        } => vec![format!(
            "{} watching {endpoint} (maintwatch {version})",
            head(at, None)
        )],
        WatchLine::Connected {
            at,
            conn,
            addr,
            tls,
            session,
            rel: r,
            ..
        } => {
            let verb = if *session > 1 {
                "reconnected"
            } else {
                "connected"
            };
            let what = format!(
                "{}{verb} to {addr} ({}{})",
                rel(r),
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
        WatchLine::ConnectFailed {
            at,
            conn,
            error,
            retry_in_s,
            ..
        } => {
            let retry = retry_in_s.map_or(String::new(), |s| format!("; retrying in {s:.1} s"));
            vec![format!(
                "{} {}",
                head(at, Some(*conn)),
                style.paint(Role::Error, &format!("connect failed: {error}{retry}"))
            )]
        }
        // A cluster whose nodes all refuse says so once; the summary counts them.
        WatchLine::Handshake {
            repeat_of: Some(_), ..
        } => Vec::new(),
        WatchLine::Handshake {
            at,
            conn,
            opt_in,
            text,
            server,
            version,
            mode,
            sent,
            ..
        } => {
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
            out
        }
        // Every cluster node broadcasts the same event: one entry, then one short line per copy.
        WatchLine::Push {
            at,
            conn,
            copy_of: Some(copy),
            ..
        } => vec![format!(
            "{} {}",
            head(at, Some(*conn)),
            style.paint(
                Role::Dim,
                &format!(
                    "  also from [{conn}], {:.1} ms after [{}]",
                    copy.after_ms, copy.conn
                )
            )
        )],
        WatchLine::Push {
            at,
            conn,
            labels,
            rel: r,
            frame,
            sources_ours,
            ..
        } => {
            let role = match &frame.parsed {
                crate::notification::Classified::Maintenance(n) if n.opens() => Role::Opening,
                crate::notification::Classified::Maintenance(_) => Role::Closing,
                _ => Role::Plain,
            };
            let labels: String = labels
                .iter()
                .map(|l| match l {
                    Label::CatchUp => " [catch-up replay]",
                    Label::Resent => " [re-sent]",
                    Label::WithOptIn => " [with opt-in]",
                })
                .collect();
            let mut out = vec![format!(
                "{} {}{}{}",
                head(at, Some(*conn)),
                rel(r),
                style.paint(role, &text::describe(&frame.parsed)),
                labels
            )];
            out.push(format!("      {}", style.paint(Role::Dim, &frame.raw)));
            if !sources_ours.is_empty() {
                out.push(format!(
                    "      source(s) we are connected to: {}",
                    sources_ours.join(", ")
                ));
            }
            if let crate::notification::Classified::Maintenance(n) = &frame.parsed {
                for note in &n.notes {
                    out.push(format!("      note: {note}"));
                }
            }
            out
        }
        WatchLine::Malformed {
            at,
            conn,
            offset,
            error,
            ..
        } => vec![format!(
            "{} {}",
            head(at, Some(*conn)),
            style.paint(
                Role::Error,
                &format!("malformed stream at connection byte {offset}: {error}")
            )
        )],
        WatchLine::Closed {
            at,
            conn,
            by,
            error,
            announced,
            window_s,
            past_s,
            rel: r,
            ..
        } => {
            let mut what = match by.as_str() {
                "server" => "closed by the server".to_string(),
                "watch" => "closed by maintwatch".to_string(),
                _ => format!("connection lost: {}", error.as_deref().unwrap_or("error")),
            };
            if *announced {
                if let (Some(w), Some(p)) = (window_s, past_s) {
                    if *p >= 0.0 {
                        what.push_str(&format!(", window {w} s, {p:.1} s past"));
                    } else {
                        what.push_str(&format!(", window {w} s, {:.1} s before it ended", -p));
                    }
                }
            } else if by != "watch" {
                what.push_str(" (unannounced: no MOVING before it)");
            }
            vec![format!(
                "{} {}{}",
                head(at, Some(*conn)),
                rel(r),
                style.paint(Role::Socket, &what)
            )]
        }
        WatchLine::Dns {
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
        } => {
            let set = |v: &Vec<String>| format!("{{{}}}", v.join(", "));
            let ttl = ttl.map_or(String::new(), |t| format!(" ttl {t}"));
            let what = match event.as_str() {
                "changed" => format!("DNS {host} {} -> {}{ttl}", set(before), set(after)),
                "cannot_tell" => format!(
                    "DNS {host} cannot tell ({}): not read as a change",
                    reason.as_deref().unwrap_or("no answer")
                ),
                "recovered" => format!("DNS {host} answers again: {}{ttl}", set(after)),
                _ => format!("DNS {host} {}{ttl}", set(after)),
            };
            let ours = match ours.as_deref() {
                Some("left") => " (our address left the record)",
                Some("rejoined") => " (our address is back in the record)",
                _ => "",
            };
            vec![format!(
                "{} {}{}{}",
                head(at, None),
                rel(r),
                style.paint(Role::Dns, &what),
                ours
            )]
        }
        WatchLine::Handoff {
            at,
            conn,
            event,
            text,
            rel: r,
            ..
        } => vec![format!(
            "{} {}{}",
            head(at, Some(*conn)),
            rel(r),
            style.paint(
                Role::Handoff,
                &format!("dry-run handoff for {event}: {text}")
            )
        )],
        WatchLine::Verdict { at, conn, text, .. } => vec![format!(
            "{} {}",
            head(at, Some(*conn)),
            style.paint(Role::Handoff, &format!("=> {text}"))
        )],
        WatchLine::Advertised {
            at,
            conn,
            addr,
            answer,
            rel: r,
            ..
        } => {
            let what = match answer.as_str() {
                "yes" => format!("{addr} is still advertised"),
                "no" => format!(
                    "{addr} is no longer advertised: expect this connection to be closed without notice"
                ),
                _ => format!("cannot tell whether {addr} is still advertised (DNS gave no answer)"),
            };
            vec![format!(
                "{} {}{}",
                head(at, Some(*conn)),
                rel(r),
                style.paint(Role::Dns, &what)
            )]
        }
        WatchLine::Ping {
            at,
            conn,
            latency_ms,
            error,
            window,
            ..
        } => {
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
        WatchLine::Topology {
            at,
            reason,
            nodes,
            added,
            removed,
            rel: r,
            ..
        } => {
            let mut what = format!("cluster topology {reason}: {} node(s)", nodes.len());
            if !added.is_empty() {
                what.push_str(&format!(", added {}", added.join(", ")));
            }
            if !removed.is_empty() {
                what.push_str(&format!(", removed {}", removed.join(", ")));
            }
            vec![format!(
                "{} {}{}",
                head(at, None),
                rel(r),
                style.paint(Role::Socket, &what)
            )]
        }
        WatchLine::Summary { .. } => crate::output::summary::render(line, style),
    }
}

impl Style {
    /// Colour when asked, or on a terminal without `NO_COLOR`; never inside JSON.
    pub fn choose(choice: crate::cli::ColorChoice, json: bool) -> Style {
        use std::io::IsTerminal;
        let color = match choice {
            crate::cli::ColorChoice::Always => !json,
            crate::cli::ColorChoice::Never => false,
            crate::cli::ColorChoice::Auto => {
                !json
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stdout().is_terminal()
            }
        };
        Style { color }
    }
}
