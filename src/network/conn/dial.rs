//! Connecting and the handshake: resolve, TCP and TLS, HELLO and the opt-in, and the
//! connection that reads frames from then on. Kept apart from the folder's root, which is its
//! map.

use crate::network::conn::{
    redact, tls, Attempt, ConnectError, ConnectOptions, EndpointType, HandshakeError, ReadError,
    Stage, TlsFailure, WriteError,
};
use crate::network::dns::{DnsError, DnsResolver};
use crate::protocol::notification::{classify_flat, Classified, Notification};
use crate::protocol::resp::{
    encode_command, FlatFrame, Frame, RespError, Scan, Scanner, StreamReader,
};
use serde::Serialize;
use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};
use std::{fmt, io};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;

/// How much to ask the socket for per read when the buffer has no room left.
pub(super) const READ_CHUNK: usize = 16 * 1024;

/// Push frames kept while a handshake reply is awaited: a server that sends pushes instead of
/// answering is cut off here rather than growing the watch without bound.
pub const MAX_EARLY_FRAMES: usize = 64;

/// The same bound in bytes (whichever is reached first).
pub const MAX_EARLY_BYTES: usize = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// What was read
// ---------------------------------------------------------------------------------------------

/// One frame as it arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// When the read that completed this frame returned (monotonic, for offsets between events).
    pub at: Instant,
    /// The same moment on the wall clock, for display.
    pub wall: SystemTime,
    /// Offset of the frame's first byte in the connection's byte stream.
    pub offset: u64,
    /// The frame's exact bytes: a slice of the buffer its read filled, shared with the other
    /// frames of that read (see `StreamReader::drain_shared`).
    pub raw: bytes::Bytes,
    pub item: Item,
}

/// What a frame is, to a watcher.
// Push is the large variant and also the one that matters: boxing it would cost an allocation
// per notification to shrink the rare replies, and make every match on it clumsier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A push frame, classified: a maintenance notification or another push.
    Push(Classified),
    /// A reply to a command: a short summary (`OK`, `PONG`, the error text, `map of 7`) and
    /// whether it is an error.
    Reply(String, bool),
}

impl Received {
    pub fn is_push(&self) -> bool {
        matches!(self.item, Item::Push(_))
    }

    /// The maintenance notification this frame carries, if any.
    pub fn notification(&self) -> Option<&Notification> {
        match &self.item {
            Item::Push(Classified::Maintenance(n)) => Some(n),
            _ => None,
        }
    }

    /// The text of an error reply.
    pub fn error_text(&self) -> Option<&str> {
        match &self.item {
            Item::Reply(text, true) => Some(text),
            _ => None,
        }
    }
}

pub(super) fn received(
    frame: FlatFrame<'_, '_>,
    offset: u64,
    at: Instant,
    wall: SystemTime,
) -> Received {
    let item = match classify_flat(&frame) {
        Classified::NotPush => {
            let tree = frame.to_frame();
            let value = tree.unattributed();
            let is_error = matches!(value, Frame::Error(_) | Frame::BlobError(_));
            Item::Reply(summarize(value), is_error)
        }
        pushed => Item::Push(pushed),
    };
    Received {
        at,
        wall,
        offset,
        // Given its bytes once the read's frames leave the buffer together (`share_raw`).
        raw: bytes::Bytes::new(),
        item,
    }
}

/// Gives the frames queued from `first` on their bytes: slices of `frames`, the read's buffer
/// they left together, which starts at stream offset `start` and holds them one after another
/// (so each ends where the next starts, and the last at the buffer's end).
pub(super) fn share_raw(
    pending: &mut VecDeque<Received>,
    first: usize,
    frames: &bytes::Bytes,
    start: u64,
) {
    let mut end = frames.len();
    for r in pending.range_mut(first..).rev() {
        let from = usize::try_from(r.offset - start).unwrap_or(end).min(end);
        r.raw = frames.slice(from..end);
        end = from;
    }
}

/// The most characters of an error reply's text kept (then `...`): every real server's error
/// whole, a hostile one bounded.
pub const MAX_ERROR_TEXT: usize = 4096;

