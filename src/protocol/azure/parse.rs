//! The Azure maintenance event: its kinds, and the parser that reads the JSON-like payload of
//! `AzureRedisEvents` within bounds (no serde on hostile input). Kept apart from the folder's
//! root, which is its map.

use crate::protocol::resp::Frame;
use serde::Deserialize;
use serde::Serialize;

/// The pub/sub channel Azure Cache for Redis publishes maintenance events on.
pub const CHANNEL: &str = "AzureRedisEvents";

/// The host-name suffixes StackExchange.Redis's `AzureOptionsProvider` takes for Azure Cache for
/// Redis (public cloud, China, US Government, and the German and French sovereign clouds); only
/// for those does it subscribe to [`CHANNEL`].
pub const AZURE_CACHE_DOMAINS: [&str; 5] = [
    ".redis.cache.windows.net",
    ".redis.cache.chinacloudapi.cn",
    ".redis.cache.usgovcloudapi.net",
    ".redis.cache.sovcloud-api.de",
    ".redis.cache.sovcloud-api.fr",
];

/// Most bytes kept of any one text (a type, a time, an address, an unknown key or value, the
/// unparsed tail). Real values are a few dozen bytes; the exact payload is kept elsewhere.
pub const MAX_TEXT: usize = 1024;

/// Most unknown pairs kept in [`AzureEvent::extra`].
pub const MAX_EXTRA: usize = 16;

/// Most notes kept; one last note counts the rest.
pub const MAX_NOTES: usize = 24;

/// Most reasons kept in [`AzureEvent::reference_ignores`].
pub(super) const MAX_REASONS: usize = 8;

/// How much of a server's text a note quotes.
pub(super) const QUOTE_CHARS: usize = 64;

/// The event types Azure documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AzureKind {
    /// Up to 15 minutes ahead (Azure); 10-15 minutes (StackExchange.Redis's docs).
    #[serde(rename = "NodeMaintenanceScheduled")]
    Scheduled,
    /// About 20 seconds ahead.
    #[serde(rename = "NodeMaintenanceStarting")]
    Starting,
    /// Within seconds (under 5 s); sent without a start time.
    #[serde(rename = "NodeMaintenanceStart")]
    Start,
    /// A replica promoted itself to primary; sent without a start time, and only when the
    /// primary was the node under maintenance.
    #[serde(rename = "NodeMaintenanceFailoverComplete")]
    FailoverComplete,
    /// A scale operation (nodes added or removed) finished.
    #[serde(rename = "NodeMaintenanceScaleComplete")]
    ScaleComplete,
    /// The maintenance is over and every node is available again.
    #[serde(rename = "NodeMaintenanceEnded")]
    Ended,
}

/// The name servers sent for FailoverComplete before it was renamed; StackExchange.Redis still
/// maps it ("temporary until server changes go into effect").
pub const LEGACY_FAILOVER: &str = "NodeMaintenanceFailover";

impl AzureKind {
    pub const ALL: [AzureKind; 6] = [
        AzureKind::Scheduled,
        AzureKind::Starting,
        AzureKind::Start,
        AzureKind::FailoverComplete,
        AzureKind::ScaleComplete,
        AzureKind::Ended,
    ];

    /// The type as Azure spells it on the wire.
    pub fn wire_name(self) -> &'static str {
        match self {
            AzureKind::Scheduled => "NodeMaintenanceScheduled",
            AzureKind::Starting => "NodeMaintenanceStarting",
            AzureKind::Start => "NodeMaintenanceStart",
            AzureKind::FailoverComplete => "NodeMaintenanceFailoverComplete",
            AzureKind::ScaleComplete => "NodeMaintenanceScaleComplete",
            AzureKind::Ended => "NodeMaintenanceEnded",
        }
    }

    /// The type a wire name stands for, compared exactly as StackExchange.Redis compares it
    /// (case-sensitive, no trimming), with the legacy `NodeMaintenanceFailover` taken as
    /// FailoverComplete. [`parse`] adds its own tolerances and notes on top.
    pub fn from_wire(name: &str) -> Option<AzureKind> {
        if name == LEGACY_FAILOVER {
            return Some(AzureKind::FailoverComplete);
        }
        AzureKind::ALL.into_iter().find(|k| k.wire_name() == name)
    }

    /// Whether this event opens (or keeps open) a maintenance window: the node is about to go.
    /// Scheduled does not: it comes 10-15 minutes ahead with a start time Azure says may be 3
    /// minutes early, so a window opened on it would be mostly waiting; Starting (about 20 s
    /// ahead) is the first announcement of something imminent.
    pub fn opens_window(self) -> bool {
        matches!(self, AzureKind::Starting | AzureKind::Start)
    }

    /// Whether this event closes a window: the ones on which StackExchange.Redis re-reads the
    /// topology.
    pub fn closes_window(self) -> bool {
        matches!(
            self,
            AzureKind::Ended | AzureKind::FailoverComplete | AzureKind::ScaleComplete
        )
    }

    /// Whether Azure documents this type as sent without a start time (Start fires at the
    /// moment itself, FailoverComplete after the fact), so an empty `StartTimeInUTC` is normal.
    pub fn comes_without_start_time(self) -> bool {
        matches!(self, AzureKind::Start | AzureKind::FailoverComplete)
    }

    /// Whether StackExchange.Redis re-reads the topology (`ReconfigureAsync`) on this type.
    pub fn reference_reconfigures(self) -> bool {
        self.closes_window()
    }
}

