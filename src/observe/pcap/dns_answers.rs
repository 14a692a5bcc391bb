//! DNS answers in a capture (`tcpdump ... or port 53`): what the application resolved, and
//! when. The grade needs them to tell a client that connected by name from one that connected by
//! address, and to say whether DNS named anything but the retiring proxy before the close.
//!
//! Only UDP responses from a DNS port are read; their bytes are untrusted, and hickory's parser
//! is bounded by the packet. A packet that does not parse is passed over: DNS is a fact the grade
//! uses when it is there, not something the capture must hold. A UDP packet on another port that
//! parses as a DNS message with a question is counted by its server's port, so that a grade
//! missing DNS can say where the capture holds it (`--dns-port PORT`) rather than ask for port 53.

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

/// What a UDP packet is as DNS.
#[derive(Debug, Clone, PartialEq)]
pub enum Udp {
    /// A response from one of the DNS ports read.
    Answer(Answer),
    /// A DNS message (a query to it, or a response from it) on this other port: DNS the capture
    /// holds but that is not read, for the grade to name with `--dns-port`.
    Elsewhere(u16),
    /// Not DNS, multicast (mDNS, LLMNR: no application's resolver), or not UDP.
    Nothing,
}

/// What a packet is as DNS: a response from one of `ports`, DNS on another port, or nothing.
pub fn read(linktype: i32, data: &[u8], ports: &[u16]) -> Udp {
    read_sliced(linktype, data, ports).unwrap_or(Udp::Nothing)
}

fn read_sliced(linktype: i32, data: &[u8], ports: &[u16]) -> Option<Udp> {
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
    let ours = ports.contains(&udp.source_port());
    if !ours && (to.is_multicast() || ports.contains(&udp.destination_port())) {
        // Multicast name services are no application's resolver; a query to a port read is
        // DNS that is read.
        return None;
    }
    // Off the ports read, one question (as every resolver asks) before any parse: other UDP
    // traffic costs a look at two bytes, and rarely passes for DNS.
    let payload = udp.payload();
    if !ours && (payload.len() < 17 || payload[4..6] != [0, 1]) {
        return None;
    }
    let message = Message::from_vec(payload).ok()?;
    let response = message.metadata.message_type == hickory_proto::op::MessageType::Response;
    let name = message.queries.first()?.name().to_string();
    if !ours {
        let port = if response {
            udp.source_port()
        } else {
            udp.destination_port()
        };
        return Some(Udp::Elsewhere(port));
    }
    if !response {
        return None;
    }
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
    Some(Udp::Answer(Answer {
        to,
        name: name.trim_end_matches('.').to_string(),
        records,
        ttl,
    }))
}

/// Names whose answers are followed: a capture of a busy host answers many names, and past
/// this many the others are left out of the lines (the grade reads them all).
const DNS_NAMES: usize = 64;

/// Plain `pcap`'s DNS lines (`--grade` keeps every answer besides, for the judge).
impl super::Analyzer {
    /// A DNS answer, told to the timeline when it changes what the name resolves to, as the
    /// watch tells its own polls: a first answer, then each change. An empty answer (the AAAA
    /// query of a name with only A records) says nothing about the addresses.
    pub(super) fn dns_answer(&mut self, a: &Answer, ts: std::time::SystemTime) {
        let Some(first) = a.records.first() else {
            return;
        };
        let key = (a.name.trim_end_matches('.').to_string(), first.is_ipv4());
        if !self.dns.contains_key(&key) && self.dns.len() >= DNS_NAMES {
            return;
        }
        let resolution = crate::network::handoff::Resolution::Addresses {
            addrs: a.records.clone(),
            ttl: a.ttl,
        };
        let Some(kind) = self.dns.entry(key.clone()).or_default().observe(resolution) else {
            return;
        };
        let dns = crate::observe::timeline::event::Dns { host: key.0, kind };
        let lines = self.observe(ts, 0, crate::observe::timeline::What::Dns(dns));
        self.emit_watch(lines);
    }
}
