//! The maintenance-notification model: a pure, tolerant parse of one push frame.
//!
//! There is no published specification, so the parse follows what servers were captured
//! sending and what other clients' fixtures send (docs/protocol.md section 2). The rules that matter:
//! which elements a notification has is decided by its *type*, never by sniffing content; a
//! damaged element costs only that element (a missing seq costs deduplication, never the
//! notification); anything unparsed keeps its raw text, and every tolerance applied is recorded
//! in `notes` so an operator can see what was bent. A push that is not a maintenance notification
//! is classified as such and never mistaken for one.

use crate::protocol::resp::{self, FlatFrame, Frame};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The seven maintenance notification types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Kind {
    Moving,
    Migrating,
    Migrated,
    FailingOver,
    FailedOver,
    #[serde(rename = "SMIGRATING")]
    SMigrating,
    #[serde(rename = "SMIGRATED")]
    SMigrated,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Moving,
        Kind::Migrating,
        Kind::Migrated,
        Kind::FailingOver,
        Kind::FailedOver,
        Kind::SMigrating,
        Kind::SMigrated,
    ];

    /// The wire name, upper case.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Moving => "MOVING",
            Kind::Migrating => "MIGRATING",
            Kind::Migrated => "MIGRATED",
            Kind::FailingOver => "FAILING_OVER",
            Kind::FailedOver => "FAILED_OVER",
            Kind::SMigrating => "SMIGRATING",
            Kind::SMigrated => "SMIGRATED",
        }
    }

    /// Case-insensitive lookup of a wire name.
    pub fn from_name(name: &[u8]) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name().as_bytes().eq_ignore_ascii_case(name))
    }

    /// Whether this notification announces a window (something is about to happen).
    pub fn opens(self) -> bool {
        matches!(
            self,
            Kind::Moving | Kind::Migrating | Kind::FailingOver | Kind::SMigrating
        )
    }

    /// The opening kind this notification completes. MOVING has none: the server closing the
    /// socket is what ends it.
    pub fn closes(self) -> Option<Kind> {
        match self {
            Kind::Migrated => Some(Kind::Migrating),
            Kind::FailedOver => Some(Kind::FailingOver),
            Kind::SMigrated => Some(Kind::SMigrating),
            _ => None,
        }
    }

    /// Whether a time element (the declared window, in seconds) belongs to this type.
    pub fn has_time(self) -> bool {
        matches!(self, Kind::Moving | Kind::Migrating | Kind::FailingOver)
    }

    /// How many elements follow the type in the current wire form.
    pub fn fields(self) -> usize {
        if self.has_time() {
            3
        } else {
            2
        }
    }

    /// Whether a server replays this kind to new opt-ins (Enterprise retains the last
    /// shard-scoped completion only).
    pub fn is_retained(self) -> bool {
        matches!(self, Kind::Migrated | Kind::FailedOver)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A host and port, IPv6 hosts without their brackets.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostPort {
    pub host: String,
    pub port: u16,
}

impl HostPort {
    /// Splits `host:port` on the *last* colon (so `[::1]:7000` and `::1:7000` both work).
    /// Placeholders (`?`, empty host, port 0) give `None`; a host that is neither an IP address
    /// nor a valid host name is an error (see [`check_host`]).
    pub fn parse(text: &str) -> Result<Option<HostPort>, String> {
        let text = text.trim();
        if text.is_empty() || text == "?" {
            return Ok(None);
        }
        let Some(colon) = text.rfind(':') else {
            return Err(format!("{text:?} has no port"));
        };
        let (host, port) = (&text[..colon], &text[colon + 1..]);
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        // A bare IPv6 address has no port: its last colon-split leaves a host ending in ':'.
        if text[..colon].ends_with(':') || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("{port:?} in {text:?} is not a port number"));
        }
        let port: u16 = port
            .parse()
            .map_err(|_| format!("{port:?} in {text:?} is not a port number"))?;
        if host.is_empty() || host == "?" || port == 0 {
            return Ok(None);
        }
        check_host(host)?;
        Ok(Some(HostPort {
            host: host.to_string(),
            port,
        }))
    }

    /// Whether the host is an IP literal rather than a name.
    pub fn is_ip(&self) -> bool {
        self.host.parse::<std::net::IpAddr>().is_ok()
    }
}