/// One parsed AzureRedisEvents message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AzureEvent {
    /// `NotificationType` as sent (cut to [`MAX_TEXT`] bytes, invalid UTF-8 replaced).
    pub type_text: Option<String>,
    /// What the type means; `None` when missing or not one Azure documents.
    pub kind: Option<AzureKind>,
    /// The type as StackExchange.Redis reads it (exact key, exact value); `None` is its
    /// `Unknown`. Differs from `kind` when the type was read only thanks to a tolerance.
    pub reference_kind: Option<AzureKind>,
    /// `StartTimeInUTC` as sent.
    pub start_utc: Option<String>,
    /// The start time in milliseconds since the Unix epoch, UTC.
    pub start_unix_ms: Option<i64>,
    /// Whether the node under maintenance is a replica.
    pub is_replica: Option<bool>,
    /// `IPAddress` of the node under maintenance, as sent (kept even when it is no address:
    /// a note says so).
    pub ip: Option<String>,
    pub ssl_port: Option<u16>,
    pub non_ssl_port: Option<u16>,
    /// Pairs whose key is not one of the six, in order (at most [`MAX_EXTRA`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<(String, String)>,
    /// Text after the last pair that is no pair (no `|` after it, or a key the payload ends on),
    /// where the walk stopped, as StackExchange.Redis's does.
    pub unparsed: Option<String>,
    /// Tolerances applied and things cut, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Why StackExchange.Redis would ignore or misread this message (reasons joined by `; `);
    /// `None` when it reads what this parse reads.
    pub reference_ignores: Option<String>,
}

/// Parses one message payload. Never panics; one pass over the bytes.
pub fn parse(payload: &[u8]) -> AzureEvent {
    let mut reader = Reader::default();
    let mut walk = Walk::new(payload);
    while let Some(piece) = walk.next_piece() {
        match piece {
            Piece::Pair { at, key, value } => reader.pair(at, key, value),
            Piece::Tail { at, text } => reader.tail(at, text),
        }
    }
    reader.finish(walk.extra_bars)
}

/// The payload of `frame` when it is a pub/sub message on [`CHANNEL`]: a RESP3 push
/// `>3 message AzureRedisEvents <payload>` or a RESP2 array `*3 message ...`. The channel and
/// the word `message` are compared exactly, as Redis sends them.
pub fn message_payload<'a>(frame: &Frame<'a>) -> Option<&'a [u8]> {
    let (Frame::Push(items) | Frame::Array(items)) = frame.unattributed() else {
        return None;
    };
    let [kind, channel, payload] = items.as_slice() else {
        return None;
    };
    let text = |f: &Frame<'a>| f.unattributed().as_text();
    if text(kind)? != b"message" || text(channel)? != CHANNEL.as_bytes() {
        return None;
    }
    text(payload)
}

/// Whether StackExchange.Redis takes `host` for Azure Cache for Redis (and so subscribes to
/// [`CHANNEL`]): it ends in one of [`AZURE_CACHE_DOMAINS`], compared ignoring case. The leading
/// dot is part of the suffix, and a trailing dot is not stripped, as in its `EndsWith` check.
pub fn is_azure_host(host: &str) -> bool {
    let host = host.as_bytes();
    AZURE_CACHE_DOMAINS.iter().any(|domain| {
        let domain = domain.as_bytes();
        host.len() >= domain.len() && host[host.len() - domain.len()..].eq_ignore_ascii_case(domain)
    })
}

