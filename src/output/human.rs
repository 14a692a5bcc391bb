//! Human lines for the watch timeline: one entry per event, readable at 80 columns, with the
//! exact bytes under every frame and `+s.mmm` offsets relative to the latest opening event.

use crate::handoff::Advertised;
use crate::notification::{Classified, Kind};
use crate::output::text;
use crate::record::line;
use crate::record::{ClosedBy, DnsEvent, OursChange};
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

/// Whether to colour, how to show the time and how wide lines may be, decided once by the caller
/// (flags, `NO_COLOR`, the terminal: [`crate::output::terminal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
    pub time: TimeFormat,
    /// Columns an entry is wrapped to: the terminal's, [`WIDTH`] when piped.
    pub width: usize,
}

impl Default for Style {
    fn default() -> Style {
        Style {
            color: false,
            time: TimeFormat::default(),
            width: WIDTH,
        }
    }
}

/// How the wall-clock prefix of a line is written (`--time-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TimeFormat {
    /// Local time to the millisecond, `HH:MM:SS.mmm`: keeps the common lines within 80 columns.
    #[default]
    Compact,
    /// Local time to the microsecond, `HH:MM:SS.ffffff`.
    Full,
    /// The line's own timestamp: RFC 3339, UTC, microseconds (as in the JSON lines).
    Rfc3339,
}

impl Style {
    pub fn paint(&self, role: Role, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 12);
        self.paint_into(&mut out, role, s);
        out
    }

    /// [`Style::paint`], appended to `out`.
    pub fn paint_into(&self, out: &mut String, role: Role, s: &str) {
        self.paint_with(out, role, |out| out.push_str(s));
    }

    /// [`Style::paint_into`] for text that `write` appends.
    pub fn paint_with(&self, out: &mut String, role: Role, write: impl FnOnce(&mut String)) {
        let code = match role {
            _ if !self.color => None,
            Role::Opening => Some("1;33"),
            Role::Closing => Some("1;32"),
            Role::Dns => Some("36"),
            Role::Socket => Some("1;35"),
            Role::Handoff => Some("34"),
            Role::Error => Some("1;31"),
            Role::Dim => Some("2"),
            Role::Plain => None,
        };
        match code {
            Some(code) => {
                out.push_str("\x1b[");
                out.push_str(code);
                out.push('m');
                write(out);
                out.push_str("\x1b[0m");
            }
            None => write(out),
        }
    }
}

/// The wall-clock prefix of a line, in the chosen format (local time unless RFC 3339).
///
/// Lines come in the shape [`crate::record::wall`] writes: the local time of day is worked out
/// once per second (per thread) and the fraction copied from the line's own text. Any other
/// shape is parsed as RFC 3339 on its own.
pub fn clock(at: &str, format: TimeFormat) -> String {
    let mut out = String::with_capacity(16);
    clock_into(&mut out, at, format);
    out
}

/// [`clock`], appended to `out`.
fn clock_into(out: &mut String, at: &str, format: TimeFormat) {
    let digits = match format {
        TimeFormat::Rfc3339 => return out.push_str(at),
        TimeFormat::Compact => 3,
        TimeFormat::Full => 6,
    };
    if cached_second_into(out, at) {
        out.push('.');
        out.push_str(&at[20..20 + digits]);
    } else {
        out.push_str(&parsed_clock(at, format));
    }
}

fn parsed_clock(at: &str, format: TimeFormat) -> String {
    let pattern = match format {
        TimeFormat::Rfc3339 => return at.to_string(),
        TimeFormat::Compact => "%H:%M:%S%.3f",
        TimeFormat::Full => "%H:%M:%S%.6f",
    };
    DateTime::parse_from_rfc3339(at)
        .map(|t| t.with_timezone(&Local).format(pattern).to_string())
        .unwrap_or_else(|_| at.to_string())
}

