//! DNS answers in a capture (`tcpdump ... or port 53`): what the application resolved, and
//! when. The grade needs them to tell a client that connected by name from one that connected by
//! address, and to say whether DNS named anything but the retiring proxy before the close.
//!
//! Only UDP responses from a DNS port are read; their bytes are untrusted, and hickory's parser
//! is bounded by the packet. A packet that does not parse is passed over: DNS is a fact the grade
//! uses when it is there, not something the capture must hold.

use std::net::IpAddr;

use etherparse::{EtherType, NetSlice, SlicedPacket, TransportSlice};
use hickory_proto::op::Message;
use hickory_proto::rr::RData;

use super::packet;

/// One DNS response: to whom, for which name, with which addresses.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub to: IpAddr,
    pub name: String,
    pub records: Vec<IpAddr>,
    /// The smallest TTL of those records.
    pub ttl: Option<u32>,
}

/// At most this many records are kept from one answer.
const RECORDS: usize = 32;

/// The DNS response a packet carries, when it is one from one of `ports`.
pub fn answer(linktype: i32, data: &[u8], ports: &[u16]) -> Option<Answer> {
    let sliced = match linktype {
        packet::ETHERNET => SlicedPacket::from_ethernet(data).ok()?,
        packet::LINUX_SLL => SlicedPacket::from_linux_sll(data).ok()?,
        packet::LINUX_SLL2 if data.len() >= 20 => {
            let proto = u16::from_be_bytes([data[0], data[1]]);
            SlicedPacket::from_ether_type(EtherType(proto), &data[20..]).ok()?
        }
        packet::NULL | packet::LOOP if data.len() >= 4 => SlicedPacket::from_ip(&data[4..]).ok()?,
        packet::RAW | packet::IPV4 | packet::IPV6 => SlicedPacket::from_ip(data).ok()?,
        _ => return None,
    };
    let to: IpAddr = match &sliced.net {
        Some(NetSlice::Ipv4(v4)) => v4.header().destination_addr().into(),
        Some(NetSlice::Ipv6(v6)) => v6.header().destination_addr().into(),
        _ => return None,
    };
    let Some(TransportSlice::Udp(udp)) = &sliced.transport else {
        return None;
    };
    if !ports.contains(&udp.source_port()) {
        return None;
    }
    let message = Message::from_vec(udp.payload()).ok()?;
    if message.metadata.message_type != hickory_proto::op::MessageType::Response {
        return None;
    }
    let name = message.queries.first()?.name().to_string();
    let ttl = message
        .answers
        .iter()
        .filter(|r| matches!(r.data, RData::A(_) | RData::AAAA(_)))
        .map(|r| r.ttl)
        .min();
    let records = message
        .answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            RData::AAAA(a) => Some(IpAddr::V6(a.0)),
            _ => None,
        })
        .take(RECORDS)
        .collect();
    Some(Answer {
        to,
        name: name.trim_end_matches('.').to_string(),
        records,
        ttl,
    })
}
