//! A simulated server connection from accept to close: reading commands, the outbox written
//! within bounds, the upstream link when relaying. Kept apart from the folder's root, which is
//! its map.

use super::super::notation::escape;
use super::super::scenario::{Hostile, When, HUGE_BLOB_SENT};
use super::super::upstream::Upstream;
use super::super::wire::Cutter;
use super::super::{upstream, wire, ConnEntry, ConnMsg, Shared, What, Why};
use crate::simulator::sim::server::error;
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::SystemTime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// The version HELLO reports. Enterprise 8.0.2 is the first with maintenance notifications; the
/// refusing mode imitates Redis OSS 7.4.1, whose refusal is byte-identical to the captured one
/// and which (unlike 7.0) knows CLIENT SETINFO.
pub(super) const ENTERPRISE_VERSION: &str = "8.0.2";

pub(super) const OSS_VERSION: &str = "7.4.1";

/// Largest inline (telnet-style) command line, as Redis' `PROTO_INLINE_MAX_SIZE`.
pub(super) const INLINE_MAX: usize = wire::LINE_MAX;

/// What one read asks for, from the client or the upstream.
pub(super) const READ_SIZE: usize = 64 * 1024;

/// Bytes for the client not yet written past which the upstream is not read: the upstream (and
/// its server's output buffer) holds the rest, as it would for a client reading slowly.
pub(super) const OUT_HIGH: usize = 1024 * 1024;

/// Bytes for the client not yet written past which the client is not read either (its own
/// commands' replies from the simulator would otherwise pile up).
pub(super) const OUT_MAX: usize = 8 * 1024 * 1024;

/// Bytes for the upstream not yet written past which the client is not read: a client that
/// pipelines faster than the upstream takes is held back by TCP, not by memory here.
pub(super) const UP_MAX: usize = 1024 * 1024;

/// Entries in the queue of owed replies past which the client is not read (consecutive
/// relayed replies take one entry).
pub(super) const PENDING_MAX: usize = 4096;

/// The largest command the simulator answers itself (the relayed ones have Redis' limits):
/// none of its commands needs more, and it is held whole while it arrives.
pub(super) const LOCAL_MAX: usize = 4 * 1024 * 1024;

pub(super) const LOCAL_ARGS_MAX: u64 = 65_536;

/// Bytes read from a client while a stall holds its commands before reading stops (TCP then
/// holds the rest, as a slow server's would).
pub(super) const HELD_MAX: usize = 1024 * 1024;

/// Values of `moving-endpoint-type` (docs/protocol.md section 1).
pub(super) const ENDPOINT_TYPES: &[&str] = &[
    "internal-ip",
    "internal-fqdn",
    "external-ip",
    "external-fqdn",
    "none",
];

/// Accepts connections on one proxy address while `want` says so. Dropping the listener when it
/// says no makes new connections fail with "connection refused", as a proxy that is down does;
/// connections already accepted are untouched (only a close step ends those).
pub(in crate::simulator::sim) async fn listen(
    shared: Arc<Shared>,
    ip: Ipv4Addr,
    mut listener: Option<TcpListener>,
    mut want: watch::Receiver<bool>,
) {
    let addr = shared.addr(ip);
    loop {
        match listener.take() {
            Some(l) => loop {
                tokio::select! {
                    accepted = l.accept() => match accepted {
                        Ok((stream, peer)) => accept(&shared, ip, stream, peer),
                        Err(e) => {
                            // Out of file descriptors and the like: say so, and do not spin.
                            shared.emit(What::Error { message: format!("accept on {addr}: {e}") });
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        }
                    },
                    alive = wait_until(&mut want, false) => {
                        drop(l);
                        if !alive {
                            return;
                        }
                        shared.emit(What::Listening { proxy: addr, up: false });
                        break;
                    }
                }
            },
            None => {
                if !wait_until(&mut want, true).await {
                    return;
                }
                match TcpListener::bind(addr).await {
                    Ok(l) => {
                        shared.emit(What::Listening {
                            proxy: addr,
                            up: true,
                        });
                        listener = Some(l);
                    }
                    Err(e) => {
                        shared.emit(What::Error {
                            message: format!("cannot listen on {addr} again: {e}"),
                        });
                        if !wait_until(&mut want, false).await {
                            return;
                        }
                    }
                }
            }
        }
    }
}

/// Waits until the flag has that value; false if its sender is gone. (A plain `bool` result keeps
/// the watch guard out of `select!`'s output, which must be `Send`.)
pub(super) async fn wait_until(rx: &mut watch::Receiver<bool>, value: bool) -> bool {
    rx.wait_for(|v| *v == value).await.is_ok()
}

