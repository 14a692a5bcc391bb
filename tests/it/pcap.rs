//! `maintwatch pcap` as an operator runs it: the real binary on capture files.
//!
//! The small fixtures in `tests/fixtures/pcap/` are made by the code below (packets from
//! etherparse's builder, pcap and pcapng containers written byte by byte), so what each holds is
//! readable here: reordered, duplicated and missing segments, a TLS stream, a stream that is not
//! RESP, a truncated file. `fixtures_are_what_this_file_makes` keeps the committed files equal to
//! what the code makes; refresh them with
//!
//!     MAINTWATCH_REGENERATE=1 cargo test --test it pcap::
//!
//! The last test captures real traffic with real tcpdump on loopback while the simulator plays
//! and the real `maintwatch watch` runs against it, then reads that capture.

use crate::common;

use etherparse::{PacketBuilder, TcpHeader};
use maintwatch::observe::pcap::capture_lines::{Line, PcapLine};
use maintwatch::observe::record::{line, OptInOutcome, WatchLine};
use maintwatch::protocol::notification::{Classified, Kind};
use maintwatch::shared::escape::unescape;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;

const MOVING: &[u8] = b">4\r\n$6\r\nMOVING\r\n:7\r\n:15\r\n_\r\n";
const MIGRATING: &[u8] = b">4\r\n$9\r\nMIGRATING\r\n:8\r\n:2\r\n$6\r\n[\"27\"]\r\n";
const HELLO: &[u8] = b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
const HELLO_REPLY: &[u8] =
    b"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n$5\r\nproto\r\n:3\r\n";
const OPT_IN: &[u8] = b"*5\r\n$6\r\nCLIENT\r\n$19\r\nMAINT_NOTIFICATIONS\r\n$2\r\nON\r\n$20\r\nmoving-endpoint-type\r\n$11\r\ninternal-ip\r\n";
const REFUSED: &[u8] = b"-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.\r\n";
const GET: &[u8] = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
const VALUE: &[u8] = b"$1\r\nv\r\n";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pcap")
}

/// How a packet is framed below IP.
#[derive(Clone, Copy, PartialEq)]
enum Link {
    Ethernet,
    /// Linux cooked capture v2 (`tcpdump -i any`).
    Sll2,
    /// Linux cooked capture v1 (older tcpdump's `-i any`).
    Sll1,
    /// BSD loopback: the address family in host byte order, then IP.
    Null,
}

/// One packet: when, and its bytes.
struct Pkt {
    us: u64,
    data: Vec<u8>,
}

/// A TCP connection being written packet by packet.
struct Tcp {
    client: SocketAddr,
    server: SocketAddr,
    /// Next sequence number of each side: [client, server].
    seq: [u32; 2],
    link: Link,
}

impl Tcp {
    fn new(client: &str, server: &str, isn: [u32; 2], link: Link) -> Tcp {
        Tcp {
            client: client.parse().unwrap(),
            server: server.parse().unwrap(),
            seq: isn,
            link,
        }
    }

    /// A segment from the client (`up`) or the server, at `seq` (None: the next one).
    fn seg(&self, up: bool, seq: u32, flags: &str, payload: &[u8], us: u64) -> Pkt {
        let (src, dst) = if up {
            (self.client, self.server)
        } else {
            (self.server, self.client)
        };
        let mut h = TcpHeader::new(src.port(), dst.port(), seq, 64000);
        h.syn = flags.contains('S');
        h.fin = flags.contains('F');
        h.rst = flags.contains('R');
        h.psh = !payload.is_empty();
        if !flags.contains('S') || flags.contains('A') {
            h.ack = true;
            h.acknowledgment_number = self.seq[usize::from(up)];
        }
        let mut data = Vec::new();
        match (src.ip(), dst.ip()) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let b = match self.link {
                    Link::Ethernet => PacketBuilder::ethernet2(
                        [2, 0, 0, 0, 0, 1],
                        [2, 0, 0, 0, 0, 2],
                    )
                    .ipv4(s.octets(), d.octets(), 64),
                    _ => PacketBuilder::ipv4(s.octets(), d.octets(), 64),
                };
                b.tcp_header(h).write(&mut data, payload).unwrap();
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                let b = match self.link {
                    Link::Ethernet => PacketBuilder::ethernet2(
                        [2, 0, 0, 0, 0, 1],
                        [2, 0, 0, 0, 0, 2],
                    )
                    .ipv6(s.octets(), d.octets(), 64),
                    _ => PacketBuilder::ipv6(s.octets(), d.octets(), 64),
                };
                b.tcp_header(h).write(&mut data, payload).unwrap();
            }
            _ => unreachable!("one family per connection"),
        }
        let proto: u16 = if src.is_ipv4() { 0x0800 } else { 0x86dd };
        if self.link == Link::Sll1 {
            let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
            sll.extend_from_slice(&proto.to_be_bytes());
            sll.extend_from_slice(&data);
            data = sll;
        }
        if self.link == Link::Null {
            let family: u32 = if src.is_ipv4() { 2 } else { 30 };
            let mut null = family.to_le_bytes().to_vec();
            null.extend_from_slice(&data);
            data = null;
        }
        if self.link == Link::Sll2 {
            let proto: u16 = if src.is_ipv4() { 0x0800 } else { 0x86dd };
            let mut sll = Vec::with_capacity(20 + data.len());
            sll.extend_from_slice(&proto.to_be_bytes());
            sll.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 1, 0, 6]);
            sll.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0, 0]);
            sll.extend_from_slice(&data);
            data = sll;
        }
        Pkt { us, data }
    }

    /// The next in-order segment from one side; advances its sequence number.
    fn send(&mut self, up: bool, payload: &[u8], us: u64) -> Pkt {
        let i = usize::from(!up);
        let p = self.seg(up, self.seq[i], "", payload, us);
        self.seq[i] = self.seq[i].wrapping_add(payload.len() as u32);
        p
    }

    fn open(&mut self, us: u64) -> Vec<Pkt> {
        let syn = self.seg(true, self.seq[0], "S", b"", us);
        self.seq[0] += 1;
        let synack = self.seg(false, self.seq[1], "SA", b"", us + 50);
        self.seq[1] += 1;
        let ack = self.seg(true, self.seq[0], "", b"", us + 100);
        vec![syn, synack, ack]
    }

    fn close(&mut self, up: bool, flags: &str, us: u64) -> Pkt {
        let i = usize::from(!up);
        let p = self.seg(up, self.seq[i], flags, b"", us);
        self.seq[i] += 1;
        p
    }

    /// HELLO 3 and the opt-in, with the server's answers.
    fn handshake(&mut self, us: u64, opt_in_reply: &[u8]) -> Vec<Pkt> {
        vec![
            self.send(true, HELLO, us),
            self.send(false, HELLO_REPLY, us + 200),
            self.send(true, OPT_IN, us + 400),
            self.send(false, opt_in_reply, us + 600),
        ]
    }
}

