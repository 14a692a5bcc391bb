//! Sharded pub/sub as a cluster serves it: who is subscribed to which channel on which node,
//! the player's `spublish` ticks, and the unsolicited `SUNSUBSCRIBE` a node sends when a slot
//! leaves it.
//!
//! The simulator answers these itself even with `--upstream`: one redis-server is no cluster,
//! and a sharded subscription lives on the node that owns its slot. A moved slot is where
//! clients lose messages without any error, so this is what `sharded-resubscribe` judges
//! (docs/protocol.md section 8). Channels are remembered once subscribed, so a tick still
//! publishes on a channel whose every subscriber was lost: that message, sent to nobody, is the
//! evidence.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::SystemTime;

use super::azure_channel;
use super::cluster_slots::key_slot;
use super::notation::escape;
use super::{ConnMsg, Shared, State, What};

/// Channels a connection may subscribe to; the table of channels to publish on has the same
/// bound. Both live as long as the simulator, so both are bounded.
pub const CHANNELS_MAX: usize = 64;
/// Longest channel name kept.
pub const CHANNEL_LEN_MAX: usize = 256;

/// A sharded pub/sub frame: a push in RESP3, an array in RESP2, of a kind, a channel and a
/// last element (a count, or a message).
pub fn frame(resp3: bool, kind: &str, channel: &[u8], last: Last<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + channel.len());
    out.extend_from_slice(if resp3 { b">3\r\n" } else { b"*3\r\n" });
    for part in [kind.as_bytes(), channel] {
        out.extend_from_slice(format!("${}\r\n", part.len()).as_bytes());
        out.extend_from_slice(part);
        out.extend_from_slice(b"\r\n");
    }
    match last {
        Last::Count(n) => out.extend_from_slice(format!(":{n}\r\n").as_bytes()),
        Last::Message(m) => {
            out.extend_from_slice(format!("${}\r\n", m.len()).as_bytes());
            out.extend_from_slice(m);
            out.extend_from_slice(b"\r\n");
        }
    }
    out
}

/// The third element of a pub/sub frame.
pub enum Last<'a> {
    Count(usize),
    Message(&'a [u8]),
}

/// One `spublish` tick: every channel ever subscribed gets message `tick`, from its slot's
/// owner, sent to the connections subscribed to it on that node.
pub(super) fn publish(shared: &Shared, tick: u64) {
    let st = shared.lock();
    let body = format!("maintwatch-sharded-{tick}");
    for channel in &st.channels {
        let slot = key_slot(channel);
        let Some(owner) = st.topology.owner(slot) else {
            continue;
        };
        let to: Vec<(u64, bool)> = st
            .conns
            .iter()
            .filter(|(_, c)| c.proxy == owner && c.sharded.contains(channel))
            .map(|(id, c)| (*id, c.resp3))
            .collect();
        shared.emit(What::Published {
            channel: escape(channel),
            slot,
            node: shared.addr(owner),
            message: tick,
            recipients: to.iter().map(|(id, _)| *id).collect(),
        });
        for (id, resp3) in to {
            let bytes = frame(resp3, "smessage", channel, Last::Message(body.as_bytes()));
            if let Some(c) = st.conns.get(&id) {
                let _ = c.tx.send(ConnMsg::Message(Arc::from(bytes)));
            }
        }
    }
}

/// After slots changed owner: each subscription whose channel's slot left its connection's node
/// ends with the server's own `SUNSUBSCRIBE`, as Redis does when a slot migrates away.
pub(super) fn end_moved(shared: &Shared) {
    let mut st = shared.lock();
    let State {
        conns, topology, ..
    } = &mut *st;
    for (id, c) in conns.iter_mut() {
        let gone: BTreeSet<Vec<u8>> = c
            .sharded
            .iter()
            .filter(|ch| topology.owner(key_slot(ch)) != Some(c.proxy))
            .cloned()
            .collect();
        for channel in gone {
            c.sharded.remove(&channel);
            let left = c.sharded.len();
            shared.emit(What::Sharded {
                conn: *id,
                proxy: shared.addr(c.proxy),
                channel: escape(&channel),
                slot: key_slot(&channel),
                on: false,
                by_server: true,
            });
            let bytes = frame(c.resp3, "sunsubscribe", &channel, Last::Count(left));
            let _ = c.tx.send(ConnMsg::Message(Arc::from(bytes)));
        }
    }
}

/// An `azure` step: the message, rendered now, to every connection of the targets subscribed to
/// `AzureRedisEvents`, narrated before it goes out.
pub(super) fn publish_azure(
    shared: &Shared,
    line: usize,
    targets: &[Ipv4Addr],
    m: &azure_channel::Message,
) {
    let st = shared.lock();
    let now = SystemTime::now();
    for proxy in targets {
        let payload = m.render(now, shared.speed, *proxy, shared.port);
        let to: Vec<_> = st
            .conns
            .values()
            .filter(|c| c.proxy == *proxy && c.subscribed.contains(azure_channel::CHANNEL))
            .collect();
        shared.emit(What::AzurePublished {
            line,
            summary: m.summary(),
            proxy: shared.addr(*proxy),
            payload: escape(&payload),
            recipients: to.len(),
        });
        for c in to {
            let bytes = frame(
                c.resp3,
                "message",
                azure_channel::CHANNEL,
                Last::Message(&payload),
            );
            let _ = c.tx.send(ConnMsg::Message(Arc::from(bytes)));
        }
    }
}