pub(super) fn accept(shared: &Arc<Shared>, ip: Ipv4Addr, stream: TcpStream, peer: SocketAddr) {
    // Notifications are small and latency is what a benchmark measures: no Nagle delay.
    let _ = stream.set_nodelay(true);
    let (tx, rx) = mpsc::unbounded_channel();
    let id = {
        let mut st = shared.lock();
        let id = st.next_conn;
        st.next_conn += 1;
        st.conns.insert(
            id,
            ConnEntry {
                proxy: ip,
                opted_in: false,
                endpoint_type: None,
                watch: false,
                sharded: Default::default(),
                subscribed: Default::default(),
                resp3: false,
                tx,
            },
        );
        id
    };
    let proxy = shared.addr(ip);
    shared.emit(What::Connected {
        conn: id,
        proxy,
        peer,
    });
    shared.triggers.send_modify(|t| {
        t.connects += 1;
        t.live += 1;
    });
    let conn = Conn {
        up: shared.upstream.as_ref().map(|_| UpConn::new()),
        cmd: None,
        shared: shared.clone(),
        id,
        ip,
        proxy,
        resp3: false,
        authed: shared.password.is_none(),
        name: None,
        db: 0,
        opted_in: false,
    };
    tokio::spawn(conn.run(stream, rx));
}

/// A frame being written one byte per scenario second.
pub(super) struct Trickle {
    pub(super) bytes: Vec<u8>,
    /// Bytes already written.
    pub(super) pos: usize,
    /// When the next byte is due.
    pub(super) next: tokio::time::Instant,
    /// The scenario line of the step.
    pub(super) line: usize,
}

/// Sleeps until `at`, or forever for `None` (a `select!` branch that is disabled by its guard
/// still builds its future).
pub(super) async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Bytes waiting to be written, written from the front as the socket takes them.
#[derive(Default)]
pub(super) struct Outbox {
    pub(super) buf: Vec<u8>,
    pub(super) off: usize,
}

impl Outbox {
    pub(super) fn pending(&self) -> usize {
        self.buf.len() - self.off
    }

    pub(super) fn unsent(&self) -> &[u8] {
        &self.buf[self.off..]
    }

    pub(super) fn advance(&mut self, n: usize) {
        self.off += n;
        if self.off == self.buf.len() {
            self.clear();
        }
    }

    pub(super) fn clear(&mut self) {
        self.buf.clear();
        self.off = 0;
    }

    /// The buffer, emptied, for [`Outbox::append`] to take back: bytes for the upstream are
    /// cut straight into it, without an allocation or a copy per batch. A new one while bytes
    /// still wait here.
    pub(super) fn spare(&mut self) -> Vec<u8> {
        if self.pending() > 0 {
            return Vec::new();
        }
        self.off = 0;
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf
    }

    /// Appends a buffer, taking it as it is when nothing waits.
    pub(super) fn append(&mut self, bytes: Vec<u8>) {
        if self.pending() == 0 {
            self.buf = bytes;
            self.off = 0;
        } else {
            self.extend(&bytes);
        }
    }

    /// Appends; the written front is dropped first once it is half the buffer, so the buffer
    /// stays within twice its bound.
    pub(super) fn extend(&mut self, bytes: &[u8]) {
        if self.off > 0 && self.off >= self.buf.len() / 2 {
            self.buf.drain(..self.off);
            self.off = 0;
        }
        self.buf.extend_from_slice(bytes);
    }
}

/// The upstream socket of one client connection, owned by the connection's task.
#[derive(Default)]
pub(super) struct Link {
    /// The connect and HELLO 3, in the background.
    pub(super) connecting: Option<JoinHandle<Result<upstream::Stream, String>>>,
    pub(super) rd: Option<upstream::ReadHalf>,
    pub(super) wr: Option<upstream::WriteHalf>,
    /// One read from the upstream, passed on before the next.
    pub(super) inbuf: Vec<u8>,
    /// Commands for the upstream, as the client wrote them.
    pub(super) out: Outbox,
}

impl Link {
    pub(super) fn open(&mut self, up: Upstream) {
        self.connecting = Some(tokio::spawn(async move { upstream::connect(&up).await }));
    }

    /// The upstream is gone: nothing more is read from it or written to it.
    pub(super) fn close(&mut self) {
        if let Some(h) = self.connecting.take() {
            h.abort();
        }
        self.rd = None;
        self.wr = None;
        self.out.clear();
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.close();
    }
}

/// The background connect's outcome, or forever without one.
pub(super) async fn joined(
    h: &mut Option<JoinHandle<Result<upstream::Stream, String>>>,
) -> Result<upstream::Stream, String> {
    match h {
        Some(h) => h
            .await
            .unwrap_or_else(|e| Err(format!("upstream connection task ended: {e}"))),
        None => std::future::pending().await,
    }
}

pub(super) async fn read_some(
    rd: Option<&mut upstream::ReadHalf>,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    match rd {
        Some(rd) => rd.read_buf(buf).await,
        None => std::future::pending().await,
    }
}

pub(super) async fn write_some(
    wr: Option<&mut upstream::WriteHalf>,
    bytes: &[u8],
) -> std::io::Result<usize> {
    match wr {
        Some(wr) => wr.write(bytes).await,
        None => std::future::pending().await,
    }
}