const S: u64 = 1_000_000;
/// 2026-11-30T12:00:00Z in microseconds.
const T0: u64 = 1_795_953_600 * S;

/// The Ethernet/IPv4 capture: four application connections, a TLS stream, an HTTP stream.
fn conversation_v4() -> Vec<Pkt> {
    let mut out = Vec::new();
    // [1] accepted; the MOVING arrives split in two segments, second half first, the first half
    // twice; the application opens [2] at +9 s and closes [1] itself at +10 s.
    let mut a = Tcp::new(
        "10.0.0.5:40001",
        "10.0.0.9:12000",
        [1000, 5000],
        Link::Ethernet,
    );
    out.extend(a.open(T0));
    out.extend(a.handshake(T0 + 1000, b"+OK\r\n"));
    out.push(a.send(true, GET, T0 + 2000));
    out.push(a.send(false, VALUE, T0 + 2300));
    let (first, second) = MOVING.split_at(10);
    let at = a.seq[1];
    let late = a.seg(false, at + 10, "", second, 2 * S + T0);
    let early = a.seg(false, at, "", first, 2 * S + T0 + 100);
    let again = a.seg(false, at, "", first, 2 * S + T0 + 200);
    a.seq[1] += MOVING.len() as u32;
    out.extend([late, early, again]);
    out.push(a.send(true, GET, T0 + 3 * S));
    out.push(a.send(false, VALUE, T0 + 3 * S + 1500));
    // [2] from the same host, to the new proxy.
    let mut b = Tcp::new(
        "10.0.0.5:40002",
        "10.0.0.10:12000",
        [7000, 9000],
        Link::Ethernet,
    );
    out.extend(b.open(T0 + 11 * S));
    out.extend(b.handshake(T0 + 11 * S + 1000, b"+OK\r\n"));
    out.push(a.close(true, "F", T0 + 12 * S));
    out.push(a.close(false, "F", T0 + 12 * S + 100));
    // [3] another host: same MOVING, then a reply segment lost, a MIGRATING after it that must
    // not be read, and the server's reset at +16.6 s.
    let mut c = Tcp::new(
        "10.0.0.6:40003",
        "10.0.0.9:12000",
        [3000, 4000],
        Link::Ethernet,
    );
    out.extend(c.open(T0 + 500));
    out.extend(c.handshake(T0 + 1500, b"+OK\r\n"));
    out.push(c.send(false, MOVING, 2 * S + T0 + 300));
    out.push(c.send(true, GET, T0 + 4 * S));
    let _lost = c.send(false, b"$5\r\nvalue\r\n", T0 + 4 * S + 100);
    out.push(c.send(false, MIGRATING, T0 + 5 * S));
    out.push(c.close(false, "R", T0 + 18 * S + 600_000));
    // [4] an old server: the opt-in refused.
    let mut d = Tcp::new(
        "10.0.0.8:40004",
        "10.0.0.9:12000",
        [100, 200],
        Link::Ethernet,
    );
    out.extend(d.open(T0 + 700));
    out.extend(d.handshake(T0 + 1700, REFUSED));
    // TLS to the same port, and something that is not RESP elsewhere.
    let mut t = Tcp::new("10.0.0.7:40100", "10.0.0.9:12000", [11, 22], Link::Ethernet);
    out.extend(t.open(T0 + 800));
    out.push(t.send(true, b"\x16\x03\x01\x00\x05hello", T0 + 900));
    let mut h = Tcp::new("10.0.0.5:40200", "10.0.0.11:80", [33, 44], Link::Ethernet);
    out.extend(h.open(T0 + 900));
    out.push(h.send(true, b"GET / HTTP/1.1\r\n\r\n", T0 + 950));
    out.sort_by_key(|p| p.us);
    out
}

