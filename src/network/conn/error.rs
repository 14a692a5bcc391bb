//! The errors of the connection layer. Each names the endpoint (never with a password) and,
//! once known, the address, so a message read alone in a log still says where it happened.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use serde::Serialize;

use super::TlsFailure;
use crate::network::dns::DnsError;
use crate::protocol::resp::RespError;

/// Where in the connection's life something went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Resolving,
    Connecting,
    TlsHandshake,
    Hello,
    Select,
    OptIn,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Resolving => "while resolving",
            Stage::Connecting => "while connecting",
            Stage::TlsHandshake => "during the TLS handshake",
            Stage::Hello => "waiting for the HELLO reply",
            Stage::Select => "waiting for the SELECT reply",
            Stage::OptIn => "waiting for the CLIENT MAINT_NOTIFICATIONS reply",
        })
    }
}

/// One failed TCP connect, for [`ConnectError::Unreachable`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub addr: SocketAddr,
    pub error: String,
    pub timed_out: bool,
}

fn list_attempts(attempts: &[Attempt]) -> String {
    attempts
        .iter()
        .map(|a| format!("{}: {}", a.addr, a.error))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What the timeout that expired covers: resolving has its own, the rest share one deadline.
fn timeout_scope(stage: Stage) -> &'static str {
    match stage {
        Stage::Resolving => "--connect-timeout",
        _ => "--connect-timeout, for connect, TLS and the handshake together",
    }
}

fn at_addr(addr: &Option<SocketAddr>) -> String {
    addr.map(|a| format!(" ({a})")).unwrap_or_default()
}

/// Connecting or the handshake failed. Every variant names the endpoint (without secrets) and,
/// once known, the address.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{endpoint}: {source}")]
    Resolve {
        endpoint: String,
        #[source]
        source: DnsError,
    },
    #[error("{endpoint}: {host} is a name and no resolver was given")]
    NoResolver { endpoint: String, host: String },
    #[error("{endpoint}: no address to connect to")]
    NoAddresses { endpoint: String },
    #[error("{endpoint}: cannot connect: {}", list_attempts(attempts))]
    Unreachable {
        endpoint: String,
        attempts: Vec<Attempt>,
    },
    #[error("{endpoint}{}: timed out after {timeout:?} {stage} ({}){}", at_addr(addr),
            timeout_scope(*stage),
            if *stage == Stage::TlsHandshake { " (is TLS enabled on this port?)" } else { "" })]
    Timeout {
        endpoint: String,
        addr: Option<SocketAddr>,
        stage: Stage,
        timeout: Duration,
    },
    #[error("{endpoint} ({addr}): TLS failed: {failure}: {detail}")]
    Tls {
        endpoint: String,
        addr: SocketAddr,
        failure: TlsFailure,
        detail: String,
    },
    #[error("{endpoint} ({addr}): authentication failed: {text}{hint}")]
    Auth {
        endpoint: String,
        addr: SocketAddr,
        /// The server's error text, e.g. `WRONGPASS invalid username-password pair ...`.
        text: String,
        /// Where the password came from, when that is the likely mistake (never the password).
        hint: String,
    },
    #[error("{endpoint} ({addr}): push flood {stage}: {frames} push frames ({bytes} bytes) and \
             no reply; the handshake keeps at most {max_frames} push frames or {max_kib} KiB, so \
             it gives up (the frames read are shown)",
            max_frames = super::MAX_EARLY_FRAMES, max_kib = super::MAX_EARLY_BYTES / 1024)]
    PushFlood {
        endpoint: String,
        addr: SocketAddr,
        stage: Stage,
        frames: usize,
        bytes: usize,
    },
    #[error("{endpoint} ({addr}): {command} was refused: {text}")]
    Command {
        endpoint: String,
        addr: SocketAddr,
        command: &'static str,
        text: String,
    },
    #[error("{endpoint} ({addr}): the server closed the connection {stage}{hint}")]
    Closed {
        endpoint: String,
        addr: SocketAddr,
        stage: Stage,
        hint: String,
    },
    #[error("{endpoint} ({addr}): malformed reply {stage}: {source}{hint}")]
    Protocol {
        endpoint: String,
        addr: SocketAddr,
        stage: Stage,
        #[source]
        source: RespError,
        hint: String,
    },
    #[error("{endpoint} ({addr}): I/O error {stage}: {source}{hint}")]
    Io {
        endpoint: String,
        addr: SocketAddr,
        stage: Stage,
        #[source]
        source: io::Error,
        hint: String,
    },
}

