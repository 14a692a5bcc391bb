//! Crafted captures for the robustness tests: Ethernet/IPv4 TCP packets from etherparse's
//! builder, in pcap or pcapng containers written byte by byte, so that every byte of a fixture
//! is explained by the code that made it.

use etherparse::{PacketBuilder, TcpHeader};
use std::net::{IpAddr, SocketAddr};

pub const MOVING: &[u8] = b">4\r\n$6\r\nMOVING\r\n:7\r\n:15\r\n_\r\n";
pub const GET: &[u8] = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
pub const VALUE: &[u8] = b"$1\r\nv\r\n";
pub const HELLO: &[u8] = b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
pub const HELLO_REPLY: &[u8] =
    b"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n$5\r\nproto\r\n:3\r\n";

pub const S: u64 = 1_000_000;
/// 2026-11-30T12:00:00Z in microseconds.
pub const T0: u64 = 1_795_953_600 * S;

/// One packet: when (microseconds since the epoch), and its Ethernet frame.
#[derive(Clone)]
pub struct Pkt {
    pub us: u64,
    pub data: Vec<u8>,
}

/// A TCP connection written packet by packet.
pub struct Tcp {
    pub client: SocketAddr,
    pub server: SocketAddr,
    /// Next sequence number of each side: [client, server].
    pub seq: [u32; 2],
}

impl Tcp {
    pub fn new(client: &str, server: &str, isn: [u32; 2]) -> Tcp {
        Tcp {
            client: client.parse().unwrap(),
            server: server.parse().unwrap(),
            seq: isn,
        }
    }

    /// A segment from the client (`up`) or the server at `seq`; flags from "SAFR".
    pub fn seg(&self, up: bool, seq: u32, flags: &str, payload: &[u8], us: u64) -> Pkt {
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
        let (IpAddr::V4(s), IpAddr::V4(d)) = (src.ip(), dst.ip()) else {
            panic!("IPv4 only here")
        };
        let mut data = Vec::with_capacity(54 + payload.len());
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4(s.octets(), d.octets(), 64)
            .tcp_header(h)
            .write(&mut data, payload)
            .unwrap();
        Pkt { us, data }
    }

    /// The next in-order segment from one side; advances its sequence number.
    pub fn send(&mut self, up: bool, payload: &[u8], us: u64) -> Pkt {
        let i = usize::from(!up);
        let p = self.seg(up, self.seq[i], "", payload, us);
        self.seq[i] = self.seq[i].wrapping_add(payload.len() as u32);
        p
    }

    pub fn open(&mut self, us: u64) -> Vec<Pkt> {
        let syn = self.seg(true, self.seq[0], "S", b"", us);
        self.seq[0] = self.seq[0].wrapping_add(1);
        let synack = self.seg(false, self.seq[1], "SA", b"", us + 50);
        self.seq[1] = self.seq[1].wrapping_add(1);
        let ack = self.seg(true, self.seq[0], "", b"", us + 100);
        vec![syn, synack, ack]
    }

    pub fn close(&mut self, up: bool, flags: &str, us: u64) -> Pkt {
        let i = usize::from(!up);
        let p = self.seg(up, self.seq[i], flags, b"", us);
        self.seq[i] = self.seq[i].wrapping_add(1);
        p
    }
}

/// A pcap file header: little-endian, microseconds, Ethernet.
pub fn pcap_header() -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&262_144u32.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes());
    f
}

/// One pcap packet record.
pub fn pcap_record(f: &mut Vec<u8>, p: &Pkt) {
    f.extend_from_slice(&((p.us / S) as u32).to_le_bytes());
    f.extend_from_slice(&((p.us % S) as u32).to_le_bytes());
    f.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
    f.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
    f.extend_from_slice(&p.data);
}

pub fn pcap_file(packets: &[Pkt]) -> Vec<u8> {
    let mut f = pcap_header();
    for p in packets {
        pcap_record(&mut f, p);
    }
    f
}