impl AzureEvent {
    /// One line for people, safe for a terminal:
    /// `NodeMaintenanceStarting primary 10.0.0.5:6380/6379 starts 2026-12-03T11:00:20Z`.
    pub fn describe(&self) -> String {
        let mut s = self.describe_type();
        s.push_str(match self.is_replica {
            Some(true) => " replica",
            Some(false) => " primary",
            None => " node",
        });
        s.push(' ');
        s.push_str(&self.describe_address());
        match (self.start_unix_ms.and_then(format_unix_ms), &self.start_utc) {
            (Some(at), _) => s.push_str(&format!(" starts {at}")),
            (None, Some(text)) => s.push_str(&format!(" starts {} (unparsed)", quote(text))),
            (None, None) => {}
        }
        if !self.extra.is_empty() {
            s.push_str(&format!(" (+{} unknown field(s))", self.extra.len()));
        }
        crate::shared::escape::sanitize(&s).into_owned()
    }

    pub(super) fn describe_type(&self) -> String {
        match (self.kind, &self.type_text) {
            (Some(k), Some(text)) if text != k.wire_name() => {
                format!("{} (sent as {})", k.wire_name(), quote(text))
            }
            (Some(k), _) => k.wire_name().to_string(),
            (None, Some(text)) => format!("unknown type {}", quote(text)),
            (None, None) => "no NotificationType".to_string(),
        }
    }

    /// `10.0.0.5:6380/6379` (SSL port, then non-SSL), `?` for what is missing.
    pub(super) fn describe_address(&self) -> String {
        let port = |p: Option<u16>| p.map_or("?".to_string(), |p| p.to_string());
        let host = match self.ip.as_deref() {
            Some(ip) if ip.contains(':') => format!("[{ip}]"),
            Some(ip) => ip.to_string(),
            None => "?".to_string(),
        };
        format!("{host}:{}/{}", port(self.ssl_port), port(self.non_ssl_port))
    }

    /// What StackExchange.Redis does on this message, in words: it raises its
    /// `ServerMaintenanceEvent` for every message, and re-reads the topology only on Ended,
    /// FailoverComplete and ScaleComplete. It looks at nothing else, IsReplica included.
    pub fn reference_reaction(&self) -> String {
        let mut s = match self.reference_kind {
            Some(k) if k.reference_reconfigures() => format!(
                "raises ServerMaintenanceEvent ({}) and re-reads the topology \
                 (ReconfigureAsync, fire and forget)",
                k.wire_name()
            ),
            Some(k) => format!(
                "raises ServerMaintenanceEvent ({}); nothing else: the application's handler \
                 decides",
                k.wire_name()
            ),
            None => "raises ServerMaintenanceEvent with type Unknown; nothing else".to_string(),
        };
        if self.is_replica == Some(true) {
            s.push_str(
                "; IsReplica is true: the node under maintenance is a replica, the primary is \
                 not touched (no failover), and the reaction is the same",
            );
        }
        s
    }
}

/// `2026-12-03T11:00:20Z`, with milliseconds when there are any.
pub(super) fn format_unix_ms(ms: i64) -> Option<String> {
    let at = chrono::DateTime::from_timestamp_millis(ms)?;
    let form = if ms.rem_euclid(1000) == 0 {
        "%Y-%m-%dT%H:%M:%SZ"
    } else {
        "%Y-%m-%dT%H:%M:%S%.3fZ"
    };
    Some(at.format(form).to_string())
}

/// A server's text quoted for a note: escaped as a Rust string, at most [`QUOTE_CHARS`]
/// characters of it.
pub(super) fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{:?}...", &text[..cut]),
        None => format!("{text:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The walk: StackExchange.Redis's loop, piece by piece.

/// One step of the walk.
pub(super) enum Piece<'a> {
    /// A key and its value (possibly empty); `at` is the key's offset.
    Pair {
        at: usize,
        key: &'a [u8],
        value: &'a [u8],
    },
    /// Where the walk stops: text with no `|` after it, or a key on which the payload ends.
    Tail { at: usize, text: &'a [u8] },
}

/// The reference's walk: skip any `|` where a pair would start; a key runs to the next `|`, its
/// value to the one after (or the end). With no `|` left, or only the payload's last byte, what
/// remains is no pair and the walk stops. Each byte is looked at a bounded number of times.
pub(super) struct Walk<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
    /// `|` skipped beyond the one that separates a value from the next key.
    pub(super) extra_bars: usize,
}