/// Longest host name DNS can carry (RFC 1035), without a trailing dot, and longest label.
const MAX_HOST_NAME: usize = 253;
const MAX_LABEL: usize = 63;

/// Whether `host` could be connected to: an IP address, or a host name of at most 253 bytes in
/// labels of 1 to 63 letters, digits, '-' or '_' (not starting or ending with '-'). Anything
/// else, a server's garbage or a 10 KB name, is no address to move to.
pub fn check_host(host: &str) -> Result<(), String> {
    if host.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    let shown = || crate::shared::escape::escape(&host.as_bytes()[..host.len().min(64)]);
    if name.len() > MAX_HOST_NAME {
        return Err(format!(
            "host \"{}...\" is {} bytes long, over the {MAX_HOST_NAME} a host name may have",
            shown(),
            host.len()
        ));
    }
    for label in name.split('.') {
        let allowed = label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if label.is_empty() || label.len() > MAX_LABEL {
            return Err(format!(
                "host \"{}\" has a label of {} bytes (1 to {MAX_LABEL} allowed)",
                shown(),
                label.len()
            ));
        }
        if !allowed || label.starts_with('-') || label.ends_with('-') {
            return Err(format!(
                "host \"{}\" is neither an IP address nor a host name",
                shown()
            ));
        }
    }
    Ok(())
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// MOVING's endpoint. `raw` is `None` for an explicit RESP3 null; `address` is `None` whenever
/// no usable address was given (null or a placeholder): "reconnect the way you connected".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub raw: Option<String>,
    pub address: Option<HostPort>,
}

/// Shard ids: a bulk string holding a JSON array of id strings (`["27"]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardIds {
    pub raw: String,
    /// `None` when the text is not a JSON array of ids.
    pub ids: Option<Vec<String>>,
}

impl ShardIds {
    fn parse(raw: String) -> ShardIds {
        let ids = serde_json::from_str::<Vec<serde_json::Value>>(&raw)
            .ok()
            .and_then(|items| {
                items
                    .into_iter()
                    .map(|v| match v {
                        serde_json::Value::String(s) => Some(s),
                        serde_json::Value::Number(n) => Some(n.to_string()),
                        _ => None,
                    })
                    .collect()
            });
        ShardIds { raw, ids }
    }
}

/// A slot list: comma-separated `N` or `N-M` items within 0..=16383.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slots {
    pub raw: String,
    /// Inclusive ranges; `None` when any item is malformed (the raw text says what came).
    pub ranges: Option<Vec<(u16, u16)>>,
}

impl Slots {
    pub fn parse(raw: String) -> Slots {
        let ranges = parse_slot_list(&raw);
        Slots { raw, ranges }
    }

    /// How many slots the parsed ranges cover.
    pub fn count(&self) -> Option<u32> {
        self.ranges.as_ref().map(|r| {
            r.iter()
                .map(|(a, b)| u32::from(*b) - u32::from(*a) + 1)
                .sum()
        })
    }
}

fn parse_slot_list(text: &str) -> Option<Vec<(u16, u16)>> {
    const MAX: u16 = 16383;
    let slot = |s: &str| -> Option<u16> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok().filter(|&n| n <= MAX)
    };
    let mut out = Vec::new();
    for item in text.split(',') {
        if item.trim().is_empty() {
            continue;
        }
        let range = match item.split_once('-') {
            Some((a, b)) => (slot(a)?, slot(b)?),
            None => {
                let n = slot(item)?;
                (n, n)
            }
        };
        if range.0 > range.1 {
            return None;
        }
        out.push(range);
    }
    Some(out)
}

/// Which shape an SMIGRATED frame had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SmigratedForm {
    /// `[[source, target, slots], ...]`, what servers send.
    Triplets,
    /// `[[host:port, slots], ...]`, an older draft: no source.
    Pairs,
    /// `host:port slots` directly after the seq, an older draft.
    Flat,
}

