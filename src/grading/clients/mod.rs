//! What the known client libraries do with maintenance notifications, as data.
//!
//! The clients disagree: on whether they opt in by default, on which `moving-endpoint-type`
//! their `auto` asks for, and on which frame shapes their parsers take. `doctor` and
//! `decode --clients` answer "what would my client do?" from the tables here, and nothing else
//! in the tool knows a client by name. Each fact was read in the client's own source at the
//! version named in [`Client::version`]; docs/clients.md says where, and
//! `tests/it/client_parsers.rs` checks the parser predictions of redis-py and node-redis against
//! the real libraries. A fact not read is `None` / [`Parser::NotRead`], never a guess.

mod ioredis;
mod known;

use std::net::IpAddr;

use serde::Serialize;

use crate::network::conn::EndpointType;
use crate::protocol::resp::Frame;

// The verdict types are part of the JSON schema, so they live in `record`.
pub use crate::observe::record::{ClientVerdict, Verdict};

pub use known::*;