impl<'a> Walk<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Walk<'a> {
        Walk {
            bytes,
            pos: 0,
            extra_bars: 0,
        }
    }

    pub(super) fn next_piece(&mut self) -> Option<Piece<'a>> {
        let bars = self.bytes[self.pos..]
            .iter()
            .take_while(|&&b| b == b'|')
            .count();
        // After a pair the walk stands on its separator; at the start nothing is expected.
        let expected = usize::from(self.pos > 0);
        self.extra_bars += bars.saturating_sub(expected);
        self.pos += bars;
        let at = self.pos;
        let rest = &self.bytes[at..];
        if rest.is_empty() {
            return None;
        }
        let Some(bar) = rest
            .iter()
            .position(|&b| b == b'|')
            .filter(|&i| i + 1 < rest.len())
        else {
            self.pos = self.bytes.len();
            return Some(Piece::Tail { at, text: rest });
        };
        let after = &rest[bar + 1..];
        let value_len = after.iter().position(|&b| b == b'|').unwrap_or(after.len());
        self.pos = at + bar + 1 + value_len;
        Some(Piece::Pair {
            at,
            key: &rest[..bar],
            value: &after[..value_len],
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Reading the pairs.

/// The six keys Azure sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Type,
    Start,
    Replica,
    Ip,
    SslPort,
    NonSslPort,
}

impl Field {
    pub(super) const ALL: [Field; 6] = [
        Field::Type,
        Field::Start,
        Field::Replica,
        Field::Ip,
        Field::SslPort,
        Field::NonSslPort,
    ];

    /// The key as Azure (and StackExchange.Redis) spells it.
    pub(super) fn key(self) -> &'static str {
        match self {
            Field::Type => "NotificationType",
            Field::Start => "StartTimeInUTC",
            Field::Replica => "IsReplica",
            Field::Ip => "IPAddress",
            Field::SslPort => "SSLPort",
            Field::NonSslPort => "NonSSLPort",
        }
    }

    /// The field a key names, and whether it was spelled exactly.
    pub(super) fn of(key: &[u8]) -> Option<(Field, bool)> {
        let field = Field::ALL
            .into_iter()
            .find(|f| f.key().as_bytes().eq_ignore_ascii_case(key))?;
        Some((field, field.key().as_bytes() == key))
    }
}

/// A list that keeps its first `limit` distinct items and counts the rest, so a payload of a
/// million damaged pairs costs a bounded list, not a million lines.
pub(super) struct Capped {
    pub(super) items: Vec<String>,
    pub(super) limit: usize,
    pub(super) dropped: usize,
}

impl Capped {
    pub(super) fn new(limit: usize) -> Capped {
        Capped {
            items: Vec::new(),
            limit,
            dropped: 0,
        }
    }

    pub(super) fn push(&mut self, item: String) {
        if self.items.contains(&item) {
            return;
        }
        if self.items.len() < self.limit {
            self.items.push(item);
        } else {
            self.dropped += 1;
        }
    }
}

/// The parse in progress.
pub(super) struct Reader {
    pub(super) event: AzureEvent,
    pub(super) notes: Capped,
    pub(super) reasons: Capped,
    /// How often each field's key came, and how often with an empty value.
    pub(super) seen: [usize; 6],
    pub(super) empty: [usize; 6],
    /// Whether a key was spelled exactly at least once, and the last exact type text.
    pub(super) exact_type: Option<String>,
    pub(super) exact_replica: bool,
    pub(super) pairs: usize,
    pub(super) extra_cut: usize,
    pub(super) extra_cut_at: Option<usize>,
}

impl Default for Reader {
    fn default() -> Reader {
        Reader {
            event: AzureEvent {
                type_text: None,
                kind: None,
                reference_kind: None,
                start_utc: None,
                start_unix_ms: None,
                is_replica: None,
                ip: None,
                ssl_port: None,
                non_ssl_port: None,
                extra: Vec::new(),
                unparsed: None,
                notes: Vec::new(),
                reference_ignores: None,
            },
            notes: Capped::new(MAX_NOTES),
            reasons: Capped::new(MAX_REASONS),
            seen: [0; 6],
            empty: [0; 6],
            exact_type: None,
            exact_replica: false,
            pairs: 0,
            extra_cut: 0,
            extra_cut_at: None,
        }
    }
}

