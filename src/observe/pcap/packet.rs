//! One captured packet down to its TCP segment, with `etherparse` doing the link, IP and TCP
//! headers. Only the two capture-specific pseudo-headers etherparse does not know are stepped
//! over here: loopback/null's 4-byte address family and Linux cooked v2's 20-byte header.
//!
//! The common shape (Ethernet, cooked or loopback framing, then IPv4 without fragmentation or
//! IPv6 without extension headers, then TCP) is read by hand first: on a packet-heavy capture
//! building etherparse's full slice per packet was a quarter of the time. Anything else (VLAN
//! tags, IP options are fine, extension headers, lengths that do not add up) goes to
//! etherparse, whose answer stays the reference: `fast_path_agrees_with_etherparse` checks both.

use etherparse::{EtherType, NetSlice, SlicedPacket, TransportSlice};
use std::net::{IpAddr, SocketAddr};

/// Link types (the tcpdump numbers) this reader understands.
pub const NULL: i32 = 0;
pub const ETHERNET: i32 = 1;
pub const RAW: i32 = 101;
pub const LOOP: i32 = 108;
pub const LINUX_SLL: i32 = 113;
pub const IPV4: i32 = 228;
pub const IPV6: i32 = 229;
pub const LINUX_SLL2: i32 = 276;

/// The link type's name, for messages.
pub fn linktype_name(linktype: i32) -> String {
    let known = match linktype {
        NULL => "NULL (BSD loopback)",
        ETHERNET => "EN10MB (Ethernet)",
        RAW => "RAW (raw IP)",
        LOOP => "LOOP (OpenBSD loopback)",
        LINUX_SLL => "LINUX_SLL (Linux cooked capture v1)",
        LINUX_SLL2 => "LINUX_SLL2 (Linux cooked capture v2)",
        IPV4 => "IPV4",
        IPV6 => "IPV6",
        105 => "IEEE802_11 (Wi-Fi)",
        127 => "IEEE802_11_RADIOTAP (Wi-Fi with radiotap)",
        220 => "USB_LINUX_MMAPPED (USB)",
        _ => return format!("link type {linktype}"),
    };
    format!("link type {linktype}, {known}")
}

pub fn supported(linktype: i32) -> bool {
    matches!(
        linktype,
        NULL | ETHERNET | RAW | LOOP | LINUX_SLL | IPV4 | IPV6 | LINUX_SLL2
    )
}

/// The TCP part of a packet.
#[derive(Debug, Clone, Copy)]
pub struct Segment<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub ack: Option<u32>,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    pub payload: &'a [u8],
}

/// Why a packet gave no segment: not TCP (silently skipped) or unreadable headers (counted).
#[derive(Debug, PartialEq, Eq)]
pub enum Skip {
    NotTcp,
    Bad,
}

/// Decodes one packet of a supported link type. Inlined so that the segment is built in the
/// caller's frame rather than copied out of a call, once per packet.
#[inline]
pub fn segment(linktype: i32, data: &[u8]) -> Result<Segment<'_>, Skip> {
    match fast(linktype, data) {
        Some(seg) => Ok(seg),
        None => sliced(linktype, data),
    }
}

fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

fn be32(d: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

/// The common case read by hand; `None` for anything it does not fully understand.
#[inline]
fn fast(linktype: i32, data: &[u8]) -> Option<Segment<'_>> {
    let ip = match linktype {
        ETHERNET if data.len() >= 14 => match be16(data, 12) {
            0x0800 | 0x86dd => &data[14..],
            _ => return None,
        },
        LINUX_SLL2 if data.len() >= 20 => &data[20..],
        LINUX_SLL if data.len() >= 16 => &data[16..],
        NULL | LOOP if data.len() >= 4 => &data[4..],
        RAW | IPV4 | IPV6 => data,
        _ => return None,
    };
    let (src, dst, tcp) = match ip.first()? >> 4 {
        4 => {
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            if ip.len() < 20 || ihl < 20 {
                return None;
            }
            let total = usize::from(be16(ip, 2));
            // Fragments, other protocols and short or padded-out lengths: etherparse's.
            let fragment = be16(ip, 6) & 0x3fff != 0;
            if ip[9] != 6 || fragment || total < ihl || total > ip.len() {
                return None;
            }
            let s: [u8; 4] = ip[12..16].try_into().ok()?;
            let d: [u8; 4] = ip[16..20].try_into().ok()?;
            (IpAddr::from(s), IpAddr::from(d), &ip[ihl..total])
        }
        6 => {
            if ip.len() < 40 || ip[6] != 6 {
                return None;
            }
            let end = 40 + usize::from(be16(ip, 4));
            if end > ip.len() || end == 40 {
                return None;
            }
            let s: [u8; 16] = ip[8..24].try_into().ok()?;
            let d: [u8; 16] = ip[24..40].try_into().ok()?;
            (IpAddr::from(s), IpAddr::from(d), &ip[40..end])
        }
        _ => return None,
    };
    if tcp.len() < 20 {
        return None;
    }
    let off = usize::from(tcp[12] >> 4) * 4;
    if off < 20 || off > tcp.len() {
        return None;
    }
    let flags = tcp[13];
    Some(Segment {
        src: SocketAddr::new(src, be16(tcp, 0)),
        dst: SocketAddr::new(dst, be16(tcp, 2)),
        seq: be32(tcp, 4),
        ack: (flags & 0x10 != 0).then(|| be32(tcp, 8)),
        syn: flags & 0x02 != 0,
        fin: flags & 0x01 != 0,
        rst: flags & 0x04 != 0,
        payload: &tcp[off..],
    })
}

