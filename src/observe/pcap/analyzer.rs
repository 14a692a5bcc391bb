//! The capture analyzer: TCP streams keyed by their two ends, each one told apart (RESP
//! commands, pushes, TLS) and handed to its application connection. Kept apart from the
//! folder's root, which is its map.

use super::app::{App, Event};
use super::capture_lines::{Line, PcapLine};
use super::reassembly::{Direction, GapWhy, Out, Outs};
use crate::observe::pcap::{dns_answers, observations, packet, read};
use crate::observe::record::{wall, ClosedBy, OptInOutcome, WatchLine, SCHEMA_VERSION};
use crate::observe::timeline::{event, CloseCause, Observation, Timeline, What};
use crate::protocol::notification::{Classified, Kind};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant, SystemTime};

/// A multiply-rotate hasher for the per-packet stream lookups, where SipHash was a quarter of the
/// time on a packet-heavy capture. Its seed is random per run, so a capture crafted to collide
/// would have to guess it; the worst it could do is slow one read down.
#[derive(Clone)]
pub struct FastHash(u64);

impl FastHash {
    pub(super) fn new() -> FastHash {
        FastHash(rand::random::<u64>() | 1)
    }
}

impl std::hash::BuildHasher for FastHash {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher(self.0)
    }
}

pub struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u16(&mut self, n: u16) {
        self.write_u64(u64::from(n));
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        // Mix the high bits down: hashbrown takes its group tag from the top bits.
        let x = self.0;
        x ^ (x >> 29) ^ (x >> 47)
    }
}

/// A stream's two endpoints, the lower first: what the stream table is keyed by, ordered as
/// the pair of addresses is. Hashed as whole words (two for IPv4) rather than field by field:
/// the derived hash of two `SocketAddr`s took a dozen hasher rounds, once per packet. IPv6
/// addresses are hashed whole, not folded, so that colliding keys still need the run's seed.
#[derive(Debug, Clone, Copy, Eq, PartialOrd, Ord)]
pub(super) struct Key(SocketAddr, SocketAddr);

/// The derived comparison, with the IPv4 pair (every packet of most captures) compared as the
/// words it is hashed as.
impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        match (&self.0, &self.1, &other.0, &other.1) {
            (SocketAddr::V4(a), SocketAddr::V4(b), SocketAddr::V4(c), SocketAddr::V4(d)) => {
                (a.ip().to_bits(), b.ip().to_bits(), a.port(), b.port())
                    == (c.ip().to_bits(), d.ip().to_bits(), c.port(), d.port())
            }
            _ => self.0 == other.0 && self.1 == other.1,
        }
    }
}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let ports = u64::from(self.0.port()) << 16 | u64::from(self.1.port());
        match (&self.0, &self.1) {
            (SocketAddr::V4(a), SocketAddr::V4(b)) => {
                h.write_u64(u64::from(a.ip().to_bits()) << 32 | u64::from(b.ip().to_bits()));
            }
            (a, b) => {
                for ip in [a.ip(), b.ip()] {
                    let bits = match ip {
                        IpAddr::V4(v4) => u128::from(v4.to_bits()),
                        IpAddr::V6(v6) => v6.to_bits(),
                    };
                    h.write_u64(bits as u64);
                    h.write_u64((bits >> 64) as u64);
                }
            }
        }
        h.write_u64(ports);
    }
}

/// What a TLS stream is reported as.
pub const TLS_TEXT: &str =
    "encrypted: run maintwatch watch beside the application, or capture before TLS termination";

/// Which streams to read.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Server ports; empty: pick streams whose client starts with a RESP command.
    pub ports: Vec<u16>,
    /// Scenario seconds per captured second: 1, or the simulator's `--speed` when the capture
    /// is of a sped-up simulator (offsets after a MOVING are then in scenario seconds).
    pub speed: f64,
    /// Collect the judge's observations (`--grade`).
    pub grade: bool,
    /// UDP source ports of DNS answers (53; the simulator's DNS port for a capture of it).
    pub dns_ports: Vec<u16>,
}

/// Counters for the last line.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub packets: u64,
    pub tcp_streams: u64,
    pub resp_conns: u64,
    pub tls_streams: u64,
    pub ignored_streams: u64,
    pub bad_packets: u64,
    pub snapped_packets: u64,
    pub gaps: u64,
    /// Streams forgotten before anything said what they were (see [`MAX_UNDECIDED`]).
    pub pruned_streams: u64,
    /// Steps taken in loops whose length depends on how much state the read holds (streams
    /// visited, candidates compared, passwords compared), plus one per packet. Not a clock: tests
    /// assert it grows in proportion to the file, whatever the number of open streams.
    pub work: u64,
}

/// Streams that have not said what they are (no client command yet, or ignored by port) kept
/// at once. A flood of SYNs or port scans could otherwise fill memory; past the cap the oldest
/// such stream is forgotten and counted. If it later carries RESP it is picked up again, as a
/// connection captured mid-way. A stream is about 440 bytes in the table, and the table may
/// reach four times this many slots (hash tables grow past removed entries), so the cap is what
/// keeps a SYN flood near 100 MiB.
pub const MAX_UNDECIDED: usize = 1 << 15;