/// Writes what the socket takes now, without waiting: a batch goes out in the turn that made
/// it, not one turn later. An error is left for the next awaited write to find.
pub(super) fn write_now(try_write: impl Fn(&[u8]) -> std::io::Result<usize>, out: &mut Outbox) {
    while out.pending() > 0 {
        match try_write(out.unsent()) {
            Ok(n) if n > 0 => out.advance(n),
            _ => return,
        }
    }
}

/// Makes room for one read without growing a buffer that already has it.
pub(super) fn room_for_read(buf: &mut Vec<u8>) {
    if buf.capacity() - buf.len() < READ_SIZE / 4 {
        buf.reserve(READ_SIZE);
    }
}

/// What one batch of commands produced: the bytes to write, the notifications among them (for
/// the narration), and whether to close afterwards.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) out: Vec<u8>,
    pub(super) notes: Vec<(Arc<[u8]>, Why)>,
    pub(super) close: bool,
    pub(super) narration: Vec<What>,
    /// Bytes to relay upstream, as the client wrote them.
    pub(super) up_out: Vec<u8>,
    pub(super) commands: u32,
    pub(super) errors: u32,
}

/// A reply the client is owed, in the order it sent the commands.
pub(super) enum Pending {
    /// The upstream's next non-push frames, this many.
    Reply(usize),
    /// The upstream's next non-push frame, answering a `HELLO` the simulator sent to keep its
    /// protocol in step with the client's: not for the client.
    Discard,
    /// A reply of the simulator's own, held back until the relayed replies before it are out.
    Local(Vec<u8>),
}

/// Where the upstream connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LinkState {
    /// No command was relayed yet.
    Idle,
    /// A command was relayed: the connection task opens it.
    Wanted,
    /// Opened (or failed: see [`UpConn::failed`]).
    Started,
}

/// A client connection's side of its upstream connection.
pub(super) struct UpConn {
    pub(super) link: LinkState,
    /// Why the upstream is gone; every relayed command since gets an error reply.
    pub(super) failed: Option<String>,
    pub(super) pending: VecDeque<Pending>,
    /// The protocol the upstream connection speaks (its handshake is HELLO 3).
    pub(super) resp3: bool,
    /// Where the upstream's current frame ends.
    pub(super) cutter: Cutter,
    /// The current frame goes to the client (not: a HELLO reply the relay asked for).
    pub(super) forwarding: bool,
    /// The current frame is a push, not an answer.
    pub(super) push: bool,
    /// What the relayed commands put the connection in, for a push that waits for it.
    pub(super) states: super::states::States,
}

impl UpConn {
    pub(super) fn new() -> UpConn {
        UpConn {
            link: LinkState::Idle,
            failed: None,
            pending: VecDeque::new(),
            resp3: true,
            cutter: Cutter::default(),
            forwarding: false,
            push: false,
            states: super::states::States::default(),
        }
    }

    pub(super) fn expect_reply(&mut self) {
        match self.pending.back_mut() {
            Some(Pending::Reply(n)) => *n += 1,
            _ => self.pending.push_back(Pending::Reply(1)),
        }
    }

    /// Relayed replies still to come.
    pub(super) fn waiting(&self) -> usize {
        self.pending
            .iter()
            .map(|p| match p {
                Pending::Reply(n) => *n,
                _ => 0,
            })
            .sum()
    }

    /// A frame begins with this byte: whether it goes to the client, and whether it is an
    /// error reply to count.
    pub(super) fn begin_frame(&mut self, first: u8) -> bool {
        self.push = first == b'>';
        self.forwarding = self.push || !matches!(self.pending.front(), Some(Pending::Discard));
        !self.push && self.forwarding && matches!(first, b'-' | b'!')
    }

    /// The frame ended: an answer takes its place in the queue. True when the simulator's own
    /// replies waited behind it (see [`UpConn::release_local`]).
    pub(super) fn end_frame(&mut self) -> bool {
        if !self.push {
            // Unsolicited (RESP2 pub/sub messages) relays as it comes, like a reply.
            match self.pending.front_mut() {
                Some(Pending::Reply(n)) if *n > 1 => *n -= 1,
                Some(Pending::Reply(_) | Pending::Discard) => {
                    self.pending.pop_front();
                }
                _ => {}
            }
        }
        matches!(self.pending.front(), Some(Pending::Local(_)))
    }

    /// The simulator's own replies at the front of the queue go out. Returns their error replies.
    pub(super) fn release_local(&mut self, out: &mut Outbox) -> u32 {
        let mut errors = 0;
        while let Some(Pending::Local(_)) = self.pending.front() {
            if let Some(Pending::Local(b)) = self.pending.pop_front() {
                errors += u32::from(is_error_reply(&b));
                out.extend(&b);
            }
        }
        errors
    }
}

/// A multibulk command whose bytes go by as they arrive: to the upstream, or (refused with an
/// error reply already) nowhere.
pub(super) struct Streaming {
    pub(super) command: wire::Command,
    pub(super) relay: bool,
}

/// Commands whose replies are push frames in RESP3 and several arrays in RESP2: no one reply to
/// wait for.
pub(super) fn is_subscription(name: &[u8]) -> bool {
    matches!(
        name,
        b"SUBSCRIBE"
            | b"UNSUBSCRIBE"
            | b"PSUBSCRIBE"
            | b"PUNSUBSCRIBE"
            | b"SSUBSCRIBE"
            | b"SUNSUBSCRIBE"
    )
}