/// Appends the local `HH:MM:SS` of `at` when it is `YYYY-MM-DDTHH:MM:SS.ffffffZ`, from a cache
/// of the last second seen; `false` (nothing appended) for any other shape.
fn cached_second_into(out: &mut String, at: &str) -> bool {
    use std::cell::RefCell;
    thread_local! {
        static SECOND: RefCell<(String, String)> = const { RefCell::new((String::new(), String::new())) };
    }
    let b = at.as_bytes();
    let shaped =
        b.len() == 27 && b[19] == b'.' && b[26] == b'Z' && b[20..26].iter().all(u8::is_ascii_digit);
    if !shaped {
        return false;
    }
    let key = &at[..19];
    SECOND.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.0 != key {
            let Ok(t) = DateTime::parse_from_rfc3339(&format!("{key}Z")) else {
                return false;
            };
            *cached = (
                key.to_string(),
                t.with_timezone(&Local).format("%H:%M:%S").to_string(),
            );
        }
        out.push_str(&cached.1);
        true
    })
}

/// An offset, and what it is measured from unless that is the line's own opening event
/// (`own`): `+0.010 after SMIGRATED seq 19: `.
fn rel(r: &Option<Rel>, own: Option<&str>) -> String {
    match r {
        Some(r) if own == Some(r.to.as_str()) && opening(&r.to) => format!("+{:.3} ", r.s),
        Some(r) => format!("+{:.3} after {}: ", r.s, r.to),
        None => String::new(),
    }
}

/// Whether an event's name (`MOVING seq 3`) is that of an opening notification.
fn opening(name: &str) -> bool {
    let kind = name.split(' ').next().unwrap_or_default();
    Kind::from_name(kind.as_bytes()).is_some_and(Kind::opens)
}

/// Renders one line of the timeline as one or more lines of text, each within `style.width`
/// where spaces allow. Every text a server chose (its name and version, a refusal, a push's name,
/// a MOVING's target, an error it sent) is escaped first: a terminal must never receive a control
/// or bidi character from the wire.
pub fn render(line: &WatchLine, style: &Style) -> Vec<String> {
    let out = match terminal_safe(line) {
        std::borrow::Cow::Borrowed(line) => render_safe(line, style),
        std::borrow::Cow::Owned(line) => render_safe(&line, style),
    };
    // The summary's tables are laid out to the width already. A frame's exact bytes break only
    // after a `\r\n`, never at a space they hold: `decode` takes line breaks and indentation as
    // layout, so the rows pasted together are the same bytes.
    let whole = match line {
        WatchLine::Summary(_) => return out,
        WatchLine::Push(line::Push { copy_of: None, .. }) => Some(1),
        _ => None,
    };
    // Bytes bound the width from above: most lines are told apart without decoding them.
    let too_wide = |l: &String| l.len() > style.width && visible_width(l) > style.width;
    if !out
        .iter()
        .enumerate()
        .any(|(i, l)| Some(i) != whole && too_wide(l))
    {
        return out;
    }
    let mut wrapped = Vec::with_capacity(out.len() + 2);
    for (i, l) in out.into_iter().enumerate() {
        if !too_wide(&l) {
            wrapped.push(l);
        } else if Some(i) == whole {
            wrapped.extend(wrap_bytes(&l, style.width));
        } else {
            wrapped.extend(wrap(&l, style.width));
        }
    }
    wrapped
}

/// An escaped frame's line broken after `\r\n`s to fit `width`, continued under
/// [`CONTINUATION`]; a piece longer than the width stays whole.
fn wrap_bytes(line: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    for piece in line.split_inclusive("\\r\\n") {
        let w = visible_width(piece);
        // A piece that starts with a space is not put under the indent: it would read as layout.
        if used + w > width && !current.trim_start().is_empty() && !piece.starts_with(' ') {
            out.push(std::mem::replace(&mut current, CONTINUATION.to_string()));
            used = CONTINUATION.len();
        }
        current.push_str(piece);
        used += w;
    }
    out.push(current);
    out
}

