//! What a report keeps of the lines a command writes, as it writes them.
//!
//! A watch can run for weeks and a capture can hold millions of frames, so nothing here keeps
//! lines whole: each kind of thing the page draws is kept up to its own cap, and what passes a
//! cap is counted so the page can say how much it left out. The caps are the page's size bound
//! (docs/report.md).

use std::collections::HashMap;

use crate::observe::pcap::capture_lines::{Line, PcapLine};
use crate::observe::record::{line, ClosedBy, DnsEvent, WatchLine};
use crate::protocol::notification::Classified;
use crate::shared::escape::sanitize;

/// Connection sessions kept (each is one bar; the drawing caps bars again).
pub const MAX_SESSIONS: usize = 20_000;
/// Maintenance notifications kept as markers.
pub const MAX_MARKS: usize = 200;
/// DNS changes kept.
pub const MAX_DNS: usize = 100;
/// Frames kept for the raw-frames section.
pub const MAX_FRAMES: usize = 100;
/// Bytes of a frame's escaped text kept for the raw-frames section.
pub const FRAME_CAP: usize = 4096;
/// Bytes of a frame's escaped text kept for a marker's `<title>`.
pub const TITLE_CAP: usize = 1024;
/// Addresses kept per side of a DNS change, and bytes kept of each (an IPv6 address with a
/// zone fits).
pub const MAX_ADDRS: usize = 8;
pub const ADDR_CAP: usize = 64;
/// Bytes kept of any other text from the wire (names, reasons, addresses).
pub const TEXT_CAP: usize = 512;

/// One connection session: from its `connected` to its `closed`.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub conn: u32,
    pub session: u32,
    pub addr: String,
    pub opened: f64,
    pub closed: Option<(f64, ClosedBy)>,
}

/// A maintenance notification as first seen (copies and re-sent ones are not markers).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub t: f64,
    pub conn: u32,
    /// `MOVING seq 3`.
    pub name: String,
    pub window: Option<i64>,
    pub frame: Capped,
}

/// A DNS answer that changed.
#[derive(Debug, Clone, PartialEq)]
pub struct DnsChange {
    pub t: f64,
    pub host: String,
    pub before: Vec<String>,
    pub after: Vec<String>,
}

/// A frame's escaped text, cut at a cap, with its full length in bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Capped {
    pub text: String,
    /// The frame's length on the wire.
    pub len: usize,
    /// Whether `text` was cut.
    pub cut: bool,
}

impl Capped {
    /// Recorded text read back from a file may hold anything: it is shown as the terminal
    /// would show it.
    pub fn new(escaped: &str, len: usize, cap: usize) -> Capped {
        let text = cut(escaped, cap);
        Capped {
            // Escaping never shortens: fewer characters than bytes means the bytes were cut.
            cut: text.len() < escaped.len() || text.len() < len,
            text: sanitize(text).into_owned(),
            len,
        }
    }
}

/// One frame for the raw-frames section.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub t: f64,
    pub conn: u32,
    pub frame: Capped,
}

/// Everything a report keeps of a run's lines, bounded.
#[derive(Debug, Default, Clone)]
pub struct Collected {
    pub start: Option<line::Start>,
    pub sessions: Vec<Session>,
    pub marks: Vec<Mark>,
    pub dns: Vec<DnsChange>,
    pub frames: Vec<Frame>,
    pub summary: Option<line::Summary>,
    /// `pcap`: the new connection of a connection that got a MOVING (`after_conn -> conn`).
    pub successors: Vec<(u32, u32)>,
    /// `pcap`: each connection's verdict word and the client's address.
    pub pcap_verdicts: HashMap<u32, String>,
    pub pcap_clients: HashMap<u32, String>,
    /// What passed a cap: sessions, markers, DNS changes, frames.
    pub left_out: LeftOut,
    /// The latest time of any line: the run was observed until then (its drawing's axis and
    /// open bars reach it, though nothing was drawn after the last event).
    until: Option<f64>,
    /// The index in `sessions` of each connection's open session.
    open: HashMap<u32, usize>,
}