impl Reader {
    pub(super) fn pair(&mut self, at: usize, key: &[u8], value: &[u8]) {
        self.pairs += 1;
        let Some((field, exact)) = Field::of(key) else {
            self.unknown_pair(at, key, value);
            return;
        };
        let index = field as usize;
        self.seen[index] += 1;
        if !exact {
            let sent = self.text(key, "a key");
            self.notes.push(format!(
                "key {} read as {} (ignoring case)",
                quote(&sent),
                field.key()
            ));
            self.reasons.push(format!(
                "it matches keys case-sensitively and skips {}",
                quote(&sent)
            ));
        }
        // The reference skips a pair with an empty value; so does this parse, counting it.
        if value.is_empty() {
            self.empty[index] += 1;
            return;
        }
        match field {
            Field::Type => self.read_type(value, exact),
            Field::Start => self.read_start(value),
            Field::Replica => self.read_replica(value, exact),
            Field::Ip => self.read_ip(value),
            Field::SslPort | Field::NonSslPort => self.read_port(field, value),
        }
    }

    /// Kept text of server bytes: at most [`MAX_TEXT`] bytes (not splitting a character),
    /// invalid UTF-8 replaced; each of those noted.
    pub(super) fn text(&mut self, bytes: &[u8], what: &str) -> String {
        let mut head = &bytes[..bytes.len().min(MAX_TEXT)];
        if head.len() < bytes.len() {
            self.notes.push(format!(
                "{what} is {} bytes long: the first {} kept",
                bytes.len(),
                head.len()
            ));
            if let Err(e) = std::str::from_utf8(head) {
                if e.error_len().is_none() {
                    head = &head[..e.valid_up_to()];
                }
            }
        }
        if std::str::from_utf8(head).is_err() {
            self.notes
                .push(format!("{what} is not valid UTF-8: shown with U+FFFD"));
        }
        String::from_utf8_lossy(head).into_owned()
    }

    pub(super) fn unknown_pair(&mut self, at: usize, key: &[u8], value: &[u8]) {
        if self.event.extra.len() >= MAX_EXTRA {
            self.extra_cut += 1;
            self.extra_cut_at.get_or_insert(at);
            return;
        }
        let key = self.text(key, "an unknown key");
        let value = self.text(value, "an unknown key's value");
        self.event.extra.push((key, value));
    }

    pub(super) fn tail(&mut self, at: usize, text: &[u8]) {
        let kept = self.text(text, "the unparsed tail");
        let why = if text.contains(&b'|') {
            "a key the payload ends on, with no value"
        } else {
            "text with no '|' after it"
        };
        self.notes.push(format!(
            "{why} at byte {at}: not a pair, kept unparsed (StackExchange.Redis stops there too)"
        ));
        self.event.unparsed = Some(kept);
    }

    /// The type. The last one sent wins, as in the reference (which assigns it unconditionally).
    pub(super) fn read_type(&mut self, value: &[u8], exact_key: bool) {
        let text = self.text(value, "NotificationType");
        let kind = AzureKind::from_wire(&text);
        if text == LEGACY_FAILOVER {
            self.notes.push(format!(
                "legacy type {LEGACY_FAILOVER} read as NodeMaintenanceFailoverComplete \
                 (StackExchange.Redis maps it the same way)"
            ));
        }
        self.event.kind = kind.or_else(|| self.loose_kind(&text));
        if exact_key {
            self.exact_type = Some(text.clone());
        }
        self.event.type_text = Some(text);
    }

    /// A type read past the reference's exact comparison: other case, surrounding spaces.
    pub(super) fn loose_kind(&mut self, text: &str) -> Option<AzureKind> {
        let trimmed = text.trim();
        let loose = AzureKind::ALL
            .into_iter()
            .find(|k| k.wire_name().eq_ignore_ascii_case(trimmed))
            .or_else(|| {
                LEGACY_FAILOVER
                    .eq_ignore_ascii_case(trimmed)
                    .then_some(AzureKind::FailoverComplete)
            });
        match loose {
            Some(k) => self.notes.push(format!(
                "type {} read as {} (ignoring case and surrounding spaces)",
                quote(text),
                k.wire_name()
            )),
            None => self
                .notes
                .push(format!("unknown type {}: kept as sent", quote(text))),
        }
        loose
    }

