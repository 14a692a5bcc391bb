//! The simulator's authoritative DNS server.
//!
//! The interesting part of a handoff is the race between the `MOVING` and the DNS record that
//! follows it. To replay that race the simulator needs a real nameserver whose records change on
//! the scenario's clock, so the watcher's real resolver (UDP, TCP fallback, no cache) is what gets
//! exercised, not a stand-in. This is a hickory-server `Server` with one in-memory primary zone.
//!
//! Why `InMemoryZoneHandler` rather than a hand-written handler: it already gives the exact
//! authoritative semantics the watcher must cope with (AA flag, SOA in the authority section of
//! negative answers, NXDOMAIN versus NODATA, CNAME chasing), and its record map can be replaced
//! under its own lock while the server runs. Keeping an `Arc` to it is enough to change records.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::rdata::{A, AAAA, NS, SOA};
use hickory_proto::rr::{LowerName, Name, RData, Record, RecordSet, RecordType, RrKey};
use hickory_server::net::runtime::Time;
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneHandler, ZoneType};
use hickory_server::Server;
use tokio::net::{TcpListener, UdpSocket};

/// TTL of the zone's own records (SOA, NS) and the negative-answer TTL.
const ZONE_TTL: u32 = 5;

/// Told of every query the server answers: who asked, and for which name. The grade needs it to
/// tell a client that resolved the hostname from one that connected by address.
pub type OnQuery = Arc<dyn Fn(SocketAddr, String) + Send + Sync>;

/// The catalog, with every query told to [`OnQuery`] before it is answered.
struct Narrating {
    catalog: Catalog,
    on_query: Option<OnQuery>,
}

// The trait is declared through `async_trait`: this is its expansion, written out so that the
// crate is not a dependency of ours for one impl.
impl RequestHandler for Narrating {
    fn handle_request<'life0, 'life1, 'async_trait, R, T>(
        &'life0 self,
        request: &'life1 Request,
        response_handle: R,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ResponseInfo> + Send + 'async_trait>>
    where
        R: ResponseHandler + 'async_trait,
        T: Time + 'async_trait,
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            if let (Some(tell), Ok(info)) = (&self.on_query, request.request_info()) {
                tell(info.src, info.query.name().to_string());
            }
            self.catalog
                .handle_request::<R, T>(request, response_handle)
                .await
        })
    }
}

/// A running authoritative server for one zone, on one UDP and one TCP socket sharing a port.
pub struct SimDns {
    addr: SocketAddr,
    zone: Name,
    handler: Arc<InMemoryZoneHandler>,
    on_query: Option<OnQuery>,
    server: Server<Narrating>,
}

impl SimDns {
    /// Serve zone `zone` (e.g. "sim.maintwatch.test.") authoritatively on UDP and TCP at `bind`.
    /// With port 0 a free port is picked, the same one for UDP and TCP.
    pub async fn start(bind: SocketAddr, zone: &str) -> io::Result<SimDns> {
        SimDns::start_narrated(bind, zone, None).await
    }

    /// [`SimDns::start`], telling `on_query` of every query.
    pub async fn start_narrated(
        bind: SocketAddr,
        zone: &str,
        on_query: Option<OnQuery>,
    ) -> io::Result<SimDns> {
        let zone = parse_name(zone, None)?;
        let (udp, tcp) = bind_pair(bind).await?;
        let addr = udp.local_addr()?;

        let handler = Arc::new(new_zone(&zone).map_err(io::Error::other)?);
        let mut catalog = Catalog::new();
        catalog.upsert(
            LowerName::new(&zone),
            vec![handler.clone() as Arc<dyn ZoneHandler>],
        );

        let mut server = Server::new(Narrating {
            catalog,
            on_query: on_query.clone(),
        });
        server.register_socket(udp);
        // The timeout closes idle TCP clients; 32 responses may queue per connection.
        server.register_listener(tcp, Duration::from_secs(10), 32);
        Ok(SimDns {
            addr,
            zone,
            handler,
            on_query,
            server,
        })
    }

    /// The address UDP and TCP both listen on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replace the A/AAAA records of `host` (a name inside the zone, e.g.
    /// "db.sim.maintwatch.test."; a name without the final dot is taken as absolute too) with
    /// `addrs`, TTL `ttl` seconds. Takes effect for the next query. An empty `addrs` removes the
    /// name, which then answers NXDOMAIN.
    ///
    /// # Panics
    ///
    /// If `host` is not a valid name inside the zone: the scenario is wrong, and a record that
    /// could never be served would only make it fail later and more obscurely.
    pub async fn set_records(&self, host: &str, addrs: &[IpAddr], ttl: u32) {
        let name = match parse_name(host, None) {
            Ok(n) => n,
            Err(e) => panic!("SimDns::set_records: {e}"),
        };
        assert!(
            self.zone.zone_of(&name),
            "SimDns::set_records: {name} is outside the zone {}",
            self.zone
        );
        let lower = LowerName::new(&name);
        let mut v4 = RecordSet::with_ttl(name.clone(), RecordType::A, ttl);
        let mut v6 = RecordSet::with_ttl(name.clone(), RecordType::AAAA, ttl);
        for addr in addrs {
            match addr {
                IpAddr::V4(a) => v4.add_rdata(RData::A(A(*a))),
                IpAddr::V6(a) => v6.add_rdata(RData::AAAA(AAAA(*a))),
            };
        }

        // Both families are swapped under one write lock, so no query sees half an update.
        let mut records = self.handler.records_mut().await;
        for set in [v4, v6] {
            let key = RrKey::new(lower.clone(), set.record_type());
            if set.is_empty() {
                // An empty set left in the map would answer NOERROR with nothing, not NXDOMAIN.
                records.remove(&key);
            } else {
                records.insert(key, Arc::new(set));
            }
        }
    }