/// A reply in a few words.
pub(super) fn summarize(frame: &Frame<'_>) -> String {
    const MAX: usize = 200;
    let cut = |t: &[u8], max: usize| {
        let s = String::from_utf8_lossy(t);
        if s.chars().count() > max {
            format!("{}...", s.chars().take(max).collect::<String>())
        } else {
            s.into_owned()
        }
    };
    let text = |t: &[u8]| cut(t, MAX);
    match frame {
        // An error's text is what `probe --json` and the human lines give whole: the part after
        // the first 200 characters is often what to do (Redis's NOAUTH for HELLO is 220).
        Frame::Error(t) | Frame::BlobError(t) => cut(t, MAX_ERROR_TEXT),
        Frame::Simple(t) | Frame::Blob(t) => text(t),
        Frame::Verbatim { text: t, .. } => text(t),
        Frame::Integer(n) => n.to_string(),
        Frame::Null => "(nil)".into(),
        Frame::Double(d) => d.to_string(),
        Frame::Boolean(b) => b.to_string(),
        Frame::BigNumber(t) => text(t),
        Frame::Array(v) => format!("array of {}", v.len()),
        Frame::Set(v) => format!("set of {}", v.len()),
        Frame::Push(v) => format!("push of {}", v.len()),
        Frame::Map(v) => format!("map of {}", v.len()),
        Frame::Attributed { value, .. } => summarize(value),
        Frame::Elided { elements, .. } => format!("{} of {elements} elements", frame.type_name()),
    }
}

// ---------------------------------------------------------------------------------------------
// Streams and the read side
// ---------------------------------------------------------------------------------------------

/// Plain TCP or TLS, behind one type so the rest of the module does not care.
pub(super) enum Stream {
    Tcp(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The read state shared by [`Connection`] and [`FrameReader`]: the scanner's buffer, frames
/// already scanned but not yet handed out, and a sticky framing error or end of stream.
#[derive(Debug, Default)]
pub(super) struct Inbound {
    pub(super) reader: StreamReader,
    pub(super) pending: VecDeque<Received>,
    pub(super) error: Option<RespError>,
    pub(super) eof: bool,
}

impl Inbound {
    /// The next frame, reading as needed. Cancel-safe: the only await is the socket read, and
    /// what it returns is queued before anything else can happen, so a `select!` that drops this
    /// future loses nothing.
    pub(super) async fn next<R: AsyncRead + Unpin>(
        &mut self,
        io: &mut R,
        peer: SocketAddr,
    ) -> Result<Option<Received>, ReadError> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                return Ok(Some(r));
            }
            if let Some(e) = &self.error {
                return Err(ReadError::Framing {
                    peer,
                    offset: e.offset,
                    source: e.clone(),
                });
            }
            if self.eof {
                let buffered = self.reader.buffered().len();
                return if buffered == 0 {
                    Ok(None)
                } else {
                    Err(ReadError::Truncated {
                        peer,
                        offset: self.reader.offset(),
                        buffered,
                    })
                };
            }
            let buf = self.reader.buffer_mut();
            if buf.capacity() - buf.len() < READ_CHUNK / 4 {
                buf.reserve(READ_CHUNK);
            }
            let n = match io.read_buf(buf).await {
                Ok(n) => n,
                // TLS peers often close without close_notify (Redis does); rustls reports that
                // as UnexpectedEof. For a watcher it is the server closing, like a TCP FIN.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => 0,
                Err(e) => return Err(read_error(e, peer)),
            };
            let (at, wall) = (Instant::now(), SystemTime::now());
            if n == 0 {
                self.eof = true;
                continue;
            }
            let pending = &mut self.pending;
            let (first, start) = (pending.len(), self.reader.offset());
            let (frames, result) = self
                .reader
                .drain_shared(|frame, offset| pending.push_back(received(frame, offset, at, wall)));
            share_raw(pending, first, &frames, start);
            if let Err(e) = result {
                self.error = Some(e);
            }
        }
    }
}

pub(super) fn read_error(e: io::Error, peer: SocketAddr) -> ReadError {
    if let Some(tls_err) = tls::rustls_error(&e) {
        let (failure, detail) = tls::explain(tls_err, "the server");
        return ReadError::Tls {
            peer,
            failure,
            detail,
        };
    }
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => ReadError::Reset { peer, source: e },
        _ => ReadError::Io { peer, source: e },
    }
}

// ---------------------------------------------------------------------------------------------
// Connecting
// ---------------------------------------------------------------------------------------------

