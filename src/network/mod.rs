//! Reaching a server: endpoints, URLs, TLS and the handshake (`conn`), DNS resolved and
//! watched (`dns`), the dry-run handoff decision (`handoff`) and the OSS-cluster topology a
//! client reads (`cluster`).

pub mod cluster;
pub mod conn;
pub mod dns;
pub mod handoff;