/// The width human lines are kept within when stdout is not a terminal (and the default of
/// [`Style`]): an 80-column terminal.
pub const WIDTH: usize = 80;

/// Where a wrapped entry continues: deeper than the 6 spaces of the lines under an entry, so the
/// two are told apart.
pub const CONTINUATION: &str = "        ";

/// What a refused opt-in means for the rest of the watch.
pub const AFTER_REFUSAL: &str = "this server will send no notifications; still watching the \
connection: closes and DNS changes will show; --require exits instead";

/// Columns a string takes on a terminal: characters, without our colour sequences (the only
/// escapes left after sanitising).
fn visible_width(s: &str) -> usize {
    let mut width = 0;
    let mut in_escape = false;
    for c in s.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => width += 1,
        }
    }
    width
}

/// Greedy word wrap at spaces; a word longer than the width stays whole on its own line, and a
/// number keeps its unit (`+6.3 s`).
fn wrap(line: &str, width: usize) -> Vec<String> {
    wrap_with(line, width, CONTINUATION)
}

/// [`wrap`] with the indent of the continuation lines chosen by the caller (the demo's header and
/// narration lines hang under their own text, not under a timestamp).
pub fn wrap_with(line: &str, width: usize, continuation: &str) -> Vec<String> {
    if visible_width(line) <= width {
        return vec![line.to_string()];
    }
    let mut out = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    // Nothing but the indent on the current line yet: never wrap again there.
    let mut fresh = true;
    for (i, word) in unbroken(line).into_iter().enumerate() {
        let w = visible_width(word);
        if i > 0 {
            if !fresh && used + 1 + w > width {
                out.push(std::mem::replace(&mut current, continuation.to_string()));
                used = continuation.len();
                fresh = true;
            } else {
                current.push(' ');
                used += 1;
            }
        }
        current.push_str(word);
        used += w;
        fresh &= word.is_empty();
    }
    out.push(current);
    out
}

/// The pieces of `line` between the spaces a line may break at: at every space but the one
/// between a number and its unit.
fn unbroken(line: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let mut start = 0;
    for (i, _) in line.match_indices(' ') {
        let before = &line[start..i];
        let after = line[i + 1..].split(' ').next().unwrap_or("");
        let number = before.ends_with(|c: char| c.is_ascii_digit());
        if !(number && is_unit(after)) {
            out.push(before);
            start = i + 1;
        }
    }
    out.push(&line[start..]);
    out
}

/// A unit written after a number, with the punctuation that may follow it (`s`, `ms;`, `s)`).
fn is_unit(word: &str) -> bool {
    let unit = word.trim_end_matches(|c: char| c.is_ascii_punctuation() || c == '\x1b');
    // Colour may close right after the unit: `s\x1b[0m`.
    let unit = unit.split('\x1b').next().unwrap_or(unit);
    matches!(
        unit,
        "s" | "ms" | "us" | "µs" | "B" | "KiB" | "MiB" | "GiB" | "bytes" | "seconds"
    )
}

/// The line itself when none of its strings holds a character unsafe for a terminal (the common
/// case, checked without allocating), else a copy with every string sanitised.
pub fn terminal_safe(line: &WatchLine) -> std::borrow::Cow<'_, WatchLine> {
    let clean = match line {
        WatchLine::Push(p) if !matches!(p.frame.parsed, Classified::Maintenance(_)) => {
            push_is_clean(p)
        }
        _ => serialized_is_clean(line),
    };
    if clean {
        return std::borrow::Cow::Borrowed(line);
    }
    let sanitized = serde_json::to_value(line)
        .map(sanitize_value)
        .and_then(serde_json::from_value::<WatchLine>);
    match sanitized {
        Ok(l) => std::borrow::Cow::Owned(l),
        // Unreachable for lines the timeline made; kept total rather than trusted.
        Err(e) => std::borrow::Cow::Owned(WatchLine::ConnectFailed(line::ConnectFailed {
            v: crate::record::SCHEMA_VERSION,
            t: line.t(),
            at: String::new(),
            conn: 0,
            error: format!("a line could not be shown safely: {e}"),
            retry_in_s: None,
        })),
    }
}