/// Resolves the host through `dns` (the resolver the DNS watch uses, so `--dns-server` applies
/// to connecting too). An IP literal is returned without a query.
pub async fn resolve(
    opts: &ConnectOptions,
    dns: &DnsResolver,
) -> Result<Vec<IpAddr>, ConnectError> {
    if let Ok(ip) = opts.host.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    // One deadline per phase: the resolver's retries and TCP fallback all fit in the configured
    // timeout, so the message can state the value the operator set.
    let timeout = opts.connect_timeout;
    match tokio::time::timeout(timeout, dns.resolve_for_connect(&opts.host)).await {
        Err(_) => Err(ConnectError::Timeout {
            endpoint: opts.display_endpoint(),
            addr: None,
            stage: Stage::Resolving,
            timeout,
        }),
        // The resolver's own per-query timeout is the same value: the same message, whichever
        // timer fires first.
        Ok(Err(DnsError::Lookup { reason, .. })) if reason == "timed out" => {
            Err(ConnectError::Timeout {
                endpoint: opts.display_endpoint(),
                addr: None,
                stage: Stage::Resolving,
                timeout,
            })
        }
        Ok(Err(source)) => Err(ConnectError::Resolve {
            endpoint: opts.display_endpoint(),
            source,
        }),
        Ok(Ok(addrs)) if addrs.is_empty() => Err(ConnectError::NoAddresses {
            endpoint: opts.display_endpoint(),
        }),
        Ok(Ok(addrs)) => Ok(addrs),
    }
}

/// Resolves the endpoint and connects (TCP, then TLS when configured) to the first address that
/// answers. The handshake is a separate step: [`Connection::handshake`].
pub async fn connect(opts: &ConnectOptions, dns: &DnsResolver) -> Result<Connection, ConnectError> {
    let addrs = resolve(opts, dns).await?;
    connect_to(opts, &addrs).await
}

/// Connects to the first of `addrs` (on the endpoint's port) that answers. Each address gets the
/// whole connect timeout, like redis-cli, and that one deadline covers its TCP connect, its TLS
/// handshake and the whole RESP handshake that follows ([`Connection::handshake`]): a server
/// that keeps talking without answering cannot extend it. A TLS failure stops the search: a
/// certificate problem is not an address problem, and trying the others would only hide it.
pub async fn connect_to(
    opts: &ConnectOptions,
    addrs: &[IpAddr],
) -> Result<Connection, ConnectError> {
    let endpoint = opts.display_endpoint();
    let timeout = opts.connect_timeout;
    let mut attempts = Vec::new();
    for ip in addrs {
        let addr = SocketAddr::new(*ip, opts.port);
        let deadline = Instant::now() + timeout;
        let tcp = match tokio::time::timeout_at(deadline, TcpStream::connect(addr)).await {
            Err(_) => {
                attempts.push(Attempt {
                    addr,
                    error: format!("timed out after {timeout:?}"),
                    timed_out: true,
                });
                continue;
            }
            Ok(Err(e)) => {
                attempts.push(Attempt {
                    addr,
                    error: e.to_string(),
                    timed_out: false,
                });
                continue;
            }
            Ok(Ok(tcp)) => tcp,
        };
        // Commands are tiny and latency is what is measured: no Nagle delay.
        let _ = tcp.set_nodelay(true);
        let local = tcp.local_addr().ok();
        let stream = match &opts.tls {
            None => Stream::Tcp(tcp),
            Some(t) => {
                let connector = TlsConnector::from(t.config.clone());
                let handshake = connector.connect(t.server_name.clone(), tcp);
                match tokio::time::timeout_at(deadline, handshake).await {
                    Err(_) => {
                        return Err(ConnectError::Timeout {
                            endpoint,
                            addr: Some(addr),
                            stage: Stage::TlsHandshake,
                            timeout,
                        })
                    }
                    Ok(Err(e)) => {
                        let (failure, detail) = tls_handshake_failure(&e, &t.server_name);
                        return Err(ConnectError::Tls {
                            endpoint,
                            addr,
                            failure,
                            detail,
                        });
                    }
                    Ok(Ok(s)) => Stream::Tls(Box::new(s)),
                }
            }
        };
        return Ok(Connection {
            stream,
            inbound: Inbound::default(),
            peer: addr,
            local,
            endpoint,
            tls: opts.tls.is_some(),
            timeout,
            deadline,
            early: Vec::new(),
            early_bytes: 0,
            opt_in_sent_after: None,
        });
    }
    if attempts.is_empty() {
        return Err(ConnectError::NoAddresses { endpoint });
    }
    if attempts.iter().all(|a| a.timed_out) {
        return Err(ConnectError::Timeout {
            endpoint,
            addr: attempts.last().map(|a| a.addr),
            stage: Stage::Connecting,
            timeout,
        });
    }
    Err(ConnectError::Unreachable { endpoint, attempts })
}