/// Packets between sweeps for finished streams, at the least.
pub(super) const PRUNE_EVERY: u64 = 1 << 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kindof {
    Undecided,
    Resp(u32),
    Tls,
    Ignored,
}

/// One TCP stream, named by its two endpoints in a fixed order.
pub(super) struct Stream {
    pub(super) ends: [SocketAddr; 2],
    pub(super) dirs: [Direction; 2],
    /// Index into `ends` of the client, once known.
    pub(super) client: Option<usize>,
    pub(super) syn: bool,
    pub(super) started: SystemTime,
    pub(super) kind: Kindof,
    /// The first FIN or RST (index of the sender, rst), and when.
    pub(super) closed: Option<(usize, bool, SystemTime)>,
    /// A FIN seen but not yet reached in the stream (data before it still missing).
    pub(super) fin_seen: [Option<SystemTime>; 2],
    /// When the stream ended; nothing more is read from it.
    pub(super) done: Option<SystemTime>,
    /// Which stream of this 4-tuple it is: tells a queued undecided stream from its successor.
    pub(super) serial: u64,
}

impl Stream {
    /// Not yet RESP or TLS and still open: what [`MAX_UNDECIDED`] bounds.
    pub(super) fn undecided(&self) -> bool {
        matches!(self.kind, Kindof::Undecided | Kindof::Ignored) && self.done.is_none()
    }
}

/// The state of a whole capture read.
pub struct Analyzer {
    pub(super) settings: Settings,
    pub(super) base: Instant,
    pub(super) first: Option<SystemTime>,
    pub(super) last: Option<SystemTime>,
    pub(super) timeline: Timeline,
    pub(super) streams: HashMap<Key, Stream, FastHash>,
    pub(super) apps: HashMap<u32, App, FastHash>,
    /// Connections that got a MOVING and have no successor yet, by client host, oldest MOVING
    /// first: a new connection finds its predecessor without looking at every open one.
    pub(super) awaiting: HashMap<IpAddr, BTreeSet<(SystemTime, u32)>, FastHash>,
    /// Undecided streams in the order they were opened (some entries stale), and how many of
    /// them are still undecided.
    pub(super) undecided: VecDeque<(Key, u64)>,
    pub(super) undecided_open: usize,
    pub(super) next_serial: u64,
    /// Packet count at the last sweep for finished streams.
    pub(super) pruned_at: u64,
    pub(super) next_id: u32,
    pub stats: Stats,
    pub(super) out: Vec<Line>,
    pub(super) endpoint: String,
    /// The judge's observations, with `--grade`.
    pub(super) grade: Option<observations::Recorder>,
    /// The DNS answers read, as the watch's poller reads its own: per name and address family,
    /// what changed, so that plain `pcap` shows DNS as `--grade` reads it.
    pub(super) dns: std::collections::BTreeMap<(String, bool), crate::network::dns::ChangeTracker>,
}

pub(super) fn secs_f(s: f64) -> f64 {
    (s * 1e6).round() / 1e6
}

pub(super) fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e6
}

pub(super) fn since(from: SystemTime, to: SystemTime) -> f64 {
    secs(to.duration_since(from).unwrap_or_default())
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            ports: Vec::new(),
            speed: 1.0,
            grade: false,
            dns_ports: vec![53],
        }
    }
}