/// Every string of the line, found by serialising it to nowhere.
fn serialized_is_clean(line: &WatchLine) -> bool {
    let mut check = UnsafeText(false);
    serde::Serialize::serialize(
        line,
        &mut serde_json::Serializer::with_formatter(std::io::sink(), &mut check),
    )
    .is_ok()
        && !check.0
}

/// Every string of a push line that is not a maintenance notification (the lines of a flood),
/// checked directly rather than through a serialisation of the whole line.
fn push_is_clean(p: &line::Push) -> bool {
    // Printable ASCII, the common case, is safe without decoding characters.
    let safe = |s: &str| {
        s.bytes().all(|b| (0x20..0x7f).contains(&b))
            || !s.chars().any(crate::escape::is_unsafe_char)
    };
    let name = match &p.frame.parsed {
        Classified::OtherPush(o) => o.name.as_deref(),
        _ => None,
    };
    safe(&p.at)
        && p.rel.as_ref().is_none_or(|r| safe(&r.to))
        // Live bytes are escaped into printable ASCII; recorded text is as it was written.
        && p.frame.raw.recorded().is_none_or(safe)
        && name.is_none_or(safe)
        && p.sources_ours.iter().all(|s| safe(s))
}

/// A JSON formatter that writes nothing and notes whether any string holds a character
/// [`crate::escape::is_unsafe_char`] rejects: serde_json hands it control characters as
/// escapes and everything else as fragments.
struct UnsafeText(bool);

impl serde_json::ser::Formatter for &mut UnsafeText {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        _writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        if fragment.chars().any(crate::escape::is_unsafe_char) {
            self.0 = true;
        }
        Ok(())
    }

    fn write_char_escape<W: ?Sized + std::io::Write>(
        &mut self,
        _writer: &mut W,
        escape: serde_json::ser::CharEscape,
    ) -> std::io::Result<()> {
        use serde_json::ser::CharEscape;
        if !matches!(
            escape,
            CharEscape::Quote | CharEscape::ReverseSolidus | CharEscape::Solidus
        ) {
            self.0 = true;
        }
        Ok(())
    }
}

fn sanitize_value(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(crate::escape::sanitize(&s).into_owned()),
        Value::Array(a) => Value::Array(a.into_iter().map(sanitize_value).collect()),
        Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, v)| (k, sanitize_value(v))).collect())
        }
        other => other,
    }
}