/// With an upstream, what the simulator still answers itself: the handshake, the opt-in, the
/// client's identity, and the cluster topology of a cluster scenario. Upper-case bytes: the
/// relay asks this for every command, without a UTF-8 check.
pub(super) fn owned_with_upstream(name: &[u8], sub: &[u8], (cluster, azure): (bool, bool)) -> bool {
    match name {
        b"HELLO" | b"AUTH" | b"QUIT" => true,
        b"CLIENT" => matches!(sub, b"MAINT_NOTIFICATIONS" | b"SETINFO"),
        b"CLUSTER" | b"READONLY" | b"READWRITE" => cluster,
        b"SSUBSCRIBE" | b"SUNSUBSCRIBE" | b"SPUBLISH" => cluster,
        b"SUBSCRIBE" | b"UNSUBSCRIBE" => azure,
        _ => false,
    }
}

/// Commands whose first argument is a key. In a cluster the key's slot decides which node serves
/// them, so the simulator checks it (and answers `-MOVED` from a node that does not own the
/// slot) even when the data lives in the one upstream redis-server: a single server is no
/// cluster.
pub(super) const KEYED: &[&[u8]] = &[
    b"GET",
    b"SET",
    b"SETEX",
    b"PSETEX",
    b"SETNX",
    b"GETSET",
    b"GETDEL",
    b"GETEX",
    b"INCR",
    b"INCRBY",
    b"INCRBYFLOAT",
    b"DECR",
    b"DECRBY",
    b"APPEND",
    b"STRLEN",
    b"DEL",
    b"UNLINK",
    b"EXISTS",
    b"EXPIRE",
    b"PEXPIRE",
    b"TTL",
    b"PTTL",
    b"TYPE",
    b"MGET",
    b"MSET",
    b"HGET",
    b"HSET",
    b"HDEL",
    b"HGETALL",
    b"HINCRBY",
    b"LPUSH",
    b"RPUSH",
    b"LPOP",
    b"RPOP",
    b"LRANGE",
    b"LLEN",
    b"SADD",
    b"SREM",
    b"SMEMBERS",
    b"SCARD",
    b"ZADD",
    b"ZRANGE",
    b"ZREM",
    b"ZSCORE",
];

pub(super) fn keyed(name: &[u8]) -> bool {
    KEYED.iter().any(|k| k.eq_ignore_ascii_case(name))
}

pub(super) fn is_error_reply(frame: &[u8]) -> bool {
    matches!(frame.first(), Some(b'-' | b'!'))
}

pub(super) struct Conn {
    pub(super) up: Option<UpConn>,
    /// The command whose bytes are still arriving.
    pub(super) cmd: Option<Streaming>,
    pub(super) shared: Arc<Shared>,
    pub(super) id: u64,
    pub(super) ip: Ipv4Addr,
    pub(super) proxy: SocketAddr,
    pub(super) resp3: bool,
    pub(super) authed: bool,
    pub(super) name: Option<Vec<u8>>,
    pub(super) db: u8,
    pub(super) opted_in: bool,
}

impl Conn {
    /// Whether this connection's proxy answers as an OSS-cluster node.
    pub(super) fn is_cluster_node(&self) -> bool {
        self.shared.is_cluster_node(self.ip)
    }