/// One slot movement of an SMIGRATED.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotMove {
    /// `host:port` as sent; `None` in the pair and flat forms.
    pub source: Option<String>,
    pub target: String,
    pub slots: Slots,
}

/// What SMIGRATED said moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Migrations {
    pub form: SmigratedForm,
    pub moves: Vec<SlotMove>,
    /// Entries that were not a well-formed triplet or pair, skipped.
    pub skipped: usize,
}

/// One parsed maintenance notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notification {
    pub kind: Kind,
    /// The type exactly as sent (`MOVING`, `moving`, ...), when it was valid UTF-8.
    pub type_text: String,
    /// The sequence id; `None` when missing or unreadable (only deduplication suffers).
    pub seq: Option<i64>,
    /// The declared window in seconds, for the types that carry one. 0 or negative is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<i64>,
    /// Always written: a MOVING without a target element says `"target": null` rather than
    /// leaving the key out (the other kinds carry no target and say `null` too).
    #[serde(default)]
    pub target: Option<Target>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardIds>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<Slots>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations: Option<Migrations>,
    /// Tolerances applied while parsing, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// An event's name from its kind and sequence number: `MOVING seq 3`, or `MOVING seq ?`.
pub fn event_name(kind: Kind, seq: Option<i64>) -> String {
    match seq {
        Some(s) => format!("{} seq {s}", kind.name()),
        None => format!("{} seq ?", kind.name()),
    }
}

impl Notification {
    pub fn opens(&self) -> bool {
        self.kind.opens()
    }

    pub fn closes(&self) -> Option<Kind> {
        self.kind.closes()
    }

    /// The endpoint MOVING named, if it named a usable one.
    pub fn successor(&self) -> Option<&HostPort> {
        self.target.as_ref().and_then(|t| t.address.as_ref())
    }

    /// The event's name, `MOVING seq 3` (`seq ?` without a sequence number): the one spelling
    /// of it in lines, the summary and the countdown.
    pub fn event_name(&self) -> String {
        event_name(self.kind, self.seq)
    }

    /// One line of text for people: `MOVING seq 0 window 15 s target none`.
    pub fn describe(&self) -> String {
        let mut s = self.event_name();
        if let Some(t) = self.time {
            s.push_str(&format!(" window {t} s"));
        } else if self.kind.has_time() {
            s.push_str(" window ?");
        }
        if let Some(target) = &self.target {
            match (&target.address, &target.raw) {
                (Some(a), _) => s.push_str(&format!(" target {a}")),
                (None, None) => s.push_str(" target none (null)"),
                (None, Some(raw)) => s.push_str(&format!(" target none ({raw:?})")),
            }
        }
        if let Some(shards) = &self.shards {
            match &shards.ids {
                Some(ids) => s.push_str(&format!(" shards {}", ids.join(","))),
                None => s.push_str(&format!(" shards {:?}", shards.raw)),
            }
        }
        if let Some(slots) = &self.slots {
            s.push_str(&format!(" slots {}", describe_slots(slots)));
        }
        if let Some(m) = &self.migrations {
            for mv in &m.moves {
                s.push_str(&format!(
                    " [{} -> {} slots {}]",
                    mv.source.as_deref().unwrap_or("?"),
                    mv.target,
                    describe_slots(&mv.slots)
                ));
            }
            if m.skipped > 0 {
                s.push_str(&format!(" ({} malformed skipped)", m.skipped));
            }
        }
        s
    }
}

fn describe_slots(slots: &Slots) -> String {
    match &slots.ranges {
        Some(_) => slots.raw.clone(),
        None => format!("{:?} (unparsed)", slots.raw),
    }
}

/// A push frame that is not a maintenance notification (pub/sub, client tracking, unknown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtherPush {
    /// The first element's text (`message`, `invalidate`, ...), if it was text. A name Redis
    /// sends, spelt as it does, is not copied: it is most pushes of a flood.
    pub name: Option<std::borrow::Cow<'static, str>>,
    pub elements: usize,
    /// Whether the name is one Redis is known to send (pub/sub, tracking).
    pub known: bool,
}