/// A RESP command's first bytes: `*<digits>\r\n$`, judged on what is there.
pub(super) fn looks_like_command(data: &[u8]) -> bool {
    let Some(rest) = data.strip_prefix(b"*") else {
        return false;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 10 {
        return false;
    }
    let tail = &rest[digits..];
    let want = b"\r\n$";
    !tail.is_empty() && want.starts_with(&tail[..tail.len().min(3)])
}

/// A RESP3 push's first bytes, `><digits>\r\n`: only a server sends one, so on a connection
/// captured mid-way it tells the server from the client before the client has said anything.
pub(super) fn looks_like_push(data: &[u8]) -> bool {
    let Some(rest) = data.strip_prefix(b">") else {
        return false;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    (1..=10).contains(&digits) && rest[digits..].starts_with(b"\r\n")
}

pub(super) fn looks_like_tls(data: &[u8]) -> bool {
    data.len() >= 2 && data[0] == 0x16 && data[1] == 0x03
}

/// A stream seen for the first time: undecided (or ignored by port), queued as such.
pub(super) fn new_stream(
    key: Key,
    ts: SystemTime,
    ports: &[u16],
    stats: &mut Stats,
    queue: &mut VecDeque<(Key, u64)>,
    open: &mut usize,
    next_serial: &mut u64,
) -> Stream {
    stats.tcp_streams += 1;
    let ignored =
        !ports.is_empty() && !ports.contains(&key.0.port()) && !ports.contains(&key.1.port());
    let serial = *next_serial;
    *next_serial += 1;
    queue.push_back((key, serial));
    *open += 1;
    Stream {
        ends: [key.0, key.1],
        dirs: Default::default(),
        client: None,
        syn: false,
        started: ts,
        kind: if ignored {
            Kindof::Ignored
        } else {
            Kindof::Undecided
        },
        closed: None,
        fin_seen: [None, None],
        done: None,
        serial,
    }
}

impl Analyzer {
    pub fn new(settings: Settings, endpoint: String) -> Analyzer {
        let base = Instant::now();
        let grade = settings
            .grade
            .then(|| observations::Recorder::new(endpoint.clone()));
        let mut timeline = Timeline::new(base);
        // Checked with the flags; a speed set otherwise that no clock runs at is read as 1.
        timeline.set_clock(
            crate::observe::timeline::ScenarioClock::new(settings.speed).unwrap_or_default(),
        );
        Analyzer {
            settings,
            base,
            first: None,
            last: None,
            timeline,
            streams: HashMap::with_hasher(FastHash::new()),
            apps: HashMap::with_hasher(FastHash::new()),
            awaiting: HashMap::with_hasher(FastHash::new()),
            undecided: VecDeque::new(),
            undecided_open: 0,
            next_serial: 0,
            pruned_at: 0,
            next_id: 1,
            stats: Stats::default(),
            out: Vec::new(),
            grade,
            endpoint,
            dns: Default::default(),
        }
    }

    /// Whether lines are waiting (most packets make none: no need to take an empty list).
    pub fn has_lines(&self) -> bool {
        !self.out.is_empty()
    }

    /// Lines produced since the last call.
    pub fn take_lines(&mut self) -> Vec<Line> {
        std::mem::take(&mut self.out)
    }

    pub(super) fn instant(&self, ts: SystemTime) -> Instant {
        let first = self.first.unwrap_or(ts);
        self.base + ts.duration_since(first).unwrap_or_default()
    }

    pub(super) fn t(&self, ts: SystemTime) -> f64 {
        since(self.first.unwrap_or(ts), ts)
    }

    /// The grade's clock: capture seconds scaled to scenario seconds.
    pub(super) fn gt(&self, ts: SystemTime) -> f64 {
        secs_f(self.t(ts) * self.settings.speed)
    }

    /// DNS answers the grade did not keep (past its bound).
    pub fn dns_dropped(&self) -> u64 {
        self.grade.as_ref().map_or(0, |g| g.dns_dropped)
    }

    /// The judge's observations of the capture (`--grade`), once it has been read.
    pub fn observations(&mut self) -> Option<crate::observe::evidence::Observations> {
        self.grade.take().map(observations::Recorder::finish)
    }

    pub(super) fn observe(&mut self, ts: SystemTime, conn: u32, what: What) -> Vec<WatchLine> {
        let obs = Observation {
            at: self.instant(ts),
            wall: ts,
            conn,
            what,
        };
        self.timeline.observe(obs).lines
    }

    pub(super) fn emit_watch(&mut self, lines: Vec<WatchLine>) {
        self.out.extend(lines.into_iter().map(Line::Watch));
    }

    pub(super) fn emit(&mut self, line: PcapLine) {
        self.out.push(Line::Pcap(line));
    }

    /// One captured packet.
    pub fn packet(&mut self, p: &read::Packet<'_>) {
        self.stats.packets += 1;
        if self.first.is_none() {
            self.first = Some(p.ts);
            let start = self.timeline.start_line(p.ts, &self.endpoint);
            self.emit_watch(vec![start]);
        }
        self.last = Some(self.last.map_or(p.ts, |l| l.max(p.ts)));
        if (p.data.len() as u64) < u64::from(p.orig_len) {
            self.stats.snapped_packets += 1;
        }
        self.stats.work += 1;
        // A sweep visits every stream: spaced by at least as many packets as there are streams,
        // its cost per packet stays constant however many are open.
        let since_sweep = self.stats.packets - self.pruned_at;
        if since_sweep >= PRUNE_EVERY.max(self.streams.len() as u64) {
            self.pruned_at = self.stats.packets;
            self.prune(p.ts);
        }
        match packet::segment(p.linktype, p.data) {
            Ok(seg) => self.segment(&seg, p.ts),
            Err(packet::Skip::Bad) => self.stats.bad_packets += 1,
            Err(packet::Skip::NotTcp) => {
                let t = self.gt(p.ts);
                let udp = dns_answers::read(p.linktype, p.data, &self.settings.dns_ports);
                if let dns_answers::Udp::Answer(a) = &udp {
                    self.dns_answer(a, p.ts);
                }
                if let Some(g) = &mut self.grade {
                    match udp {
                        dns_answers::Udp::Answer(a) => g.dns(a, t),
                        dns_answers::Udp::Elsewhere(port) => g.dns_elsewhere(port),
                        dns_answers::Udp::Nothing => {}
                    }
                }
            }
        }
    }

    pub(super) fn segment(&mut self, seg: &packet::Segment<'_>, ts: SystemTime) {
        let key = if seg.src <= seg.dst {
            Key(seg.src, seg.dst)
        } else {
            Key(seg.dst, seg.src)
        };
        let fresh_syn = seg.syn && seg.ack.is_none();
        let reuse = fresh_syn
            && self
                .streams
                .get(&key)
                .is_some_and(|s| s.done.is_some() || s.dirs.iter().any(|d| d.delivered() > 0));
        if reuse {
            self.finish_stream(key, ts);
            self.streams.remove(&key);
        }
        if self.undecided_open >= MAX_UNDECIDED && !self.streams.contains_key(&key) {
            self.bound_undecided(MAX_UNDECIDED - 1);
        }
        // One lookup per packet: the stream is made in place when it is new.
        let (ports, stats) = (&self.settings.ports, &mut self.stats);
        let (queue, open, serial) = (
            &mut self.undecided,
            &mut self.undecided_open,
            &mut self.next_serial,
        );
        // Looked up before it is entered: `entry` copies the key in and reserves room for an
        // insertion on every call, a packet's worth of work for the one packet that makes it.
        let stream = match self.streams.get_mut(&key) {
            Some(stream) => stream,
            None => self
                .streams
                .entry(key)
                .or_insert_with(|| new_stream(key, ts, ports, stats, queue, open, serial)),
        };
        if stream.kind == Kindof::Ignored || stream.kind == Kindof::Tls || stream.done.is_some() {
            return;
        }
        let from = usize::from(stream.ends[1] == seg.src);
        if seg.syn {
            stream.dirs[from].syn(seg.seq);
            if seg.ack.is_none() {
                stream.client = Some(from);
                stream.syn = true;
                stream.started = ts;
            } else if stream.client.is_none() {
                stream.client = Some(1 - from);
            }
        }
        if seg.rst {
            if stream.closed.is_none() {
                stream.closed = Some((from, true, ts));
                self.closed(key, from, true, ts);
            }
            self.finish_stream(key, ts);
            return;
        }
        // The sequence number a SYN carries is not a data byte.
        let seq = if seg.syn {
            seg.seq.wrapping_add(1)
        } else {
            seg.seq
        };
        let outs = stream.dirs[from].take(seq, seg.payload, seg.fin);
        if seg.fin && stream.fin_seen[from].is_none() {
            stream.fin_seen[from] = Some(ts);
        }
        // Only this function sets `fin_seen`, so it can be read once here instead of looking the
        // stream up again after the data went through.
        let fin_pending = stream.fin_seen[from].is_some();
        let (kind, client) = (stream.kind, stream.client);
        match outs {
            Outs::Nothing => {}
            Outs::InOrder(_, bytes) => self.data(key, from, bytes, ts, kind, client),
            Outs::Owned(outs) => {
                for out in outs {
                    match out {
                        Out::Data(_, bytes) => self.data_looked_up(key, from, &bytes, ts),
                        Out::Gap { offset, len, why } => self.gap(key, from, offset, len, why, ts),
                    }
                }
            }
        }
        if seg.fin || fin_pending {
            self.check_fin(key, from);
        }
    }

    /// Forgets the oldest undecided streams until at most `keep` are left, and drops queue
    /// entries of streams that have since been decided once they outnumber the live ones.
    pub(super) fn bound_undecided(&mut self, keep: usize) {
        while self.undecided_open > keep {
            let Some((key, serial)) = self.undecided.pop_front() else {
                break;
            };
            self.stats.work += 1;
            if self
                .streams
                .get(&key)
                .is_some_and(|s| s.serial == serial && s.undecided())
            {
                self.streams.remove(&key);
                self.undecided_open -= 1;
                self.stats.pruned_streams += 1;
            }
        }
        if self.undecided.len() > 2 * MAX_UNDECIDED.max(self.undecided_open) {
            let streams = &self.streams;
            self.stats.work += self.undecided.len() as u64;
            self.undecided.retain(|(key, serial)| {
                streams
                    .get(key)
                    .is_some_and(|s| s.serial == *serial && s.undecided())
            });
        }
    }

    /// A stream leaves the undecided ones (decided, or ended).
    pub(super) fn left_undecided(&mut self) {
        self.undecided_open = self.undecided_open.saturating_sub(1);
    }

    /// A FIN counts once every byte before it was read (or the direction gave up).
    pub(super) fn check_fin(&mut self, key: Key, from: usize) {
        let Some(stream) = self.streams.get_mut(&key) else {
            return;
        };
        let Some(fin_ts) = stream.fin_seen[from] else {
            return;
        };
        if !stream.dirs[from].finished() {
            return;
        }
        if stream.closed.is_none() {
            stream.closed = Some((from, false, fin_ts));
            self.closed(key, from, false, fin_ts);
        }
        let stream = &self.streams[&key];
        if stream.dirs.iter().all(Direction::finished) {
            self.finish_stream(key, fin_ts);
        }
    }

    /// Decides what an undecided stream is from its first bytes.
    pub(super) fn decide(&mut self, key: Key, from: usize, data: &[u8], ts: SystemTime) {
        let by_port = !self.settings.ports.is_empty();
        let stream = self.streams.get_mut(&key).expect("stream");
        if stream.client.is_none() {
            let port_side = (0..2).find(|&i| self.settings.ports.contains(&stream.ends[i].port()));
            stream.client = match port_side {
                Some(server) => Some(1 - server),
                None if looks_like_command(data) || looks_like_tls(data) => Some(from),
                None if looks_like_push(data) => Some(1 - from),
                None => None,
            };
        }
        let Some(client) = stream.client else {
            // Neither side is known yet: wait for a client's first bytes.
            return;
        };
        let (c, s) = (stream.ends[client], stream.ends[1 - client]);
        if from == client && looks_like_tls(data) {
            stream.kind = Kindof::Tls;
            self.stats.tls_streams += 1;
            self.left_undecided();
            let (t, at) = (self.t(ts), wall(ts));
            self.emit(PcapLine::PcapTls {
                v: SCHEMA_VERSION,
                t,
                at,
                client: c.to_string(),
                server: s.to_string(),
                text: TLS_TEXT.into(),
            });
            return;
        }
        let command = from == client && looks_like_command(data);
        let push = from != client && looks_like_push(data);
        if !(by_port || command || push) {
            stream.kind = Kindof::Ignored;
            self.stats.ignored_streams += 1;
            return;
        }
        let id = self.next_id;
        self.next_id += 1;
        stream.kind = Kindof::Resp(id);
        self.stats.resp_conns += 1;
        let (syn, started) = (stream.syn, stream.started);
        self.left_undecided();
        self.start_app(id, c, s, syn, started, by_port);
    }

    pub(super) fn start_app(
        &mut self,
        id: u32,
        client: SocketAddr,
        server: SocketAddr,
        syn: bool,
        started: SystemTime,
        by_port: bool,
    ) {
        let lines = self.observe(
            started,
            id,
            What::Connected(event::Connected {
                addr: server,
                tls: false,
                endpoint: format!("{client} -> {server}"),
            }),
        );
        self.emit_watch(lines);
        let (t, at) = (self.t(started), wall(started));
        self.emit(PcapLine::PcapStream {
            v: SCHEMA_VERSION,
            t,
            at: at.clone(),
            conn: id,
            client: client.to_string(),
            server: server.to_string(),
            syn,
            selected_by: if by_port { "port" } else { "content" }.into(),
        });
        self.apps.insert(id, App::new(id, client, server, syn));
        let gt = self.gt(started);
        if let Some(g) = &mut self.grade {
            g.opened(id, client, server, syn, gt);
        }
        // A MOVING earlier on a connection from the same host, not yet followed: this is it.
        let host: IpAddr = client.ip();
        self.stats.work += 1;
        let earlier = self.awaiting.get_mut(&host).and_then(|waiting| {
            let first = waiting.first().copied().filter(|m| m.0 <= started)?;
            waiting.remove(&first);
            Some(first.1)
        });
        if self.awaiting.get(&host).is_some_and(BTreeSet::is_empty) {
            self.awaiting.remove(&host);
        }
        let earlier = earlier.and_then(|after| {
            let a = self.apps.get_mut(&after)?;
            a.reconnect = Some((id, started));
            Some((after, a.moving.clone()?))
        });
        let speed = self.settings.speed;
        if let Some((after, (event, moving_at))) = earlier {
            self.emit(PcapLine::PcapReconnect {
                v: SCHEMA_VERSION,
                t,
                at,
                conn: id,
                after_conn: after,
                event,
                addr: server.to_string(),
                s: secs_f(since(moving_at, started) * speed),
            });
        }
    }

    pub(super) fn data_looked_up(&mut self, key: Key, from: usize, bytes: &[u8], ts: SystemTime) {
        let Some(stream) = self.streams.get(&key) else {
            return;
        };
        let (kind, client) = (stream.kind, stream.client);
        self.data(key, from, bytes, ts, kind, client);
    }

    /// In-order bytes of one direction. `kind` and `client` are the stream's as the caller
    /// already read them: a decided stream costs no further stream lookup per packet.
    pub(super) fn data(
        &mut self,
        key: Key,
        from: usize,
        bytes: &[u8],
        ts: SystemTime,
        mut kind: Kindof,
        mut client: Option<usize>,
    ) {
        if kind == Kindof::Undecided {
            self.decide(key, from, bytes, ts);
            let stream = &self.streams[&key];
            (kind, client) = (stream.kind, stream.client);
        }
        let Kindof::Resp(id) = kind else {
            return;
        };
        let client = client == Some(from);
        let Some(app) = self.apps.get_mut(&id) else {
            return;
        };
        let events = if client {
            app.client_bytes(bytes, ts)
        } else {
            app.server_bytes(bytes, ts)
        };
        self.stats.work += std::mem::take(&mut app.work);
        if let Some(g) = &mut self.grade {
            let t = secs_f(since(self.first.unwrap_or(ts), ts) * self.settings.speed);
            g.totals(id, t, app.commands, app.errors);
            g.named(id, &app.lib_name, &app.lib_ver, &app.name);
        }
        // Nearly every packet says nothing beyond its frames: no list to walk and drop.
        if !events.is_empty() {
            let side = if client { "client" } else { "server" };
            self.events(id, side, events, ts);
        }
    }

    pub(super) fn events(&mut self, id: u32, side: &str, events: Vec<Event>, ts: SystemTime) {
        let mut early = false;
        for ev in events {
            match ev {
                Event::Push(record) => self.push(id, *record, early, ts),
                Event::OptInReply(error) => {
                    early = true;
                    let outcome = if error.is_some() {
                        OptInOutcome::Refused
                    } else {
                        OptInOutcome::Accepted
                    };
                    self.handshake(id, outcome, error, ts);
                }
                Event::HelloRefused(text) => {
                    self.handshake(id, App::hello_outcome(&text), Some(text), ts)
                }
                Event::NoOptIn => self.handshake_line(id, "not_sent", None, ts),
                Event::Unreadable(offset, error) if side == "server" => {
                    let lines =
                        self.observe(ts, id, What::Malformed(event::Malformed { offset, error }));
                    self.emit_watch(lines);
                }
                Event::Unreadable(offset, error) => {
                    let (t, at) = (self.t(ts), wall(ts));
                    self.emit(PcapLine::PcapUnreadable {
                        v: SCHEMA_VERSION,
                        t,
                        at,
                        conn: id,
                        side: side.into(),
                        offset,
                        error,
                    });
                }
            }
        }
    }

    pub(super) fn push(
        &mut self,
        id: u32,
        record: crate::observe::record::FrameRecord,
        early: bool,
        ts: SystemTime,
    ) {
        if let (Some(app), Classified::Maintenance(n)) = (self.apps.get_mut(&id), &record.parsed) {
            if n.kind == Kind::Moving && app.moving.is_none() {
                let name = match n.seq {
                    Some(s) => format!("MOVING seq {s}"),
                    None => "MOVING seq ?".into(),
                };
                app.moving = Some((name, ts));
                self.awaiting
                    .entry(app.client.ip())
                    .or_default()
                    .insert((ts, id));
            }
        }
        if let Classified::Maintenance(n) = &record.parsed {
            let t = self.gt(ts);
            if let Some(g) = &mut self.grade {
                g.notification(id, n, t);
            }
        }
        if let Some(app) = self.apps.get_mut(&id) {
            if !app.hs.done {
                // Pushes before any handshake reply: the capture began after it.
                app.hs.done = true;
                self.handshake_line(id, "not_captured", None, ts);
            }
        }
        let lines = self.observe(ts, id, What::Frame(event::Frame { record, early }));
        self.emit_watch(lines);
    }

    pub(super) fn handshake(
        &mut self,
        id: u32,
        outcome: OptInOutcome,
        text: Option<String>,
        ts: SystemTime,
    ) {
        let Some(app) = self.apps.get(&id) else {
            return;
        };
        let info = app.hs.info.clone().unwrap_or_default();
        let what = What::Handshake(event::Handshake {
            opt_in: outcome,
            text: text.clone(),
            server: info.server,
            version: info.version,
            mode: info.mode,
            sent: app.hs.opt_in.clone(),
            sim_speed: None,
        });
        let lines = self.observe(ts, id, what);
        self.emit_watch(lines);
        let name = match outcome {
            OptInOutcome::Accepted => "accepted",
            OptInOutcome::Refused => "refused",
            OptInOutcome::Resp3Unavailable => "resp3_unavailable",
            OptInOutcome::AuthFailed => "auth_failed",
        };
        self.handshake_line(id, name, text, ts);
    }

    pub(super) fn handshake_line(
        &mut self,
        id: u32,
        outcome: &str,
        text: Option<String>,
        ts: SystemTime,
    ) {
        let Some(app) = self.apps.get(&id) else {
            return;
        };
        let hs = app.hs.clone();
        let outcome = if outcome == "not_sent" && !app.syn && hs.hello.is_none() {
            "not_captured"
        } else {
            outcome
        };
        if let Some(g) = &mut self.grade {
            g.handshake(id, outcome, hs.endpoint_type.clone());
        }
        let (t, at) = (self.t(ts), wall(ts));
        self.emit(PcapLine::PcapHandshake {
            v: SCHEMA_VERSION,
            t,
            at,
            conn: id,
            hello: hs.hello,
            hello_error: hs.hello_error,
            opt_in: hs.opt_in,
            endpoint_type: hs.endpoint_type,
            outcome: outcome.into(),
            text,
        });
    }

    pub(super) fn gap(
        &mut self,
        key: Key,
        from: usize,
        offset: u64,
        len: u64,
        why: GapWhy,
        ts: SystemTime,
    ) {
        self.stats.gaps += 1;
        let stream = &self.streams[&key];
        let Kindof::Resp(id) = stream.kind else {
            return;
        };
        let client = stream.client == Some(from);
        let side = if client { "client" } else { "server" };
        if let Some(app) = self.apps.get_mut(&id) {
            if client {
                app.stop_client();
            } else {
                app.stop_server();
            }
        }
        let after = if client {
            "commands after it are not matched with replies"
        } else {
            "frames after it are not read (RESP cannot be resynchronised safely)"
        };
        let (why, cause) = match why {
            GapWhy::Overflow => ("overflow", "more than 4 MiB arrived while waiting for it"),
            GapWhy::Ended => ("ended", "never captured"),
        };
        let (t, at) = (self.t(ts), wall(ts));
        self.emit(PcapLine::PcapGap {
            v: SCHEMA_VERSION,
            t,
            at,
            conn: id,
            side: side.into(),
            offset,
            bytes: len,
            why: why.into(),
            text: format!(
                "{side} side: {len} byte(s) missing at stream byte {offset} ({cause}); {after}"
            ),
        });
    }

    /// The first FIN or RST of a connection.
    pub(super) fn closed(&mut self, key: Key, from: usize, rst: bool, ts: SystemTime) {
        let stream = &self.streams[&key];
        let Kindof::Resp(id) = stream.kind else {
            return;
        };
        let by_client = stream.client == Some(from);
        let (cause, error) = match (by_client, rst) {
            (false, false) => (CloseCause::Server, None),
            (false, true) => (
                CloseCause::Error,
                Some("reset by the server (RST)".to_string()),
            ),
            // The application closed it: the timeline's "our side" close, shown as the client's.
            (true, false) => (
                CloseCause::Watch,
                Some("closed by the application (FIN)".to_string()),
            ),
            (true, true) => (
                CloseCause::Watch,
                Some("reset by the application (RST)".to_string()),
            ),
        };
        let mut lines = self.observe(
            ts,
            id,
            What::Closed(event::Closed {
                cause,
                error,
                retry_in: None,
            }),
        );
        for l in &mut lines {
            if let WatchLine::Closed(c) = l {
                if by_client {
                    c.by = ClosedBy::Client;
                }
            }
        }
        self.emit_watch(lines);
        let how = format!(
            "{} {}",
            if by_client { "client" } else { "server" },
            if rst { "rst" } else { "fin" }
        );
        let gt = self.gt(ts);
        if let Some(app) = self.apps.get_mut(&id) {
            app.closed = Some((how, ts));
            if let Some(g) = &mut self.grade {
                g.closed(id, by_client, gt, app.unanswered() as u64);
            }
        }
        self.verdict(id, ts);
    }

    /// The end of a stream (both FINs read, a RST, the end of the capture, or its 4-tuple
    /// reused): open holes become gaps, a FIN never reached still closed the connection, and
    /// the stream's buffers are let go.
    pub(super) fn finish_stream(&mut self, key: Key, ts: SystemTime) {
        let Some(stream) = self.streams.get_mut(&key) else {
            return;
        };
        if stream.done.is_some() {
            return;
        }
        let was_undecided = stream.undecided();
        stream.done = Some(ts);
        if was_undecided {
            self.left_undecided();
        }
        let stream = self.streams.get_mut(&key).expect("stream");
        if stream.kind == Kindof::Undecided {
            // No client bytes ever said what it was.
            self.stats.ignored_streams += 1;
        }
        for from in 0..2 {
            let gap = self.streams.get_mut(&key).and_then(|s| s.dirs[from].end());
            if let Some(Out::Gap { offset, len, why }) = gap {
                self.gap(key, from, offset, len, why, ts);
            }
        }
        let stream = self.streams.get_mut(&key).expect("stream");
        if stream.closed.is_none() {
            let first = (0..2)
                .filter_map(|i| stream.fin_seen[i].map(|t| (t, i)))
                .min();
            if let Some((t, from)) = first {
                stream.closed = Some((from, false, t));
                self.closed(key, from, false, t);
            }
        }
        let stream = self.streams.get_mut(&key).expect("stream");
        stream.dirs = Default::default();
        if let Kindof::Resp(id) = stream.kind {
            // Its verdict, if it got a MOVING and is still open (the capture ended).
            self.verdict(id, ts);
            // A connection that got a MOVING stays until a new one from its host is seen.
            let keep = self
                .apps
                .get(&id)
                .is_some_and(|a| a.moving.is_some() && a.reconnect.is_none());
            if keep {
                if let Some(a) = self.apps.get_mut(&id) {
                    a.stop_client();
                    a.stop_server();
                }
            } else {
                self.apps.remove(&id);
            }
        }
    }

    /// Forgets streams that ended a while ago (in capture time), so memory follows the open
    /// connections, not the length of the capture. Late retransmissions within that time are
    /// still recognised as belonging to a finished stream.
    pub(super) fn prune(&mut self, now: SystemTime) {
        let linger = Duration::from_secs(120);
        self.stats.work += self.streams.len() as u64;
        self.bound_undecided(MAX_UNDECIDED);
        self.streams
            .retain(|_, s| s.done.is_none_or(|at| at + linger > now));
    }

    pub(super) fn verdict(&mut self, id: u32, ts: SystemTime) {
        let next = self
            .apps
            .get(&id)
            .and_then(|a| a.reconnect)
            .and_then(|(r, _)| self.apps.get(&r))
            .map(|a| a.server);
        let Some(app) = self.apps.get_mut(&id) else {
            return;
        };
        let Some((event, moving_at)) = app.moving.clone() else {
            return;
        };
        if app.verdict_done {
            return;
        }
        app.verdict_done = true;
        let speed = self.settings.speed;
        let reconnect_s = app
            .reconnect
            .map(|(_, at)| secs_f(since(moving_at, at) * speed));
        let close_s = app
            .closed
            .as_ref()
            .map(|(_, at)| secs_f(since(moving_at, *at) * speed));
        let by = app.closed.as_ref().map(|(how, _)| how.clone());
        let by_client = by.as_deref().is_some_and(|b| b.starts_with("client"));
        let server = app.server;
        let (verdict, text) = verdict_words(&event, by_client, close_s, reconnect_s, server, next);
        let (commands, replies, max) = (
            app.window_commands,
            app.window_replies,
            app.window_max_latency,
        );
        let (t, at) = (self.t(ts), wall(ts));
        self.emit(PcapLine::PcapVerdict {
            v: SCHEMA_VERSION,
            t,
            at,
            conn: id,
            event,
            verdict: verdict.into(),
            text,
            reconnect_s,
            close_s,
            closed_by: by,
            window_commands: commands,
            window_replies: replies,
            window_max_latency_ms: max,
        });
    }

    /// The capture ended: holes still open are gaps, open MOVING connections get their verdict,
    /// then the summary.
    pub fn finish(&mut self) -> WatchLine {
        let mut keys: Vec<_> = self.streams.keys().copied().collect();
        keys.sort();
        let end = self.last.unwrap_or(SystemTime::UNIX_EPOCH);
        for key in keys {
            self.finish_stream(key, end);
        }
        let mut ids: Vec<u32> = self.apps.keys().copied().collect();
        ids.sort();
        for id in ids {
            self.verdict(id, end);
        }
        self.timeline.summary(self.instant(end), end, "ended")
    }
}

/// A connection's verdict in the judge's words (`grading::judge`): offsets are from the MOVING
/// this connection received, and say so. Given as the connection closes, so an application that
/// closes first and reconnects after is only "closed by the client" here; `--grade` sees the
/// whole run and tells a recycle from a move.
pub(super) fn verdict_words(
    event: &str,
    by_client: bool,
    close_s: Option<f64>,
    reconnect_s: Option<f64>,
    server: SocketAddr,
    next: Option<SocketAddr>,
) -> (&'static str, String) {
    let its = format!("after its {event}");
    match (close_s, reconnect_s, next) {
        (Some(_), Some(r), Some(n)) if by_client && n == server => (
            "recycled",
            format!("recycled at +{r:.1} s {its} onto the same retiring proxy"),
        ),
        (Some(c), Some(r), Some(n)) if r <= c && n != server => (
            "moved_before_close",
            format!(
                "moved to {} at +{r:.1} s {its}, {:.1} s before this connection was closed",
                n.ip(),
                c - r
            ),
        ),
        (Some(c), _, _) if by_client => (
            "closed_by_client",
            format!("closed by the client at +{c:.1} s {its}"),
        ),
        (Some(c), _, _) => ("cut_by_close", format!("cut by the close at +{c:.1} s {its}")),
        (None, Some(r), _) => (
            "open_at_end",
            format!("a new connection at +{r:.1} s {its}; this one was still open when the capture ended"),
        ),
        (None, None, _) => (
            "open_at_end",
            format!("still open when the capture ended, no new connection {its}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::verdict_words;
    use std::net::SocketAddr;

    #[test]
    fn a_recycle_is_the_application_closing_onto_the_same_address_and_not_a_move() {
        let old: SocketAddr = "127.0.0.2:12000".parse().unwrap();
        let new: SocketAddr = "127.0.0.3:12000".parse().unwrap();
        let ev = "MOVING seq 0";
        let (v, text) = verdict_words(ev, true, Some(7.5), Some(7.5), old, Some(old));
        assert_eq!(v, "recycled");
        assert_eq!(
            text,
            "recycled at +7.5 s after its MOVING seq 0 onto the same retiring proxy"
        );
        // The server cut it; a pool's extra connection to the same address is no recycle.
        let (v, text) = verdict_words(ev, false, Some(16.6), Some(3.0), old, Some(old));
        assert_eq!(v, "cut_by_close");
        assert_eq!(text, "cut by the close at +16.6 s after its MOVING seq 0");
        let (v, text) = verdict_words(ev, true, Some(16.6), Some(10.4), old, Some(new));
        assert_eq!(v, "moved_before_close");
        assert!(text.starts_with("moved to 127.0.0.3 at +10.4 s after its MOVING seq 0, 6.2 s"));
        // Closed first, the reconnect not yet seen: no claim of a move.
        let (v, _) = verdict_words(ev, true, Some(7.5), None, old, None);
        assert_eq!(v, "closed_by_client");
    }
}