    pub(super) async fn run(mut self, stream: TcpStream, mut rx: mpsc::UnboundedReceiver<ConnMsg>) {
        let (mut rd, mut wr) = stream.into_split();
        let mut shutdown = self.shared.shutdown.clone();
        let mut buf: Vec<u8> = Vec::with_capacity(READ_SIZE);
        // Bytes for the client, and the upstream socket with the bytes for it.
        let mut out = Outbox::default();
        let mut link = Link::default();
        // A frame being written one byte at a time, and what waits for it to be complete.
        let mut trickle: Option<Trickle> = None;
        let mut backlog: VecDeque<ConnMsg> = VecDeque::new();
        // A QUIT was read while relayed replies were still owed: nothing more is read.
        let mut quitting = false;
        // Since when commands read during a stall have waited to be run, and its later writes.
        let mut held: Option<tokio::time::Instant> = None;
        let mut writes: Vec<f64> = Vec::new();
        let by_server = 'run: loop {
            // A notification goes between two relayed frames, never inside one.
            while trickle.is_none() && !self.mid_frame() {
                let Some(msg) = self.next_ready(&mut backlog) else {
                    break;
                };
                if let Some(by_server) = self.deliver(msg, &mut wr, &mut out, &mut trickle).await {
                    break 'run by_server;
                }
            }
            self.open_link(&mut link);
            room_for_read(&mut buf);
            room_for_read(&mut link.inbuf);
            let next_byte = trickle.as_ref().map(|t| t.next);
            // Bytes held by a stall are bounded like any command being read.
            let read_client = trickle.is_none()
                && !quitting
                && self.room(&out, &link)
                && (held.is_none() || buf.len() < HELD_MAX);
            let stall_end = held.and(self.shared.stalled(self.ip)).or(held);
            let read_up = trickle.is_none() && out.pending() < OUT_HIGH;
            tokio::select! {
                msg = rx.recv() => match msg {
                    Some(ConnMsg::Close) | None => break true,
                    Some(msg) => backlog.push_back(msg),
                },
                // While a frame trickles out, commands wait unread: no reply may land inside it.
                read = rd.read_buf(&mut buf), if read_client => match read {
                    Ok(0) | Err(_) => {
                        self.waited(&mut held, &mut writes, true);
                        break false;
                    }
                    Ok(n) if self.shared.scenario.silent => {
                        buf.clear();
                        self.shared.emit(What::Ignored { conn: self.id, proxy: self.proxy, bytes: n });
                    }
                    // A stall: the commands wait, read but not run, until it ends.
                    Ok(_) if held.is_some() || self.shared.stalled(self.ip).is_some() => {
                        held_read(&mut held, &mut writes);
                    }
                    Ok(_) => {
                        if let Some(by_server) = self.consume(&mut buf, &mut out, &mut link, &mut wr, &mut quitting).await {
                            break by_server;
                        }
                    }
                },
                () = sleep_until_some(stall_end), if held.is_some() => {
                    if self.shared.stalled(self.ip).is_none() {
                        self.waited(&mut held, &mut writes, false);
                        if let Some(by_server) = self.consume(&mut buf, &mut out, &mut link, &mut wr, &mut quitting).await {
                            break by_server;
                        }
                    }
                },
                () = sleep_until_some(next_byte) => {
                    if let Some(by_server) = self.trickle_on(&mut trickle, &mut wr).await {
                        break by_server;
                    }
                },
                written = wr.write(out.unsent()), if out.pending() > 0 && trickle.is_none() => match written {
                    Ok(0) | Err(_) => break false,
                    Ok(n) => out.advance(n),
                },
                connected = joined(&mut link.connecting) => {
                    if self.linked(connected, &mut link, &mut out) {
                        break true;
                    }
                },
                read = read_some(link.rd.as_mut(), &mut link.inbuf), if read_up => {
                    if self.relayed(read, &mut link, &mut out, &wr, quitting) {
                        break true;
                    }
                },
                written = write_some(link.wr.as_mut(), link.out.unsent()), if link.out.pending() > 0 => match written {
                    Ok(0) => {}
                    Ok(n) => link.out.advance(n),
                    Err(e) => if self.fail(format!("upstream write failed: {e}"), &mut out, &mut link) { break true },
                },
                _ = wait_until(&mut shutdown, true) => break true,
            }
        };
        self.finish(by_server, buf, out, link, wr, rd).await;
    }

    /// The upstream connection was made, or failed: `true` when the failure ends the
    /// connection.
    pub(super) fn linked(
        &mut self,
        connected: Result<upstream::Stream, String>,
        link: &mut Link,
        out: &mut Outbox,
    ) -> bool {
        link.connecting = None;
        match connected {
            Ok(s) => {
                let (r, w) = s.into_split();
                (link.rd, link.wr) = (Some(r), Some(w));
                false
            }
            Err(why) => self.fail(why, out, link),
        }
    }

    /// Replies read from the upstream go to the client. `true`: the connection ends (the
    /// upstream failed, or a QUIT was waiting for the last reply).
    pub(super) fn relayed(
        &mut self,
        read: std::io::Result<usize>,
        link: &mut Link,
        out: &mut Outbox,
        wr: &OwnedWriteHalf,
        quitting: bool,
    ) -> bool {
        let relayed = match read {
            Ok(0) => Err("the upstream closed the connection".to_string()),
            Err(e) => Err(format!("upstream read failed: {e}")),
            Ok(_) => self
                .relay(&link.inbuf, out)
                .map_err(|e| format!("upstream sent bytes that are not RESP: {e}")),
        };
        link.inbuf.clear();
        write_now(|b| wr.try_write(b), out);
        match relayed {
            Ok(errors) => self.traffic(0, errors, 0),
            Err(why) => {
                if self.fail(why, out, link) {
                    return true;
                }
            }
        }
        quitting && self.owed() == 0
    }

    /// Runs the commands read and writes what they produced. `Some(by_server)`: the connection
    /// ends.
    pub(super) async fn consume(
        &mut self,
        buf: &mut Vec<u8>,
        out: &mut Outbox,
        link: &mut Link,
        wr: &mut OwnedWriteHalf,
        quitting: &mut bool,
    ) -> Option<bool> {
        let close = self.on_commands(buf, out, link, wr).await;
        if let Some(up) = link.wr.as_ref() {
            write_now(|b| up.try_write(b), &mut link.out);
        }
        write_now(|b| wr.try_write(b), out);
        match close {
            Err(()) => Some(false),
            Ok(true) if self.owed() == 0 => Some(true),
            // QUIT behind relayed commands: their replies first, then the close.
            Ok(close) => {
                *quitting |= close;
                None
            }
        }
    }

    /// Commands held by a stall stop waiting: the stall ended, or the client gave up on them.
    /// `writes`: when the client wrote meanwhile ([`held_read`]).
    pub(super) fn waited(
        &self,
        held: &mut Option<tokio::time::Instant>,
        writes: &mut Vec<f64>,
        gave_up: bool,
    ) {
        if let Some(since) = held.take() {
            // The judge dates the wait's start as the event's clock minus `waited`: one reading.
            let now = tokio::time::Instant::now();
            let what = What::Waited {
                conn: self.id,
                proxy: self.proxy,
                waited: now.duration_since(since).as_secs_f64(),
                gave_up,
                writes: std::mem::take(writes),
            };
            self.shared.emit_read_at(now.into_std(), what);
        }
    }

    /// The connection ends: what was owed is counted, what was written goes out (bounded), then
    /// the socket closes and the connection leaves the table.
    pub(super) async fn finish(
        &mut self,
        by_server: bool,
        buf: Vec<u8>,
        out: Outbox,
        link: Link,
        mut wr: OwnedWriteHalf,
        rd: OwnedReadHalf,
    ) {
        drop(link);
        // Commands that never got their reply: relayed ones still waiting, and a command cut
        // in the middle of being written.
        let waiting = self.up.as_ref().map_or(0, UpConn::waiting);
        let cut = !buf.is_empty() || self.cmd.as_ref().is_some_and(|c| c.relay);
        self.traffic(0, 0, (waiting + usize::from(cut)) as u32);
        if by_server && out.pending() > 0 {
            let flush = wr.write_all(out.unsent());
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), flush).await;
        }
        // Half-close first so the client reads an orderly end of stream, then drop the socket.
        let _ = wr.shutdown().await;
        drop(wr);
        {
            let mut st = self.shared.lock();
            st.conns.remove(&self.id);
            self.shared.sync_opted_in(&st);
        }
        self.shared.triggers.send_modify(|t| t.live -= 1);
        self.shared.emit(What::Disconnected {
            conn: self.id,
            proxy: self.proxy,
            by_server,
        });
        if by_server && !cut && self.shared.traffic {
            // Commands in flight at the close, or sent before the client read it, were written
            // and will never be answered. A capture of the run counts them; so does the
            // simulator when it counts traffic (for a grade), or the two grades of one run would
            // differ by the luck of the timing. Without a grade nothing is read.
            let late = sent_after_close(rd).await;
            self.traffic(0, 0, late);
        }
    }

    /// Runs the commands read; `Ok(close)`, or `Err` when the client is gone.
    pub(super) async fn on_commands(
        &mut self,
        buf: &mut Vec<u8>,
        out: &mut Outbox,
        link: &mut Link,
        wr: &mut OwnedWriteHalf,
    ) -> Result<bool, ()> {
        let mut batch = self.process(buf, link.out.spare());
        link.out.append(std::mem::take(&mut batch.up_out));
        out.extend(&batch.out);
        if batch.notes.is_empty() && batch.narration.is_empty() {
            // Relayed commands only: nothing to narrate, no clock to read.
            self.traffic(batch.commands, batch.errors, 0);
            return Ok(batch.close);
        }
        let writing = SystemTime::now();
        if !batch.notes.is_empty() {
            // The opt-in's +OK and what it owes go out in one write, now (docs/protocol.md
            // section 1), so the narration's times are the write's.
            wr.write_all(out.unsent()).await.map_err(|_| ())?;
            out.clear();
        }
        let at = SystemTime::now();
        self.traffic(batch.commands, batch.errors, 0);
        for what in batch.narration {
            self.shared.emit_at(at, what);
        }
        for (bytes, why) in batch.notes {
            self.sent(writing, at, bytes.to_vec(), why);
        }
        Ok(batch.close)
    }

    /// Writes the next byte of a trickled frame. `Some(by_server)`: the connection ends.
    pub(super) async fn trickle_on(
        &self,
        trickle: &mut Option<Trickle>,
        wr: &mut OwnedWriteHalf,
    ) -> Option<bool> {
        let t = trickle.as_mut()?;
        let writing = SystemTime::now();
        if wr.write_all(&t.bytes[t.pos..t.pos + 1]).await.is_err() {
            return Some(false);
        }
        t.pos += 1;
        t.next += self.shared.second();
        if t.pos == t.bytes.len() {
            let t = trickle.take().expect("trickling");
            let why = Why::Step { line: t.line };
            self.sent(writing, SystemTime::now(), t.bytes, why);
        }
        None
    }

    /// True between the first and the last byte of a frame being relayed to the client.
    pub(super) fn mid_frame(&self) -> bool {
        self.up.as_ref().is_some_and(|u| u.cutter.mid_frame())
    }

    /// Whether the client may be read: every buffer in its way has room.
    pub(super) fn room(&self, out: &Outbox, link: &Link) -> bool {
        out.pending() < OUT_MAX
            && link.out.pending() < UP_MAX
            && self
                .up
                .as_ref()
                .is_none_or(|u| u.pending.len() < PENDING_MAX)
    }

    /// Opens the upstream connection once a command was relayed.
    pub(super) fn open_link(&mut self, link: &mut Link) {
        if let Some(up) = self.up.as_mut().filter(|u| u.link == LinkState::Wanted) {
            up.link = LinkState::Started;
            let target = self
                .shared
                .upstream
                .clone()
                .expect("an upstream is configured");
            link.open(target);
        }
    }

    /// Writes a notification or carries out a hostile step. `Some(by_server)`: the connection
    /// ends (the client went away, or the step closes it).
    pub(super) async fn deliver(
        &self,
        msg: ConnMsg,
        wr: &mut OwnedWriteHalf,
        out: &mut Outbox,
        trickle: &mut Option<Trickle>,
    ) -> Option<bool> {
        // What was owed to the client before the notification goes out before it.
        if out.pending() > 0 {
            if wr.write_all(out.unsent()).await.is_err() {
                return Some(false);
            }
            out.clear();
        }
        match msg {
            ConnMsg::Close => Some(true),
            ConnMsg::Push(bytes, why) | ConnMsg::PushWhen(bytes, why, _) => {
                let writing = SystemTime::now();
                if wr.write_all(&bytes).await.is_err() {
                    return Some(false);
                }
                self.sent(writing, SystemTime::now(), bytes.to_vec(), why);
                None
            }
            ConnMsg::Message(bytes) => wr.write_all(&bytes).await.is_err().then_some(false),
            ConnMsg::Hostile(kind, line) => {
                let bytes = kind.bytes();
                let hostile = |written| What::Hostile {
                    conn: self.id,
                    proxy: self.proxy,
                    kind,
                    written,
                };
                match kind {
                    Hostile::Trickle => {
                        self.shared.emit(hostile(bytes.len()));
                        *trickle = Some(Trickle {
                            bytes,
                            pos: 0,
                            next: tokio::time::Instant::now(),
                            line,
                        });
                        None
                    }
                    Hostile::Deep => {
                        let gone = wr.write_all(&bytes).await.is_err();
                        self.shared.emit(hostile(bytes.len()));
                        gone.then_some(false)
                    }
                    Hostile::MidFrame => {
                        let gone = wr.write_all(&bytes).await.is_err();
                        self.shared.emit(hostile(bytes.len()));
                        Some(!gone)
                    }
                    Hostile::HugeBlob => {
                        // The header, then the blob in chunks until the promised amount is out or
                        // the client hangs up (what a bounded reader does at the header).
                        let mut written = 0;
                        let mut gone = wr.write_all(&bytes).await.is_err();
                        if !gone {
                            written += bytes.len();
                            let chunk = vec![b'x'; 64 * 1024];
                            let mut left = HUGE_BLOB_SENT;
                            while left > 0 {
                                let n = left.min(chunk.len());
                                if wr.write_all(&chunk[..n]).await.is_err() {
                                    gone = true;
                                    break;
                                }
                                written += n;
                                left -= n;
                            }
                        }
                        self.shared.emit(hostile(written));
                        gone.then_some(false)
                    }
                }
            }
        }
    }

    /// Replies still owed to the client (relayed ones, and the simulator's own waiting behind).
    pub(super) fn owed(&self) -> usize {
        self.up.as_ref().map_or(0, |u| {
            u.pending
                .iter()
                .map(|p| match p {
                    Pending::Reply(n) => *n,
                    _ => 1,
                })
                .sum()
        })
    }

    /// Narrates traffic for a grade, when asked for and when there is some.
    pub(super) fn traffic(&self, commands: u32, errors: u32, unanswered: u32) {
        if self.shared.traffic && commands + errors + unanswered > 0 {
            self.shared.emit(What::Traffic {
                conn: self.id,
                proxy: self.proxy,
                commands,
                errors,
                unanswered,
            });
        }
    }

    pub(super) fn client_info(&self, field: &'static str, value: &[u8]) {
        // A connection that names itself maintwatch gets the scenario's end marked.
        if field == "name" && value == crate::shared::CLIENT_NAME.as_bytes() {
            if let Some(c) = self.shared.lock().conns.get_mut(&self.id) {
                c.watch = true;
            }
        }
        self.shared.emit(What::ClientInfo {
            conn: self.id,
            proxy: self.proxy,
            field,
            value: escape(value),
        });
    }

    /// Passes on what the upstream sent: pushes as they come, replies in command order with the
    /// simulator's own replies that waited behind them, a reply to a HELLO of the relay's own
    /// not at all. Frames are cut, not decoded: their bytes go on as they arrive. Returns the
    /// error replies passed on; an error says the bytes are not RESP.
    pub(super) fn relay(&mut self, data: &[u8], out: &mut Outbox) -> Result<u32, String> {
        let Some(up) = self.up.as_mut() else {
            return Ok(0);
        };
        let mut errors = 0;
        let mut pos = 0;
        // Forwarded bytes go out in runs, `data[from..pos]`, not frame by frame.
        let mut from = 0;
        while pos < data.len() {
            if !up.cutter.mid_frame() {
                errors += u32::from(up.begin_frame(data[pos]));
            }
            let (n, ended) = match up.cutter.advance(&data[pos..]) {
                Ok(step) => step,
                Err(e) => {
                    // The frames before the bad bytes were answers: they still go out.
                    out.extend(&data[from..pos]);
                    return Err(e);
                }
            };
            if !up.forwarding {
                out.extend(&data[from..pos]);
                from = pos + n;
            }
            pos += n;
            if ended && up.end_frame() {
                out.extend(&data[from..pos]);
                from = pos;
                errors += up.release_local(out);
            }
        }
        out.extend(&data[from..pos]);
        Ok(errors)
    }

    /// The upstream is gone: every relayed command still waiting gets an error reply in its
    /// place, and so does every one after. True when a reply was cut in the middle, which
    /// nothing can repair: the client connection must close.
    pub(super) fn fail(&mut self, why: String, out: &mut Outbox, link: &mut Link) -> bool {
        link.close();
        if let Some(cmd) = self.cmd.as_mut() {
            // The rest of a command being relayed goes nowhere; its reply is the error below.
            cmd.relay = false;
        }
        let Some(up) = self.up.as_mut() else {
            return false;
        };
        let cut = up.cutter.mid_frame() && up.forwarding;
        up.cutter = Cutter::default();
        let text = format!("ERR maintwatch simulate: {why}");
        let mut errors = 0;
        let mut replies = Vec::new();
        for p in up.pending.drain(..) {
            match p {
                Pending::Reply(n) => {
                    for _ in 0..n {
                        error(&mut replies, &text);
                    }
                    errors += n as u32;
                }
                Pending::Discard => {}
                Pending::Local(b) => replies.extend_from_slice(&b),
            }
        }
        up.failed = Some(why);
        out.extend(&replies);
        self.traffic(0, errors, 0);
        cut
    }

    pub(super) fn sent(&self, writing: SystemTime, at: SystemTime, bytes: Vec<u8>, why: Why) {
        self.shared.emit_at(
            at,
            What::Sent {
                conn: self.id,
                proxy: self.proxy,
                bytes,
                why,
                writing,
            },
        );
    }
}