    /// The same zone, the same records, also served at `bind` (UDP and TCP) until the returned
    /// server is shut down: a resolver that only speaks to port 53 (glibc's, from a private
    /// `/etc/resolv.conf`) needs the simulator's DNS there, and one zone handler keeps both
    /// addresses answering alike on every change. Its queries are told to the same
    /// [`OnQuery`]: a client that resolves there resolved the hostname, for the grade too.
    pub async fn serve_also(&self, bind: SocketAddr) -> io::Result<SimDns> {
        let (udp, tcp) = bind_pair(bind).await?;
        let addr = udp.local_addr()?;
        let mut catalog = Catalog::new();
        catalog.upsert(
            LowerName::new(&self.zone),
            vec![self.handler.clone() as Arc<dyn ZoneHandler>],
        );
        let mut server = Server::new(Narrating {
            catalog,
            on_query: self.on_query.clone(),
        });
        server.register_socket(udp);
        server.register_listener(tcp, Duration::from_secs(10), 32);
        Ok(SimDns {
            addr,
            zone: self.zone.clone(),
            handler: self.handler.clone(),
            on_query: self.on_query.clone(),
            server,
        })
    }

    /// Stop serving and wait for the server tasks to end.
    pub async fn shutdown(mut self) {
        // An error here only says a socket task had failed earlier; nothing is left to clean up.
        let _ = self.server.shutdown_gracefully().await;
    }
}

fn parse_name(s: &str, origin: Option<&Name>) -> io::Result<Name> {
    let mut name = Name::parse(s, origin).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad DNS name {s:?}: {e}"),
        )
    })?;
    name.set_fqdn(true);
    Ok(name)
}

/// The zone apex: SOA (its minimum is the negative-answer TTL) and one NS.
fn new_zone(zone: &Name) -> Result<InMemoryZoneHandler, String> {
    let ns = Name::from_ascii("ns")
        .and_then(|n| n.append_domain(zone))
        .map_err(|e| e.to_string())?;
    let hostmaster = Name::from_ascii("hostmaster")
        .and_then(|n| n.append_domain(zone))
        .map_err(|e| e.to_string())?;
    let soa = SOA::new(ns.clone(), hostmaster, 1, 3600, 600, 86400, ZONE_TTL);

    let mut records = BTreeMap::new();
    let mut soa_set = RecordSet::with_ttl(zone.clone(), RecordType::SOA, ZONE_TTL);
    soa_set.insert(
        Record::from_rdata(zone.clone(), ZONE_TTL, RData::SOA(soa)),
        0,
    );
    let mut ns_set = RecordSet::with_ttl(zone.clone(), RecordType::NS, ZONE_TTL);
    ns_set.add_rdata(RData::NS(NS(ns)));
    for set in [soa_set, ns_set] {
        records.insert(RrKey::new(LowerName::new(zone), set.record_type()), set);
    }
    InMemoryZoneHandler::new(zone.clone(), records, ZoneType::Primary, AxfrPolicy::Deny)
}

