//! The lines `pcap` adds to the watch's JSON-lines schema, and how they read for people.
//!
//! Everything the watch already says (connections, handshakes, pushes, closes, the summary) is
//! the watch's own [`WatchLine`], produced by the same timeline. What only a capture can tell
//! (the client's address, TCP gaps, TLS, the application's reconnect and the verdict about it)
//! lives here, as `pcap_*` lines documented in `docs/jsonl.md`.

use crate::observe::record::{line, ClosedBy, WatchLine};
use crate::present::output::human::{self, clock, Role, Style};
use serde::{Deserialize, Serialize};

/// One line of `pcap` output: a watch line or a pcap line.
// One line exists at a time, written and dropped.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Line {
    Watch(WatchLine),
    Pcap(PcapLine),
}

/// One capture file as read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileLine {
    pub file: String,
    /// `pcap` or `pcapng`.
    pub format: String,
    pub packets: u64,
    /// Bytes after the last whole packet (the file was cut), if any.
    pub truncated_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum PcapLine {
    /// An application connection (a TCP stream carrying RESP) was found.
    PcapStream {
        v: u32,
        t: f64,
        at: String,
        conn: u32,
        client: String,
        server: String,
        /// Whether the SYN was captured (so the handshake is in the capture).
        syn: bool,
        /// `port` (`--port`) or `content` (the client's first bytes are a RESP command).
        selected_by: String,
    },
    /// What the application did to opt in, and what it got.
    PcapHandshake {
        v: u32,
        t: f64,
        at: String,
        conn: u32,
        /// The protocol version sent with HELLO (`3`), or null when no HELLO was sent.
        hello: Option<String>,
        /// The server's error for HELLO, if it refused.
        hello_error: Option<String>,
        /// The opt-in command as the application sent it, or null.
        opt_in: Option<String>,
        endpoint_type: Option<String>,
        /// `accepted`, `refused`, `not_sent`, `resp3_unavailable`, `auth_failed`,
        /// `not_captured` (the capture started after the handshake).
        outcome: String,
        text: Option<String>,
    },
    /// A TLS stream: nothing inside can be read.
    PcapTls {
        v: u32,
        t: f64,
        at: String,
        client: String,
        server: String,
        text: String,
    },
    /// Bytes missing from one direction of a connection.
    PcapGap {
        v: u32,
        t: f64,
        at: String,
        conn: u32,
        /// `client` (what the application sent) or `server`.
        side: String,
        /// Stream offset of the first missing byte.
        offset: u64,
        /// How many bytes are missing.
        bytes: u64,
        /// `overflow` (too much out-of-order data waiting) or `ended` (the stream ended first).
        why: String,
        text: String,
    },
    /// The client's side could not be read as RESP commands.
    PcapUnreadable {
        v: u32,
        t: f64,
        at: String,
        conn: u32,
        side: String,
        offset: u64,
        error: String,
    },
    /// A new connection from the host of a connection that got a MOVING.
    PcapReconnect {
        v: u32,
        t: f64,
        at: String,
        /// The new connection.
        conn: u32,
        /// The connection that got the MOVING.
        after_conn: u32,
        event: String,
        /// Where the new connection goes.
        addr: String,
        /// Seconds after the MOVING.
        s: f64,
    },
    /// Did the application move before the server closed the connection it was warned on?
    PcapVerdict {
        v: u32,
        t: f64,
        at: String,
        conn: u32,
        event: String,
        /// `moved_before_close`, `cut_by_close`, `open_at_end`.
        verdict: String,
        text: String,
        /// Seconds after the MOVING: the new connection, and the close.
        reconnect_s: Option<f64>,
        close_s: Option<f64>,
        /// `server` or `client`, and how (`fin`, `rst`).
        closed_by: Option<String>,
        /// Commands the application sent on this connection after the MOVING, replies read,
        /// and the slowest reply.
        window_commands: u32,
        window_replies: u32,
        window_max_latency_ms: Option<f64>,
    },
    /// Something about the file rather than the traffic (a truncated file).
    PcapWarning { v: u32, file: String, text: String },
    /// The last line: what was read.
    PcapEnd {
        v: u32,
        files: Vec<FileLine>,
        packets: u64,
        tcp_streams: u64,
        resp_conns: u64,
        tls_streams: u64,
        ignored_streams: u64,
        /// Packets whose headers could not be decoded.
        bad_packets: u64,
        /// Packets cut by the capture's snap length.
        snapped_packets: u64,
        gaps: u64,
        /// Streams forgotten undecided, past the cap on streams not yet known to be RESP.
        #[serde(default)]
        pruned_streams: u64,
    },
}