/// How long, and how much, a closed connection is still read for the commands it was sent.
pub(super) const AFTER_CLOSE: std::time::Duration = std::time::Duration::from_secs(1);

pub(super) const AFTER_CLOSE_BYTES: usize = 1 << 20;

/// Counts the commands a client sent on a connection the server has half-closed, until the
/// client closes it too (bounded in time and bytes): each whole command, and one cut short.
pub(super) async fn sent_after_close(mut rd: OwnedReadHalf) -> u32 {
    let mut buf = vec![0u8; 16 * 1024];
    let mut cmd = wire::Command::new();
    let (mut count, mut partial, mut read) = (0u32, false, 0usize);
    let deadline = tokio::time::Instant::now() + AFTER_CLOSE;
    while read < AFTER_CLOSE_BYTES {
        let n = match tokio::time::timeout_at(deadline, rd.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => n,
            _ => break,
        };
        read += n;
        let mut data = &buf[..n];
        while !data.is_empty() {
            let Ok((used, ended)) = cmd.advance(data) else {
                return count + 1;
            };
            data = &data[used..];
            partial = !ended;
            if ended {
                count += 1;
                cmd = wire::Command::new();
            }
        }
    }
    count + u32::from(partial)
}

/// A write noted during a hold comes at least this long after the last one noted: a client that
/// writes on without pause is noted 100 times a second at most, and every silence the judge reads
/// (a quarter of a second) is kept.
const WRITE_GAP_S: f64 = 0.01;

