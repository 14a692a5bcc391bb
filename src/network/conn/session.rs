//! After the handshake: the commands a watch sends (SUBSCRIBE, CLIENT TRACKING, CLUSTER
//! SHARDS/SLOTS, PING) and the replies matched to them, returned typed.
//!
//! A server answers commands in the order they were sent, so a queue of what was asked tells
//! what each reply answers; pushes interleave freely and answer nothing. Keeping that queue here,
//! beside the reader, means a caller never sees a reply as a bare summary string and never
//! rescans a reply's bytes to learn what it was.

use super::{rescan, CommandWriter, FrameReader, Item, ReadError, Received, WriteError};
use crate::network::cluster::{self, ClusterNode};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// What a session read, typed by what asked for it.
// Frame is the large variant and the common one: boxing it would cost an allocation per frame.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Event {
    /// A push, or a reply that answers nothing this session asked (a refused CLIENT TRACKING
    /// included): shown as the frame it is.
    Frame(Received),
    /// The answer to a PING: its latency, or the error the server gave.
    Pong(Result<Duration, String>),
    /// The cluster's nodes, from CLUSTER SHARDS (or CLUSTER SLOTS before Redis 7).
    Topology(Vec<ClusterNode>),
    /// A topology reply that names no node: the start of the reply, escaped.
    TopologyUnreadable(String),
    /// SUBSCRIBE to Azure Cache's `AzureRedisEvents` was answered with an error (an ACL
    /// without the channel or without `+subscribe`).
    AzureRefused(String),
}

/// What a reply still to come answers.
#[derive(Debug, Clone, Copy)]
enum Asked {
    Ping(Instant),
    Shards,
    Slots,
    Tracking,
    /// SUBSCRIBE AzureRedisEvents: answered by its confirmation (a push in RESP3) or an error.
    Azure,
}

/// The read and write sides of an established connection, with the queue of what was asked.
#[derive(Debug)]
pub struct Session {
    reader: FrameReader,
    writer: CommandWriter,
    replies: Replies,
}

/// What was asked and not yet answered: the pure half of a session, matching replies.
#[derive(Debug, Default)]
struct Replies {
    asked: VecDeque<Asked>,
    /// CLUSTER SLOTS is owed: CLUSTER SHARDS was refused (before Redis 7 it does not exist).
    /// Sent by [`Session::settle`] or before the next command, never from the cancel-safe read.
    slots_owed: bool,
}

impl Session {
    pub fn new(reader: FrameReader, writer: CommandWriter) -> Session {
        Session {
            reader,
            writer,
            replies: Replies::default(),
        }
    }

    /// SUBSCRIBE to `channels` (in RESP3 its confirmations are pushes, not replies).
    pub async fn subscribe(&mut self, channels: &[String]) -> Result<(), WriteError> {
        let mut cmd: Vec<&[u8]> = vec![b"SUBSCRIBE"];
        cmd.extend(channels.iter().map(|c| c.as_bytes()));
        self.send(None, &cmd).await
    }

    /// SUBSCRIBE to Azure Cache's maintenance channel. Its confirmation is shown as the frame it
    /// is; a refusal comes back as [`Event::AzureRefused`].
    pub async fn subscribe_azure(&mut self) -> Result<(), WriteError> {
        self.send(
            Some(Asked::Azure),
            &[b"SUBSCRIBE", crate::protocol::azure::CHANNEL.as_bytes()],
        )
        .await
    }

    /// CLIENT TRACKING ON BCAST: its `+OK` is expected and swallowed, a refusal is shown.
    pub async fn track(&mut self) -> Result<(), WriteError> {
        self.send(
            Some(Asked::Tracking),
            &[b"CLIENT", b"TRACKING", b"ON", b"BCAST"],
        )
        .await
    }

    /// Asks for the cluster's topology: CLUSTER SHARDS, falling back to CLUSTER SLOTS.
    pub async fn ask_topology(&mut self) -> Result<(), WriteError> {
        self.send(Some(Asked::Shards), &[b"CLUSTER", b"SHARDS"])
            .await
    }

    /// Sends a PING; its answer comes back as [`Event::Pong`].
    pub async fn ping(&mut self) -> Result<(), WriteError> {
        self.send(Some(Asked::Ping(Instant::now())), &[b"PING"])
            .await
    }

    /// Sends a command owed by a reply just read (the CLUSTER SLOTS fallback). Call it after
    /// each [`Session::next`]; it does nothing when nothing is owed. Not cancel-safe.
    pub async fn settle(&mut self) -> Result<(), WriteError> {
        if !std::mem::take(&mut self.replies.slots_owed) {
            return Ok(());
        }
        self.replies.asked.push_back(Asked::Slots);
        self.writer.send(&[b"CLUSTER" as &[u8], b"SLOTS"]).await
    }

    /// Not cancel-safe: a command cut in half would desynchronise the server.
    async fn send(&mut self, asked: Option<Asked>, cmd: &[&[u8]]) -> Result<(), WriteError> {
        self.settle().await?;
        self.replies.asked.extend(asked);
        let sent = self.writer.send(cmd).await;
        if sent.is_err() && asked.is_some() {
            // Never sent: nothing will answer it.
            self.replies.asked.pop_back();
        }
        sent
    }

