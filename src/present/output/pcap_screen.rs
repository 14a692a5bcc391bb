//! How `pcap`'s own lines read for people: each under the watch's head (its clock and connection
//! number), painted as the watch paints the same kind of thing; the lines it shares with the
//! watch are the watch's rendering. A line is a [`Record`]: this and its JSON.

use crate::observe::pcap::capture_lines::{Line, PcapLine};
use crate::observe::record::write as json;
use crate::observe::record::{line, ClosedBy, WatchLine};
use crate::present::output::human::{self, clock, Role, Style};
use crate::present::output::sink::Record;

/// A watch line goes through the watch's own JSON writer; a `pcap_*` line through serde. People
/// read the capture's rendering, which tells a connection by its client's address.
impl Record for Line {
    fn write_json(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        match self {
            Line::Watch(w) => json::write_object(out, w),
            Line::Pcap(p) => json::write_value(out, p),
        }
    }

    fn render(&self, style: &Style) -> Vec<String> {
        render(self, style)
    }
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
    use crate::observe::pcap::capture_lines::FileLine;
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
