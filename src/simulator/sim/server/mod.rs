//! The simulator's Redis server: enough of Redis for real clients to connect, handshake, opt in
//! and do a little work, with Redis' own error texts.
//!
//! Real client libraries are picky about the handshake (HELLO with AUTH and SETNAME, CLIENT
//! SETINFO, the opt-in with or without `moving-endpoint-type`, pipelined), so each of those is
//! answered as Redis answers it, including the order in which Redis checks things: an unknown
//! command or a wrong argument count is reported before a missing AUTH, exactly as a real server
//! does (measured against redis-server 7.0.15). The opt-in follows docs/protocol.md section 1: `+OK`,
//! then in the same write the retained completion and any open MOVING; a refusing server answers
//! with Redis OSS's bytes. Data commands keep a small in-memory keyspace shared by every proxy,
//! as one database behind several proxies would.
//!
//! Each connection is one task that owns its socket. Notifications and closes reach it through a
//! queue, so a push is never written into the middle of a reply.

mod accept;
mod batch;
mod data;
mod handshake;
mod pubsub;
mod states;
#[cfg(test)]
mod tests;

use batch::{
    arity_ok, bulk, client_setinfo, endpoint_type_arg, error, int, ok, parse_int, simple,
    subcommand, NOT_AN_INTEGER, WRONGPASS,
};

pub(in crate::simulator::sim) use accept::listen;
use accept::{
    is_error_reply, is_subscription, keyed, owned_with_upstream, Batch, Conn, LinkState, Pending,
    Streaming, ENDPOINT_TYPES, ENTERPRISE_VERSION, INLINE_MAX, LOCAL_ARGS_MAX, LOCAL_MAX,
    OSS_VERSION,
};