pub(super) fn tls_handshake_failure(e: &io::Error, name: &ServerName<'_>) -> (TlsFailure, String) {
    let expected = match name {
        ServerName::DnsName(n) => n.as_ref().to_string(),
        ServerName::IpAddress(ip) => IpAddr::from(*ip).to_string(),
        other => format!("{other:?}"),
    };
    if let Some(err) = tls::rustls_error(e) {
        return tls::explain(err, &expected);
    }
    match e.kind() {
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted => (
            TlsFailure::Handshake,
            format!(
                "the server closed the connection during the TLS handshake ({e}); is TLS enabled \
                 on this port, and does it accept this client?"
            ),
        ),
        _ => (TlsFailure::Handshake, format!("TLS handshake failed: {e}")),
    }
}

// ---------------------------------------------------------------------------------------------
// The connection and its handshake
// ---------------------------------------------------------------------------------------------

/// An open connection, before or after the handshake.
pub struct Connection {
    pub(super) stream: Stream,
    pub(super) inbound: Inbound,
    pub(super) peer: SocketAddr,
    pub(super) local: Option<SocketAddr>,
    pub(super) endpoint: String,
    pub(super) tls: bool,
    /// The configured connect timeout, for messages.
    pub(super) timeout: Duration,
    /// When connect, TLS and the handshake must be done by.
    pub(super) deadline: Instant,
    /// Pushes read while a handshake reply was awaited, already redacted, and their size.
    pub(super) early: Vec<Received>,
    pub(super) early_bytes: usize,
    /// `early.len()` when the opt-in was sent.
    pub(super) opt_in_sent_after: Option<usize>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("endpoint", &self.endpoint)
            .field("peer", &self.peer)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

/// What `HELLO 3` said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Hello {
    /// RESP3 is on; what the server said about itself.
    Resp3(HelloInfo),
    /// HELLO was answered with an error (`-ERR unknown command 'HELLO'`, `-NOPROTO ...`), or
    /// with another protocol than 3: no push frame can ever arrive.
    Unavailable { text: String },
}

/// The fields of the HELLO map that matter for a diagnosis. Each is `None` when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HelloInfo {
    pub server: Option<String>,
    pub version: Option<String>,
    pub proto: Option<i64>,
    pub id: Option<i64>,
    pub mode: Option<String>,
    pub role: Option<String>,
    /// `maintwatch-sim-speed`: the built-in simulator says how much faster than real time it
    /// runs, so a watch reads its windows right without `--sim-speed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_speed: Option<String>,
}

impl HelloInfo {
    /// Reads the map (or, from a RESP2-style server, the flat key/value array).
    pub fn from_frame(frame: &Frame<'_>) -> HelloInfo {
        let mut info = HelloInfo::default();
        for (k, v) in frame.pairs() {
            let Some(key) = k.as_text() else { continue };
            match key.to_ascii_lowercase().as_slice() {
                b"server" => info.server = v.text_lossy(),
                b"version" => info.version = v.text_lossy(),
                b"proto" => info.proto = v.int(),
                b"id" => info.id = v.int(),
                b"mode" => info.mode = v.text_lossy(),
                b"role" => info.role = v.text_lossy(),
                b"maintwatch-sim-speed" => info.sim_speed = v.text_lossy(),
                _ => {}
            }
        }
        info
    }

    /// `redis 7.4.0 standalone master`, from whatever is known.
    pub fn describe(&self) -> String {
        [&self.server, &self.version, &self.mode, &self.role]
            .into_iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What the opt-in got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "text", rename_all = "snake_case")]
pub enum OptIn {
    /// Answered `+OK`, and only that.
    Accepted,
    /// The server's error text, exactly (without the leading `-`).
    Refused(String),
    /// Answered with something that is neither `+OK` nor an error (`:1`, `%1`, `_` ...): not an
    /// acceptance. The text says what came.
    Unexpected(String),
    /// Not sent, because RESP3 is unavailable.
    NotAttempted,
}

/// The result of a handshake that got as far as answers (authentication failures are
/// [`ConnectError::Auth`]: nothing can follow them).
#[derive(Debug, Clone)]
pub struct Handshake {
    pub hello: Hello,
    /// The HELLO reply itself, with its bytes.
    pub hello_reply: Received,
    pub opt_in: OptIn,
    /// The opt-in's reply itself, when it was sent.
    pub opt_in_reply: Option<Received>,
    /// The `moving-endpoint-type` sent; `None` for a bare `ON` or when not sent.
    pub endpoint_type: Option<EndpointType>,
    /// The opt-in command as sent, for display: `CLIENT MAINT_NOTIFICATIONS ON
    /// moving-endpoint-type internal-ip`.
    pub opt_in_command: Option<String>,
    /// Push frames read during the handshake (while a reply was awaited) and every frame that
    /// came in the same read as the opt-in's reply (catch-up replays, a re-sent MOVING), in
    /// stream order.
    pub early: Vec<Received>,
    /// How many of `early` arrived before the opt-in was sent (while HELLO or SELECT was
    /// answered): those did not come with the opt-in.
    pub before_opt_in: usize,
}