impl ConnectError {
    /// The address involved, when one was reached.
    pub fn addr(&self) -> Option<SocketAddr> {
        match self {
            ConnectError::Resolve { .. }
            | ConnectError::NoResolver { .. }
            | ConnectError::NoAddresses { .. } => None,
            ConnectError::Unreachable { attempts, .. } => attempts.last().map(|a| a.addr),
            ConnectError::Timeout { addr, .. } => *addr,
            ConnectError::Tls { addr, .. }
            | ConnectError::Auth { addr, .. }
            | ConnectError::Command { addr, .. }
            | ConnectError::PushFlood { addr, .. }
            | ConnectError::Closed { addr, .. }
            | ConnectError::Protocol { addr, .. }
            | ConnectError::Io { addr, .. } => Some(*addr),
        }
    }

    /// The endpoint the error is about, as displayed.
    pub fn endpoint(&self) -> &str {
        match self {
            ConnectError::Resolve { endpoint, .. }
            | ConnectError::NoResolver { endpoint, .. }
            | ConnectError::NoAddresses { endpoint }
            | ConnectError::Unreachable { endpoint, .. }
            | ConnectError::Timeout { endpoint, .. }
            | ConnectError::Tls { endpoint, .. }
            | ConnectError::Auth { endpoint, .. }
            | ConnectError::Command { endpoint, .. }
            | ConnectError::PushFlood { endpoint, .. }
            | ConnectError::Closed { endpoint, .. }
            | ConnectError::Protocol { endpoint, .. }
            | ConnectError::Io { endpoint, .. } => endpoint,
        }
    }

    /// The message without the leading `endpoint (address): `, for a table that already shows
    /// both.
    pub fn reason(&self) -> String {
        let full = self.to_string();
        let mut rest = full.strip_prefix(self.endpoint()).unwrap_or(&full);
        if let Some(addr) = self.addr() {
            rest = rest.strip_prefix(&format!(" ({addr})")).unwrap_or(rest);
        }
        rest.strip_prefix(": ").unwrap_or(rest).to_string()
    }

    /// Authentication failed (`-WRONGPASS`, `-NOAUTH` ...): retrying will not help.
    pub fn is_auth(&self) -> bool {
        matches!(self, ConnectError::Auth { .. })
    }
}

/// A handshake that failed, with every frame read before it failed (redacted, in stream
/// order): a notification that arrived just before the failure is still shown and captured.
/// Derefs to the [`ConnectError`].
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct HandshakeError {
    pub error: ConnectError,
    pub frames: Vec<super::Received>,
    /// How many of `frames` arrived before the opt-in was sent (all of them when it never was).
    pub before_opt_in: usize,
}

impl std::ops::Deref for HandshakeError {
    type Target = ConnectError;

    fn deref(&self) -> &ConnectError {
        &self.error
    }
}

impl From<HandshakeError> for ConnectError {
    fn from(e: HandshakeError) -> ConnectError {
        e.error
    }
}

/// Reading from an established connection failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{peer}: connection reset: {source}")]
    Reset {
        peer: SocketAddr,
        #[source]
        source: io::Error,
    },
    /// The stream is out of sync from here on; every frame before `offset` was delivered.
    #[error("{peer}: malformed RESP3 {source}")]
    Framing {
        peer: SocketAddr,
        offset: u64,
        #[source]
        source: RespError,
    },
    #[error(
        "{peer}: the connection closed in the middle of a frame at byte {offset} ({buffered} \
         bytes unparsed)"
    )]
    Truncated {
        peer: SocketAddr,
        offset: u64,
        buffered: usize,
    },
    #[error("{peer}: TLS failed: {failure}: {detail}")]
    Tls {
        peer: SocketAddr,
        failure: TlsFailure,
        detail: String,
    },
    #[error("{peer}: read failed: {source}")]
    Io {
        peer: SocketAddr,
        #[source]
        source: io::Error,
    },
}

impl ReadError {
    /// For a framing error: the stream offset and the error text.
    pub fn framing(&self) -> Option<(u64, String)> {
        match self {
            ReadError::Framing { offset, source, .. } => Some((*offset, source.to_string())),
            _ => None,
        }
    }
}

/// Writing a command failed.
#[derive(Debug, thiserror::Error)]
#[error("{peer}: write failed: {source}")]
pub struct WriteError {
    pub peer: SocketAddr,
    #[source]
    pub source: io::Error,
}