const KNOWN_PUSHES: &[&str] = &[
    "message",
    "pmessage",
    "smessage",
    "subscribe",
    "psubscribe",
    "ssubscribe",
    "unsubscribe",
    "punsubscribe",
    "sunsubscribe",
    "invalidate",
    "tracking-redir-broken",
    "pong",
];

/// What a frame is, as far as a watcher cares.
// The notification is boxed: a classification travels from the connection task through the
// channel and the timeline into a line, moved at every step, and unboxed it made every
// pub/sub message of a flood ten times larger. Notifications are few; one allocation each
// costs less than those copies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum Classified {
    Maintenance(Box<Notification>),
    OtherPush(OtherPush),
    /// Not a push frame at all (a reply).
    NotPush,
}

impl Classified {
    /// One line saying what a frame is.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        self.describe_into(&mut out);
        out
    }

    /// [`Classified::describe`], appended to `out`: a flood's every human line says this, so a
    /// pub/sub push is written piece by piece rather than through a format string into a string
    /// of its own.
    pub fn describe_into(&self, out: &mut String) {
        match self {
            Classified::Maintenance(n) => out.push_str(&n.describe()),
            Classified::OtherPush(p) => p.describe_into(out),
            Classified::NotPush => out.push_str("reply (not a push frame)"),
        }
    }
}

impl OtherPush {
    /// A non-maintenance push, named so nobody mistakes it for one.
    fn describe_into(&self, out: &mut String) {
        if !self.known {
            out.push_str("unknown ");
        }
        out.push_str("push '");
        out.push_str(self.name.as_deref().unwrap_or("<no name>"));
        out.push_str("' (");
        // Writing into a String cannot fail.
        let _ = std::fmt::Write::write_fmt(out, format_args!("{}", self.elements));
        out.push_str(" elements): not a maintenance notification");
    }
}

/// Classifies any frame; only push frames can be maintenance notifications.
pub fn classify(frame: &Frame<'_>) -> Classified {
    match frame.unattributed() {
        Frame::Push(items) => classify_push(items, items.len()),
        // A push too large to decode whole: its first elements say what it is.
        Frame::Elided {
            tag: b'>',
            elements,
            head,
        } => classify_push(head, usize::try_from(*elements).unwrap_or(usize::MAX)),
        _ => Classified::NotPush,
    }
}

