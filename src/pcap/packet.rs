//! One captured packet down to its TCP segment, with `etherparse` doing the link, IP and TCP
//! headers. Only the two capture-specific pseudo-headers etherparse does not know are stepped
//! over here: loopback/null's 4-byte address family and Linux cooked v2's 20-byte header.

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

/// Decodes one packet of a supported link type.
pub fn segment(linktype: i32, data: &[u8]) -> Result<Segment<'_>, Skip> {
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