impl Handshake {
    pub fn hello_info(&self) -> Option<&HelloInfo> {
        match &self.hello {
            Hello::Resp3(info) => Some(info),
            Hello::Unavailable { .. } => None,
        }
    }

    pub fn server(&self) -> Option<&str> {
        self.hello_info()?.server.as_deref()
    }

    pub fn version(&self) -> Option<&str> {
        self.hello_info()?.version.as_deref()
    }

    pub fn mode(&self) -> Option<&str> {
        self.hello_info()?.mode.as_deref()
    }

    /// The opt-in command sent, if one was.
    pub fn sent(&self) -> Option<&str> {
        self.opt_in_command.as_deref()
    }

    /// The outcome in the watch's terms, and the server's text when it refused.
    pub fn outcome(&self) -> (crate::network::conn::OptInOutcome, Option<String>) {
        use crate::network::conn::OptInOutcome as O;
        match (&self.hello, &self.opt_in) {
            (Hello::Unavailable { text }, _) => (O::Resp3Unavailable, Some(text.clone())),
            (_, OptIn::Refused(text)) => (O::Refused, Some(text.clone())),
            (_, OptIn::Unexpected(text)) => (O::Refused, Some(text.clone())),
            (_, OptIn::Accepted) => (O::Accepted, None),
            // Unreachable in practice: the opt-in is only skipped when HELLO failed.
            (_, OptIn::NotAttempted) => (O::Resp3Unavailable, None),
        }
    }

    pub fn accepted(&self) -> bool {
        self.opt_in == OptIn::Accepted
    }
}

/// HELLO 3 answered without an error: RESP3 only if the answer is the map HELLO 3 returns (a
/// RESP2-style flat array counts when it says proto 3). `+OK` or anything else is no switch.
pub(super) fn hello_outcome(reply: &Received) -> Hello {
    let frame = rescan(&reply.raw);
    let kind = frame.as_ref().map(|f| f.unattributed());
    let info = frame
        .as_ref()
        .map(HelloInfo::from_frame)
        .unwrap_or_default();
    match (kind, info.proto) {
        (_, Some(p)) if p != 3 => Hello::Unavailable {
            text: format!("HELLO 3 was answered with protocol {p}"),
        },
        (Some(Frame::Map(_)), _) | (Some(Frame::Array(_)), Some(3)) => Hello::Resp3(info),
        _ => Hello::Unavailable {
            text: format!(
                "HELLO 3 was answered with {}, not the map of a RESP3 server",
                crate::shared::escape::escape(&reply.raw[..reply.raw.len().min(64)])
            ),
        },
    }
}

/// The opt-in answered without an error: accepted only by `+OK`.
pub(super) fn opt_in_outcome(reply: &Received) -> OptIn {
    if reply.raw[..] == b"+OK\r\n"[..] {
        OptIn::Accepted
    } else {
        OptIn::Unexpected(format!(
            "unexpected reply {} (only +OK accepts the opt-in)",
            crate::shared::escape::escape(&reply.raw[..reply.raw.len().min(64)])
        ))
    }
}

/// `r` redacted of the password, when there is one.
pub(super) fn redact_with(r: Received, secret: Option<&[u8]>) -> Received {
    match secret {
        Some(secret) => redact::redact_received(r, secret),
        None => r,
    }
}

/// Error codes that mean the credentials (or their absence) are the problem. NOPERM on HELLO
/// means the user may not even say hello: an authorisation failure, reported with them. On the
/// opt-in, NOPERM is the server refusing *this* command, so it counts as a refusal there.
pub(super) fn is_auth_error(text: &str, noperm_counts: bool) -> bool {
    let code = text.split_whitespace().next().unwrap_or("");
    let lower = text.to_ascii_lowercase();
    code.eq_ignore_ascii_case("WRONGPASS")
        || code.eq_ignore_ascii_case("NOAUTH")
        || (noperm_counts && code.eq_ignore_ascii_case("NOPERM"))
        || lower.contains("invalid password")
        || lower.contains("invalid username-password")
}

