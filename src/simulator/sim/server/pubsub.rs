//! SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH, answered by the node as a cluster answers them: a
//! channel hashes to a slot like a key, and a node that does not own the slot says `-MOVED`.
//! The subscriptions themselves live in the shared table ([`crate::simulator::sim`]'s `pubsub`), where the
//! player's ticks and slot moves find them.

use super::super::cluster_slots::key_slot;
use super::super::notation::escape;
use super::super::{ConnMsg, State, What};
use super::batch::{error, int};
use crate::simulator::sim::server::Conn;
use crate::simulator::sim::sharded_pubsub::{frame, Last, CHANNELS_MAX, CHANNEL_LEN_MAX};
use std::sync::Arc;

impl Conn {
    pub(super) fn pubsub(&mut self, name: &str, args: &[Vec<u8>], out: &mut Vec<u8>) {
        match name {
            "SSUBSCRIBE" => self.ssubscribe(&args[1..], out),
            "SUNSUBSCRIBE" => self.sunsubscribe(&args[1..], out),
            "SUBSCRIBE" => self.subscribe(&args[1..], out),
            "UNSUBSCRIBE" => self.unsubscribe(&args[1..], out),
            _ => self.spublish(&args[1], &args[2], out),
        }
    }

    fn ssubscribe(&mut self, channels: &[Vec<u8>], out: &mut Vec<u8>) {
        if self.moved(channels, out) {
            return;
        }
        if let Some(long) = channels.iter().find(|c| c.len() > CHANNEL_LEN_MAX) {
            return error(
                out,
                &format!(
                    "ERR maintwatch simulate: a sharded channel of {} bytes is longer than the {CHANNEL_LEN_MAX} it keeps",
                    long.len()
                ),
            );
        }
        let mut st = self.shared.lock();
        let State {
            conns,
            channels: all,
            ..
        } = &mut *st;
        let Some(entry) = conns.get_mut(&self.id) else {
            return;
        };
        entry.resp3 = self.resp3;
        for channel in channels {
            if entry.sharded.len() >= CHANNELS_MAX && !entry.sharded.contains(channel) {
                error(
                    out,
                    &format!("ERR maintwatch simulate: more than {CHANNELS_MAX} sharded channels on one connection"),
                );
                continue;
            }
            entry.sharded.insert(channel.clone());
            if all.len() < CHANNELS_MAX {
                all.insert(channel.clone());
            }
            self.shared.emit(What::Sharded {
                conn: self.id,
                proxy: self.proxy,
                channel: escape(channel),
                slot: key_slot(channel),
                on: true,
                by_server: false,
            });
            // After the event: a clock that waits for this starts after it in every narration.
            self.shared.triggers.send_modify(|t| t.ssubscribed += 1);
            let n = entry.sharded.len();
            out.extend_from_slice(&frame(self.resp3, "ssubscribe", channel, Last::Count(n)));
        }
    }

    fn sunsubscribe(&mut self, channels: &[Vec<u8>], out: &mut Vec<u8>) {
        let mut st = self.shared.lock();
        let Some(entry) = st.conns.get_mut(&self.id) else {
            return;
        };
        let named: Vec<Vec<u8>> = if channels.is_empty() {
            entry.sharded.iter().cloned().collect()
        } else {
            channels.to_vec()
        };
        if named.is_empty() {
            // Redis's reply when there was nothing to leave: a null channel and a count of 0.
            let null: &[u8] = if self.resp3 { b"_\r\n" } else { b"$-1\r\n" };
            out.extend_from_slice(if self.resp3 { b">3\r\n" } else { b"*3\r\n" });
            out.extend_from_slice(b"$12\r\nsunsubscribe\r\n");
            out.extend_from_slice(null);
            out.extend_from_slice(b":0\r\n");
            return;
        }
        for channel in named {
            if entry.sharded.remove(&channel) {
                self.shared.emit(What::Sharded {
                    conn: self.id,
                    proxy: self.proxy,
                    channel: escape(&channel),
                    slot: key_slot(&channel),
                    on: false,
                    by_server: false,
                });
            }
            let n = entry.sharded.len();
            out.extend_from_slice(&frame(self.resp3, "sunsubscribe", &channel, Last::Count(n)));
        }
    }

    fn spublish(&mut self, channel: &[u8], message: &[u8], out: &mut Vec<u8>) {
        if self.moved(std::slice::from_ref(&channel.to_vec()), out) {
            return;
        }
        let st = self.shared.lock();
        let to: Vec<_> = st
            .conns
            .values()
            .filter(|c| c.proxy == self.ip && c.sharded.contains(channel))
            .collect();
        for c in &to {
            let bytes = frame(c.resp3, "smessage", channel, Last::Message(message));
            let _ = c.tx.send(ConnMsg::Message(Arc::from(bytes)));
        }
        int(out, to.len() as i64);
    }

    /// SUBSCRIBE, as the simulator answers it in an Azure scenario: the channels are remembered
    /// (`AzureRedisEvents` is the one an `azure` step publishes on), each confirmed.
    fn subscribe(&mut self, channels: &[Vec<u8>], out: &mut Vec<u8>) {
        let mut st = self.shared.lock();
        let Some(entry) = st.conns.get_mut(&self.id) else {
            return;
        };
        entry.resp3 = self.resp3;
        for channel in channels {
            let full = entry.subscribed.len() >= CHANNELS_MAX;
            if channel.len() > CHANNEL_LEN_MAX || (full && !entry.subscribed.contains(channel)) {
                error(
                    out,
                    &format!("ERR maintwatch simulate: it keeps {CHANNELS_MAX} channels of at most {CHANNEL_LEN_MAX} bytes per connection"),
                );
                continue;
            }
            entry.subscribed.insert(channel.clone());
            if channel.as_slice() == crate::simulator::sim::azure_channel::CHANNEL {
                self.shared.triggers.send_modify(|t| t.subscribed += 1);
            }
            self.shared.emit(What::Subscribed {
                conn: self.id,
                proxy: self.proxy,
                channel: escape(channel),
                on: true,
            });
            let n = entry.subscribed.len();
            out.extend_from_slice(&frame(self.resp3, "subscribe", channel, Last::Count(n)));
        }
    }

    fn unsubscribe(&mut self, channels: &[Vec<u8>], out: &mut Vec<u8>) {
        let mut st = self.shared.lock();
        let Some(entry) = st.conns.get_mut(&self.id) else {
            return;
        };
        let named: Vec<Vec<u8>> = if channels.is_empty() {
            entry.subscribed.iter().cloned().collect()
        } else {
            channels.to_vec()
        };
        for channel in named {
            if entry.subscribed.remove(&channel) {
                self.shared.emit(What::Subscribed {
                    conn: self.id,
                    proxy: self.proxy,
                    channel: escape(&channel),
                    on: false,
                });
            }
            let n = entry.subscribed.len();
            out.extend_from_slice(&frame(self.resp3, "unsubscribe", &channel, Last::Count(n)));
        }
    }
}