    /// The start time. A value that reads replaces an earlier one; one that does not only
    /// fills an empty slot (the reference assigns only what it could parse).
    pub(super) fn read_start(&mut self, value: &[u8]) {
        let text = self.text(value, "StartTimeInUTC");
        let read = read_time(&text);
        match (&read, time_in_reference_form(&text)) {
            (Some(_), true) => {}
            (Some(ms), false) => {
                let shown = format_unix_ms(*ms).unwrap_or_default();
                self.notes.push(format!(
                    "StartTimeInUTC {} is not in the yyyy-MM-ddTHH:mm:ss form: read as {shown}",
                    quote(&text)
                ));
                self.reasons.push(start_reason(&text));
            }
            (None, _) => {
                self.notes.push(format!(
                    "StartTimeInUTC {} is not a time: kept as sent",
                    quote(&text)
                ));
                self.reasons.push(start_reason(&text));
            }
        }
        if read.is_some() || self.event.start_unix_ms.is_none() {
            self.event.start_utc = Some(text);
            self.event.start_unix_ms = read;
        }
    }

    /// IsReplica: `True`/`False` as documented; any case and surrounding spaces are read too
    /// (so does .NET's `bool.TryParse`, so the reference agrees).
    pub(super) fn read_replica(&mut self, value: &[u8], exact_key: bool) {
        let text = self.text(value, "IsReplica");
        let trimmed = text.trim();
        let parsed = if trimmed.eq_ignore_ascii_case("true") {
            Some(true)
        } else if trimmed.eq_ignore_ascii_case("false") {
            Some(false)
        } else {
            None
        };
        match parsed {
            Some(b) if text != "True" && text != "False" => self.notes.push(format!(
                "IsReplica {} is not True or False as documented: read as {b}",
                quote(&text)
            )),
            Some(_) => {}
            None => {
                self.notes
                    .push(format!("IsReplica {} is not a boolean", quote(&text)));
                self.reasons.push(format!(
                    "IsReplica {} is no boolean to it: it keeps false and takes the node for \
                     the primary",
                    quote(&text)
                ));
            }
        }
        if parsed.is_some() {
            self.event.is_replica = parsed;
            self.exact_replica |= exact_key;
        }
    }

    /// IPAddress: kept as sent; a note when it is not an IPv4 or IPv6 address.
    pub(super) fn read_ip(&mut self, value: &[u8]) {
        let text = self.text(value, "IPAddress");
        let valid = text.trim().parse::<std::net::IpAddr>().is_ok();
        if !valid {
            self.notes.push(format!(
                "IPAddress {} is not an IP address: kept as sent",
                quote(&text)
            ));
        } else if text.trim() != text {
            self.notes
                .push(format!("IPAddress {} has surrounding spaces", quote(&text)));
        }
        if valid || self.event.ip.is_none() {
            self.event.ip = Some(text.trim().to_string());
        }
    }

