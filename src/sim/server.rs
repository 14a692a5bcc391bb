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

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::SystemTime;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::cluster::{as_map, key_slot, node_id};
use super::escape::escape;
use super::scenario::{Hostile, Mode, HUGE_BLOB_SENT};
use super::upstream::{self, Upstream};
use super::wire::{self, Cutter, Head};
use super::{ConnEntry, ConnMsg, Shared, What, Why};
use crate::resp::{encode_command, Frame, Limits, Scan, Scanner};

/// The version HELLO reports. Enterprise 8.0.2 is the first with maintenance notifications; the
/// refusing mode imitates Redis OSS 7.4.1, whose refusal is byte-identical to the captured one
/// and which (unlike 7.0) knows CLIENT SETINFO.
const ENTERPRISE_VERSION: &str = "8.0.2";
const OSS_VERSION: &str = "7.4.1";

/// Largest inline (telnet-style) command line, as Redis' `PROTO_INLINE_MAX_SIZE`.
const INLINE_MAX: usize = wire::LINE_MAX;

/// What one read asks for, from the client or the upstream.
const READ_SIZE: usize = 64 * 1024;
/// Bytes for the client not yet written past which the upstream is not read: the upstream (and
/// its server's output buffer) holds the rest, as it would for a client reading slowly.
const OUT_HIGH: usize = 1024 * 1024;
/// Bytes for the client not yet written past which the client is not read either (its own
/// commands' replies from the simulator would otherwise pile up).
const OUT_MAX: usize = 8 * 1024 * 1024;
/// Bytes for the upstream not yet written past which the client is not read: a client that
/// pipelines faster than the upstream takes is held back by TCP, not by memory here.
const UP_MAX: usize = 1024 * 1024;
/// Entries in the queue of owed replies past which the client is not read (consecutive
/// relayed replies take one entry).
const PENDING_MAX: usize = 4096;
/// The largest command the simulator answers itself (the relayed ones have Redis' limits):
/// none of its commands needs more, and it is held whole while it arrives.
const LOCAL_MAX: usize = 4 * 1024 * 1024;
const LOCAL_ARGS_MAX: u64 = 65_536;
/// Bytes read from a client while a stall holds its commands before reading stops (TCP then
/// holds the rest, as a slow server's would).
const HELD_MAX: usize = 1024 * 1024;

/// Values of `moving-endpoint-type` (docs/protocol.md section 1).
const ENDPOINT_TYPES: &[&str] = &[
    "internal-ip",
    "internal-fqdn",
    "external-ip",
    "external-fqdn",
    "none",
];