/// The Linux-cooked-v2/IPv6 capture: one connection, MOVING reordered, closed by the server
/// (FIN) before any reconnect, then the reconnect.
fn conversation_v6() -> Vec<Pkt> {
    let mut out = Vec::new();
    let mut a = Tcp::new(
        "[fd00::5]:41001",
        "[fd00::9]:12000",
        [u32::MAX - 40, 77],
        Link::Sll2,
    );
    out.extend(a.open(T0));
    out.extend(a.handshake(T0 + 1000, b"+OK\r\n"));
    let (first, second) = MOVING.split_at(20);
    let at = a.seq[1];
    out.push(a.seg(false, at.wrapping_add(20), "", second, T0 + S - 10));
    out.push(a.seg(false, at, "", first, T0 + S));
    a.seq[1] = a.seq[1].wrapping_add(MOVING.len() as u32);
    out.push(a.close(false, "F", T0 + 17 * S + 600_000));
    out.push(a.close(true, "F", T0 + 17 * S + 600_100));
    let mut b = Tcp::new("[fd00::5]:41002", "[fd00::10]:12000", [5, 6], Link::Sll2);
    out.extend(b.open(T0 + 18 * S));
    out.extend(b.handshake(T0 + 18 * S + 1000, b"+OK\r\n"));
    out
}

/// A pcap file: little-endian, microseconds.
fn pcap_file(linktype: u32, packets: &[Pkt]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&262_144u32.to_le_bytes());
    f.extend_from_slice(&linktype.to_le_bytes());
    for p in packets {
        f.extend_from_slice(&((p.us / S) as u32).to_le_bytes());
        f.extend_from_slice(&((p.us % S) as u32).to_le_bytes());
        f.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        f.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        f.extend_from_slice(&p.data);
    }
    f
}