/// Bind UDP first, then TCP on the same port. With port 0 the kernel picks UDP's port, which a
/// TCP socket may already hold; then start over with another UDP port.
async fn bind_pair(bind: SocketAddr) -> io::Result<(UdpSocket, TcpListener)> {
    const ATTEMPTS: usize = 10;
    let mut last_err = None;
    for _ in 0..ATTEMPTS {
        let udp = UdpSocket::bind(bind).await?;
        let addr = udp.local_addr()?;
        match TcpListener::bind(addr).await {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(e) if bind.port() == 0 && e.kind() == io::ErrorKind::AddrInUse => {
                last_err = Some(e)
            }
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no free port for UDP and TCP")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::{Message, Query, ResponseCode};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const ZONE: &str = "sim.maintwatch.test.";

    fn query(name: &str, rtype: RecordType) -> Vec<u8> {
        let mut m = Message::query();
        m.metadata.id = 0x4d57;
        m.add_query(Query::query(Name::from_ascii(name).unwrap(), rtype));
        m.to_vec().unwrap()
    }

    async fn ask_udp(server: SocketAddr, name: &str, rtype: RecordType) -> Message {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        sock.send_to(&query(name, rtype), server).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = sock.recv(&mut buf).await.unwrap();
        Message::from_vec(&buf[..n]).unwrap()
    }

    async fn ask_tcp(server: SocketAddr, name: &str, rtype: RecordType) -> Message {
        let mut s = tokio::net::TcpStream::connect(server).await.unwrap();
        let q = query(name, rtype);
        s.write_all(&(q.len() as u16).to_be_bytes()).await.unwrap();
        s.write_all(&q).await.unwrap();
        let len = s.read_u16().await.unwrap();
        let mut buf = vec![0u8; len as usize];
        s.read_exact(&mut buf).await.unwrap();
        Message::from_vec(&buf).unwrap()
    }

    fn a_records(m: &Message) -> Vec<(IpAddr, u32)> {
        m.answers
            .iter()
            .filter_map(|r| match &r.data {
                RData::A(a) => Some((IpAddr::V4(a.0), r.ttl)),
                RData::AAAA(a) => Some((IpAddr::V6(a.0), r.ttl)),
                _ => None,
            })
            .collect()
    }

    /// A server on a free loopback port, with `name` at 127.0.0.2 for 5 s.
    async fn started_with(name: &str) -> SimDns {
        let dns = SimDns::start("127.0.0.1:0".parse().unwrap(), ZONE)
            .await
            .unwrap();
        dns.set_records(name, &["127.0.0.2".parse().unwrap()], 5)
            .await;
        dns
    }

    #[tokio::test]
    async fn answers_authoritatively_and_follows_set_records() {
        let host = "db.sim.maintwatch.test.";
        let dns = started_with(host).await;

        let m = ask_udp(dns.addr(), host, RecordType::A).await;
        assert_eq!(m.metadata.id, 0x4d57);
        assert!(m.metadata.authoritative);
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        assert_eq!(a_records(&m), vec![("127.0.0.2".parse().unwrap(), 5)]);

        // Replaced, not appended; IPv6 goes to AAAA only.
        let v6: IpAddr = "fd00::3".parse().unwrap();
        dns.set_records(host, &["127.0.0.3".parse().unwrap(), v6], 7)
            .await;
        let m = ask_tcp(dns.addr(), host, RecordType::A).await;
        assert!(m.metadata.authoritative);
        assert_eq!(a_records(&m), vec![("127.0.0.3".parse().unwrap(), 7)]);
        let m = ask_udp(dns.addr(), host, RecordType::AAAA).await;
        assert_eq!(a_records(&m), vec![(v6, 7)]);

        // Emptied: the name is gone (NXDOMAIN), with the SOA to say so authoritatively.
        dns.set_records(host, &[], 5).await;
        let m = ask_udp(dns.addr(), host, RecordType::A).await;
        assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
        assert!(m.answers.is_empty());
        dns.shutdown().await;
    }

    #[tokio::test]
    async fn apex_soa_nxdomain_and_nodata() {
        let dns = started_with("db.sim.maintwatch.test").await;

        let m = ask_udp(dns.addr(), ZONE, RecordType::SOA).await;
        assert!(m.metadata.authoritative);
        assert!(matches!(m.answers.as_slice(), [r] if matches!(r.data, RData::SOA(_))));

        let m = ask_udp(dns.addr(), "nope.sim.maintwatch.test.", RecordType::A).await;
        assert!(m.metadata.authoritative);
        assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
        assert!(m
            .authorities
            .iter()
            .any(|r| matches!(r.data, RData::SOA(_))));

        // The name exists with A only: AAAA is NODATA (NOERROR, empty), not NXDOMAIN.
        let m = ask_udp(dns.addr(), "db.sim.maintwatch.test.", RecordType::AAAA).await;
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        assert!(m.answers.is_empty());

        // Outside the zone: not ours to answer.
        let m = ask_udp(dns.addr(), "db.example.test.", RecordType::A).await;
        assert_eq!(m.metadata.response_code, ResponseCode::Refused);
        dns.shutdown().await;
    }

    /// The second address answers from the same records, changes included.
    #[tokio::test]
    async fn serve_also_answers_the_same_records() {
        let host = "db.sim.maintwatch.test.";
        let dns = started_with(host).await;
        let also = dns
            .serve_also("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        assert_ne!(also.addr(), dns.addr());
        dns.set_records(host, &["127.0.0.3".parse().unwrap()], 5)
            .await;
        let m = ask_udp(also.addr(), host, RecordType::A).await;
        assert_eq!(a_records(&m), vec![("127.0.0.3".parse().unwrap(), 5)]);
        let m = ask_tcp(also.addr(), host, RecordType::A).await;
        assert_eq!(a_records(&m), vec![("127.0.0.3".parse().unwrap(), 5)]);
        also.shutdown().await;
        dns.shutdown().await;
    }

    #[tokio::test]
    #[should_panic(expected = "outside the zone")]
    async fn set_records_outside_the_zone_panics() {
        let dns = SimDns::start("127.0.0.1:0".parse().unwrap(), ZONE)
            .await
            .unwrap();
        dns.set_records("db.example.test.", &[], 5).await;
    }
}