/// Accepts connections on one proxy address while `want` says so. Dropping the listener when it
/// says no makes new connections fail with "connection refused", as a proxy that is down does;
/// connections already accepted are untouched (only a close step ends those).
pub(super) async fn listen(
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
async fn wait_until(rx: &mut watch::Receiver<bool>, value: bool) -> bool {
    rx.wait_for(|v| *v == value).await.is_ok()
}

fn accept(shared: &Arc<Shared>, ip: Ipv4Addr, stream: TcpStream, peer: SocketAddr) {
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
struct Trickle {
    bytes: Vec<u8>,
    /// Bytes already written.
    pos: usize,
    /// When the next byte is due.
    next: tokio::time::Instant,
    /// The scenario line of the step.
    line: usize,
}

/// Sleeps until `at`, or forever for `None` (a `select!` branch that is disabled by its guard
/// still builds its future).
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Bytes waiting to be written, written from the front as the socket takes them.
#[derive(Default)]
struct Outbox {
    buf: Vec<u8>,
    off: usize,
}

impl Outbox {
    fn pending(&self) -> usize {
        self.buf.len() - self.off
    }

    fn unsent(&self) -> &[u8] {
        &self.buf[self.off..]
    }

    fn advance(&mut self, n: usize) {
        self.off += n;
        if self.off == self.buf.len() {
            self.clear();
        }
    }

    fn clear(&mut self) {
        self.buf.clear();
        self.off = 0;
    }

    /// The buffer, emptied, for [`Outbox::append`] to take back: bytes for the upstream are
    /// cut straight into it, without an allocation or a copy per batch. A new one while bytes
    /// still wait here.
    fn spare(&mut self) -> Vec<u8> {
        if self.pending() > 0 {
            return Vec::new();
        }
        self.off = 0;
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf
    }

    /// Appends a buffer, taking it as it is when nothing waits.
    fn append(&mut self, bytes: Vec<u8>) {
        if self.pending() == 0 {
            self.buf = bytes;
            self.off = 0;
        } else {
            self.extend(&bytes);
        }
    }

    /// Appends; the written front is dropped first once it is half the buffer, so the buffer
    /// stays within twice its bound.
    fn extend(&mut self, bytes: &[u8]) {
        if self.off > 0 && self.off >= self.buf.len() / 2 {
            self.buf.drain(..self.off);
            self.off = 0;
        }
        self.buf.extend_from_slice(bytes);
    }
}

/// The upstream socket of one client connection, owned by the connection's task.
#[derive(Default)]
struct Link {
    /// The connect and HELLO 3, in the background.
    connecting: Option<JoinHandle<Result<upstream::Stream, String>>>,
    rd: Option<upstream::ReadHalf>,
    wr: Option<upstream::WriteHalf>,
    /// One read from the upstream, passed on before the next.
    inbuf: Vec<u8>,
    /// Commands for the upstream, as the client wrote them.
    out: Outbox,
}

impl Link {
    fn open(&mut self, up: Upstream) {
        self.connecting = Some(tokio::spawn(async move { upstream::connect(&up).await }));
    }

    /// The upstream is gone: nothing more is read from it or written to it.
    fn close(&mut self) {
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
async fn joined(
    h: &mut Option<JoinHandle<Result<upstream::Stream, String>>>,
) -> Result<upstream::Stream, String> {
    match h {
        Some(h) => h
            .await
            .unwrap_or_else(|e| Err(format!("upstream connection task ended: {e}"))),
        None => std::future::pending().await,
    }
}

async fn read_some(
    rd: Option<&mut upstream::ReadHalf>,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    match rd {
        Some(rd) => rd.read_buf(buf).await,
        None => std::future::pending().await,
    }
}

async fn write_some(wr: Option<&mut upstream::WriteHalf>, bytes: &[u8]) -> std::io::Result<usize> {
    match wr {
        Some(wr) => wr.write(bytes).await,
        None => std::future::pending().await,
    }
}

/// Writes what the socket takes now, without waiting: a batch goes out in the turn that made
/// it, not one turn later. An error is left for the next awaited write to find.
fn write_now(try_write: impl Fn(&[u8]) -> std::io::Result<usize>, out: &mut Outbox) {
    while out.pending() > 0 {
        match try_write(out.unsent()) {
            Ok(n) if n > 0 => out.advance(n),
            _ => return,
        }
    }
}

/// Makes room for one read without growing a buffer that already has it.
fn room_for_read(buf: &mut Vec<u8>) {
    if buf.capacity() - buf.len() < READ_SIZE / 4 {
        buf.reserve(READ_SIZE);
    }
}

/// What one batch of commands produced: the bytes to write, the notifications among them (for
/// the narration), and whether to close afterwards.
#[derive(Default)]
struct Batch {
    out: Vec<u8>,
    notes: Vec<(Arc<[u8]>, Why)>,
    close: bool,
    narration: Vec<What>,
    /// Bytes to relay upstream, as the client wrote them.
    up_out: Vec<u8>,
    commands: u32,
    errors: u32,
}

/// A reply the client is owed, in the order it sent the commands.
enum Pending {
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
enum LinkState {
    /// No command was relayed yet.
    Idle,
    /// A command was relayed: the connection task opens it.
    Wanted,
    /// Opened (or failed: see [`UpConn::failed`]).
    Started,
}

/// A client connection's side of its upstream connection.
struct UpConn {
    link: LinkState,
    /// Why the upstream is gone; every relayed command since gets an error reply.
    failed: Option<String>,
    pending: VecDeque<Pending>,
    /// The protocol the upstream connection speaks (its handshake is HELLO 3).
    resp3: bool,
    /// Where the upstream's current frame ends.
    cutter: Cutter,
    /// The current frame goes to the client (not: a HELLO reply the relay asked for).
    forwarding: bool,
    /// The current frame is a push, not an answer.
    push: bool,
}

impl UpConn {
    fn new() -> UpConn {
        UpConn {
            link: LinkState::Idle,
            failed: None,
            pending: VecDeque::new(),
            resp3: true,
            cutter: Cutter::default(),
            forwarding: false,
            push: false,
        }
    }

    fn expect_reply(&mut self) {
        match self.pending.back_mut() {
            Some(Pending::Reply(n)) => *n += 1,
            _ => self.pending.push_back(Pending::Reply(1)),
        }
    }

    /// Relayed replies still to come.
    fn waiting(&self) -> usize {
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
    fn begin_frame(&mut self, first: u8) -> bool {
        self.push = first == b'>';
        self.forwarding = self.push || !matches!(self.pending.front(), Some(Pending::Discard));
        !self.push && self.forwarding && matches!(first, b'-' | b'!')
    }

    /// The frame ended: an answer takes its place in the queue. True when the simulator's own
    /// replies waited behind it (see [`UpConn::release_local`]).
    fn end_frame(&mut self) -> bool {
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
    fn release_local(&mut self, out: &mut Outbox) -> u32 {
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
struct Streaming {
    command: wire::Command,
    relay: bool,
}

/// Commands whose replies are push frames in RESP3 and several arrays in RESP2: no one reply to
/// wait for.
fn is_subscription(name: &[u8]) -> bool {
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
fn owned_with_upstream(name: &[u8], sub: &[u8], cluster: bool) -> bool {
    match name {
        b"HELLO" | b"AUTH" | b"QUIT" => true,
        b"CLIENT" => matches!(sub, b"MAINT_NOTIFICATIONS" | b"SETINFO"),
        b"CLUSTER" | b"READONLY" | b"READWRITE" => cluster,
        _ => false,
    }
}

/// Commands whose first argument is a key. In a cluster the key's slot decides which node serves
/// them, so the simulator checks it (and answers `-MOVED` from a node that does not own the
/// slot) even when the data lives in the one upstream redis-server: a single server is no
/// cluster.
const KEYED: &[&[u8]] = &[
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

fn keyed(name: &[u8]) -> bool {
    KEYED.iter().any(|k| k.eq_ignore_ascii_case(name))
}

fn is_error_reply(frame: &[u8]) -> bool {
    matches!(frame.first(), Some(b'-' | b'!'))
}

struct Conn {
    up: Option<UpConn>,
    /// The command whose bytes are still arriving.
    cmd: Option<Streaming>,
    shared: Arc<Shared>,
    id: u64,
    ip: Ipv4Addr,
    proxy: SocketAddr,
    resp3: bool,
    authed: bool,
    name: Option<Vec<u8>>,
    db: u8,
    opted_in: bool,
}

impl Conn {
    async fn run(mut self, stream: TcpStream, mut rx: mpsc::UnboundedReceiver<ConnMsg>) {
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
        // Since when commands read during a stall have waited to be run.
        let mut held: Option<tokio::time::Instant> = None;
        let by_server = 'run: loop {
            // A notification goes between two relayed frames, never inside one.
            while trickle.is_none() && !self.mid_frame() {
                let Some(msg) = backlog.pop_front() else {
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
                        self.waited(&mut held, true);
                        break false;
                    }
                    Ok(n) if self.shared.scenario.silent => {
                        buf.clear();
                        self.shared.emit(What::Ignored { conn: self.id, proxy: self.proxy, bytes: n });
                    }
                    // A stall: the commands wait, read but not run, until it ends.
                    Ok(_) if held.is_some() || self.shared.stalled(self.ip).is_some() => {
                        held.get_or_insert_with(tokio::time::Instant::now);
                    }
                    Ok(_) => {
                        if let Some(by_server) = self.consume(&mut buf, &mut out, &mut link, &mut wr, &mut quitting).await {
                            break by_server;
                        }
                    }
                },
                () = sleep_until_some(stall_end), if held.is_some() => {
                    if self.shared.stalled(self.ip).is_none() {
                        self.waited(&mut held, false);
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
    fn linked(
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
    fn relayed(
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
    async fn consume(
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
    fn waited(&self, held: &mut Option<tokio::time::Instant>, gave_up: bool) {
        if let Some(since) = held.take() {
            self.shared.emit(What::Waited {
                conn: self.id,
                proxy: self.proxy,
                waited: since.elapsed().as_secs_f64(),
                gave_up,
            });
        }
    }

    /// The connection ends: what was owed is counted, what was written goes out (bounded), then
    /// the socket closes and the connection leaves the table.
    async fn finish(
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
    async fn on_commands(
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
    async fn trickle_on(
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
    fn mid_frame(&self) -> bool {
        self.up.as_ref().is_some_and(|u| u.cutter.mid_frame())
    }

    /// Whether the client may be read: every buffer in its way has room.
    fn room(&self, out: &Outbox, link: &Link) -> bool {
        out.pending() < OUT_MAX
            && link.out.pending() < UP_MAX
            && self
                .up
                .as_ref()
                .is_none_or(|u| u.pending.len() < PENDING_MAX)
    }

    /// Opens the upstream connection once a command was relayed.
    fn open_link(&mut self, link: &mut Link) {
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
    async fn deliver(
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
            ConnMsg::Push(bytes, why) => {
                let writing = SystemTime::now();
                if wr.write_all(&bytes).await.is_err() {
                    return Some(false);
                }
                self.sent(writing, SystemTime::now(), bytes.to_vec(), why);
                None
            }
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
    fn owed(&self) -> usize {
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
    fn traffic(&self, commands: u32, errors: u32, unanswered: u32) {
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

    fn client_info(&self, field: &'static str, value: &[u8]) {
        // A connection that names itself maintwatch gets the scenario's end marked.
        if field == "name" && value == crate::conn::CLIENT_NAME.as_bytes() {
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
    fn relay(&mut self, data: &[u8], out: &mut Outbox) -> Result<u32, String> {
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
    fn fail(&mut self, why: String, out: &mut Outbox, link: &mut Link) -> bool {
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

    fn sent(&self, writing: SystemTime, at: SystemTime, bytes: Vec<u8>, why: Why) {
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

    /// Runs every complete command in `buf` (pipelining) and passes on the relayed ones as far
    /// as they have arrived (appended to `up_out`), removing what it used from `buf`.
    fn process(&mut self, buf: &mut Vec<u8>, up_out: Vec<u8>) -> Batch {
        let mut batch = Batch {
            up_out,
            ..Batch::default()
        };
        let mut used = 0;
        while used < buf.len() && !batch.close {
            let step = match self.cmd.as_mut() {
                Some(cmd) => cmd.command.advance(&buf[used..]).map(|(n, ended)| {
                    if cmd.relay {
                        batch.up_out.extend_from_slice(&buf[used..used + n]);
                    }
                    Some((n, ended))
                }),
                None => self
                    .next_command(&buf[used..], &mut batch)
                    .map(|n| n.map(|n| (n, false))),
            };
            match step {
                Ok(Some((n, ended))) => {
                    used += n;
                    if ended {
                        self.cmd = None;
                    }
                }
                Ok(None) => break,
                Err(why) => {
                    // As Redis: report the protocol error (after the replies owed before it),
                    // then close the connection.
                    let start = batch.out.len();
                    error(&mut batch.out, &format!("ERR Protocol error: {why}"));
                    self.hold_local(start, &mut batch);
                    batch.close = true;
                    used = buf.len();
                }
            }
        }
        buf.drain(..used);
        batch
    }

    /// Starts the command at the front of `data`: how many bytes it used (0 when its bytes now
    /// stream through [`Conn::cmd`]), `None` until enough of it has arrived.
    fn next_command(&mut self, data: &[u8], batch: &mut Batch) -> Result<Option<usize>, String> {
        if data[0] != b'*' {
            let Some((args, n)) = next_inline(data)? else {
                return Ok(None);
            };
            if !args.is_empty() {
                batch.commands += 1;
                self.command(&args, &data[..n], batch);
            }
            return Ok(Some(n));
        }
        let Some(head) = wire::head(data)? else {
            return Ok(None);
        };
        if head.argc == 0 {
            // Redis skips an empty command.
            return Ok(Some(head.line));
        }
        batch.commands += 1;
        if self.relays(&head) {
            let start = batch.out.len();
            let refused = self.refusal();
            if let Some(text) = &refused {
                error(&mut batch.out, text);
            } else {
                self.expect_relayed(head.name.bytes(), batch);
            }
            self.hold_local(start, batch);
            // What the head read goes on now; the rest streams from there (a short command
            // is usually whole already).
            let relay = refused.is_none();
            if relay {
                batch.up_out.extend_from_slice(&data[..head.read]);
            }
            if head.args_read < head.argc {
                self.cmd = Some(Streaming {
                    command: wire::Command::resume(head.argc - head.args_read),
                    relay,
                });
            }
            return Ok(Some(head.read));
        }
        // Answered here (or relayed after a look at all its words): held whole, within a bound.
        if head.argc <= LOCAL_ARGS_MAX {
            if let Some((args, n)) = whole_command(data)? {
                self.command(&args, &data[..n], batch);
                return Ok(Some(n));
            }
            if data.len() <= LOCAL_MAX {
                return Ok(None);
            }
        }
        let start = batch.out.len();
        error(
            &mut batch.out,
            &format!(
                "ERR maintwatch simulate: '{}' with more than {LOCAL_ARGS_MAX} arguments or {} MiB \
                 is more than the simulator answers itself",
                head.name.as_str(),
                LOCAL_MAX >> 20
            ),
        );
        self.hold_local(start, batch);
        self.stream(false);
        Ok(Some(0))
    }

    /// The command at the front goes by as it arrives: to the upstream, or nowhere.
    fn stream(&mut self, relay: bool) {
        self.cmd = Some(Streaming {
            command: wire::Command::new(),
            relay,
        });
    }

    /// Whether a command streams to the upstream as it arrives, unlooked at: any command the
    /// simulator neither answers nor watches (CLIENT SETNAME names the client, RESET changes
    /// the protocol; in a cluster, a keyed command's slot is checked first).
    fn relays(&self, head: &Head) -> bool {
        let (name, sub) = (head.name.bytes(), head.sub.bytes());
        let cluster = self.shared.scenario.is_cluster();
        let looked_at = owned_with_upstream(name, sub, cluster)
            || (cluster && keyed(name))
            || (name == b"CLIENT" && sub == b"SETNAME")
            || name == b"RESET";
        self.up.is_some() && !looked_at
    }

    /// Why a command to relay gets an error reply instead, if it does.
    fn refusal(&self) -> Option<String> {
        if !self.authed {
            return Some("NOAUTH Authentication required.".into());
        }
        let why = self.up.as_ref()?.failed.as_ref()?;
        Some(format!("ERR maintwatch simulate: {why}"))
    }

    fn command(&mut self, args: &[Vec<u8>], raw: &[u8], batch: &mut Batch) {
        let start = batch.out.len();
        let narrated_before = batch.narration.len();
        let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
        if self.up.is_some() {
            let sub = args
                .get(1)
                .map(|s| String::from_utf8_lossy(s).to_ascii_uppercase())
                .unwrap_or_default();
            let cluster = self.shared.scenario.is_cluster();
            if !owned_with_upstream(name.as_bytes(), sub.as_bytes(), cluster) {
                if !self.authed {
                    error(&mut batch.out, "NOAUTH Authentication required.");
                } else {
                    if name == "CLIENT" && sub == "SETNAME" && args.len() == 3 {
                        self.client_info("name", &args[2]);
                    }
                    let elsewhere = cluster
                        && keyed(name.as_bytes())
                        && self.moved(&args[1..2], &mut batch.out);
                    if !elsewhere {
                        self.forward(&name, raw, batch);
                    }
                    if name == "RESET" {
                        // RESET puts the upstream connection back to RESP2, and the client
                        // with it; a connection that was opted in no longer is (no pushes in
                        // RESP2).
                        if let Some(up) = self.up.as_mut() {
                            up.resp3 = false;
                        }
                        self.resp3 = false;
                        if self.opted_in {
                            self.set_opted_in(false);
                        }
                    }
                }
                self.hold_local(start, batch);
                return;
            }
        }
        self.dispatch(&name, args, batch);
        if name == "CLIENT" && args.len() == 4 && batch.out[start..].starts_with(b"+OK") {
            let attr = String::from_utf8_lossy(&args[1]).to_ascii_uppercase();
            let field = String::from_utf8_lossy(&args[2]).to_ascii_uppercase();
            match (attr.as_str(), field.as_str()) {
                ("SETINFO", "LIB-NAME") => self.client_info("lib-name", &args[3]),
                ("SETINFO", "LIB-VER") => self.client_info("lib-ver", &args[3]),
                _ => {}
            }
        }
        if name == "CLIENT"
            && args.len() == 3
            && args[1].eq_ignore_ascii_case(b"SETNAME")
            && batch.out[start..].starts_with(b"+OK")
        {
            self.client_info("name", &args[2]);
        }
        let narrated = !matches!(
            name.as_str(),
            "GET" | "SET" | "DEL" | "EXISTS" | "PING" | "ECHO"
        );
        // The opt-in has its own narration (What::OptIn), unless it failed before being parsed.
        if narrated && batch.narration.len() == narrated_before {
            let reply = &batch.out[start..];
            batch.narration.push(What::Command {
                conn: self.id,
                proxy: self.proxy,
                command: redacted(args),
                reply: shorten(&escape(reply), 160),
            });
        }
        self.hold_local(start, batch);
    }

    /// Relays one whole command as the client wrote it; after an upstream failure, answers
    /// with the failure instead.
    fn forward(&mut self, name: &str, raw: &[u8], batch: &mut Batch) {
        if let Some(text) = self.refusal() {
            return error(&mut batch.out, &text);
        }
        self.expect_relayed(name.as_bytes(), batch);
        batch.up_out.extend_from_slice(raw);
    }

    /// A command is about to be relayed: the connection opens on the first, the upstream's
    /// protocol follows the client's, and its reply takes its place in the queue.
    fn expect_relayed(&mut self, name: &[u8], batch: &mut Batch) {
        let resp3 = self.resp3;
        let Some(up) = self.up.as_mut() else { return };
        if up.link == LinkState::Idle {
            up.link = LinkState::Wanted;
        }
        if up.resp3 != resp3 {
            let hello = encode_command(&[&b"HELLO"[..], if resp3 { b"3" } else { b"2" }]);
            batch.up_out.extend_from_slice(&hello);
            up.pending.push_back(Pending::Discard);
            up.resp3 = resp3;
        }
        if !is_subscription(name) {
            up.expect_reply();
        }
    }

    /// Counts an error reply of the simulator's own, and holds it back when relayed replies are
    /// still owed before it.
    fn hold_local(&mut self, start: usize, batch: &mut Batch) {
        if batch.out.len() == start {
            return;
        }
        // Also behind a relayed frame still arriving (a push), never inside it.
        let up = self
            .up
            .as_mut()
            .filter(|u| !u.pending.is_empty() || u.cutter.mid_frame());
        match up {
            Some(up) => {
                let reply = batch.out.split_off(start);
                up.pending.push_back(Pending::Local(reply));
            }
            None => batch.errors += u32::from(is_error_reply(&batch.out[start..])),
        }
    }

    /// Answers one command the way Redis orders its checks: is it a command with a plausible
    /// argument count, then authentication, then the command itself. Routing only: each command
    /// family has its own handler, in the style of a command table.
    fn dispatch(&mut self, name: &str, args: &[Vec<u8>], batch: &mut Batch) {
        let Some((family, arity)) = command_table(name) else {
            return unknown_command(&mut batch.out, args);
        };
        if !arity_ok(arity, args.len()) {
            let text = format!(
                "ERR wrong number of arguments for '{}' command",
                name.to_ascii_lowercase()
            );
            return error(&mut batch.out, &text);
        }
        // CLIENT's subcommands have arities of their own, also checked before authentication.
        if family == Family::Client && !self.client_arity(args, batch) {
            return;
        }
        if !self.authed && !matches!(name, "HELLO" | "AUTH" | "QUIT") {
            return error(&mut batch.out, "NOAUTH Authentication required.");
        }
        let out = &mut batch.out;
        match family {
            Family::Hello => self.hello(args, out),
            Family::Auth => self.auth(args, out),
            Family::Client => self.client(args, batch),
            Family::Connection => self.connection(name, args, batch),
            Family::Keyspace => self.keyspace(name, args, out),
            Family::Server => self.server_command(name, args, out),
            Family::Cluster => self.cluster(&subcommand(args), args, out),
        }
    }

    /// Checks a CLIENT subcommand and its argument count; false when an error was written.
    /// An unknown subcommand is echoed in the case the client sent it (docs/protocol.md
    /// section 7), and a refused opt-in is still narrated and counted as an attempt.
    fn client_arity(&mut self, args: &[Vec<u8>], batch: &mut Batch) -> bool {
        let refusing = self.shared.scenario.mode == Mode::Refusing
            || self
                .shared
                .refusing
                .load(std::sync::atomic::Ordering::Relaxed);
        let sub = subcommand(args);
        let sub_arity: i32 = match sub.as_str() {
            "ID" | "GETNAME" => 2,
            "SETNAME" => 3,
            "SETINFO" => 4,
            "MAINT_NOTIFICATIONS" if !refusing => -3,
            _ => {
                if sub == "MAINT_NOTIFICATIONS" {
                    self.shared.triggers.send_modify(|t| t.attempts += 1);
                    batch.narration.push(What::OptIn {
                        conn: self.id,
                        proxy: self.proxy,
                        on: !args.get(2).is_some_and(|a| a.eq_ignore_ascii_case(b"OFF")),
                        accepted: false,
                        endpoint_type: endpoint_type_arg(args),
                    });
                }
                let text = format!(
                    "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                    String::from_utf8_lossy(&args[1])
                );
                error(&mut batch.out, &text);
                return false;
            }
        };
        if !arity_ok(sub_arity, args.len()) {
            let text = format!(
                "ERR wrong number of arguments for 'client|{}' command",
                sub.to_ascii_lowercase()
            );
            error(&mut batch.out, &text);
            return false;
        }
        true
    }

    /// AUTH with a password, or a user and a password.
    fn auth(&mut self, args: &[Vec<u8>], out: &mut Vec<u8>) {
        let (user, pass) = match args.len() {
            2 => (None, &args[1]),
            3 => (Some(&args[1][..]), &args[2]),
            _ => return error(out, "ERR syntax error"),
        };
        if user.is_none() && self.shared.password.is_none() {
            return error(
                out,
                "ERR AUTH <password> called without any password configured for the \
                 default user. Are you sure your configuration is correct?",
            );
        }
        if self.credentials_ok(user.unwrap_or(b"default"), pass) {
            self.authed = true;
            ok(out);
        } else {
            error(out, WRONGPASS);
        }
    }

    /// CLIENT ID, GETNAME, SETNAME, SETINFO and MAINT_NOTIFICATIONS (arity already checked).
    fn client(&mut self, args: &[Vec<u8>], batch: &mut Batch) {
        let out = &mut batch.out;
        match subcommand(args).as_str() {
            "ID" => int(out, self.id as i64),
            "GETNAME" => match &self.name {
                Some(n) => bulk(out, n),
                None => self.null(out),
            },
            "SETNAME" => match self.set_name(&args[2]) {
                Ok(()) => ok(out),
                Err(e) => error(out, e),
            },
            "SETINFO" => client_setinfo(args, out),
            _ => self.maint_notifications(args, batch),
        }
    }

    /// PING, ECHO, QUIT and SELECT: the connection's own commands.
    fn connection(&mut self, name: &str, args: &[Vec<u8>], batch: &mut Batch) {
        let out = &mut batch.out;
        match name {
            "PING" => match args.len() {
                1 => simple(out, "PONG"),
                2 => bulk(out, &args[1]),
                _ => error(out, "ERR wrong number of arguments for 'ping' command"),
            },
            "ECHO" => bulk(out, &args[1]),
            "QUIT" => {
                ok(out);
                batch.close = true;
            }
            _ => self.select(args, out),
        }
    }

    fn select(&mut self, args: &[Vec<u8>], out: &mut Vec<u8>) {
        if self.shared.scenario.is_cluster() {
            return error(out, "ERR SELECT is not allowed in cluster mode");
        }
        match parse_int(&args[1]) {
            Some(db) if (0..16).contains(&db) => {
                self.db = db as u8;
                ok(out);
            }
            Some(_) => error(out, "ERR DB index is out of range"),
            None => error(out, NOT_AN_INTEGER),
        }
    }

    /// GET, SET, DEL and EXISTS; in a cluster a key of another shard gets MOVED first.
    fn keyspace(&mut self, name: &str, args: &[Vec<u8>], out: &mut Vec<u8>) {
        if name == "SET" {
            return self.set(args, out);
        }
        let keys = if name == "GET" {
            &args[1..2]
        } else {
            &args[1..]
        };
        if self.moved(keys, out) {
            return;
        }
        if name == "GET" {
            let value = self
                .shared
                .lock()
                .keys
                .get(&(self.db, args[1].clone()))
                .cloned();
            return match value {
                Some(v) => bulk(out, &v),
                None => self.null(out),
            };
        }
        let mut st = self.shared.lock();
        let n = keys
            .iter()
            .filter(|k| {
                let key = (self.db, k.to_vec());
                if name == "DEL" {
                    st.keys.remove(&key).is_some()
                } else {
                    st.keys.contains_key(&key)
                }
            })
            .count();
        int(out, n as i64);
    }

    /// COMMAND, READONLY/READWRITE and INFO: what clients ask about the server.
    fn server_command(&self, name: &str, args: &[Vec<u8>], out: &mut Vec<u8>) {
        match name {
            "COMMAND" if subcommand(args) == "COUNT" => int(out, 0),
            "COMMAND" => out.extend_from_slice(b"*0\r\n"),
            "READONLY" | "READWRITE" if self.shared.scenario.is_cluster() => ok(out),
            "READONLY" | "READWRITE" => {
                error(out, "ERR This instance has cluster support disabled")
            }
            _ => {
                let text = format!(
                    "# Server\r\nredis_version:{}\r\nredis_mode:{}\r\ntcp_port:{}\r\n\r\n# Clients\r\nconnected_clients:{}\r\n",
                    self.version(),
                    self.mode(),
                    self.shared.port,
                    self.shared.lock().conns.len()
                );
                self.verbatim(out, &text);
            }
        }
    }

    fn version(&self) -> &'static str {
        match self.shared.scenario.mode {
            Mode::Enterprise => ENTERPRISE_VERSION,
            Mode::Refusing => OSS_VERSION,
        }
    }

    fn mode(&self) -> &'static str {
        if self.shared.scenario.is_cluster() {
            "cluster"
        } else {
            "standalone"
        }
    }

    fn credentials_ok(&self, user: &[u8], pass: &[u8]) -> bool {
        match &self.shared.password {
            Some(p) => user == self.shared.user.as_bytes() && pass == p.as_bytes(),
            // No password: the default user is `nopass`, anyone else does not exist.
            None => user == b"default",
        }
    }

    fn set_name(&mut self, name: &[u8]) -> Result<(), &'static str> {
        if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
            return Err("ERR Client names cannot contain spaces, newlines or special characters.");
        }
        self.name = (!name.is_empty()).then(|| name.to_vec());
        Ok(())
    }

    fn null(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(if self.resp3 { b"_\r\n" } else { b"$-1\r\n" });
    }

    /// A verbatim string in RESP3, a bulk string in RESP2, as Redis sends INFO and CLUSTER NODES.
    fn verbatim(&self, out: &mut Vec<u8>, text: &str) {
        if self.resp3 {
            Frame::Verbatim {
                format: b"txt",
                text: text.as_bytes(),
            }
            .encode(out)
        } else {
            bulk(out, text.as_bytes())
        }
    }

    /// `HELLO [protover [AUTH user pass] [SETNAME name]]`, checked in Redis' order.
    fn hello(&mut self, args: &[Vec<u8>], out: &mut Vec<u8>) {
        let mut resp3 = self.resp3;
        if let Some(v) = args.get(1) {
            match parse_int(v) {
                Some(2) => resp3 = false,
                Some(3) => resp3 = true,
                Some(_) => return error(out, "NOPROTO unsupported protocol version"),
                None => {
                    return error(
                        out,
                        "ERR Protocol version is not an integer or out of range",
                    )
                }
            }
        }
        let mut auth = None;
        let mut setname = None;
        let mut i = 2;
        while i < args.len() {
            let opt = String::from_utf8_lossy(&args[i]).to_ascii_uppercase();
            let more = args.len() - i - 1;
            match opt.as_str() {
                "AUTH" if more >= 2 => {
                    auth = Some((&args[i + 1], &args[i + 2]));
                    i += 3;
                }
                "SETNAME" if more >= 1 => {
                    setname = Some(&args[i + 1]);
                    i += 2;
                }
                _ => {
                    return error(
                        out,
                        &format!(
                            "ERR Syntax error in HELLO option '{}'",
                            String::from_utf8_lossy(&args[i])
                        ),
                    )
                }
            }
        }
        if let Some((user, pass)) = auth {
            if !self.credentials_ok(user, pass) {
                return error(out, WRONGPASS);
            }
            self.authed = true;
        }
        if !self.authed {
            return error(
                out,
                "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
                 HELLO AUTH <user> <pass> option can be used to authenticate the client and select \
                 the RESP protocol version at the same time",
            );
        }
        if let Some(name) = setname {
            if let Err(e) = self.set_name(name) {
                return error(out, e);
            }
            self.client_info("name", name);
        }
        if self.opted_in && !resp3 {
            // Push frames do not exist in RESP2: a connection going back to it cannot be told.
            self.set_opted_in(false);
        }
        self.resp3 = resp3;
        let version = self.version();
        let speed = self.shared.speed.to_string();
        let proto = if resp3 { 3 } else { 2 };
        let mut fields = vec![
            (Frame::Blob(b"server"), Frame::Blob(b"redis")),
            (Frame::Blob(b"version"), Frame::Blob(version.as_bytes())),
            (Frame::Blob(b"proto"), Frame::Integer(proto)),
            (Frame::Blob(b"id"), Frame::Integer(self.id as i64)),
            (Frame::Blob(b"mode"), Frame::Blob(self.mode().as_bytes())),
            (Frame::Blob(b"role"), Frame::Blob(b"master")),
            (Frame::Blob(b"modules"), Frame::Array(Vec::new())),
        ];
        // Ours, not Redis': how much faster than real time this simulator runs, so a watch reads
        // its windows right without --sim-speed. Not in refusing mode, which answers byte for
        // byte as Redis OSS does.
        if self.shared.scenario.mode != Mode::Refusing {
            fields.push((
                Frame::Blob(b"maintwatch-sim-speed"),
                Frame::Blob(speed.as_bytes()),
            ));
        }
        as_map(fields, resp3).encode(out);
    }

    fn set_opted_in(&mut self, on: bool) {
        self.opted_in = on;
        let mut st = self.shared.lock();
        if let Some(c) = st.conns.get_mut(&self.id) {
            c.opted_in = on;
        }
        self.shared.sync_opted_in(&st);
    }

    /// `CLIENT MAINT_NOTIFICATIONS ON [moving-endpoint-type T] | OFF` on a server that has it.
    fn maint_notifications(&mut self, args: &[Vec<u8>], batch: &mut Batch) {
        let out = &mut batch.out;
        let mode = String::from_utf8_lossy(&args[2]).to_ascii_uppercase();
        let endpoint_type = endpoint_type_arg(args);
        // What Enterprise answers to malformed options was not captured; these texts are ours.
        let on = match mode.as_str() {
            "ON" => true,
            "OFF" => false,
            _ => return error(out, "ERR syntax error"),
        };
        match &args[3..] {
            [] => {}
            [k, v] if on && k.eq_ignore_ascii_case(b"moving-endpoint-type") => {
                let v = String::from_utf8_lossy(v).to_ascii_lowercase();
                if !ENDPOINT_TYPES.contains(&v.as_str()) {
                    return error(
                        out,
                        &format!(
                            "ERR invalid moving-endpoint-type '{v}', expected one of {}",
                            ENDPOINT_TYPES.join(", ")
                        ),
                    );
                }
            }
            _ => return error(out, "ERR syntax error"),
        }
        if on && !self.resp3 {
            return error(
                out,
                "ERR CLIENT MAINT_NOTIFICATIONS ON needs RESP3 (HELLO 3): push frames do not exist in RESP2",
            );
        }
        self.shared.triggers.send_modify(|t| t.attempts += 1);
        ok(out);
        if on {
            // Opt in and collect what is owed under the same lock as the player's pushes, so a
            // concurrent push is either queued to us or included here, never both or neither.
            let mut st = self.shared.lock();
            let owed: Vec<(Arc<[u8]>, Why)> = self
                .shared
                .catch_up
                .then(|| st.retained.clone().map(|r| (r, Why::CatchUp)))
                .flatten()
                .into_iter()
                .chain(st.open_moving.get(&self.ip).map(|m| {
                    let port = self.shared.port;
                    (m.for_conn(port, endpoint_type.as_deref()), Why::Resent)
                }))
                .collect();
            if let Some(c) = st.conns.get_mut(&self.id) {
                c.opted_in = true;
                c.endpoint_type = endpoint_type.clone();
            }
            self.opted_in = true;
            self.shared.sync_opted_in(&st);
            drop(st);
            // Same write as the +OK: measured arriving in the same read (docs/protocol.md section 1).
            for (bytes, why) in owed {
                out.extend_from_slice(&bytes);
                batch.notes.push((bytes, why));
            }
        } else {
            self.set_opted_in(false);
        }
        batch.narration.push(What::OptIn {
            conn: self.id,
            proxy: self.proxy,
            on,
            accepted: true,
            endpoint_type,
        });
    }

    /// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]`; expiry is accepted and
    /// ignored (no scenario runs long enough for it to matter).
    fn set(&mut self, args: &[Vec<u8>], out: &mut Vec<u8>) {
        let (mut nx, mut xx, mut get, mut expiry) = (false, false, false, false);
        let mut i = 3;
        while i < args.len() {
            let opt = String::from_utf8_lossy(&args[i]).to_ascii_uppercase();
            match opt.as_str() {
                "NX" if !xx => nx = true,
                "XX" if !nx => xx = true,
                "GET" => get = true,
                "KEEPTTL" if !expiry => expiry = true,
                "EX" | "PX" | "EXAT" | "PXAT" if !expiry && i + 1 < args.len() => {
                    match parse_int(&args[i + 1]) {
                        Some(n) if n > 0 => {}
                        Some(_) => return error(out, "ERR invalid expire time in 'set' command"),
                        None => return error(out, NOT_AN_INTEGER),
                    }
                    expiry = true;
                    i += 1;
                }
                _ => return error(out, "ERR syntax error"),
            }
            i += 1;
        }
        if self.moved(&args[1..2], out) {
            return;
        }
        let key = (self.db, args[1].clone());
        let mut st = self.shared.lock();
        let old = st.keys.get(&key).cloned();
        let write = !(nx && old.is_some() || xx && old.is_none());
        if write {
            st.keys.insert(key, args[2].clone());
        }
        drop(st);
        match (get, write) {
            (true, _) => match old {
                Some(v) => bulk(out, &v),
                None => self.null(out),
            },
            (false, true) => ok(out),
            (false, false) => self.null(out),
        }
    }

    /// On a cluster, keys must hash to one slot and that slot must be ours; otherwise answers
    /// `-CROSSSLOT` or `-MOVED slot ip:port` and returns true.
    fn moved(&self, keys: &[Vec<u8>], out: &mut Vec<u8>) -> bool {
        if !self.shared.scenario.is_cluster() || keys.is_empty() {
            return false;
        }
        let slot = key_slot(&keys[0]);
        if keys[1..].iter().any(|k| key_slot(k) != slot) {
            error(out, "CROSSSLOT Keys in request don't hash to the same slot");
            return true;
        }
        match self.shared.lock().topology.owner(slot) {
            Some(owner) if owner == self.ip => false,
            Some(owner) => {
                let to = self.shared.addr(owner);
                error(out, &format!("MOVED {slot} {to}"));
                self.shared.emit(What::Redirected {
                    conn: self.id,
                    proxy: self.proxy,
                    slot,
                    to,
                });
                true
            }
            None => {
                error(out, "CLUSTERDOWN Hash slot not served");
                true
            }
        }
    }

    fn cluster(&self, sub: &str, args: &[Vec<u8>], out: &mut Vec<u8>) {
        if !self.shared.scenario.is_cluster() {
            return error(out, "ERR This instance has cluster support disabled");
        }
        let port = self.shared.port;
        let st = self.shared.lock();
        match (sub, args.len()) {
            ("SLOTS", 2) => out.extend_from_slice(&st.topology.slots_reply(port, self.resp3)),
            ("SHARDS", 2) => out.extend_from_slice(&st.topology.shards_reply(port, self.resp3)),
            ("NODES", 2) => self.verbatim(out, &st.topology.nodes_text(port, self.ip)),
            ("INFO", 2) => self.verbatim(out, &st.topology.info_text()),
            ("MYID", 2) => bulk(out, node_id(self.ip).as_bytes()),
            ("KEYSLOT", 3) => int(out, i64::from(key_slot(&args[2]))),
            ("SLOTS" | "SHARDS" | "NODES" | "INFO" | "MYID" | "KEYSLOT", _) => error(
                out,
                &format!(
                    "ERR wrong number of arguments for 'cluster|{}' command",
                    sub.to_ascii_lowercase()
                ),
            ),
            _ => error(
                out,
                &format!(
                    "ERR unknown subcommand '{}'. Try CLUSTER HELP.",
                    String::from_utf8_lossy(&args[1])
                ),
            ),
        }
    }
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";

/// The families of commands the simulator answers; each has one handler on `Conn`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Hello,
    Auth,
    Client,
    Connection,
    Keyspace,
    Server,
    Cluster,
}

/// The command table: a command's family and its arity in Redis's convention (positive means
/// exactly that many arguments with the name, negative means at least that many).
fn command_table(name: &str) -> Option<(Family, i32)> {
    Some(match name {
        "GET" => (Family::Keyspace, 2),
        "SET" => (Family::Keyspace, -3),
        "DEL" | "EXISTS" => (Family::Keyspace, -2),
        "ECHO" | "SELECT" => (Family::Connection, 2),
        "PING" | "QUIT" => (Family::Connection, -1),
        "AUTH" => (Family::Auth, -2),
        "CLIENT" => (Family::Client, -2),
        "CLUSTER" => (Family::Cluster, -2),
        "HELLO" => (Family::Hello, -1),
        "COMMAND" | "INFO" => (Family::Server, -1),
        "READONLY" | "READWRITE" => (Family::Server, 1),
        _ => return None,
    })
}

fn arity_ok(arity: i32, n: usize) -> bool {
    let n = n as i32;
    !((arity > 0 && n != arity) || n < -arity)
}

/// The second argument upper-cased, or empty when there is none.
fn subcommand(args: &[Vec<u8>]) -> String {
    args.get(1)
        .map(|s| String::from_utf8_lossy(s).to_ascii_uppercase())
        .unwrap_or_default()
}

/// Redis's error for a command it does not know, quoting at most 16 arguments.
fn unknown_command(out: &mut Vec<u8>, args: &[Vec<u8>]) {
    let mut text = format!(
        "ERR unknown command '{}', with args beginning with: ",
        String::from_utf8_lossy(&args[0])
    );
    for a in args[1..].iter().take(16) {
        text.push_str(&format!("'{}' ", String::from_utf8_lossy(a)));
    }
    error(out, &text)
}

/// CLIENT SETINFO accepts only LIB-NAME and LIB-VER, with printable values without spaces.
fn client_setinfo(args: &[Vec<u8>], out: &mut Vec<u8>) {
    let attr = String::from_utf8_lossy(&args[2]).to_ascii_uppercase();
    if attr != "LIB-NAME" && attr != "LIB-VER" {
        let text = format!(
            "ERR Unrecognized option '{}'",
            String::from_utf8_lossy(&args[2])
        );
        return error(out, &text);
    }
    if args[3]
        .iter()
        .any(|&b| b == b' ' || b == b'\n' || !(b'!'..=b'~').contains(&b))
    {
        let text = format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            attr.to_ascii_lowercase()
        );
        return error(out, &text);
    }
    ok(out)
}

fn ok(out: &mut Vec<u8>) {
    out.extend_from_slice(b"+OK\r\n");
}

fn simple(out: &mut Vec<u8>, text: &str) {
    Frame::Simple(text.as_bytes()).encode(out);
}

fn error(out: &mut Vec<u8>, text: &str) {
    // Redis never lets a CR or LF into an error line; neither may an echoed argument.
    let clean: String = text
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    Frame::Error(clean.as_bytes()).encode(out);
}

fn int(out: &mut Vec<u8>, n: i64) {
    Frame::Integer(n).encode(out);
}

fn bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    Frame::Blob(bytes).encode(out);
}

fn parse_int(bytes: &[u8]) -> Option<i64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

fn endpoint_type_arg(args: &[Vec<u8>]) -> Option<String> {
    args.windows(2)
        .find(|w| w[0].eq_ignore_ascii_case(b"moving-endpoint-type"))
        .map(|w| String::from_utf8_lossy(&w[1]).into_owned())
}

/// The command for the narration, with any password replaced.
fn redacted(args: &[Vec<u8>]) -> String {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    let mut words: Vec<String> = args.iter().map(|a| escape(a)).collect();
    match name.as_str() {
        "AUTH" => {
            if let Some(last) = words.last_mut() {
                *last = "<redacted>".into();
            }
        }
        "HELLO" => {
            for i in 2..args.len() {
                if args[i].eq_ignore_ascii_case(b"AUTH") && i + 2 < args.len() {
                    words[i + 2] = "<redacted>".into();
                }
            }
        }
        _ => {}
    }
    shorten(&words.join(" "), 200)
}

fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// A command's arguments and how many bytes of the buffer it took.
type Parsed = (Vec<Vec<u8>>, usize);

/// The whole multibulk command at the front of `buf` (at most [`LOCAL_ARGS_MAX`] arguments,
/// checked by the caller), `None` if incomplete.
fn whole_command(buf: &[u8]) -> Result<Option<Parsed>, String> {
    let scanner = Scanner::new(Limits {
        max_depth: 1,
        ..Limits::default()
    });
    match scanner.scan(buf) {
        Ok(Scan::Incomplete { .. }) => Ok(None),
        Ok(Scan::Frame(Frame::Array(items), n)) => {
            let args = items
                .iter()
                .map(|f| match f {
                    Frame::Blob(b) => Ok(b.to_vec()),
                    other => Err(format!("expected '$', got a {}", other.type_name())),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Some((args, n)))
        }
        Ok(Scan::Frame(other, _)) => Err(format!("expected an array, got a {}", other.type_name())),
        Err(e) => Err(e.to_string()),
    }
}

/// The inline (telnet-style) command at the front of `buf` (`PING\r\n`), `None` if incomplete.
fn next_inline(buf: &[u8]) -> Result<Option<Parsed>, String> {
    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > INLINE_MAX {
            return Err("too big inline request".into());
        }
        return Ok(None);
    };
    let line = buf[..end].strip_suffix(b"\r").unwrap_or(&buf[..end]);
    let args = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    Ok(Some((args, end + 1)))
}

/// How long, and how much, a closed connection is still read for the commands it was sent.
const AFTER_CLOSE: std::time::Duration = std::time::Duration::from_secs(1);
const AFTER_CLOSE_BYTES: usize = 1 << 20;

/// Counts the commands a client sent on a connection the server has half-closed, until the
/// client closes it too (bounded in time and bytes): each whole command, and one cut short.
async fn sent_after_close(mut rd: OwnedReadHalf) -> u32 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_in_both_forms() {
        let (args, n) = whole_command(b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nPING")
            .unwrap()
            .unwrap();
        assert_eq!((args, n), (vec![b"ECHO".to_vec(), b"hi".to_vec()], 22));
        let (args, n) = next_inline(b"ECHO  hello\r\n").unwrap().unwrap();
        assert_eq!((args, n), (vec![b"ECHO".to_vec(), b"hello".to_vec()], 13));
        assert_eq!(whole_command(b"*2\r\n$4\r\nEC").unwrap(), None);
        assert_eq!(next_inline(b"PING").unwrap(), None);
        assert!(whole_command(b"*1\r\n:1\r\n")
            .unwrap_err()
            .contains("expected '$'"));
        assert!(whole_command(b"*x\r\n").is_err());
    }

    #[test]
    fn passwords_never_reach_the_narration() {
        let args = |s: &str| {
            s.split(' ')
                .map(|w| w.as_bytes().to_vec())
                .collect::<Vec<_>>()
        };
        let shown = redacted(&args("HELLO 3 AUTH alice s3cret SETNAME app"));
        assert_eq!(shown, "HELLO 3 AUTH alice <redacted> SETNAME app");
        assert_eq!(redacted(&args("auth s3cret")), "auth <redacted>");
        assert_eq!(redacted(&args("AUTH bob s3cret")), "AUTH bob <redacted>");
    }
}