fn ng_block(kind: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    while body.len() % 4 != 0 {
        body.push(0);
    }
    let len = (body.len() + 12) as u32;
    let mut b = Vec::new();
    b.extend_from_slice(&kind.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

/// A pcapng file: one section, one interface (microseconds), enhanced packet blocks.
fn pcapng_file(linktype: u16, packets: &[Pkt]) -> Vec<u8> {
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    let mut f = ng_block(0x0a0d_0d0a, &shb);
    let mut idb = Vec::new();
    idb.extend_from_slice(&linktype.to_le_bytes());
    idb.extend_from_slice(&0u16.to_le_bytes());
    idb.extend_from_slice(&262_144u32.to_le_bytes());
    f.extend(ng_block(1, &idb));
    for p in packets {
        let mut epb = Vec::new();
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&((p.us >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(p.us as u32).to_le_bytes());
        epb.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&p.data);
        f.extend(ng_block(6, &epb));
    }
    f
}

/// Every fixture and its bytes.
fn made() -> Vec<(&'static str, Vec<u8>)> {
    let v4 = pcap_file(1, &conversation_v4());
    let v6 = pcapng_file(276, &conversation_v6());
    // Cut 7 bytes into the last packet's data.
    let last = conversation_v4().last().unwrap().data.len();
    let truncated = v4[..v4.len() - last + 7].to_vec();
    vec![
        ("maintenance-v4.pcap", v4),
        ("maintenance-sll2-v6.pcapng", v6),
        ("truncated.pcap", truncated),
    ]
}

#[test]
fn fixtures_are_what_this_file_makes() {
    let regenerate = crate::common::regenerating();
    for (name, bytes) in made() {
        let path = fixtures().join(name);
        if regenerate {
            std::fs::create_dir_all(fixtures()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
            continue;
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (MAINTWATCH_REGENERATE=1 cargo test --test it pcap::)",
                path.display()
            )
        });
        assert!(
            committed == bytes,
            "{name} differs from what tests/it/pcap.rs makes"
        );
    }
}

struct Run {
    code: i32,
    lines: Vec<Line>,
    stderr: String,
}

fn pcap(args: &[&str]) -> Run {
    let out = common::maintwatch(["pcap"]).args(args).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines = if args.contains(&"--json") {
        stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    } else {
        Vec::new()
    };
    Run {
        code: out.status.code().unwrap(),
        lines,
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn fixture(name: &str) -> String {
    fixtures().join(name).display().to_string()
}

fn watch(lines: &[Line]) -> impl Iterator<Item = &WatchLine> {
    lines.iter().filter_map(|l| match l {
        Line::Watch(w) => Some(w),
        _ => None,
    })
}

fn pcap_lines(lines: &[Line]) -> impl Iterator<Item = &PcapLine> {
    lines.iter().filter_map(|l| match l {
        Line::Pcap(p) => Some(p),
        _ => None,
    })
}

/// The pushes of one connection: raw bytes and kind.
fn pushes(lines: &[Line], conn: u32) -> Vec<(Vec<u8>, Option<Kind>)> {
    watch(lines)
        .filter_map(|l| match l {
            WatchLine::Push(line::Push { conn: c, frame, .. }) if *c == conn => Some((
                unescape(&frame.raw.escaped()).unwrap(),
                match &frame.parsed {
                    Classified::Maintenance(n) => Some(n.kind),
                    _ => None,
                },
            )),
            _ => None,
        })
        .collect()
}

fn conn_of(lines: &[Line], client: &str) -> u32 {
    pcap_lines(lines)
        .find_map(|l| match l {
            PcapLine::PcapStream {
                conn, client: c, ..
            } if c == client => Some(*conn),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no connection from {client}"))
}

fn verdict(lines: &[Line], conn: u32) -> (String, Option<String>, Option<f64>, Option<f64>) {
    pcap_lines(lines)
        .find_map(|l| match l {
            PcapLine::PcapVerdict {
                conn: c,
                verdict,
                closed_by,
                reconnect_s,
                close_s,
                ..
            } if *c == conn => Some((verdict.clone(), closed_by.clone(), *reconnect_s, *close_s)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no verdict for [{conn}]"))
}

fn closed_by(lines: &[Line], conn: u32) -> (String, Option<String>) {
    watch(lines)
        .find_map(|l| match l {
            WatchLine::Closed(line::Closed {
                conn: c, by, error, ..
            }) if *c == conn => Some((by.as_str().to_string(), error.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no close for [{conn}]"))
}

#[test]
fn reordered_and_duplicated_segments_give_the_moving_once_byte_for_byte() {
    let run = pcap(&["--json", &fixture("maintenance-v4.pcap")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let a = conn_of(&run.lines, "10.0.0.5:40001");
    assert_eq!(
        pushes(&run.lines, a),
        vec![(MOVING.to_vec(), Some(Kind::Moving))]
    );
    let handshakes: Vec<_> = watch(&run.lines)
        .filter_map(|l| match l {
            WatchLine::Handshake(line::Handshake {
                conn,
                opt_in,
                sent,
                server,
                ..
            }) if *conn == a => Some((*opt_in, sent.clone(), server.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        handshakes,
        vec![(
            OptInOutcome::Accepted,
            Some("CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type internal-ip".into()),
            Some("redis".into())
        )]
    );
    let endpoint_type = pcap_lines(&run.lines).find_map(|l| match l {
        PcapLine::PcapHandshake {
            conn,
            endpoint_type,
            hello,
            ..
        } if *conn == a => Some((endpoint_type.clone(), hello.clone())),
        _ => None,
    });
    assert_eq!(
        endpoint_type,
        Some((Some("internal-ip".into()), Some("3".into())))
    );
}

#[test]
fn the_application_moving_first_and_the_server_cutting_are_told_apart() {
    let run = pcap(&["--json", &fixture("maintenance-v4.pcap")]);
    let a = conn_of(&run.lines, "10.0.0.5:40001");
    let b = conn_of(&run.lines, "10.0.0.5:40002");
    let c = conn_of(&run.lines, "10.0.0.6:40003");
    // [a]: a new connection at +9 s, then the application closed [a] itself.
    let (v, by, reconnect, close) = verdict(&run.lines, a);
    assert_eq!(v, "moved_before_close");
    assert_eq!(by.as_deref(), Some("client fin"));
    assert!(
        reconnect.unwrap() < close.unwrap(),
        "{reconnect:?} {close:?}"
    );
    assert_eq!(closed_by(&run.lines, a).0, "client");
    let reconnect = pcap_lines(&run.lines).find_map(|l| match l {
        PcapLine::PcapReconnect {
            conn,
            after_conn,
            addr,
            ..
        } if *conn == b => Some((*after_conn, addr.clone())),
        _ => None,
    });
    assert_eq!(reconnect, Some((a, "10.0.0.10:12000".to_string())));
    // [c]: reset by the server, no reconnect from its host.
    let (v, by, reconnect, close) = verdict(&run.lines, c);
    assert_eq!(v, "cut_by_close");
    assert_eq!(by.as_deref(), Some("server rst"));
    assert_eq!(reconnect, None);
    assert!((close.unwrap() - 16.6).abs() < 1e-3, "{close:?}");
    assert_eq!(
        closed_by(&run.lines, c),
        (
            "error".to_string(),
            Some("reset by the server (RST)".to_string())
        )
    );
}

#[test]
fn a_missing_segment_is_a_gap_and_nothing_after_it_is_misread() {
    let run = pcap(&["--json", &fixture("maintenance-v4.pcap")]);
    let c = conn_of(&run.lines, "10.0.0.6:40003");
    let gaps: Vec<_> = pcap_lines(&run.lines)
        .filter_map(|l| match l {
            PcapLine::PcapGap {
                conn, side, bytes, ..
            } => Some((*conn, side.clone(), *bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(
        gaps,
        vec![(c, "server".to_string(), b"$5\r\nvalue\r\n".len() as u64)]
    );
    // The MIGRATING after the hole is not reported: only the MOVING before it.
    assert_eq!(
        pushes(&run.lines, c),
        vec![(MOVING.to_vec(), Some(Kind::Moving))]
    );
    let Some(PcapLine::PcapEnd { gaps, .. }) = pcap_lines(&run.lines).last() else {
        panic!("the last line is pcap_end")
    };
    assert_eq!(*gaps, 1);
}

#[test]
fn refusals_tls_and_other_streams_are_named() {
    let run = pcap(&["--json", &fixture("maintenance-v4.pcap")]);
    let d = conn_of(&run.lines, "10.0.0.8:40004");
    let refused = watch(&run.lines).find_map(|l| match l {
        WatchLine::Handshake(line::Handshake {
            conn, opt_in, text, ..
        }) if *conn == d => Some((*opt_in, text.clone())),
        _ => None,
    });
    assert_eq!(
        refused,
        Some((
            OptInOutcome::Refused,
            Some("ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.".into())
        ))
    );
    let tls: Vec<_> = pcap_lines(&run.lines)
        .filter_map(|l| match l {
            PcapLine::PcapTls { client, text, .. } => Some((client.clone(), text.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(tls.len(), 1);
    assert_eq!(tls[0].0, "10.0.0.7:40100");
    assert!(tls[0]
        .1
        .starts_with("encrypted: run maintwatch watch beside the application"));
    let Some(PcapLine::PcapEnd {
        resp_conns,
        tls_streams,
        ignored_streams,
        tcp_streams,
        ..
    }) = pcap_lines(&run.lines).last()
    else {
        panic!("the last line is pcap_end")
    };
    assert_eq!(
        (*tcp_streams, *resp_conns, *tls_streams, *ignored_streams),
        (6, 4, 1, 1)
    );
    // By port: the HTTP stream on port 80 is not even considered.
    let run = pcap(&["--json", "--port", "12000", &fixture("maintenance-v4.pcap")]);
    let Some(PcapLine::PcapEnd {
        resp_conns,
        ignored_streams,
        ..
    }) = pcap_lines(&run.lines).last()
    else {
        panic!("the last line is pcap_end")
    };
    assert_eq!((*resp_conns, *ignored_streams), (4, 0));
}

#[test]
fn pcapng_linux_cooked_v2_and_ipv6_with_a_server_close_before_the_reconnect() {
    let run = pcap(&["--json", &fixture("maintenance-sll2-v6.pcapng")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let a = conn_of(&run.lines, "[fd00::5]:41001");
    assert_eq!(
        pushes(&run.lines, a),
        vec![(MOVING.to_vec(), Some(Kind::Moving))]
    );
    assert_eq!(closed_by(&run.lines, a), ("server".to_string(), None));
    let (v, by, reconnect, _) = verdict(&run.lines, a);
    assert_eq!(v, "cut_by_close");
    assert_eq!(by.as_deref(), Some("server fin"));
    assert_eq!(reconnect, None, "the reconnect came after the close");
    let b = conn_of(&run.lines, "[fd00::5]:41002");
    assert!(pcap_lines(&run.lines).any(|l| matches!(l,
        PcapLine::PcapReconnect { conn, after_conn, addr, .. }
            if *conn == b && *after_conn == a && addr == "[fd00::10]:12000")));
    // The watch's closed line says the close was announced and how far past the window.
    let past = watch(&run.lines).find_map(|l| match l {
        WatchLine::Closed(line::Closed {
            conn,
            announced: true,
            past_s,
            ..
        }) if *conn == a => *past_s,
        _ => None,
    });
    assert!((past.unwrap() - 1.6).abs() < 1e-3, "{past:?}");
}

#[test]
fn a_truncated_file_is_read_to_its_last_whole_packet_with_a_warning() {
    let run = pcap(&["--json", &fixture("truncated.pcap")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning") && run.stderr.contains("truncated.pcap"),
        "{}",
        run.stderr
    );
    let whole = conversation_v4().len() as u64 - 1;
    let Some(PcapLine::PcapEnd { packets, files, .. }) = pcap_lines(&run.lines).last() else {
        panic!("the last line is pcap_end")
    };
    assert_eq!(*packets, whole);
    assert_eq!(files[0].truncated_bytes, Some(16 + 7));
    assert!(pcap_lines(&run.lines).any(|l| matches!(l, PcapLine::PcapWarning { .. })));
}

#[test]
fn an_unsupported_link_type_or_a_non_capture_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let wifi = dir.path().join("wifi.pcap");
    std::fs::write(&wifi, pcap_file(127, &conversation_v4()[..1])).unwrap();
    let run = pcap(&[wifi.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("link type 127") && run.stderr.contains("not supported"),
        "{}",
        run.stderr
    );
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a capture at all, just some text\n").unwrap();
    let run = pcap(&[text.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("not a pcap or pcapng file"),
        "{}",
        run.stderr
    );
}

#[test]
fn human_output_names_the_verdicts_and_the_gap() {
    let out = common::maintwatch(["pcap", "--color", "never", &fixture("maintenance-v4.pcap")])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "10.0.0.5:40001 connected to 10.0.0.9:12000",
        "MOVING seq 7",
        ">4\\r\\n$6\\r\\nMOVING\\r\\n:7\\r\\n:15\\r\\n_\\r\\n",
        "=> moved to 10.0.0.10 at +9.0 s after its MOVING seq 7",
        "=> cut by the close",
        "server side: 11 byte(s) missing",
        "TLS, encrypted",
        "opt-in refused: ERR unknown subcommand",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
}

/// A hang guard only.
const GUARD: std::time::Duration = std::time::Duration::from_secs(60);

fn interrupt(pid: u32) {
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Stops tcpdump with SIGINT (it then writes out what it holds) and checks it ended well.
async fn stop_tcpdump(tcpdump: &mut tokio::process::Child) {
    interrupt(tcpdump.id().unwrap());
    let status = tokio::time::timeout(GUARD, tcpdump.wait())
        .await
        .expect("hang guard: tcpdump stops on SIGINT")
        .unwrap();
    assert!(status.success(), "tcpdump: {status}");
}

/// The bytes of the first MOVING the simulator reported sending.
fn first_moving_sent(
    sent: &mut tokio::sync::broadcast::Receiver<maintwatch::simulator::sim::SimEvent>,
) -> Option<Vec<u8>> {
    let mut moving = None;
    while let Ok(ev) = sent.try_recv() {
        if let maintwatch::simulator::sim::What::Sent { bytes, .. } = ev.what {
            if bytes.windows(6).any(|w| w == b"MOVING") {
                moving.get_or_insert(bytes);
            }
        }
    }
    moving
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_tcpdump_sees_what_the_watch_saw() {
    use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator};
    use tokio::io::AsyncBufReadExt;
    let speed = 10.0;
    let mut opts = SimOptions::new(scenarios::by_name("single-proxy").unwrap());
    opts.speed = speed;
    let sim = Simulator::start(opts).await.expect("simulator starts");
    let mut sent = sim.events();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("loopback.pcap");
    let test = "real_tcpdump_sees_what_the_watch_saw";
    let Some(mut tcpdump) = common::tcpdump(test, &file, &["port", &sim.port().to_string()]).await
    else {
        return;
    };
    let url = sim.url();
    let mut watcher = common::maintwatch_async(["watch", &url, "--json", "--dns-server"])
        .arg(sim.dns_addr().to_string())
        .args(["--sim-speed", &speed.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(watcher.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    common::read_until(
        &mut lines,
        &mut seen,
        GUARD,
        "the reconnect's opt-in",
        |l| {
            l.iter()
                .filter(|l| matches!(l, WatchLine::Handshake(line::Handshake { .. })))
                .count()
                >= 2
        },
    )
    .await;
    // tcpdump writes each packet as it reads it (-U), some time after the watch saw it: wait
    // until the file holds both opt-ins before stopping it.
    let port = sim.port().to_string();
    let path = file.to_str().unwrap().to_string();
    tokio::time::timeout(GUARD, async {
        loop {
            let run = pcap(&["--json", "--port", &port, &path]);
            let accepted = watch(&run.lines)
                .filter(|l| matches!(l, WatchLine::Handshake(line::Handshake { .. })))
                .count();
            if accepted >= 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("hang guard: the capture file never held both opt-ins");
    interrupt(watcher.id().unwrap());
    watcher.wait().await.unwrap();
    stop_tcpdump(&mut tcpdump).await;
    let moving = first_moving_sent(&mut sent).expect("the simulator sent a MOVING");
    let run = pcap(&[
        "--json",
        "--port",
        &port,
        "--sim-speed",
        "10",
        file.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let conns: Vec<(u32, String)> = pcap_lines(&run.lines)
        .filter_map(|l| match l {
            PcapLine::PcapStream { conn, server, .. } => Some((*conn, server.clone())),
            _ => None,
        })
        .collect();
    // The scenario's end closes the second connection too, and the watch may reconnect once more
    // before it is stopped: the first two are the ones this test is about.
    assert!(conns.len() >= 2, "{conns:?}");
    let (first, second) = (conns[0].0, conns[1].0);
    assert_eq!(conns[0].1, format!("127.0.0.2:{port}"));
    assert_eq!(conns[1].1, format!("127.0.0.3:{port}"));
    assert!(watch(&run.lines).any(|l| matches!(l,
        WatchLine::Handshake(line::Handshake { conn, opt_in: OptInOutcome::Accepted, .. }) if *conn == first)));
    let got = pushes(&run.lines, first);
    assert_eq!(
        got.first(),
        Some(&(moving.clone(), Some(Kind::Moving))),
        "{got:?}"
    );
    assert_eq!(closed_by(&run.lines, first).0, "server");
    // maintwatch watches; it does not move: the server's close comes first, then the reconnect.
    let (v, by, _, close) = verdict(&run.lines, first);
    assert_eq!(v, "cut_by_close");
    assert_eq!(by.as_deref(), Some("server fin"));
    assert!(close.unwrap() > 15.0, "closed past the window: {close:?}");
    assert!(pcap_lines(&run.lines).any(|l| matches!(l,
        PcapLine::PcapReconnect { conn, after_conn, .. } if *conn == second && *after_conn == first)));
    sim.shutdown().await;
}

/// The Python of `MAINTWATCH_PYTHON` (as `.ci/run` sets it: a venv with redis-py 8.1 or later);
/// `None` after a SKIP line when it is unset or empty. Set but without redis-py: a failure.
fn redis_py(test: &str) -> Option<String> {
    let Some(py) = common::redis_server_from(std::env::var_os("MAINTWATCH_PYTHON")) else {
        crate::common::skip(
            test,
            "MAINTWATCH_PYTHON is unset or empty (.ci/run sets it to a venv with redis-py)",
        );
        return None;
    };
    let out = Command::new(&py)
        .args(["-c", "import redis, redis.maint_notifications"])
        .output()
        .unwrap_or_else(|e| panic!("MAINTWATCH_PYTHON={py} does not run: {e}"));
    assert!(
        out.status.success(),
        "MAINTWATCH_PYTHON={py} has no usable redis-py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(py)
}

/// The application under tcpdump is redis-py (the grading workload, reaching the simulator by its
/// hostname through the simulator's DNS): the capture alone shows its connections, the MOVING
/// each one got, the server's close, the reconnects and a verdict per connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_tcpdump_sees_what_redis_py_saw() {
    use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator};
    let test = "real_tcpdump_sees_what_redis_py_saw";
    let Some(py) = redis_py(test) else {
        return;
    };
    let speed = 10.0;
    let scenario = scenarios::by_name("single-proxy").unwrap();
    let seconds = scenario.end / speed + 1.0;
    let mut opts = SimOptions::new(scenario);
    opts.speed = speed;
    let sim = Simulator::start(opts).await.expect("simulator starts");
    let mut sent = sim.events();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("redis-py.pcap");
    let Some(mut tcpdump) = common::tcpdump(test, &file, &["port", &sim.port().to_string()]).await
    else {
        return;
    };
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/redis_py_workload.py"
    );
    let workload = tokio::process::Command::new(&py)
        .arg(script)
        .args(["--host", sim.host()])
        .args(["--port", &sim.port().to_string()])
        .args(["--dns", &sim.dns_addr().to_string()])
        .args(["--seconds", &format!("{seconds:.2}")])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(GUARD, workload)
        .await
        .expect("hang guard: the redis-py workload ends after its seconds")
        .unwrap();
    assert!(
        out.status.success(),
        "redis-py workload: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let port = sim.port().to_string();
    let path = file.to_str().unwrap().to_string();
    // tcpdump writes each packet some time after the workload sent it: wait until the file shows
    // a reconnect after the MOVING before stopping it.
    tokio::time::timeout(GUARD, async {
        loop {
            let run = pcap(&["--json", "--port", &port, &path]);
            if pcap_lines(&run.lines).any(|l| matches!(l, PcapLine::PcapReconnect { .. })) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("hang guard: the capture never showed redis-py reconnecting");
    stop_tcpdump(&mut tcpdump).await;
    let moving = first_moving_sent(&mut sent).expect("the simulator sent a MOVING to redis-py");
    let run = pcap(&["--json", "--port", &port, "--sim-speed", "10", &path]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let conns: Vec<(u32, String)> = pcap_lines(&run.lines)
        .filter_map(|l| match l {
            PcapLine::PcapStream { conn, server, .. } => Some((*conn, server.clone())),
            _ => None,
        })
        .collect();
    let old: Vec<u32> = conns
        .iter()
        .filter(|c| c.1 == format!("127.0.0.2:{port}"))
        .map(|c| c.0)
        .collect();
    assert!(
        !old.is_empty(),
        "no redis-py connection to the old proxy: {conns:?}"
    );
    assert!(
        conns.iter().any(|c| c.1 == format!("127.0.0.3:{port}")),
        "redis-py never reached the new proxy: {conns:?}"
    );
    // Every redis-py connection to the old proxy that opted in got the simulator's MOVING byte
    // for byte, was closed by the server, and has a verdict.
    let opted: Vec<u32> = old
        .iter()
        .copied()
        .filter(|&c| {
            watch(&run.lines).any(|l| {
                matches!(l,
                WatchLine::Handshake(line::Handshake { conn, opt_in: OptInOutcome::Accepted, .. }) if *conn == c)
            })
        })
        .collect();
    assert!(!opted.is_empty(), "redis-py never opted in: {conns:?}");
    for &c in &opted {
        let got = pushes(&run.lines, c);
        assert_eq!(
            got.first(),
            Some(&(moving.clone(), Some(Kind::Moving))),
            "[{c}] {got:?}"
        );
        let (v, by, _, _) = verdict(&run.lines, c);
        assert!(
            v == "cut_by_close" || v == "moved_before_close",
            "[{c}] verdict {v}"
        );
        if v == "cut_by_close" {
            assert_eq!(closed_by(&run.lines, c).0, "server", "[{c}]");
            assert_eq!(by.as_deref(), Some("server fin"), "[{c}]");
        }
    }
    // The scenario's close reached redis-py on the wire at least once.
    assert!(
        opted
            .iter()
            .any(|&c| closed_by(&run.lines, c).0 == "server"),
        "no server close seen on {opted:?}"
    );
    // The reconnects: new connections from redis-py's host to the new proxy after a MOVING.
    assert!(pcap_lines(&run.lines).any(|l| matches!(l,
        PcapLine::PcapReconnect { after_conn, .. } if opted.contains(after_conn))));
    sim.shutdown().await;
}

/// Runs the analyzer in-process over packets (Ethernet).
fn analyze(packets: &[Pkt]) -> Vec<Line> {
    analyze_as(1, packets)
}

fn analyze_as(linktype: i32, packets: &[Pkt]) -> Vec<Line> {
    use maintwatch::observe::pcap::{read::Packet, Analyzer, Settings};
    let mut a = Analyzer::new(Settings::default(), "test".into());
    let mut lines = Vec::new();
    for p in packets {
        a.packet(&Packet {
            ts: std::time::UNIX_EPOCH + std::time::Duration::from_micros(p.us),
            linktype,
            data: &p.data,
            orig_len: p.data.len() as u32,
        });
        lines.extend(a.take_lines());
    }
    let summary = a.finish();
    lines.extend(a.take_lines());
    lines.push(Line::Watch(summary));
    lines
}

#[test]
fn handshakes_without_an_opt_in_and_a_connection_open_at_the_end_are_named() {
    let mut out = Vec::new();
    // HELLO 3, then a command: no opt-in.
    let mut x = Tcp::new("10.1.0.1:5000", "10.1.0.9:6379", [10, 20], Link::Ethernet);
    out.extend(x.open(T0));
    out.push(x.send(true, HELLO, T0 + 1000));
    out.push(x.send(false, HELLO_REPLY, T0 + 1100));
    out.push(x.send(true, GET, T0 + 1200));
    // RESP2: no HELLO at all.
    let mut y = Tcp::new("10.1.0.2:5000", "10.1.0.9:6379", [30, 40], Link::Ethernet);
    out.extend(y.open(T0 + 2000));
    out.push(y.send(true, GET, T0 + 3000));
    out.push(y.send(false, VALUE, T0 + 3100));
    // Accepted, MOVING, a new connection from the host, and the capture ends with both open.
    let mut z = Tcp::new("10.1.0.3:5000", "10.1.0.9:6379", [50, 60], Link::Ethernet);
    out.extend(z.open(T0 + 4000));
    out.extend(z.handshake(T0 + 5000, b"+OK\r\n"));
    out.push(z.send(false, MOVING, T0 + S));
    out.push(z.send(true, GET, T0 + 2 * S));
    out.push(z.send(false, VALUE, T0 + 2 * S + 2500));
    let mut w = Tcp::new("10.1.0.3:5001", "10.1.0.10:6379", [70, 80], Link::Ethernet);
    out.extend(w.open(T0 + 3 * S));
    out.extend(w.handshake(T0 + 3 * S + 1000, b"+OK\r\n"));
    out.sort_by_key(|p| p.us);
    let lines = analyze(&out);
    let outcome = |client: &str| {
        let conn = conn_of(&lines, client);
        pcap_lines(&lines)
            .find_map(|l| match l {
                PcapLine::PcapHandshake {
                    conn: c,
                    outcome,
                    hello,
                    ..
                } if *c == conn => Some((outcome.clone(), hello.clone())),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(
        outcome("10.1.0.1:5000"),
        ("not_sent".into(), Some("3".into()))
    );
    assert_eq!(outcome("10.1.0.2:5000"), ("not_sent".into(), None));
    let z = conn_of(&lines, "10.1.0.3:5000");
    let (v, by, reconnect, close) = verdict(&lines, z);
    assert_eq!(v, "open_at_end");
    assert_eq!((by, close), (None, None));
    assert!((reconnect.unwrap() - 2.0).abs() < 1e-3, "{reconnect:?}");
    // The command after the MOVING and its reply's latency.
    let window = pcap_lines(&lines).find_map(|l| match l {
        PcapLine::PcapVerdict {
            window_commands,
            window_replies,
            window_max_latency_ms,
            ..
        } => Some((*window_commands, *window_replies, *window_max_latency_ms)),
        _ => None,
    });
    assert_eq!(window, Some((1, 1, Some(2.5))));
}

#[test]
fn linux_cooked_v1_and_loopback_null_carry_the_same_conversation() {
    for (link, linktype, client, server) in [
        (Link::Sll1, 113, "10.2.0.1:5000", "10.2.0.9:6379"),
        (Link::Null, 0, "127.0.0.1:5000", "127.0.0.2:6379"),
        (Link::Null, 0, "[::1]:5000", "[::2]:6379"),
    ] {
        let mut out = Vec::new();
        let mut a = Tcp::new(client, server, [1, 2], link);
        out.extend(a.open(T0));
        out.extend(a.handshake(T0 + 1000, b"+OK\r\n"));
        out.push(a.send(false, MOVING, T0 + S));
        out.push(a.close(false, "F", T0 + 16 * S));
        let lines = analyze_as(linktype, &out);
        let conn = conn_of(&lines, client);
        assert_eq!(
            pushes(&lines, conn),
            vec![(MOVING.to_vec(), Some(Kind::Moving))],
            "link type {linktype}"
        );
        assert_eq!(closed_by(&lines, conn).0, "server");
    }
}
