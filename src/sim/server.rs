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
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use super::cluster::{as_map, key_slot, node_id};
use super::escape::escape;
use super::scenario::{Hostile, Mode, HUGE_BLOB_SENT};
use super::upstream::{Link, UpMsg};
use super::{ConnEntry, ConnMsg, Shared, What, Why};
use crate::resp::{encode_command, Frame, Limits, Scan, Scanner};

/// The version HELLO reports. Enterprise 8.0.2 is the first with maintenance notifications; the
/// refusing mode imitates Redis OSS 7.4.1, whose refusal is byte-identical to the captured one
/// and which (unlike 7.0) knows CLIENT SETINFO.
const ENTERPRISE_VERSION: &str = "8.0.2";
const OSS_VERSION: &str = "7.4.1";

/// Largest inline (telnet-style) command line, as Redis' `PROTO_INLINE_MAX_SIZE`.
const INLINE_MAX: usize = 64 * 1024;

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
    let (up, up_rx) = match shared.upstream {
        Some(_) => {
            let (tx, rx) = mpsc::channel(super::upstream::READ_AHEAD);
            (
                Some(UpConn {
                    link: None,
                    replies: tx,
                    failed: None,
                    pending: VecDeque::new(),
                    resp3: true,
                }),
                Some(rx),
            )
        }
        None => (None, None),
    };
    let conn = Conn {
        up,
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
    tokio::spawn(conn.run(stream, rx, up_rx));
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

/// Receives from the upstream, or waits forever without one.
async fn recv_some(rx: &mut Option<mpsc::Receiver<UpMsg>>) -> Option<UpMsg> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
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
    /// Commands to relay upstream, as the client wrote them.
    up_out: Vec<u8>,
    commands: u32,
    errors: u32,
}

/// A reply the client is owed, in the order it sent the commands.
enum Pending {
    /// The upstream's next non-push frame.
    Reply,
    /// The upstream's next non-push frame, answering a `HELLO` the simulator sent to keep its
    /// protocol in step with the client's: not for the client.
    Discard,
    /// A reply of the simulator's own, held back until the relayed replies before it are out.
    Local(Vec<u8>),
}

/// A client connection's side of its upstream connection.
struct UpConn {
    /// Opened by the first relayed command.
    link: Option<Link>,
    replies: mpsc::Sender<UpMsg>,
    /// Why the upstream is gone; every relayed command since gets an error reply.
    failed: Option<String>,
    pending: VecDeque<Pending>,
    /// The protocol the upstream connection speaks (its handshake is HELLO 3).
    resp3: bool,
}

/// Commands whose replies are push frames in RESP3 and several arrays in RESP2: no one reply to
/// wait for.
fn is_subscription(name: &str) -> bool {
    matches!(
        name,
        "SUBSCRIBE" | "UNSUBSCRIBE" | "PSUBSCRIBE" | "PUNSUBSCRIBE" | "SSUBSCRIBE" | "SUNSUBSCRIBE"
    )
}

/// With an upstream, what the simulator still answers itself: the handshake, the opt-in, the
/// client's identity, and the cluster topology of a cluster scenario.
fn owned_with_upstream(name: &str, sub: &str, cluster: bool) -> bool {
    match name {
        "HELLO" | "AUTH" | "QUIT" => true,
        "CLIENT" => matches!(sub, "MAINT_NOTIFICATIONS" | "SETINFO"),
        "CLUSTER" | "READONLY" | "READWRITE" => cluster,
        _ => false,
    }
}

fn is_error_reply(frame: &[u8]) -> bool {
    matches!(frame.first(), Some(b'-' | b'!'))
}