impl Connection {
    /// The address connected to.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local
    }

    /// The endpoint as displayed (no secrets).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// `HELLO 3 [AUTH user pass] [SETNAME name]`, `SELECT db` when not 0, then
    /// `CLIENT MAINT_NOTIFICATIONS ON [moving-endpoint-type T]`, one reply read per command.
    ///
    /// Returns `Ok` for every outcome that has an answer (accepted, refused, RESP3 unavailable);
    /// authentication failure and everything that stops the conversation are errors, and an
    /// error carries every frame read before it ([`HandshakeError::frames`]), so nothing the
    /// server sent is lost because the handshake failed. All of it must happen before the
    /// deadline set when connecting (`--connect-timeout`), and at most [`MAX_EARLY_FRAMES`] /
    /// [`MAX_EARLY_BYTES`] of pushes are kept while a reply is awaited. Every frame read is
    /// redacted of the password first ([`redact`]).
    pub async fn handshake(&mut self, opts: &ConnectOptions) -> Result<Handshake, HandshakeError> {
        let secret = opts.password.as_ref().map(|p| p.expose().as_bytes());
        match self.converse(opts, secret).await {
            Ok(h) => Ok(h),
            Err(error) => {
                let mut frames = std::mem::take(&mut self.early);
                let before_opt_in = self.opt_in_sent_after.unwrap_or(usize::MAX);
                frames.extend(self.take_pending(secret));
                Err(HandshakeError {
                    before_opt_in: before_opt_in.min(frames.len()),
                    error,
                    frames,
                })
            }
        }
    }

    /// Frames scanned but not yet handed out, redacted.
    pub(super) fn take_pending(&mut self, secret: Option<&[u8]>) -> Vec<Received> {
        self.inbound
            .pending
            .drain(..)
            .map(|r| redact_with(r, secret))
            .collect()
    }

    pub(super) async fn converse(
        &mut self,
        opts: &ConnectOptions,
        secret: Option<&[u8]>,
    ) -> Result<Handshake, ConnectError> {
        let (hello, hello_reply) = self.hello(opts, secret).await?;
        let before_opt_in = self.early.len();
        if let Hello::Unavailable { .. } = hello {
            let mut early = std::mem::take(&mut self.early);
            early.extend(self.take_pending(secret));
            return Ok(Handshake {
                hello,
                hello_reply,
                opt_in: OptIn::NotAttempted,
                opt_in_reply: None,
                endpoint_type: None,
                opt_in_command: None,
                before_opt_in,
                early,
            });
        }

        if opts.db != 0 {
            let db = opts.db.to_string();
            let args = [b"SELECT" as &[u8], db.as_bytes()];
            let reply = self.command(&args, Stage::Select, secret).await?;
            if let Some(text) = reply.error_text() {
                if is_auth_error(text, false) {
                    return Err(self.auth_error(text, opts));
                }
                return Err(ConnectError::Command {
                    endpoint: self.endpoint.clone(),
                    addr: self.peer,
                    command: "SELECT",
                    text: text.to_string(),
                });
            }
        }
        let before_opt_in = self.early.len();
        self.opt_in_sent_after = Some(before_opt_in);

        let endpoint_type = opts.endpoint_type.resolve(self.peer.ip(), self.tls);
        let mut opt_in: Vec<&str> = vec!["CLIENT", "MAINT_NOTIFICATIONS", "ON"];
        if let Some(t) = endpoint_type {
            opt_in.extend(["moving-endpoint-type", t.as_str()]);
        }
        let opt_in_command = opt_in.join(" ");
        let args: Vec<&[u8]> = opt_in.iter().map(|a| a.as_bytes()).collect();
        let reply = self.command(&args, Stage::OptIn, secret).await?;
        let outcome = match reply.error_text() {
            Some(text) if is_auth_error(text, false) => return Err(self.auth_error(text, opts)),
            Some(text) => OptIn::Refused(text.to_string()),
            None => opt_in_outcome(&reply),
        };
        // Whatever came in the same read as the reply (the catch-up replay usually does) is
        // handed over now; an incomplete tail stays buffered for the next read.
        let mut early = std::mem::take(&mut self.early);
        early.extend(self.take_pending(secret));
        Ok(Handshake {
            hello,
            hello_reply,
            opt_in: outcome,
            opt_in_reply: Some(reply),
            endpoint_type,
            opt_in_command: Some(opt_in_command),
            before_opt_in,
            early,
        })
    }

    /// `HELLO 3 [AUTH user pass] [SETNAME name]` and what its reply means.
    pub(super) async fn hello(
        &mut self,
        opts: &ConnectOptions,
        secret: Option<&[u8]>,
    ) -> Result<(Hello, Received), ConnectError> {
        let mut hello: Vec<&[u8]> = vec![b"HELLO", b"3"];
        if let Some(password) = &opts.password {
            // HELLO's AUTH always takes a user name; "default" is what AUTH <pass> means.
            let user = opts.user.as_deref().unwrap_or("default");
            hello.extend([
                b"AUTH" as &[u8],
                user.as_bytes(),
                password.expose().as_bytes(),
            ]);
        }
        if let Some(name) = &opts.client_name {
            hello.extend([b"SETNAME" as &[u8], name.as_bytes()]);
        }
        let hello_reply = self.command(&hello, Stage::Hello, secret).await?;
        let hello = match hello_reply.error_text() {
            Some(text) if is_auth_error(text, true) => return Err(self.auth_error(text, opts)),
            Some(text) => Hello::Unavailable {
                text: text.to_string(),
            },
            None => hello_outcome(&hello_reply),
        };
        Ok((hello, hello_reply))
    }

    pub(super) fn auth_error(&self, text: &str, opts: &ConnectOptions) -> ConnectError {
        ConnectError::Auth {
            endpoint: self.endpoint.clone(),
            addr: self.peer,
            text: text.to_string(),
            hint: opts.password_hint(),
        }
    }

    /// Sends one command and reads its one reply, before the deadline; push frames met on the
    /// way are kept in `self.early`, up to the bound.
    pub(super) async fn command(
        &mut self,
        args: &[&[u8]],
        stage: Stage,
        secret: Option<&[u8]>,
    ) -> Result<Received, ConnectError> {
        let bytes = encode_command(args);
        let written = async {
            self.stream.write_all(&bytes).await?;
            self.stream.flush().await
        };
        match tokio::time::timeout_at(self.deadline, written).await {
            Err(_) => return Err(self.timeout_error(stage)),
            Ok(Err(e)) => return Err(self.io_error(e, stage)),
            Ok(Ok(())) => {}
        }
        loop {
            let next = self.inbound.next(&mut self.stream, self.peer);
            let r = match tokio::time::timeout_at(self.deadline, next).await {
                Err(_) => return Err(self.timeout_error(stage)),
                Ok(Ok(Some(r))) => redact_with(r, secret),
                Ok(Ok(None)) => {
                    return Err(ConnectError::Closed {
                        endpoint: self.endpoint.clone(),
                        addr: self.peer,
                        stage,
                        hint: self.tls_hint(stage),
                    })
                }
                Ok(Err(e)) => return Err(self.read_failure(e, stage)),
            };
            if !r.is_push() {
                return Ok(r);
            }
            self.early_bytes += r.raw.len();
            self.early.push(r);
            if self.early.len() > MAX_EARLY_FRAMES || self.early_bytes > MAX_EARLY_BYTES {
                return Err(ConnectError::PushFlood {
                    endpoint: self.endpoint.clone(),
                    addr: self.peer,
                    stage,
                    frames: self.early.len(),
                    bytes: self.early_bytes,
                });
            }
        }
    }

    /// A TLS server drops (or resets) a plaintext client at its first bytes: when that happens
    /// to the first command of a plain connection, say so.
    pub(super) fn tls_hint(&self, stage: Stage) -> String {
        if self.tls || stage != Stage::Hello {
            String::new()
        } else {
            " (if this port speaks TLS, use --tls or rediss://)".into()
        }
    }

    pub(super) fn timeout_error(&self, stage: Stage) -> ConnectError {
        ConnectError::Timeout {
            endpoint: self.endpoint.clone(),
            addr: Some(self.peer),
            stage,
            timeout: self.timeout,
        }
    }

    pub(super) fn io_error(&self, e: io::Error, stage: Stage) -> ConnectError {
        self.read_failure(read_error(e, self.peer), stage)
    }

    pub(super) fn read_failure(&self, e: ReadError, stage: Stage) -> ConnectError {
        match e {
            ReadError::Framing { source, .. } => {
                // A TLS record (handshake 0x16, alert 0x15) where RESP was expected: this port
                // speaks TLS and we did not.
                let first = self.inbound.reader.buffered().first().copied();
                let hint = if !self.tls && source.offset == 0 && matches!(first, Some(0x15 | 0x16))
                {
                    " (this looks like TLS: use --tls or rediss://)".to_string()
                } else {
                    String::new()
                };
                ConnectError::Protocol {
                    endpoint: self.endpoint.clone(),
                    addr: self.peer,
                    stage,
                    source,
                    hint,
                }
            }
            ReadError::Truncated { .. } => ConnectError::Closed {
                endpoint: self.endpoint.clone(),
                addr: self.peer,
                stage,
                hint: " in the middle of a reply".into(),
            },
            ReadError::Tls {
                failure, detail, ..
            } => ConnectError::Tls {
                endpoint: self.endpoint.clone(),
                addr: self.peer,
                failure,
                detail,
            },
            ReadError::Reset { source, .. } => ConnectError::Io {
                endpoint: self.endpoint.clone(),
                addr: self.peer,
                stage,
                source,
                hint: self.tls_hint(stage),
            },
            ReadError::Io { source, .. } => ConnectError::Io {
                endpoint: self.endpoint.clone(),
                addr: self.peer,
                stage,
                source,
                hint: String::new(),
            },
        }
    }

    /// The next frame (None: the server closed the connection cleanly). Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<Received>, ReadError> {
        self.inbound.next(&mut self.stream, self.peer).await
    }

    /// Sends one command (not cancel-safe: do not race it in `select!`).
    pub async fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<(), WriteError> {
        send_on(&mut self.stream, args, self.peer).await
    }

    /// Splits into a read side for `select!` loops and a write side for commands such as PING.
    pub fn into_split(self) -> (FrameReader, CommandWriter) {
        let (rd, wr) = tokio::io::split(self.stream);
        (
            FrameReader {
                rd,
                inbound: self.inbound,
                peer: self.peer,
            },
            CommandWriter {
                wr,
                peer: self.peer,
            },
        )
    }
}