/// Any packet, through etherparse.
fn sliced(linktype: i32, data: &[u8]) -> Result<Segment<'_>, Skip> {
    let sliced = match linktype {
        ETHERNET => SlicedPacket::from_ethernet(data),
        LINUX_SLL => SlicedPacket::from_linux_sll(data),
        LINUX_SLL2 => {
            // Protocol (an EtherType) in the first two bytes; the header is 20 bytes.
            if data.len() < 20 {
                return Err(Skip::Bad);
            }
            let proto = u16::from_be_bytes([data[0], data[1]]);
            SlicedPacket::from_ether_type(EtherType(proto), &data[20..])
        }
        NULL | LOOP => {
            // The address family, in an order that depends on the capturing host: the IP
            // header's own version nibble is what tells v4 from v6.
            if data.len() < 4 {
                return Err(Skip::Bad);
            }
            SlicedPacket::from_ip(&data[4..])
        }
        RAW | IPV4 | IPV6 => SlicedPacket::from_ip(data),
        _ => return Err(Skip::NotTcp),
    }
    .map_err(|_| Skip::Bad)?;
    let (src_ip, dst_ip): (IpAddr, IpAddr) = match &sliced.net {
        Some(NetSlice::Ipv4(v4)) => {
            // A fragment other than the first carries no TCP header.
            if v4.header().is_fragmenting_payload() {
                return Err(Skip::NotTcp);
            }
            (
                v4.header().source_addr().into(),
                v4.header().destination_addr().into(),
            )
        }
        Some(NetSlice::Ipv6(v6)) => (
            v6.header().source_addr().into(),
            v6.header().destination_addr().into(),
        ),
        _ => return Err(Skip::NotTcp),
    };
    let Some(TransportSlice::Tcp(tcp)) = &sliced.transport else {
        return Err(Skip::NotTcp);
    };
    Ok(Segment {
        src: SocketAddr::new(src_ip, tcp.source_port()),
        dst: SocketAddr::new(dst_ip, tcp.destination_port()),
        seq: tcp.sequence_number(),
        ack: tcp.ack().then(|| tcp.acknowledgment_number()),
        syn: tcp.syn(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        payload: tcp.payload(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{PacketBuilder, TcpHeader};

    fn tcp(payload: &[u8], v6: bool, flags: u8) -> Vec<u8> {
        let mut h = TcpHeader::new(40001, 12000, 0xdead_beef, 64000);
        h.syn = flags & 2 != 0;
        h.fin = flags & 1 != 0;
        h.rst = flags & 4 != 0;
        h.ack = flags & 0x10 != 0;
        h.acknowledgment_number = 77;
        let mut out = Vec::new();
        let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        if v6 {
            b.ipv6([0xfd; 16], [0xfe; 16], 64)
                .tcp_header(h)
                .write(&mut out, payload)
                .unwrap();
        } else {
            b.ipv4([10, 0, 0, 5], [10, 0, 0, 9], 64)
                .tcp_header(h)
                .write(&mut out, payload)
                .unwrap();
        }
        out
    }

    fn same(a: &Segment<'_>, b: &Segment<'_>) -> bool {
        (a.src, a.dst, a.seq, a.ack, a.syn, a.fin, a.rst, a.payload)
            == (b.src, b.dst, b.seq, b.ack, b.syn, b.fin, b.rst, b.payload)
    }

    #[test]
    fn fast_path_agrees_with_etherparse() {
        for v6 in [false, true] {
            for flags in [0x02, 0x12, 0x10, 0x11, 0x14] {
                for payload in [&b""[..], b"*1\r\n$4\r\nPING\r\n"] {
                    let mut data = tcp(payload, v6, flags);
                    let quick = fast(ETHERNET, &data).expect("the common shape");
                    let slow = sliced(ETHERNET, &data).expect("etherparse reads it");
                    assert!(same(&quick, &slow), "{quick:?} {slow:?}");
                    // Ethernet padding after the IP packet is not payload.
                    data.extend_from_slice(&[0; 6]);
                    let padded = fast(ETHERNET, &data).expect("padded");
                    assert_eq!(padded.payload, payload);
                }
            }
        }
    }

    #[test]
    fn odd_shapes_go_to_etherparse() {
        let data = tcp(b"abc", false, 0x10);
        // Cut inside the TCP header, or the IP length says more than there is.
        assert!(fast(ETHERNET, &data[..40]).is_none());
        let mut long = data.clone();
        long[16] = 0xff;
        assert!(fast(ETHERNET, &long).is_none());
        // A fragment.
        let mut frag = data.clone();
        frag[20] = 0x20;
        assert!(fast(ETHERNET, &frag).is_none());
        // A VLAN tag.
        let mut vlan = data.clone();
        vlan[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        assert!(fast(ETHERNET, &vlan).is_none());
    }
}