/// Counts of what was seen past each cap.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LeftOut {
    pub sessions: u64,
    pub marks: u64,
    pub dns: u64,
    pub frames: u64,
}

impl Collected {
    /// Takes one line of `pcap`'s output.
    pub fn pcap_line(&mut self, l: &Line) {
        match l {
            Line::Watch(w) => self.line(w),
            Line::Pcap(p) => self.pcap(p),
        }
    }

    fn pcap(&mut self, p: &PcapLine) {
        match p {
            PcapLine::PcapStream { conn, client, .. } if self.pcap_clients.len() < MAX_SESSIONS => {
                self.pcap_clients.insert(*conn, bounded(client));
            }
            PcapLine::PcapReconnect {
                conn, after_conn, ..
            } if self.successors.len() < MAX_SESSIONS => {
                self.successors.push((*after_conn, *conn));
            }
            PcapLine::PcapVerdict { conn, verdict, .. }
                if self.pcap_verdicts.len() < MAX_SESSIONS =>
            {
                self.pcap_verdicts.insert(*conn, bounded(verdict));
            }
            _ => {}
        }
    }

    /// The run was observed until `t` at least (the lines' clock): a simulator's scenario
    /// ending after the last frame it sent, say.
    pub fn observed_until(&mut self, t: f64) {
        if t.is_finite() {
            self.until = Some(self.until.map_or(t, |u| u.max(t)));
        }
    }

    /// The latest time the run was observed, on the lines' clock.
    pub fn until(&self) -> Option<f64> {
        self.until
    }

    /// Takes one watch line.
    pub fn line(&mut self, l: &WatchLine) {
        self.observed_until(l.t());
        match l {
            WatchLine::Start(s) if self.start.is_none() => self.start = Some(s.clone()),
            WatchLine::Connected(c) => self.connected(c),
            WatchLine::Closed(c) => self.closed(c),
            WatchLine::Push(p) => self.push(p),
            WatchLine::Dns(d) => self.dns(d),
            WatchLine::Summary(s) => self.summary = Some(s.clone()),
            _ => {}
        }
    }

    fn connected(&mut self, c: &line::Connected) {
        if self.sessions.len() >= MAX_SESSIONS {
            self.left_out.sessions += 1;
            return;
        }
        self.open.insert(c.conn, self.sessions.len());
        self.sessions.push(Session {
            conn: c.conn,
            session: c.session,
            addr: bounded(&c.addr),
            opened: c.t,
            closed: None,
        });
    }

    fn closed(&mut self, c: &line::Closed) {
        if let Some(i) = self.open.remove(&c.conn) {
            self.sessions[i].closed = Some((c.t, c.by));
        }
    }

    fn push(&mut self, p: &line::Push) {
        let copy = p.copy_of.is_some();
        self.frame(
            p.t,
            p.conn,
            &p.frame.raw.escaped(),
            p.frame.len,
            &p.frame.parsed,
            copy,
        );
    }

    /// A frame the simulator wrote (`simulate`): its bytes, parsed as the watch parses them.
    pub fn sent(&mut self, t: f64, conn: u64, bytes: &[u8]) {
        self.observed_until(t);
        let parsed = match crate::observe::record::reparse_bytes(bytes) {
            Ok((parsed, _)) => parsed,
            Err(_) => Classified::NotPush,
        };
        let conn = u32::try_from(conn).unwrap_or(u32::MAX);
        let escaped = crate::shared::escape::escape(collect_cut(bytes));
        self.frame(t, conn, &escaped, bytes.len(), &parsed, false);
    }