    /// A port: decimal digits within 0-65535, surrounding spaces allowed (as .NET's
    /// `NumberStyles.Integer`, which the reference uses, allows them).
    pub(super) fn read_port(&mut self, field: Field, value: &[u8]) {
        let text = self.text(value, field.key());
        let trimmed = text.trim();
        let digits = !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit());
        let port = digits.then(|| trimmed.parse::<u16>().ok()).flatten();
        match port {
            Some(_) if trimmed != text => self.notes.push(format!(
                "{} {} has surrounding spaces",
                field.key(),
                quote(&text)
            )),
            Some(_) => {}
            None => self.port_refused(field, &text, digits),
        }
        let slot = match field {
            Field::SslPort => &mut self.event.ssl_port,
            _ => &mut self.event.non_ssl_port,
        };
        if port.is_some() {
            *slot = port;
        }
    }

    pub(super) fn port_refused(&mut self, field: Field, text: &str, digits: bool) {
        let why = if digits { "over 65535" } else { "not a number" };
        self.notes
            .push(format!("{} {} is {why}: no port", field.key(), quote(text)));
        // .NET's int.TryParse takes a sign and any value of 32 bits: only what it refuses
        // leaves its port at 0.
        if text.trim().parse::<i32>().is_err() {
            self.reasons.push(format!(
                "{} {} is no integer to it: it reads 0",
                field.key(),
                quote(text)
            ));
        }
    }

    pub(super) fn finish(mut self, extra_bars: usize) -> AzureEvent {
        if extra_bars > 0 {
            self.notes.push(format!(
                "{extra_bars} extra '|' skipped where a pair would start (as \
                 StackExchange.Redis skips them)"
            ));
        }
        if self.extra_cut > 0 {
            self.notes.push(format!(
                "{} more unknown pair(s) not kept, from byte {}: only the first {MAX_EXTRA} are",
                self.extra_cut,
                self.extra_cut_at.unwrap_or(0)
            ));
        }
        if self.pairs == 0 {
            self.notes.push("no key|value pair: nothing read".into());
        } else {
            self.field_notes();
        }
        self.reference_reasons();
        let mut event = self.event;
        if self.notes.dropped > 0 {
            let dropped = self.notes.dropped;
            self.notes
                .items
                .push(format!("{dropped} more note(s) not kept"));
        }
        event.notes = self.notes.items;
        if self.reasons.dropped > 0 {
            let dropped = self.reasons.dropped;
            self.reasons.items.push(format!("{dropped} more reason(s)"));
        }
        event.reference_ignores =
            (!self.reasons.items.is_empty()).then(|| self.reasons.items.join("; "));
        event
    }

    /// Missing, empty and repeated fields.
    pub(super) fn field_notes(&mut self) {
        for field in Field::ALL {
            let (seen, empty) = (self.seen[field as usize], self.empty[field as usize]);
            let documented_empty = field == Field::Start
                && self
                    .event
                    .kind
                    .is_some_and(AzureKind::comes_without_start_time);
            if seen == 0 && !documented_empty {
                self.notes.push(format!("{} missing", field.key()));
            } else if seen > 0 && seen == empty && !documented_empty {
                self.notes.push(format!("{} empty", field.key()));
            }
            if seen > 1 {
                self.notes.push(format!(
                    "{} given {seen} times: the last that reads is kept, as StackExchange.Redis \
                     keeps it",
                    field.key()
                ));
            }
        }
    }

    /// What the reference makes of the type and IsReplica, decided once the whole message is
    /// read (a repeated key must not give one reason per copy).
    pub(super) fn reference_reasons(&mut self) {
        self.event.reference_kind = self.exact_type.as_deref().and_then(AzureKind::from_wire);
        match (&self.exact_type, self.event.reference_kind) {
            (None, _) => self
                .reasons
                .push("it reads no NotificationType: its type is Unknown".into()),
            (Some(text), None) => self.reasons.push(format!(
                "type {} is not one it knows (compared exactly): its type is Unknown",
                quote(text)
            )),
            (Some(_), Some(_)) => {}
        }
        if self.event.is_replica.is_some() && !self.exact_replica {
            self.reasons.push(
                "it reads no IsReplica: it keeps false and takes the node for the primary".into(),
            );
        } else if self.pairs > 0 && self.seen[Field::Replica as usize] == 0 {
            self.reasons
                .push("no IsReplica: it keeps false and takes the node for the primary".into());
        }
    }
}

pub(super) fn start_reason(text: &str) -> String {
    format!(
        "it parses StartTimeInUTC only as yyyy-MM-ddTHH:mm:ss, so {} gives it no start time",
        quote(text)
    )
}

/// Whether `text` is exactly .NET's sortable "s" form, `yyyy-MM-ddTHH:mm:ss`: the only one
/// the reference parses (`TryParseExact(value, "s", ...)`).
pub(super) fn time_in_reference_form(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 => c == b':',
            _ => c.is_ascii_digit(),
        })
}

/// The start time in milliseconds since the epoch: the reference's form (as UTC), or, as
/// tolerances, RFC 3339 (a `Z` or an offset, fractions) and the same without a zone (a space for
/// the `T`, fractions), taken as UTC as the key's name says.
pub(super) fn read_time(text: &str) -> Option<i64> {
    use chrono::NaiveDateTime;
    let text = text.trim();
    // Real times are 19 to 35 bytes: anything much longer is not one, and is not scanned.
    if text.len() > 64 {
        return None;
    }
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(at.timestamp_millis());
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .into_iter()
        .find_map(|form| NaiveDateTime::parse_from_str(text, form).ok())
        .map(|at| at.and_utc().timestamp_millis())
}