/// `items` are the push's elements, or the first of its `declared` ones when it was elided.
fn classify_push(items: &[Frame<'_>], declared: usize) -> Classified {
    let name = items.first().and_then(|f| f.as_text());
    match name.and_then(Kind::from_name) {
        Some(kind) => {
            let mut n = parse_notification(kind, items);
            if declared > items.len() {
                n.notes.push(format!(
                    "{} more element(s) not decoded: the frame is too large",
                    declared - items.len()
                ));
            }
            Classified::Maintenance(Box::new(n))
        }
        None => other_push(name, declared),
    }
}

/// [`classify`] read from a flat frame. A push that is not a maintenance notification (a pub/sub
/// message: nearly everything on a busy connection) is told apart by its first value, so no
/// tree is built for it; a notification, an attributed push or anything else takes the tree
/// path, which keeps one parse of notifications.
pub fn classify_flat(frame: &FlatFrame<'_, '_>) -> Classified {
    let root = frame.root();
    match root.kind() {
        resp::Kind::Push => {}
        resp::Kind::Attributed => return classify(&frame.to_frame()),
        _ => return Classified::NotPush,
    }
    let name = root.children().next().and_then(|v| v.as_text());
    if name.and_then(Kind::from_name).is_some() {
        return classify(&frame.to_frame());
    }
    other_push(name, usize::try_from(root.declared()).unwrap_or(usize::MAX))
}

fn other_push(name: Option<&[u8]>, declared: usize) -> Classified {
    use std::borrow::Cow;
    let (name, known) = match name {
        None => (None, false),
        Some(n) => match KNOWN_PUSHES.iter().find(|k| k.as_bytes() == n) {
            Some(k) => (Some(Cow::Borrowed(*k)), true),
            None => {
                let text = String::from_utf8_lossy(n).into_owned();
                let known = KNOWN_PUSHES.iter().any(|k| k.eq_ignore_ascii_case(&text));
                (Some(Cow::Owned(text)), known)
            }
        },
    };
    Classified::OtherPush(OtherPush {
        name,
        elements: declared,
        known,
    })
}

fn parse_notification(kind: Kind, items: &[Frame<'_>]) -> Notification {
    let mut n = Notification {
        kind,
        type_text: items[0].text_lossy().unwrap_or_default(),
        seq: None,
        time: None,
        target: None,
        shards: None,
        slots: None,
        migrations: None,
        notes: Vec::new(),
    };
    if matches!(items[0], Frame::Simple(_)) {
        n.notes.push("type sent as a simple string".into());
    }
    let mut rest = &items[1..];

    match rest.first() {
        None => n.notes.push("seq missing".into()),
        Some(Frame::Null) => {
            n.notes.push("seq is null".into());
            rest = &rest[1..];
        }
        // Too few elements and the first is no number: the seq was left out, and the element is
        // the next field (`FAILED_OVER ["21"]`), not an unreadable seq.
        Some(f) if rest.len() < kind.fields() && f.integer().is_none() => {
            n.notes.push("seq missing".into());
        }
        Some(f) => {
            match f.integer() {
                Some((seq, in_string)) => {
                    n.seq = Some(seq);
                    if in_string {
                        n.notes.push("seq carried in a string".into());
                    }
                }
                None => n
                    .notes
                    .push(format!("seq unreadable ({} element)", f.type_name())),
            }
            rest = &rest[1..];
        }
    }

    if kind.has_time() {
        match rest.first().and_then(Frame::integer) {
            Some((t, in_string)) => {
                n.time = Some(t);
                if in_string {
                    n.notes.push("time carried in a string".into());
                }
                rest = &rest[1..];
            }
            None => n.notes.push("time missing".into()),
        }
    } else if rest.len() >= 2 && matches!(rest[0], Frame::Integer(_)) {
        // A RESP integer where none belongs, with the real field after it: an extra time.
        // Without a following element the integer *is* the field (`SMIGRATING seq 123`).
        n.notes.push("extra time element ignored".into());
        rest = &rest[1..];
    }

    let used = match kind {
        Kind::Moving => {
            n.target = rest.first().map(|f| parse_target(f, &mut n.notes));
            if n.target.is_none() {
                n.notes.push("endpoint missing".into());
            }
            1
        }
        Kind::Migrating | Kind::Migrated | Kind::FailingOver | Kind::FailedOver => {
            match rest.first() {
                Some(f) => n.shards = Some(parse_shards(f, &mut n.notes)),
                None => n.notes.push("shard ids missing".into()),
            }
            1
        }
        Kind::SMigrating => {
            match rest.first() {
                Some(f) => n.slots = Some(parse_slots(f, &mut n.notes)),
                None => n.notes.push("slots missing".into()),
            }
            1
        }
        Kind::SMigrated => {
            let (migrations, used) = parse_smigrated(rest, &mut n.notes);
            n.migrations = migrations;
            used
        }
    };
    let extra = rest.len().saturating_sub(used);
    if extra > 0 {
        n.notes.push(format!("{extra} trailing element(s) ignored"));
    }
    n
}

fn parse_target(f: &Frame<'_>, notes: &mut Vec<String>) -> Target {
    if matches!(f, Frame::Null) {
        return Target {
            raw: None,
            address: None,
        };
    }
    let Some(raw) = f.text_lossy() else {
        notes.push(format!("endpoint unreadable ({} element)", f.type_name()));
        return Target {
            raw: Some(format!("<{}>", f.type_name())),
            address: None,
        };
    };
    if f.as_text().is_some_and(|t| std::str::from_utf8(t).is_err()) {
        notes.push("endpoint is not valid UTF-8: no usable address".into());
        return Target {
            raw: Some(raw),
            address: None,
        };
    }
    let address = match HostPort::parse(&raw) {
        Ok(Some(a)) => Some(a),
        Ok(None) => {
            notes.push(format!("endpoint {raw:?} is a placeholder: no address"));
            None
        }
        Err(why) => {
            notes.push(format!("endpoint unparsed: {why}: no usable address"));
            None
        }
    };
    Target {
        raw: Some(raw),
        address,
    }
}

fn parse_shards(f: &Frame<'_>, notes: &mut Vec<String>) -> ShardIds {
    let shards = match f {
        Frame::Array(items) if items.iter().all(|i| i.as_text().is_some()) => {
            notes.push("shard ids sent as an array".into());
            let ids: Vec<String> = items.iter().filter_map(Frame::text_lossy).collect();
            ShardIds {
                raw: serde_json::to_string(&ids).unwrap_or_default(),
                ids: Some(ids),
            }
        }
        Frame::Integer(i) => ShardIds::parse(format!("[{i}]")),
        other => ShardIds::parse(
            other
                .text_lossy()
                .unwrap_or_else(|| format!("<{}>", other.type_name())),
        ),
    };
    if shards.ids.is_none() {
        notes.push("shard ids are not a JSON array: raw kept".into());
    }
    shards
}

fn parse_slots(f: &Frame<'_>, notes: &mut Vec<String>) -> Slots {
    let raw = match f {
        Frame::Integer(i) => i.to_string(),
        other => other
            .text_lossy()
            .unwrap_or_else(|| format!("<{}>", other.type_name())),
    };
    let slots = Slots::parse(raw);
    if slots.ranges.is_none() {
        notes.push("slot list unparsed: raw kept".into());
    }
    slots
}

/// One entry of an SMIGRATED list, read for what it is on its own.
enum MigrationEntry {
    Triplet(String, String, String),
    Pair(String, String),
    Malformed,
}

fn migration_entry(entry: &Frame<'_>) -> MigrationEntry {
    let texts: Option<Vec<String>> = match entry {
        Frame::Array(parts) => parts.iter().map(Frame::text_lossy).collect(),
        _ => None,
    };
    // An address that does not even have a port cannot be a node; `?` and port 0 are
    // placeholders and still count as addresses.
    let address = |t: &String| HostPort::parse(t).is_ok();
    match texts.as_deref() {
        Some([source, target, slots]) if address(source) && address(target) => {
            MigrationEntry::Triplet(source.clone(), target.clone(), slots.clone())
        }
        Some([target, slots]) if address(target) => {
            MigrationEntry::Pair(target.clone(), slots.clone())
        }
        _ => MigrationEntry::Malformed,
    }
}

/// The nested list of an SMIGRATED. The form is decided for the whole frame: one well-formed
/// triplet makes it the triplet form, and then a two-element entry is a triplet with a part
/// missing, skipped and counted, never an old-style pair (whose "target" would be a source).
fn parse_migration_list(entries: &[Frame<'_>], notes: &mut Vec<String>) -> Migrations {
    let parsed: Vec<MigrationEntry> = entries.iter().map(migration_entry).collect();
    let triplet_form = parsed
        .iter()
        .any(|e| matches!(e, MigrationEntry::Triplet(..)))
        || !parsed.iter().any(|e| matches!(e, MigrationEntry::Pair(..)));
    let mut moves = Vec::new();
    let mut skipped = 0;
    for entry in parsed {
        match entry {
            MigrationEntry::Triplet(source, target, slots) => moves.push(SlotMove {
                source: Some(source),
                target,
                slots: Slots::parse(slots),
            }),
            MigrationEntry::Pair(target, slots) if !triplet_form => moves.push(SlotMove {
                source: None,
                target,
                slots: Slots::parse(slots),
            }),
            _ => skipped += 1,
        }
    }
    if skipped > 0 {
        notes.push(format!("{skipped} malformed migration entry(ies) skipped"));
    }
    if moves.iter().any(|m| m.slots.ranges.is_none()) {
        notes.push("slot list unparsed: raw kept".into());
    }
    let form = if triplet_form {
        SmigratedForm::Triplets
    } else {
        notes.push("older pair form".into());
        SmigratedForm::Pairs
    };
    Migrations {
        form,
        moves,
        skipped,
    }
}

/// Returns the migrations and how many elements of `rest` they used.
fn parse_smigrated(rest: &[Frame<'_>], notes: &mut Vec<String>) -> (Option<Migrations>, usize) {
    match rest.first() {
        None => {
            notes.push("migrations missing".into());
            (None, 0)
        }
        Some(Frame::Array(entries)) => (Some(parse_migration_list(entries, notes)), 1),
        Some(first) => match (first.text_lossy(), rest.get(1).and_then(Frame::text_lossy)) {
            (Some(target), Some(slots)) => {
                notes.push("older flat form".into());
                let slots = Slots::parse(slots);
                if slots.ranges.is_none() {
                    notes.push("slot list unparsed: raw kept".into());
                }
                (
                    Some(Migrations {
                        form: SmigratedForm::Flat,
                        moves: vec![SlotMove {
                            source: None,
                            target,
                            slots,
                        }],
                        skipped: 0,
                    }),
                    2,
                )
            }
            _ => {
                notes.push(format!(
                    "migrations unreadable ({} element)",
                    first.type_name()
                ));
                (
                    Some(Migrations {
                        form: SmigratedForm::Triplets,
                        moves: Vec::new(),
                        skipped: 1,
                    }),
                    1,
                )
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::resp::{FlatScan, Scan, Scanner};

    /// Classifies `bytes` from the tree and from the flat frame, which must agree: every test
    /// of this module checks the watcher's flat path too.
    fn parse(bytes: &[u8]) -> Classified {
        parse_within(bytes, Scanner::default())
    }

    fn parse_within(bytes: &[u8], scanner: Scanner) -> Classified {
        let tree = match scanner.scan(bytes).expect("valid frame") {
            Scan::Frame(f, n) => {
                assert_eq!(n, bytes.len());
                classify(&f)
            }
            Scan::Incomplete { .. } => panic!("incomplete"),
        };
        let mut nodes = Vec::new();
        match scanner.scan_flat(bytes, &mut nodes).expect("valid frame") {
            FlatScan::Frame(f) => assert_eq!(classify_flat(&f), tree, "flat and tree differ"),
            FlatScan::Incomplete { .. } => panic!("incomplete"),
        }
        tree
    }

    #[test]
    fn the_flat_path_agrees_on_replies_attributes_and_elided_pushes() {
        assert_eq!(parse(b"+OK\r\n"), Classified::NotPush);
        assert_eq!(parse(b"*1\r\n>0\r\n"), Classified::NotPush);
        let attributed = b"|1\r\n+k\r\n+v\r\n>3\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n";
        assert!(matches!(parse(attributed), Classified::Maintenance(_)));
        let empty = parse(b">0\r\n");
        assert!(matches!(
            empty,
            Classified::OtherPush(OtherPush {
                name: None,
                elements: 0,
                ..
            })
        ));
        // Elided: only the first elements of a push longer than the limit are decoded.
        let limits = crate::protocol::resp::Limits {
            max_decoded: 3,
            ..Default::default()
        };
        let scanner = Scanner::new(limits);
        let long = b">4\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nx\r\n$1\r\ny\r\n";
        let elided = scanner.scan(long).expect("valid frame");
        assert!(matches!(elided, Scan::Frame(Frame::Elided { .. }, _)));
        let other = parse_within(long, scanner);
        assert!(matches!(
            other,
            Classified::OtherPush(OtherPush {
                elements: 4,
                known: true,
                ..
            })
        ));
        let moving = b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n$4\r\nh:12\r\n";
        assert!(matches!(
            parse_within(moving, scanner),
            Classified::Maintenance(_)
        ));
    }

    fn note(bytes: &[u8]) -> Notification {
        match parse(bytes) {
            Classified::Maintenance(n) => *n,
            other => panic!("not maintenance: {other:?}"),
        }
    }

    #[test]
    fn kinds_know_their_windows() {
        assert!(Kind::Moving.opens() && Kind::Moving.closes().is_none());
        assert_eq!(Kind::Migrated.closes(), Some(Kind::Migrating));
        assert_eq!(Kind::FailedOver.closes(), Some(Kind::FailingOver));
        assert_eq!(Kind::SMigrated.closes(), Some(Kind::SMigrating));
        assert!(!Kind::SMigrated.opens());
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.name().to_lowercase().as_bytes()), Some(k));
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.name())
            );
        }
    }

    #[test]
    fn host_port_splits_on_the_last_colon() {
        let hp = |s| HostPort::parse(s).unwrap();
        assert_eq!(
            hp("[2001:db8::1]:6379"),
            Some(HostPort {
                host: "2001:db8::1".into(),
                port: 6379
            })
        );
        assert_eq!(hp("2001:db8::1:6379").unwrap().host, "2001:db8::1");
        assert_eq!(
            hp("[2001:db8::1]:6379").unwrap().to_string(),
            "[2001:db8::1]:6379"
        );
        assert_eq!(hp("?:7002"), None);
        assert_eq!(hp(":7002"), None);
        assert_eq!(hp("10.0.0.1:0"), None);
        assert!(HostPort::parse("10.0.0.1:x").is_err());
        assert!(HostPort::parse("nohost").is_err());
        assert!(
            HostPort::parse("2001:db8::1").is_err(),
            "a bare IPv6 address has no port"
        );
        assert!(HostPort::parse("10.0.0.1:+7002").is_err());
        assert_eq!(hp("[::]:7000").unwrap().host, "::");
    }

    #[test]
    fn slot_grammar() {
        let r = |s: &str| parse_slot_list(s);
        assert_eq!(
            r("0-5,7,,16383"),
            Some(vec![(0, 5), (7, 7), (16383, 16383)])
        );
        assert_eq!(r(""), Some(vec![]));
        assert_eq!(r("5-3"), None);
        assert_eq!(r("16384"), None);
        assert_eq!(r("1,x"), None);
        assert_eq!(r("-3"), None);
        assert_eq!(Slots::parse("0-9,20".into()).count(), Some(11));
    }

    #[test]
    fn pubsub_and_tracking_pushes_are_not_maintenance() {
        let c = parse(b">3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$5\r\nhello\r\n");
        assert!(matches!(
            c,
            Classified::OtherPush(OtherPush { known: true, .. })
        ));
        let c = parse(b">2\r\n$10\r\ninvalidate\r\n_\r\n");
        assert!(matches!(
            c,
            Classified::OtherPush(OtherPush {
                known: true,
                elements: 2,
                ..
            })
        ));
        // A message whose *payload* says MOVING is still a message.
        let c = parse(b">3\r\n$7\r\nmessage\r\n$6\r\nMOVING\r\n$6\r\nMOVING\r\n");
        assert!(matches!(c, Classified::OtherPush(_)));
        let c = parse(b">1\r\n$7\r\nunknown\r\n");
        assert!(matches!(
            c,
            Classified::OtherPush(OtherPush { known: false, .. })
        ));
        assert_eq!(parse(b"*1\r\n$6\r\nMOVING\r\n"), Classified::NotPush);
        let c = parse(b">0\r\n");
        assert!(matches!(
            c,
            Classified::OtherPush(OtherPush { name: None, .. })
        ));
    }

    #[test]
    fn a_left_out_seq_does_not_swallow_the_next_field() {
        let n = note(b">2\r\n$11\r\nFAILED_OVER\r\n$6\r\n[\"21\"]\r\n");
        assert_eq!(n.seq, None);
        assert_eq!(n.shards.unwrap().ids, Some(vec!["21".to_string()]));
        assert!(n.notes.contains(&"seq missing".to_string()));
        // With every element present, a bad seq is unreadable and the fields stay in place.
        let n = note(b">3\r\n$8\r\nMIGRATED\r\n$1\r\nx\r\n$6\r\n[\"27\"]\r\n");
        assert_eq!(n.seq, None);
        assert_eq!(n.shards.unwrap().ids, Some(vec!["27".to_string()]));
    }

    #[test]
    fn smigrated_flat_form() {
        let n = note(b">4\r\n$9\r\nSMIGRATED\r\n:3\r\n$14\r\n127.0.0.1:7001\r\n$5\r\n0-100\r\n");
        let m = n.migrations.unwrap();
        assert_eq!(m.form, SmigratedForm::Flat);
        assert_eq!(m.moves[0].target, "127.0.0.1:7001");
        assert_eq!(m.moves[0].slots.ranges, Some(vec![(0, 100)]));
        assert!(n.notes.iter().all(|s| !s.contains("trailing")));
    }
}