    fn frame(
        &mut self,
        t: f64,
        conn: u32,
        escaped: &str,
        len: usize,
        parsed: &Classified,
        copy: bool,
    ) {
        if self.frames.len() < MAX_FRAMES {
            self.frames.push(Frame {
                t,
                conn,
                frame: Capped::new(escaped, len, FRAME_CAP),
            });
        } else {
            self.left_out.frames += 1;
        }
        let Classified::Maintenance(n) = parsed else {
            return;
        };
        // A copy from another node or a re-sent one is the same event: one marker.
        let name = n.event_name();
        if copy || self.marks.iter().any(|m| m.name == name) {
            return;
        }
        if self.marks.len() >= MAX_MARKS {
            self.left_out.marks += 1;
            return;
        }
        self.marks.push(Mark {
            t,
            conn,
            name: bounded(&name),
            window: n.time,
            frame: Capped::new(escaped, len, TITLE_CAP),
        });
    }

    fn dns(&mut self, d: &line::Dns) {
        if d.event != DnsEvent::Changed {
            return;
        }
        if self.dns.len() >= MAX_DNS {
            self.left_out.dns += 1;
            return;
        }
        self.dns.push(DnsChange {
            t: d.t,
            host: bounded(&d.host),
            before: addrs(&d.before),
            after: addrs(&d.after),
        });
    }

    /// The frame of the marker named `name`, when one was kept.
    pub fn frame_of(&self, name: &str) -> Option<&Capped> {
        self.marks.iter().find(|m| m.name == name).map(|m| &m.frame)
    }
}

/// The bytes of a frame worth escaping: an escaped byte is at most four characters, so more
/// than four times the cap would be cut anyway.
fn collect_cut(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.len().min(FRAME_CAP)]
}

/// At most [`MAX_ADDRS`] addresses, each bounded.
pub fn addrs(list: &[String]) -> Vec<String> {
    list.iter()
        .take(MAX_ADDRS)
        .map(|a| bounded_to(a, ADDR_CAP))
        .collect()
}

/// Text from the wire, made safe for a terminal (the page shows it as the terminal does) and cut
/// at [`TEXT_CAP`] bytes.
pub fn bounded(text: &str) -> String {
    bounded_to(text, TEXT_CAP)
}

/// [`bounded`] with another cap (a grade's reasons are longer than a name).
pub fn bounded_to(text: &str, cap: usize) -> String {
    let shown = sanitize(cut(text, cap));
    if shown.len() > cap {
        format!("{}...", cut(&shown, cap))
    } else if text.len() > cap {
        format!("{shown}...")
    } else {
        shown.into_owned()
    }
}

/// `text` cut to at most `cap` bytes, at a character boundary.
pub fn cut(text: &str, cap: usize) -> &str {
    if text.len() <= cap {
        return text;
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_characters_whole() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("héllo", 3), "hé");
        assert_eq!(cut("abc", 10), "abc");
    }

    #[test]
    fn bounded_text_is_cut_and_sanitized() {
        assert_eq!(bounded("a\x1b[31mb"), "a\\x1b[31mb");
        let long = "x".repeat(TEXT_CAP * 2);
        assert_eq!(bounded(&long).len(), TEXT_CAP + 3);
    }

    #[test]
    fn a_capped_frame_notes_its_cut() {
        let c = Capped::new(&"y".repeat(5000), 5000, FRAME_CAP);
        assert!(c.cut);
        assert_eq!(c.text.len(), FRAME_CAP);
        assert!(!Capped::new("ab", 2, FRAME_CAP).cut);
    }
}

#[cfg(test)]
mod sent_tests {
    use super::*;

    #[test]
    fn a_sent_moving_is_a_marker_with_its_frame() {
        let mut c = Collected::default();
        c.sent(1.5, 3, b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n");
        assert_eq!(c.frames.len(), 1);
        assert_eq!(c.marks.len(), 1, "{:?}", c.frames);
        let m = &c.marks[0];
        assert_eq!(
            (m.name.as_str(), m.window, m.conn),
            ("MOVING seq 0", Some(15), 3)
        );
        assert!(c
            .frame_of("MOVING seq 0")
            .unwrap()
            .text
            .starts_with(">4\\r\\n"));
    }
}