/// A pcapng block: type, total length, body padded to 4 bytes, total length again.
pub fn ng_block(kind: u32, body: &[u8]) -> Vec<u8> {
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

/// A section header and one Ethernet interface (microseconds).
pub fn ng_head() -> Vec<u8> {
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    let mut f = ng_block(0x0a0d_0d0a, &shb);
    let mut idb = Vec::new();
    idb.extend_from_slice(&1u16.to_le_bytes());
    idb.extend_from_slice(&0u16.to_le_bytes());
    idb.extend_from_slice(&262_144u32.to_le_bytes());
    f.extend(ng_block(1, &idb));
    f
}

/// An enhanced packet block's body, with `caplen` as given (the packet's length when honest).
pub fn epb_body(p: &Pkt, caplen: u32) -> Vec<u8> {
    let mut epb = Vec::new();
    epb.extend_from_slice(&0u32.to_le_bytes());
    epb.extend_from_slice(&((p.us >> 32) as u32).to_le_bytes());
    epb.extend_from_slice(&(p.us as u32).to_le_bytes());
    epb.extend_from_slice(&caplen.to_le_bytes());
    epb.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
    epb.extend_from_slice(&p.data);
    epb
}

pub fn epb(p: &Pkt) -> Vec<u8> {
    ng_block(6, &epb_body(p, p.data.len() as u32))
}

/// A UDP datagram from `src` to `dst` (IPv4), as an Ethernet frame.
pub fn udp(src: &str, dst: &str, payload: &[u8], us: u64) -> Pkt {
    let (src, dst): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
    let (IpAddr::V4(s), IpAddr::V4(d)) = (src.ip(), dst.ip()) else {
        panic!("IPv4 only here")
    };
    let mut data = Vec::with_capacity(42 + payload.len());
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(s.octets(), d.octets(), 64)
        .udp(src.port(), dst.port())
        .write(&mut data, payload)
        .unwrap();
    Pkt { us, data }
}

/// A DNS message written field by field (RFC 1035 section 4): one question for `name`, type A,
/// and for a response one A record per address, each naming the question by a pointer to it.
pub fn dns_message(id: u16, response: bool, name: &str, records: &[&str], ttl: u32) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    // QR and RA for a response, RD for both; no error.
    let flags: u16 = if response { 0x8180 } else { 0x0100 };
    m.extend_from_slice(&flags.to_be_bytes());
    let answers = if response { records.len() as u16 } else { 0 };
    for count in [1, answers, 0, 0] {
        m.extend_from_slice(&count.to_be_bytes());
    }
    for label in name.split('.') {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    // The root label, then type A, class IN.
    m.extend_from_slice(&[0, 0, 1, 0, 1]);
    for ip in records.iter().take(usize::from(answers)) {
        let ip: std::net::Ipv4Addr = ip.parse().unwrap();
        // A pointer to the question's name at byte 12, type A, class IN, the TTL, 4 bytes.
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
        m.extend_from_slice(&ttl.to_be_bytes());
        m.extend_from_slice(&4u16.to_be_bytes());
        m.extend_from_slice(&ip.octets());
    }
    m
}

/// A resolver's query from `client` to `server` and the answer 300 µs later: `records` for
/// `name`, with `ttl`.
pub fn resolve(
    client: &str,
    server: &str,
    name: &str,
    records: &[&str],
    ttl: u32,
    us: u64,
) -> Vec<Pkt> {
    let id = (us / 1000) as u16;
    vec![
        udp(client, server, &dns_message(id, false, name, &[], 0), us),
        udp(
            server,
            client,
            &dns_message(id, true, name, records, ttl),
            us + 300,
        ),
    ]
}

/// A RESP command of bulk strings.
pub fn command(words: &[&str]) -> Vec<u8> {
    let mut c = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        c.extend_from_slice(format!("${}\r\n{w}\r\n", w.len()).as_bytes());
    }
    c
}