/// Bytes read while a stall holds the connection's commands: the first read starts the hold, and
/// a later one is the client writing meanwhile, noted in seconds since the hold began. A caller
/// that gave up on its reply and kept the connection sends its next command then
/// (docs/protocol.md section 8).
pub(super) fn held_read(held: &mut Option<tokio::time::Instant>, writes: &mut Vec<f64>) {
    let Some(since) = held else {
        *held = Some(tokio::time::Instant::now());
        return;
    };
    let at = since.elapsed().as_secs_f64();
    // Whole microseconds: a gap of exactly 10 ms must not read as 9.999... in floating point.
    let gap = |last: &f64| ((at - last) * 1e6).round() >= WRITE_GAP_S * 1e6;
    if writes.last().is_none_or(gap) {
        writes.push(at);
    }
}

impl Conn {
    /// Whether the connection is in that state now.
    fn in_state(&self, when: When) -> bool {
        let owed = self.owed();
        let Some(up) = self.up.as_ref() else {
            return false;
        };
        up.states.holds(when, owed)
    }

    /// The first message of the backlog that may go out now: anything but a push waiting for a
    /// state the connection is not in, which keeps its place.
    pub(super) fn next_ready(&self, backlog: &mut VecDeque<ConnMsg>) -> Option<ConnMsg> {
        let at = backlog.iter().position(|m| match m {
            ConnMsg::PushWhen(_, _, when) => self.in_state(*when),
            _ => true,
        })?;
        backlog.remove(at)
    }
}