    /// The next frame or answer. `Ok(None)`: the server closed the connection. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<Event>, ReadError> {
        loop {
            let Some(received) = self.reader.next().await? else {
                return Ok(None);
            };
            if let Some(event) = self.replies.answer(received) {
                return Ok(Some(event));
            }
        }
    }

    /// The next frame or answer among those already read, without reading: after
    /// [`Session::next`], this drains the rest of the same read. Not a substitute for `next`,
    /// which also reports errors and the end of the stream.
    pub fn next_ready(&mut self) -> Option<Event> {
        while let Some(received) = self.reader.next_ready() {
            if let Some(event) = self.replies.answer(received) {
                return Some(event);
            }
        }
        None
    }

    /// At most how many events [`Session::next_ready`] has waiting.
    pub fn ready(&self) -> usize {
        self.reader.ready()
    }

    /// PINGs sent and never answered; the queue is emptied (the connection is gone).
    pub fn unanswered_pings(&mut self) -> usize {
        self.replies
            .asked
            .drain(..)
            .filter(|a| matches!(a, Asked::Ping(_)))
            .count()
    }

    pub fn peer(&self) -> std::net::SocketAddr {
        self.reader.peer()
    }
}

impl Replies {
    /// Matches a frame with what asked for it; `None` for an answer that is only expected.
    fn answer(&mut self, received: Received) -> Option<Event> {
        let Item::Reply(summary, is_error) = &received.item else {
            // In RESP3 a SUBSCRIBE is confirmed by a push, in the order of the replies.
            if matches!(self.asked.front(), Some(Asked::Azure))
                && received.raw.starts_with(b">3\r\n$9\r\nsubscribe\r\n")
            {
                self.asked.pop_front();
            }
            return Some(Event::Frame(received));
        };
        let is_error = *is_error;
        match self.asked.pop_front() {
            Some(Asked::Ping(sent)) => {
                let latency = received.at.into_std().saturating_duration_since(sent);
                Some(Event::Pong(if is_error {
                    Err(summary.clone())
                } else {
                    Ok(latency)
                }))
            }
            Some(Asked::Shards) if is_error => {
                self.slots_owed = true;
                None
            }
            Some(asked @ (Asked::Shards | Asked::Slots)) => {
                Some(topology(&received.raw, matches!(asked, Asked::Shards)))
            }
            Some(Asked::Tracking) if !is_error => None,
            Some(Asked::Azure) if is_error => Some(Event::AzureRefused(summary.clone())),
            Some(Asked::Tracking | Asked::Azure) | None => Some(Event::Frame(received)),
        }
    }
}

/// Reads a CLUSTER SHARDS / SLOTS reply.
fn topology(raw: &[u8], shards: bool) -> Event {
    let nodes = rescan(raw).and_then(|frame| {
        if shards {
            cluster::from_shards(&frame)
        } else {
            cluster::from_slots(&frame)
        }
    });
    match nodes {
        Some(nodes) if !nodes.is_empty() => Event::Topology(nodes),
        _ => Event::TopologyUnreadable(crate::shared::escape::escape(&raw[..raw.len().min(120)])),
    }
}

#[cfg(test)]
mod tests {
    use super::{Asked, Event, Replies};
    use crate::network::conn::{Item, Received};
    use crate::protocol::notification::Classified;
    use std::time::{Duration, Instant, SystemTime};

    fn reply(text: &str, is_error: bool, raw: &[u8], at: Instant) -> Received {
        Received {
            at: at.into(),
            wall: SystemTime::now(),
            offset: 0,
            raw: bytes::Bytes::copy_from_slice(raw),
            item: Item::Reply(text.into(), is_error),
        }
    }

    #[test]
    fn replies_come_back_typed_by_what_asked_in_order() {
        let sent = Instant::now();
        let mut r = Replies::default();
        r.asked
            .extend([Asked::Tracking, Asked::Ping(sent), Asked::Shards]);
        let later = sent + Duration::from_millis(3);
        // The +OK of CLIENT TRACKING is expected: nothing to show.
        assert!(r.answer(reply("OK", false, b"+OK\r\n", later)).is_none());
        match r.answer(reply("PONG", false, b"+PONG\r\n", later)) {
            Some(Event::Pong(Ok(latency))) => assert_eq!(latency, Duration::from_millis(3)),
            other => panic!("{other:?}"),
        }
        // CLUSTER SHARDS refused: CLUSTER SLOTS is owed, nothing shown.
        assert!(r
            .answer(reply("ERR unknown", true, b"-ERR unknown\r\n", later))
            .is_none());
        assert!(r.slots_owed);
        r.asked.push_back(Asked::Slots);
        let slots = b"*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n";
        match r.answer(reply("array of 1", false, slots, later)) {
            Some(Event::Topology(nodes)) => assert_eq!(nodes[0].addr(), "127.0.0.1:7000"),
            other => panic!("{other:?}"),
        }
        // A reply nothing asked for is shown as a frame; so is a push.
        assert!(matches!(
            r.answer(reply("OK", false, b"+OK\r\n", later)),
            Some(Event::Frame(_))
        ));
        let push = Received {
            item: Item::Push(Classified::NotPush),
            ..reply("", false, b">1\r\n+x\r\n", later)
        };
        assert!(matches!(r.answer(push), Some(Event::Frame(_))));
    }

    #[test]
    fn a_refused_tracking_is_shown_and_an_unreadable_topology_is_said() {
        let mut r = Replies::default();
        let now = Instant::now();
        r.asked.extend([Asked::Tracking, Asked::Shards]);
        assert!(matches!(
            r.answer(reply("ERR no", true, b"-ERR no\r\n", now)),
            Some(Event::Frame(_))
        ));
        match r.answer(reply("OK", false, b"+OK\r\n", now)) {
            Some(Event::TopologyUnreadable(start)) => assert_eq!(start, "+OK\\r\\n"),
            other => panic!("{other:?}"),
        }
    }
}