struct Conn {
    up: Option<UpConn>,
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
    async fn run(
        mut self,
        stream: TcpStream,
        mut rx: mpsc::UnboundedReceiver<ConnMsg>,
        mut up_rx: Option<mpsc::Receiver<UpMsg>>,
    ) {
        let (mut rd, mut wr) = stream.into_split();
        let mut shutdown = self.shared.shutdown.clone();
        let mut buf: Vec<u8> = Vec::with_capacity(4096);
        // A frame being written one byte at a time, and what waits for it to be complete.
        let mut trickle: Option<Trickle> = None;
        let mut backlog: VecDeque<ConnMsg> = VecDeque::new();
        // A QUIT was read while relayed replies were still owed: nothing more is read.
        let mut quitting = false;
        let by_server = 'run: loop {
            while trickle.is_none() {
                let Some(msg) = backlog.pop_front() else {
                    break;
                };
                if let Some(by_server) = self.deliver(msg, &mut wr, &mut trickle).await {
                    break 'run by_server;
                }
            }
            let next_byte = trickle.as_ref().map(|t| t.next);
            tokio::select! {
                msg = rx.recv() => match msg {
                    Some(ConnMsg::Close) | None => break true,
                    Some(msg) if trickle.is_some() => backlog.push_back(msg),
                    Some(msg) => {
                        if let Some(by_server) = self.deliver(msg, &mut wr, &mut trickle).await {
                            break by_server;
                        }
                    }
                },
                // While a frame trickles out, commands wait unread: no reply may land inside it.
                read = rd.read_buf(&mut buf), if trickle.is_none() && !quitting => match read {
                    Ok(0) | Err(_) => break false,
                    Ok(n) if self.shared.scenario.silent => {
                        buf.clear();
                        self.shared.emit(What::Ignored { conn: self.id, proxy: self.proxy, bytes: n });
                    }
                    Ok(_) => {
                        let mut batch = self.process(&mut buf);
                        self.send_upstream(std::mem::take(&mut batch.up_out));
                        let writing = SystemTime::now();
                        if !batch.out.is_empty() && wr.write_all(&batch.out).await.is_err() {
                            break false;
                        }
                        let at = SystemTime::now();
                        self.traffic(batch.commands, batch.errors, 0);
                        for what in batch.narration {
                            self.shared.emit_at(at, what);
                        }
                        for (bytes, why) in batch.notes {
                            self.sent(writing, at, bytes.to_vec(), why);
                        }
                        if batch.close && self.owed() == 0 {
                            break true;
                        }
                        // QUIT behind relayed commands: their replies first, then the close.
                        quitting |= batch.close;
                    }
                },
                () = sleep_until_some(next_byte) => {
                    let Some(t) = trickle.as_mut() else { continue };
                    let writing = SystemTime::now();
                    if wr.write_all(&t.bytes[t.pos..t.pos + 1]).await.is_err() {
                        break false;
                    }
                    t.pos += 1;
                    t.next += self.shared.second();
                    if t.pos == t.bytes.len() {
                        let t = trickle.take().expect("trickling");
                        let why = Why::Step { line: t.line };
                        self.sent(writing, SystemTime::now(), t.bytes, why);
                    }
                },
                msg = recv_some(&mut up_rx), if trickle.is_none() => {
                    let (out, errors) = self.relay(msg);
                    if !out.is_empty() && wr.write_all(&out).await.is_err() {
                        break false;
                    }
                    self.traffic(0, errors, 0);
                    if quitting && self.owed() == 0 {
                        break true;
                    }
                },
                _ = wait_until(&mut shutdown, true) => break true,
            }
        };
        // Commands that never got their reply: relayed ones still waiting, and a command cut
        // in the middle of being written.
        let waiting = self.up.as_ref().map_or(0, |u| {
            u.pending
                .iter()
                .filter(|p| matches!(p, Pending::Reply))
                .count()
        });
        self.traffic(0, 0, (waiting + usize::from(!buf.is_empty())) as u32);
        // Half-close first so the client reads an orderly end of stream, then drop the socket.
        let _ = wr.shutdown().await;
        drop(wr);
        drop(rd);
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
    }

    /// Writes a notification or carries out a hostile step. `Some(by_server)`: the connection
    /// ends (the client went away, or the step closes it).
    async fn deliver(
        &self,
        msg: ConnMsg,
        wr: &mut OwnedWriteHalf,
        trickle: &mut Option<Trickle>,
    ) -> Option<bool> {
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
        self.up.as_ref().map_or(0, |u| u.pending.len())
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
        self.shared.emit(What::ClientInfo {
            conn: self.id,
            proxy: self.proxy,
            field,
            value: escape(value),
        });
    }

    fn send_upstream(&mut self, bytes: Vec<u8>) {
        let Some(up) = self.up.as_mut() else { return };
        if bytes.is_empty() {
            return;
        }
        if let Some(link) = &up.link {
            // A writer that ended has failed or is failing; its reader reports why.
            let _ = link.send(bytes);
        }
    }

    /// What to write to the client for what the upstream sent (or for its failure), and how
    /// many error replies that is. Pushes go out as they come; replies in command order, with
    /// the simulator's own replies that waited behind them.
    fn relay(&mut self, msg: Option<UpMsg>) -> (Vec<u8>, u32) {
        let Some(up) = self.up.as_mut() else {
            return (Vec::new(), 0);
        };
        let mut out = Vec::new();
        let mut errors = 0;
        match msg {
            Some(UpMsg::Frames(f)) => {
                out.reserve(f.bytes.len());
                let mut start = 0;
                for (end, push) in f.ends {
                    let frame = &f.bytes[start..end];
                    start = end;
                    if push {
                        out.extend_from_slice(frame);
                        continue;
                    }
                    // Unsolicited (RESP2 pub/sub messages) relays as it comes, like a reply.
                    if !matches!(up.pending.pop_front(), Some(Pending::Discard)) {
                        errors += u32::from(is_error_reply(frame));
                        out.extend_from_slice(frame);
                    }
                    while let Some(Pending::Local(_)) = up.pending.front() {
                        if let Some(Pending::Local(b)) = up.pending.pop_front() {
                            errors += u32::from(is_error_reply(&b));
                            out.extend_from_slice(&b);
                        }
                    }
                }
            }
            failed => {
                let why = match failed {
                    Some(UpMsg::Failed(w)) => w,
                    _ => "the upstream connection ended".to_string(),
                };
                up.link = None;
                for p in up.pending.drain(..) {
                    match p {
                        Pending::Reply => {
                            error(&mut out, &format!("ERR maintwatch simulate: {why}"));
                            errors += 1;
                        }
                        Pending::Discard => {}
                        Pending::Local(b) => out.extend_from_slice(&b),
                    }
                }
                up.failed = Some(why);
            }
        }
        (out, errors)
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

    /// Runs every complete command in `buf` (pipelining), removing them from it.
    fn process(&mut self, buf: &mut Vec<u8>) -> Batch {
        let mut batch = Batch::default();
        let mut used = 0;
        while used < buf.len() && !batch.close {
            match next_command(&buf[used..]) {
                Ok(None) => break,
                Ok(Some((args, n))) => {
                    if !args.is_empty() {
                        batch.commands += 1;
                        self.command(&args, &buf[used..used + n], &mut batch);
                    }
                    used += n;
                }
                Err(why) => {
                    // As Redis: report the protocol error, then close the connection.
                    error(&mut batch.out, &format!("ERR Protocol error: {why}"));
                    batch.close = true;
                    used = buf.len();
                }
            }
        }
        buf.drain(..used);
        batch
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
            if !owned_with_upstream(&name, &sub, self.shared.scenario.is_cluster()) {
                if !self.authed {
                    error(&mut batch.out, "NOAUTH Authentication required.");
                } else {
                    if name == "CLIENT" && sub == "SETNAME" && args.len() == 3 {
                        self.client_info("name", &args[2]);
                    }
                    self.forward(&name, raw, batch);
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

    /// Relays one command as the client wrote it, keeping the upstream's protocol in step with
    /// the client's; after an upstream failure, answers with the failure instead.
    fn forward(&mut self, name: &str, raw: &[u8], batch: &mut Batch) {
        let resp3 = self.resp3;
        let shared = self.shared.clone();
        let Some(up) = self.up.as_mut() else { return };
        if let Some(why) = &up.failed {
            return error(&mut batch.out, &format!("ERR maintwatch simulate: {why}"));
        }
        if up.link.is_none() {
            let target = shared.upstream.clone().expect("an upstream is configured");
            up.link = Some(Link::open(target, up.replies.clone()));
        }
        if up.resp3 != resp3 {
            let hello = encode_command(&[&b"HELLO"[..], if resp3 { b"3" } else { b"2" }]);
            batch.up_out.extend_from_slice(&hello);
            up.pending.push_back(Pending::Discard);
            up.resp3 = resp3;
        }
        batch.up_out.extend_from_slice(raw);
        if !is_subscription(name) {
            up.pending.push_back(Pending::Reply);
        }
    }

    /// Counts an error reply of the simulator's own, and holds it back when relayed replies are
    /// still owed before it.
    fn hold_local(&mut self, start: usize, batch: &mut Batch) {
        if batch.out.len() == start {
            return;
        }
        let up = self.up.as_mut().filter(|u| !u.pending.is_empty());
        match up {
            Some(up) => {
                let reply = batch.out.split_off(start);
                up.pending.push_back(Pending::Local(reply));
            }
            None => batch.errors += u32::from(is_error_reply(&batch.out[start..])),
        }
    }

    fn dispatch(&mut self, name: &str, args: &[Vec<u8>], batch: &mut Batch) {
        let refusing = self.shared.scenario.mode == Mode::Refusing;
        let out = &mut batch.out;
        // 1. Is it a command at all, with a plausible argument count? Redis answers these before
        //    it looks at authentication.
        let arity: i32 = match name {
            "GET" | "ECHO" | "SELECT" => 2,
            "SET" => -3,
            "DEL" | "EXISTS" | "AUTH" | "CLIENT" | "CLUSTER" => -2,
            "PING" | "QUIT" | "HELLO" | "COMMAND" | "INFO" => -1,
            "READONLY" | "READWRITE" => 1,
            _ => {
                let mut text = format!(
                    "ERR unknown command '{}', with args beginning with: ",
                    String::from_utf8_lossy(&args[0])
                );
                for a in args[1..].iter().take(16) {
                    text.push_str(&format!("'{}' ", String::from_utf8_lossy(a)));
                }
                return error(out, &text);
            }
        };
        let n = args.len() as i32;
        if (arity > 0 && n != arity) || n < -arity {
            return error(
                out,
                &format!(
                    "ERR wrong number of arguments for '{}' command",
                    name.to_ascii_lowercase()
                ),
            );
        }
        let sub = args
            .get(1)
            .map(|s| String::from_utf8_lossy(s).to_ascii_uppercase())
            .unwrap_or_default();
        if name == "CLIENT" {
            let sub_arity: i32 = match sub.as_str() {
                "ID" | "GETNAME" => 2,
                "SETNAME" => 3,
                "SETINFO" => 4,
                "MAINT_NOTIFICATIONS" if !refusing => -3,
                _ => {
                    // Echoed in the case the client sent it (docs/protocol.md section 7).
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
                    return error(
                        out,
                        &format!(
                            "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                            String::from_utf8_lossy(&args[1])
                        ),
                    );
                }
            };
            if (sub_arity > 0 && n != sub_arity) || n < -sub_arity {
                return error(
                    out,
                    &format!(
                        "ERR wrong number of arguments for 'client|{}' command",
                        sub.to_ascii_lowercase()
                    ),
                );
            }
        }
        // 2. Authentication.
        if !self.authed && !matches!(name, "HELLO" | "AUTH" | "QUIT") {
            return error(out, "NOAUTH Authentication required.");
        }
        // 3. The command.
        match name {
            "HELLO" => self.hello(args, out),
            "AUTH" => {
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
            "CLIENT" => match sub.as_str() {
                "ID" => int(out, self.id as i64),
                "GETNAME" => match &self.name {
                    Some(n) => bulk(out, n),
                    None => self.null(out),
                },
                "SETNAME" => {
                    if let Err(e) = self.set_name(&args[2]) {
                        return error(out, e);
                    }
                    ok(out);
                }
                "SETINFO" => {
                    let attr = String::from_utf8_lossy(&args[2]).to_ascii_uppercase();
                    if attr != "LIB-NAME" && attr != "LIB-VER" {
                        return error(
                            out,
                            &format!(
                                "ERR Unrecognized option '{}'",
                                String::from_utf8_lossy(&args[2])
                            ),
                        );
                    }
                    if args[3]
                        .iter()
                        .any(|&b| b == b' ' || b == b'\n' || !(b'!'..=b'~').contains(&b))
                    {
                        return error(
                            out,
                            &format!(
                                "ERR {} cannot contain spaces, newlines or special characters.",
                                attr.to_ascii_lowercase()
                            ),
                        );
                    }
                    ok(out);
                }
                _ => self.maint_notifications(args, batch),
            },
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
            "SELECT" => {
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
            "GET" => {
                if self.moved(&args[1..2], out) {
                    return;
                }
                let value = self
                    .shared
                    .lock()
                    .keys
                    .get(&(self.db, args[1].clone()))
                    .cloned();
                match value {
                    Some(v) => bulk(out, &v),
                    None => self.null(out),
                }
            }
            "SET" => self.set(args, out),
            "DEL" | "EXISTS" => {
                if self.moved(&args[1..], out) {
                    return;
                }
                let mut st = self.shared.lock();
                let n = args[1..]
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
            "COMMAND" => {
                if sub == "COUNT" {
                    int(out, 0)
                } else {
                    out.extend_from_slice(b"*0\r\n")
                }
            }
            "READONLY" | "READWRITE" => {
                if self.shared.scenario.is_cluster() {
                    ok(out)
                } else {
                    error(out, "ERR This instance has cluster support disabled")
                }
            }
            "INFO" => {
                let text = format!(
                    "# Server\r\nredis_version:{}\r\nredis_mode:{}\r\ntcp_port:{}\r\n\r\n# Clients\r\nconnected_clients:{}\r\n",
                    self.version(),
                    self.mode(),
                    self.shared.port,
                    self.shared.lock().conns.len()
                );
                self.verbatim(out, &text);
            }
            "CLUSTER" => self.cluster(&sub, args, out),
            _ => unreachable!("every command with an arity is handled"),
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
                .chain(
                    st.open_moving
                        .get(&self.ip)
                        .map(|m| (m.clone(), Why::Resent)),
                )
                .collect();
            if let Some(c) = st.conns.get_mut(&self.id) {
                c.opted_in = true;
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
                error(out, &format!("MOVED {slot} {}", self.shared.addr(owner)));
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

/// The next command in `buf`, `None` if incomplete. Both forms Redis reads: a RESP array of bulk
/// strings, and an inline line (`PING\r\n`).
fn next_command(buf: &[u8]) -> Result<Option<Parsed>, String> {
    if buf[0] == b'*' {
        let scanner = Scanner::new(Limits {
            max_depth: 1,
            ..Limits::default()
        });
        return match scanner.scan(buf) {
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
            // `*-1` scans as a null: Redis skips an empty command.
            Ok(Scan::Frame(_, n)) => Ok(Some((Vec::new(), n))),
            Err(e) => Err(e.to_string()),
        };
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_in_both_forms() {
        let (args, n) = next_command(b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nPING")
            .unwrap()
            .unwrap();
        assert_eq!((args, n), (vec![b"ECHO".to_vec(), b"hi".to_vec()], 22));
        let (args, n) = next_command(b"ECHO  hello\r\n").unwrap().unwrap();
        assert_eq!((args, n), (vec![b"ECHO".to_vec(), b"hello".to_vec()], 13));
        assert_eq!(next_command(b"*2\r\n$4\r\nEC").unwrap(), None);
        assert_eq!(next_command(b"PING").unwrap(), None);
        assert!(next_command(b"*1\r\n:1\r\n")
            .unwrap_err()
            .contains("expected '$'"));
        assert!(next_command(b"*x\r\n").is_err());
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