/// What the watch made of the speed a simulator announced in its HELLO reply.
fn speed_note(speed: &crate::record::SimSpeed, style: &Style) -> String {
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

/// A line that is detail rather than news: a successful `--traffic` PING. Shown with `-v`; the
/// summary has the figures. A failed PING is news and always shown.
pub fn is_detail(line: &WatchLine) -> bool {
    matches!(line, WatchLine::Ping(line::Ping { error: None, .. }))
}

fn render_safe(line: &WatchLine, style: &Style) -> Vec<String> {
    match line {
        WatchLine::Start(line::Start { .. }) => line_start(line, style),
        WatchLine::Connected(line::Connected { .. }) => line_connected(line, style),
        WatchLine::ConnectFailed(line::ConnectFailed { .. }) => line_connect_failed(line, style),
        WatchLine::Handshake(line::Handshake { .. }) => line_handshake(line, style),
        WatchLine::Push(line::Push { .. }) => line_push(line, style),
        WatchLine::Malformed(line::Malformed { .. }) => line_malformed(line, style),
        WatchLine::Closed(line::Closed { .. }) => line_closed(line, style),
        WatchLine::Dns(line::Dns { .. }) => line_dns(line, style),
        WatchLine::Handoff(line::Handoff { .. }) => line_handoff(line, style),
        WatchLine::Verdict(line::Verdict { .. }) => line_verdict(line, style),
        WatchLine::Advertised(line::Advertised { .. }) => line_advertised(line, style),
        WatchLine::Ping(line::Ping { .. }) => line_ping(line, style),
        WatchLine::Topology(line::Topology { .. }) => line_topology(line, style),
        WatchLine::Summary(line::Summary { .. }) => {
            crate::output::summary::render(line, style.width)
        }
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
                let note = format!("{CONTINUATION}{AFTER_REFUSAL}");
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
            ..
        }) => vec![format!(
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
                crate::notification::Classified::Maintenance(n) if n.opens() => Role::Opening,
                crate::notification::Classified::Maintenance(_) => Role::Closing,
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
                        crate::notification::event_name(n.kind, n.seq) == to
                    }
                    _ => false,
                };
                first.push_str(&rel(r, own.then_some(to)));
            }
            if crate::timeline::is_scenario_end(&frame.parsed) {
                first.push_str("scenario ended (the simulator's end-of-scenario marker)");
            } else {
                style.paint_with(&mut first, role, |out| {
                    text::describe_into(out, &frame.parsed)
                });
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
            if let crate::notification::Classified::Maintenance(n) = &frame.parsed {
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
                ClosedBy::Watch => "closed by maintwatch".to_string(),
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
                    if *p >= 0.0 {
                        what.push_str(&format!(", window {w} s, {p:.1} s past"));
                    } else {
                        what.push_str(&format!(", window {w} s, {:.1} s before it ended", -p));
                    }
                }
            } else if !matches!(by, ClosedBy::Watch | ClosedBy::ScenarioEnd)
                && !error
                    .as_deref()
                    .is_some_and(|e| e.starts_with(crate::record::line::DURING_HANDSHAKE))
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
        WatchLine::Topology(line::Topology {
            at,
            reason,
            nodes,
            added,
            removed,
            rel: r,
            ..
        }) => {
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
                rel(r, None),
                style.paint(Role::Socket, &what)
            )]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::SCHEMA_VERSION;

    fn handshake(server: &str, text: &str, version: &str) -> WatchLine {
        WatchLine::Handshake(line::Handshake {
            v: SCHEMA_VERSION,
            t: 0.0,
            at: "2026-01-01T00:00:00.123456Z".into(),
            conn: 1,
            opt_in: OptInOutcome::Refused,
            text: Some(text.into()),
            server: Some(server.into()),
            version: Some(version.into()),
            mode: None,
            sent: None,
            repeat_of: None,
            sim_speed: None,
        })
    }

    #[test]
    fn server_text_reaches_the_terminal_escaped() {
        let line = handshake(
            "redis\x1b]0;owned\x07\x1b[2J",
            "ERR no\r\n00:00:00.000 [1] opt-in accepted FAKE\u{9b}",
            "7\u{202e}1",
        );
        let out = render(&line, &Style::default());
        // One entry: wrapped at 80 columns maybe, but every further line is its continuation,
        // none a line the server forged.
        assert!(
            out[1..].iter().all(|l| l.starts_with(CONTINUATION)),
            "{out:?}"
        );
        let text = &out.join(" ");
        assert!(!text.chars().any(crate::escape::is_unsafe_char), "{text:?}");
        assert!(text.contains("redis\\x1b]0;owned\\x07\\x1b[2J"), "{text}");
        assert!(
            text.contains("ERR no\\r\\n00:00:00.000 [1] opt-in accepted"),
            "{text}"
        );
        assert!(text.contains("FAKE\\u{9b}"), "{text}");
        // A refusal says what happens next, once, within the width.
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(words.matches(AFTER_REFUSAL).count(), 1, "{words}");
        assert!(out.iter().all(|l| visible_width(l) <= WIDTH), "{out:?}");
        assert!(text.contains("7\\u{202e}1"), "{text}");
        // Colour is ours and still works around the escaped text.
        let coloured = render(
            &line,
            &Style {
                color: true,
                ..Style::default()
            },
        );
        // The entry's two lines hold 4 escapes of ours; each line of the refusal's note 2.
        let ours = 4 + 2 * (coloured.len() - 2);
        assert_eq!(
            coloured.concat().matches('\x1b').count(),
            ours,
            "{coloured:?}"
        );
    }

    #[test]
    fn clean_lines_are_not_copied() {
        let line = handshake("redis", "ERR unknown subcommand", "7.2");
        assert!(matches!(
            terminal_safe(&line),
            std::borrow::Cow::Borrowed(_)
        ));
        // A backslash is not a control character: `\x1b` typed as text stays as it is.
        let line = handshake("a\\x1b", "b", "7.2");
        assert!(matches!(
            terminal_safe(&line),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    /// The direct check of a push line finds an unsafe character in each of its strings, as
    /// the check through serde does.
    #[test]
    fn a_push_line_is_checked_field_by_field_like_the_serialised_check() {
        use crate::notification::OtherPush;
        use crate::record::{CopyOf, FrameRecord};
        let push = |at: &str, to: &str, raw: &str, name: &str, ours: &str| {
            WatchLine::Push(line::Push {
                v: SCHEMA_VERSION,
                t: 1.0,
                at: at.into(),
                conn: 1,
                labels: vec![Label::Resent],
                rel: Some(Rel {
                    to: to.into(),
                    s: 0.5,
                }),
                frame: FrameRecord {
                    offset: 0,
                    len: 3,
                    raw: raw.into(),
                    parsed: Classified::OtherPush(OtherPush {
                        name: Some(name.to_string().into()),
                        elements: 3,
                        known: true,
                    }),
                },
                copy_of: Some(CopyOf {
                    conn: 2,
                    after_ms: 1.0,
                }),
                sources_ours: vec![ours.into()],
            })
        };
        let clean = [
            "2026-01-01T00:00:00.000000Z",
            "MOVING seq 1",
            ">1\\r\\n",
            "message",
            "a:1",
        ];
        for field in 0..=clean.len() {
            for bad in ["\x1b[31m", "\u{202e}", "\n", "\u{9b}"] {
                let mut f = clean;
                if field < f.len() {
                    f[field] = bad;
                }
                let line = push(f[0], f[1], f[2], f[3], f[4]);
                let WatchLine::Push(p) = &line else {
                    unreachable!()
                };
                assert_eq!(
                    push_is_clean(p),
                    serialized_is_clean(&line),
                    "{field} {bad:?}"
                );
                assert_eq!(push_is_clean(p), field == clean.len(), "{field} {bad:?}");
            }
        }
    }

    #[test]
    fn compact_time_by_default_full_and_rfc3339_on_request() {
        let at = "2026-01-01T00:00:00.123456Z";
        let compact = clock(at, TimeFormat::Compact);
        assert_eq!(compact.len(), "HH:MM:SS.mmm".len(), "{compact}");
        assert!(compact.ends_with(".123"), "{compact}");
        let full = clock(at, TimeFormat::Full);
        assert!(full.ends_with(".123456"), "{full}");
        assert_eq!(clock(at, TimeFormat::Rfc3339), at);
    }

    /// The cached second gives what parsing each line gave, across seconds and back.
    #[test]
    fn the_cached_clock_matches_parsing_every_line() {
        for at in [
            "2026-01-01T00:00:00.123456Z",
            "2026-01-01T00:00:00.999999Z",
            "2026-01-01T00:00:01.000001Z",
            "2025-12-31T23:59:59.500000Z",
            "2026-01-01T00:00:01.000002Z",
            // Other shapes are parsed on their own.
            "2026-01-01T00:00:01.5Z",
            "2026-01-01T01:00:01.123456+01:00",
            "not a time",
        ] {
            for format in [TimeFormat::Compact, TimeFormat::Full] {
                assert_eq!(clock(at, format), parsed_clock(at, format), "{at}");
            }
        }
    }

    #[test]
    fn a_successful_ping_is_detail_a_failed_one_is_not() {
        let ping = |error: Option<&str>| {
            WatchLine::Ping(line::Ping {
                v: SCHEMA_VERSION,
                t: 0.0,
                at: String::new(),
                conn: 1,
                latency_ms: error.is_none().then_some(0.2),
                error: error.map(str::to_string),
                window: None,
            })
        };
        assert!(is_detail(&ping(None)));
        assert!(!is_detail(&ping(Some("connection closed"))));
    }
}

#[cfg(test)]
mod wrap_tests {
    use super::*;

    #[test]
    fn long_entries_wrap_at_spaces_within_80_columns() {
        let line = format!("21:09:13.027 [-] +9.994 {}", "word ".repeat(30).trim_end());
        let lines = wrap(&line, WIDTH);
        assert!(lines.len() > 1);
        assert!(
            lines.iter().all(|l| visible_width(l) <= WIDTH),
            "{lines:#?}"
        );
        assert!(lines[1..].iter().all(|l| l.starts_with(CONTINUATION)));
        let rejoined: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(
            rejoined,
            line.split_whitespace().collect::<Vec<_>>(),
            "no word lost"
        );
        // Colour sequences take no columns; a word too long for a line stays whole.
        let painted = format!("\x1b[2m{}\x1b[0m", "x".repeat(75));
        assert_eq!(wrap(&painted, WIDTH), vec![painted.clone()]);
        let long = format!("a {}", "y".repeat(100));
        assert_eq!(wrap(&long, WIDTH).len(), 2);
    }

    /// A frame's bytes break only after a `\r\n`, and read back as the same bytes.
    #[test]
    fn escaped_bytes_break_after_a_line_end_only() {
        let raw = ">3\\r\\n$9\\r\\nSMIGRATED\\r\\n:19\\r\\n*1\\r\\n*3\\r\\n$15\\r\\n127.0.0.3:34235\\r\\n$15\\r\\n127.0.0.5:34235\\r\\n$11\\r\\nhello world\\r\\n";
        let line = format!("      {raw}");
        for width in [20, 40, 60, 80, 200] {
            let rows = wrap_bytes(&line, width);
            for row in &rows[..rows.len() - 1] {
                assert!(row.ends_with("\\r\\n"), "{width}: {rows:?}");
            }
            let pasted: String = rows.iter().map(|r| r.trim_start()).collect();
            assert_eq!(pasted, raw, "{width}");
            assert_eq!(rows.len() == 1, line.len() <= width, "{width}: {rows:?}");
        }
    }

    /// A number and its unit are never split, wherever the width falls.
    #[test]
    fn a_number_keeps_its_unit() {
        let line = "replacement listens +6.3 s; DNS follows +9.7 s, (TTL 1 s) window 15 ms.";
        for width in 10..line.len() {
            let lines = wrap_with(line, width, "  ");
            for pair in lines.windows(2) {
                let next = pair[1].trim_start();
                assert!(
                    !(pair[0].ends_with(|c: char| c.is_ascii_digit())
                        && is_unit(next.split(' ').next().unwrap())),
                    "{width}: {lines:?}"
                );
            }
            let words: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
            assert_eq!(words, line.split_whitespace().collect::<Vec<_>>());
        }
        // Not a unit: a word that only starts like one.
        assert_eq!(unbroken("took 3 seconds"), ["took", "3 seconds"]);
        assert_eq!(unbroken("seq 3 shards 27"), ["seq", "3", "shards", "27"]);
    }
}