/// Scans one frame from bytes that are known to hold exactly one.
pub(super) fn rescan(raw: &[u8]) -> Option<Frame<'_>> {
    match Scanner::default().scan(raw) {
        Ok(Scan::Frame(frame, _)) => Some(frame),
        _ => None,
    }
}

pub(super) async fn send_on<W: AsyncWrite + Unpin, A: AsRef<[u8]>>(
    w: &mut W,
    args: &[A],
    peer: SocketAddr,
) -> Result<(), WriteError> {
    let bytes = encode_command(args);
    let result = async {
        w.write_all(&bytes).await?;
        // tokio-rustls buffers until flushed.
        w.flush().await
    };
    result.await.map_err(|source| WriteError { peer, source })
}

/// The read side of a connection after the handshake.
pub struct FrameReader {
    pub(super) rd: ReadHalf<Stream>,
    pub(super) inbound: Inbound,
    pub(super) peer: SocketAddr,
}

impl fmt::Debug for FrameReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameReader")
            .field("peer", &self.peer)
            .field("offset", &self.inbound.reader.offset())
            .finish_non_exhaustive()
    }
}

impl FrameReader {
    /// The next frame, push or reply. `Ok(None)`: the server closed the connection cleanly
    /// (a TLS close without close_notify counts as clean). After a framing error every later call
    /// returns the same error: the stream cannot be resynchronised. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<Received>, ReadError> {
        self.inbound.next(&mut self.rd, self.peer).await
    }

    /// A frame already read and scanned, without reading more: what a caller drains after
    /// [`FrameReader::next`] to hand a whole read over at once. Errors and the end of the
    /// stream are left for `next`.
    pub fn next_ready(&mut self) -> Option<Received> {
        self.inbound.pending.pop_front()
    }

    /// How many frames [`FrameReader::next_ready`] would return.
    pub fn ready(&self) -> usize {
        self.inbound.pending.len()
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Bytes of the stream consumed so far (frames handed out or queued).
    pub fn offset(&self) -> u64 {
        self.inbound.reader.offset()
    }
}

/// The write side of a connection after the handshake.
pub struct CommandWriter {
    pub(super) wr: WriteHalf<Stream>,
    pub(super) peer: SocketAddr,
}

impl fmt::Debug for CommandWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandWriter")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl CommandWriter {
    /// Sends one command, e.g. `send(&[b"PING"])`. Not cancel-safe: a command cut in half
    /// would desynchronise the server, so do not race this in `select!`.
    pub async fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<(), WriteError> {
        send_on(&mut self.wr, args, self.peer).await
    }

    /// Closes the write side (TLS close_notify, then TCP FIN).
    pub async fn shutdown(&mut self) -> Result<(), WriteError> {
        self.wr.shutdown().await.map_err(|source| WriteError {
            peer: self.peer,
            source,
        })
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }
}
