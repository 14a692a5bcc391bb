//! The connection layer: TCP or TLS to one endpoint, the RESP3 opt-in handshake, and a framed
//! reader that keeps every frame's exact bytes and the time it was read.
//!
//! Both `watch` and `probe` go through here, so "does this endpoint deliver maintenance
//! notifications?" is answered by the same code that then watches them. The rules that shaped
//! it (docs/protocol.md sections 1 and 7):
//!
//! - The handshake is `HELLO 3` (with `AUTH` and `SETNAME`), optionally `SELECT`, then
//!   `CLIENT MAINT_NOTIFICATIONS ON`. Commands are sent one at a time and exactly one reply is
//!   read per command, so a refused opt-in can never shift a later reply (the "spurious NOAUTH"
//!   pitfall of shipped clients).
//! - A push frame may arrive at any moment, including while a reply is awaited and in the same
//!   read as the opt-in's `+OK` (Enterprise's catch-up replay of a retained `MIGRATED` /
//!   `FAILED_OVER`, or a `MOVING` re-sent because its window is still open). None of them is
//!   dropped: the handshake hands them back in [`Handshake::early`], each with its raw bytes, its
//!   stream offset and the instant its read returned.
//! - "RESP3 unavailable" (HELLO answered with an error), "refused" (the opt-in answered with an
//!   error) and "authentication failed" are different outcomes, because an operator fixes them
//!   differently.
//! - Passwords are [`Secret`]s: no `Debug`, `Display` or error message shows one, and every
//!   frame the handshake reads is redacted of the password before anything sees it (servers
//!   echo `HELLO`'s arguments in errors; see [`redact`]).
//! - Everything a server sends is untrusted: one deadline (`--connect-timeout`) covers connect,
//!   TLS and the whole handshake, so a server that talks without answering cannot hold it open;
//!   pushes that arrive meanwhile are kept up to [`MAX_EARLY_FRAMES`] / [`MAX_EARLY_BYTES`];
//!   and a handshake that fails hands back every frame it read ([`HandshakeError`]).
//!
//! This module prints nothing; callers decide what to show.

pub mod endpoints;
mod error;
mod options;
mod outcome;
pub mod probe;
pub mod redact;
pub mod session;
#[cfg(test)]
pub(crate) mod test_server;
pub mod tls;
pub use crate::shared::url;
pub use outcome::OptInOutcome;

pub use error::{Attempt, ConnectError, HandshakeError, ReadError, Stage, WriteError};
pub use options::{
    is_internal, ConfigError, ConnectConfig, ConnectOptions, EndpointType, EndpointTypeChoice,
    Secret, TlsOptions,
};
pub use tls::{TlsFailure, TlsFiles};
pub use url::{RedisUrl, UrlError, DEFAULT_PORT};

pub use crate::shared::CLIENT_NAME;

mod dial;
#[cfg(test)]
mod tests;

pub use dial::{
    connect, connect_to, resolve, CommandWriter, Connection, FrameReader, Handshake, Hello,
    HelloInfo, Item, OptIn, Received, MAX_EARLY_BYTES, MAX_EARLY_FRAMES, MAX_ERROR_TEXT,
};
// For the folder's own files, until each imports from where a name is defined.
use dial::{received, rescan};