fn head(style: &Style, at: &str, conn: Option<u32>) -> String {
    let who = conn.map_or("[-]".to_string(), |c| format!("[{c}]"));
    format!("{} {who}", style.paint(Role::Dim, &clock(at, style.time)))
}

/// The usual pcap line: its head, then `text` painted as `role`.
fn headed(style: &Style, at: &str, conn: Option<u32>, role: Role, text: &str) -> Vec<String> {
    vec![format!(
        "{} {}",
        head(style, at, conn),
        style.paint(role, text)
    )]
}

/// Renders a line for people.
pub fn render(line: &Line, style: &Style) -> Vec<String> {
    if let Line::Watch(w) = line {
        if !matches!(w, WatchLine::Closed(c) if c.by == ClosedBy::Client)
            && !matches!(w, WatchLine::Connected(_))
        {
            return human::render(w, style);
        }
    }
    // The capture's own lines wrap to the width as the watch's do; the indented bytes never.
    render_unwrapped(line, style)
        .into_iter()
        .flat_map(|l| match l.starts_with("      ") {
            true => vec![l],
            false => human::wrap_with(&l, style.width, human::CONTINUATION),
        })
        .collect()
}

fn render_unwrapped(line: &Line, style: &Style) -> Vec<String> {
    match line {
        // The pcap_stream line says it with the client's address.
        Line::Watch(WatchLine::Connected(_)) => Vec::new(),
        Line::Watch(WatchLine::Closed(line::Closed {
            at,
            conn,
            by: ClosedBy::Client,
            error,
            rel,
            ..
        })) => {
            let how = error
                .as_deref()
                .unwrap_or("closed by the application (FIN)");
            let rel = rel
                .as_ref()
                .map_or(String::new(), |r| format!("+{:.3} ", r.s));
            vec![format!(
                "{} {rel}{}",
                head(style, at, Some(*conn)),
                style.paint(Role::Socket, how)
            )]
        }
        Line::Watch(w) => human::render(w, style),
        Line::Pcap(p) => render_pcap(p, style),
    }
}

fn render_pcap(line: &PcapLine, style: &Style) -> Vec<String> {
    match line {
        PcapLine::PcapStream {
            at,
            conn,
            client,
            server,
            syn,
            ..
        } => {
            let already = if *syn {
                ""
            } else {
                " (already open when the capture started)"
            };
            let text = format!("{client} connected to {server}{already}");
            headed(style, at, Some(*conn), Role::Socket, &text)
        }
        PcapLine::PcapHandshake { .. } => render_handshake(line, style),
        PcapLine::PcapTls {
            at,
            client,
            server,
            text,
            ..
        } => {
            let text = format!("{client} -> {server}: TLS, {text}");
            headed(style, at, None, Role::Error, &text)
        }
        PcapLine::PcapGap { at, conn, text, .. } => {
            headed(style, at, Some(*conn), Role::Error, text)
        }
        PcapLine::PcapUnreadable {
            at,
            conn,
            side,
            offset,
            error,
            ..
        } => {
            let text =
                format!("{side} side unreadable from byte {offset}: {error}; not parsed further");
            headed(style, at, Some(*conn), Role::Error, &text)
        }
        PcapLine::PcapReconnect {
            at,
            conn,
            after_conn,
            event,
            addr,
            s,
            ..
        } => vec![format!(
            "{} +{s:.3} {}",
            head(style, at, Some(*conn)),
            style.paint(
                Role::Socket,
                &format!(
                    "new connection to {addr} from the host of [{after_conn}], after its {event}"
                )
            )
        )],
        PcapLine::PcapVerdict { at, conn, text, .. } => {
            headed(style, at, Some(*conn), Role::Handoff, &format!("=> {text}"))
        }
        PcapLine::PcapWarning { file, text, .. } => {
            vec![style.paint(Role::Error, &format!("warning: {file}: {text}"))]
        }
        PcapLine::PcapEnd { .. } => vec![end_summary(line)],
    }
}

/// The handshake line of a connection that cannot get notifications; accepted and refused
/// opt-ins are printed as the watch's own handshake line, so they give nothing here.
fn render_handshake(line: &PcapLine, style: &Style) -> Vec<String> {
    let PcapLine::PcapHandshake {
        at,
        conn,
        hello,
        outcome,
        ..
    } = line
    else {
        unreachable!("called for PcapHandshake only")
    };
    let what = match outcome.as_str() {
        "not_sent" if hello.as_deref() == Some("3") => {
            "HELLO 3 but no opt-in sent: this connection gets no maintenance notifications"
        }
        "not_sent" => {
            "no HELLO 3 and no opt-in (RESP2): this connection cannot get maintenance notifications"
        }
        "not_captured" => "handshake not in the capture (it started mid-connection)",
        _ => return Vec::new(),
    };
    headed(style, at, Some(*conn), Role::Error, what)
}

/// `1 packet`, `2 packets`.
fn counted(n: u64, what: &str) -> String {
    if n == 1 {
        format!("{n} {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The closing summary: what was read, then only the kinds of trouble that happened.
fn end_summary(line: &PcapLine) -> String {
    let PcapLine::PcapEnd {
        files,
        packets,
        tcp_streams,
        resp_conns,
        tls_streams,
        ignored_streams,
        bad_packets,
        snapped_packets,
        gaps,
        pruned_streams,
        ..
    } = line
    else {
        unreachable!("called for PcapEnd only")
    };
    // Each file's own count only when there are several: with one it is the total, said once.
    let names: Vec<String> = files
        .iter()
        .map(|f| match files.len() {
            1 => format!("{} ({})", f.file, f.format),
            _ => format!(
                "{} ({}, {})",
                f.file,
                f.format,
                counted(f.packets, "packet")
            ),
        })
        .collect();
    let mut text = format!(
        "read {}: {}, {}: {resp_conns} RESP, {tls_streams} TLS, {ignored_streams} other",
        names.join(", "),
        counted(*packets, "packet"),
        counted(*tcp_streams, "TCP stream"),
    );
    if *gaps > 0 {
        text.push_str(&format!("; {gaps} gap(s)"));
    }
    if *bad_packets > 0 {
        text.push_str(&format!("; {bad_packets} undecodable packet(s)"));
    }
    if *snapped_packets > 0 {
        text.push_str(&format!(
            "; {snapped_packets} packet(s) cut by the snap length"
        ));
    }
    if *pruned_streams > 0 {
        text.push_str(&format!(
            "; {pruned_streams} undecided stream(s) forgotten (too many open at once)"
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::record::SCHEMA_VERSION;

    fn end(files: &[(&str, u64)], tcp_streams: u64) -> PcapLine {
        PcapLine::PcapEnd {
            v: SCHEMA_VERSION,
            files: files
                .iter()
                .map(|(file, packets)| FileLine {
                    file: file.to_string(),
                    format: "pcap".into(),
                    packets: *packets,
                    truncated_bytes: None,
                })
                .collect(),
            packets: files.iter().map(|f| f.1).sum(),
            tcp_streams,
            resp_conns: 1,
            tls_streams: 0,
            ignored_streams: 0,
            bad_packets: 0,
            snapped_packets: 0,
            gaps: 0,
            pruned_streams: 0,
        }
    }

    #[test]
    fn the_packet_count_is_said_once_and_in_the_singular_for_one() {
        assert_eq!(
            end_summary(&end(&[("m.pcap", 6371)], 2)),
            "read m.pcap (pcap): 6371 packets, 2 TCP streams: 1 RESP, 0 TLS, 0 other"
        );
        assert_eq!(
            end_summary(&end(&[("a.pcap", 1), ("b.pcap", 2)], 1)),
            "read a.pcap (pcap, 1 packet), b.pcap (pcap, 2 packets): 3 packets, 1 TCP stream: 1 RESP, 0 TLS, 0 other"
        );
    }
}
