//! The resolver, the poller and the handoff dry run against a real authoritative server.
//!
//! `SimDns` is a real hickory-server on 127.0.0.1; the resolver talks to it over real UDP and TCP
//! sockets with the same options `--dns-server` gives. Nothing sleeps for a fixed time: tests wait
//! for the event they expect (with a generous ceiling so a bug fails instead of hanging).

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use maintwatch::network::dns::{
    spawn_poller, DnsError, DnsEvent, DnsEventKind, DnsOptions, DnsResolver,
};
use maintwatch::network::handoff::{
    self, advertised, Advertised, EndpointHost, FixedJitter, HandoffInput, Outcome, Resolution,
    Resolve, TokioClock,
};
use maintwatch::simulator::sim::dns_server::SimDns;
use tokio::sync::mpsc;

const ZONE: &str = "sim.maintwatch.test.";
const HOST: &str = "db.sim.maintwatch.test.";
/// Ceiling for "the event we wait for arrives"; never reached unless something is broken.
const PATIENCE: Duration = Duration::from_secs(20);

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn set(list: &[&str]) -> BTreeSet<IpAddr> {
    list.iter().map(|s| ip(s)).collect()
}

async fn sim() -> SimDns {
    SimDns::start("127.0.0.1:0".parse().unwrap(), ZONE)
        .await
        .expect("start SimDns")
}

fn resolver_for(server: SocketAddr) -> DnsResolver {
    DnsResolver::new(&DnsOptions {
        server: Some(server),
        timeout: Duration::from_secs(2),
    })
    .expect("build resolver")
}

async fn next_event(rx: &mut mpsc::UnboundedReceiver<DnsEvent>) -> DnsEvent {
    tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .expect("no DNS event arrived")
        .expect("poller ended")
}

#[tokio::test]
async fn resolver_sees_the_initial_answer_then_the_change() {
    let dns = sim().await;
    dns.set_records(HOST, &[ip("127.0.0.2")], 5).await;
    let resolver = resolver_for(dns.addr());

    assert_eq!(
        resolver.resolve(HOST).await,
        Resolution::Addresses {
            addrs: vec![ip("127.0.0.2")],
            ttl: Some(5)
        }
    );

    dns.set_records(HOST, &[ip("127.0.0.3")], 5).await;
    // No cache: the very next query sees the new record.
    assert_eq!(
        resolver.resolve(HOST).await,
        Resolution::Addresses {
            addrs: vec![ip("127.0.0.3")],
            ttl: Some(5)
        }
    );
    assert_eq!(
        resolver.resolve_for_connect(HOST).await.unwrap(),
        vec![ip("127.0.0.3")]
    );
    dns.shutdown().await;
}

#[tokio::test]
async fn a_and_aaaa_answers_come_back_together() {
    let dns = sim().await;
    dns.set_records(HOST, &[ip("127.0.0.2"), ip("fd00::2")], 30)
        .await;
    let resolver = resolver_for(dns.addr());
    match resolver.resolve(HOST).await {
        Resolution::Addresses { addrs, ttl } => {
            assert_eq!(
                addrs.into_iter().collect::<BTreeSet<_>>(),
                set(&["127.0.0.2", "fd00::2"])
            );
            assert_eq!(ttl, Some(30));
        }
        other => panic!("expected addresses, got {other:?}"),
    }
    dns.shutdown().await;
}

#[tokio::test]
async fn poller_reports_initial_then_changed() {
    let dns = sim().await;
    dns.set_records(HOST, &[ip("127.0.0.2")], 5).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let task = spawn_poller(
        resolver_for(dns.addr()),
        HOST.to_string(),
        Duration::from_millis(20),
        tx,
    );

    let first = next_event(&mut rx).await;
    assert_eq!(
        first.kind,
        DnsEventKind::Initial {
            addrs: set(&["127.0.0.2"]),
            ttl: Some(5)
        }
    );

    dns.set_records(HOST, &[ip("127.0.0.3")], 5).await;
    // Unchanged polls send nothing, so the next event is the change itself.
    let second = next_event(&mut rx).await;
    assert_eq!(
        second.kind,
        DnsEventKind::Changed {
            before: set(&["127.0.0.2"]),
            after: set(&["127.0.0.3"]),
            ttl: Some(5)
        }
    );
    assert!(second.at > first.at);

    // Dropping the receiver ends the poller.
    drop(rx);
    tokio::time::timeout(PATIENCE, task)
        .await
        .expect("poller did not stop")
        .unwrap();
    dns.shutdown().await;
}

#[tokio::test]
async fn missing_name_is_cannot_tell_never_changed_to_empty() {
    let dns = sim().await;
    dns.set_records(HOST, &[ip("127.0.0.2")], 5).await;
    let resolver = resolver_for(dns.addr());

    // NXDOMAIN is an empty answer, and an empty answer cannot tell.
    let missing = resolver.resolve("nope.sim.maintwatch.test.").await;
    assert_eq!(
        missing,
        Resolution::Addresses {
            addrs: vec![],
            ttl: None
        }
    );
    assert_eq!(
        advertised(&missing, ip("127.0.0.2")),
        Advertised::CannotTell
    );
    match resolver
        .resolve_for_connect("nope.sim.maintwatch.test.")
        .await
    {
        Err(e @ DnsError::NoAddresses { .. }) => {
            assert!(e.to_string().contains("nope.sim.maintwatch.test."), "{e}")
        }
        other => panic!("expected NoAddresses, got {other:?}"),
    }

    let (tx, mut rx) = mpsc::unbounded_channel();
    let _task = spawn_poller(
        resolver.clone(),
        HOST.to_string(),
        Duration::from_millis(20),
        tx,
    );
    assert!(matches!(
        next_event(&mut rx).await.kind,
        DnsEventKind::Initial { .. }
    ));

    // The record disappears: one CannotTell, not a change to the empty set.
    dns.set_records(HOST, &[], 5).await;
    let ev = next_event(&mut rx).await;
    assert!(
        matches!(&ev.kind, DnsEventKind::CannotTell { reason } if !reason.is_empty()),
        "{ev:?}"
    );

    // It comes back unchanged: recovered, and still no Changed anywhere.
    dns.set_records(HOST, &[ip("127.0.0.2")], 5).await;
    assert_eq!(
        next_event(&mut rx).await.kind,
        DnsEventKind::Recovered {
            addrs: set(&["127.0.0.2"]),
            ttl: Some(5)
        }
    );
    dns.shutdown().await;
}

#[tokio::test]
async fn poller_on_a_name_that_never_existed_starts_with_cannot_tell() {
    let dns = sim().await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let _task = spawn_poller(
        resolver_for(dns.addr()),
        "nope.sim.maintwatch.test.".to_string(),
        Duration::from_millis(20),
        tx,
    );
    assert!(matches!(
        next_event(&mut rx).await.kind,
        DnsEventKind::CannotTell { .. }
    ));
    // Only once per run: the next event is the name appearing.
    dns.set_records("nope.sim.maintwatch.test.", &[ip("127.0.0.9")], 5)
        .await;
    assert_eq!(
        next_event(&mut rx).await.kind,
        DnsEventKind::Initial {
            addrs: set(&["127.0.0.9"]),
            ttl: Some(5)
        }
    );
    dns.shutdown().await;
}

#[tokio::test]
async fn tcp_path_answers_on_the_same_port() {
    let dns = sim().await;
    dns.set_records(HOST, &[ip("127.0.0.2")], 5).await;
    let tcp = DnsResolver::tcp_only(dns.addr(), Duration::from_secs(2)).unwrap();
    assert_eq!(
        tcp.resolve(HOST).await,
        Resolution::Addresses {
            addrs: vec![ip("127.0.0.2")],
            ttl: Some(5)
        }
    );
    dns.set_records(HOST, &[ip("127.0.0.3")], 5).await;
    assert_eq!(
        tcp.resolve_for_connect(HOST).await.unwrap(),
        vec![ip("127.0.0.3")]
    );
    dns.shutdown().await;
}

#[tokio::test]
async fn silent_nameserver_is_a_failure_not_an_empty_answer() {
    // A UDP socket that never answers, and no TCP listener on its port.
    let silent = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let resolver = DnsResolver::new(&DnsOptions {
        server: Some(silent.local_addr().unwrap()),
        timeout: Duration::from_millis(200),
    })
    .unwrap();
    let res = resolver.resolve(HOST).await;
    assert!(
        matches!(&res, Resolution::Failed { reason } if !reason.is_empty()),
        "{res:?}"
    );
    assert_eq!(advertised(&res, ip("127.0.0.2")), Advertised::CannotTell);
    match resolver.resolve_for_connect(HOST).await {
        Err(e @ DnsError::Lookup { .. }) => assert!(e.to_string().contains(HOST), "{e}"),
        other => panic!("expected a lookup error, got {other:?}"),
    }
}

fn handoff_input(current: &str, poll_interval: Duration) -> HandoffInput {
    HandoffInput {
        endpoint: EndpointHost::Name(HOST.to_string()),
        port: 12000,
        current: Some(ip(current)),
        successor: None,
        window_secs: 15,
        poll_interval,
    }
}

#[tokio::test]
async fn handoff_steps_sideways_against_real_dns() {
    let dns = sim().await;
    dns.set_records(HOST, &[ip("127.0.0.2"), ip("127.0.0.3")], 5)
        .await;
    let resolver = resolver_for(dns.addr());
    let input = handoff_input("127.0.0.2", Duration::from_secs(1));
    // Spawned, as the watcher runs it: this also proves the run future is Send.
    let out = tokio::spawn(async move {
        handoff::run(
            &input,
            &resolver,
            &TokioClock::new(),
            &mut FixedJitter(Duration::ZERO),
            std::future::pending::<()>(),
        )
        .await
    })
    .await
    .unwrap();
    assert!(
        matches!(out, Outcome::SteppedSideways { to, .. } if to == ip("127.0.0.3")),
        "{out}"
    );
    dns.shutdown().await;
}

/// The real resolver, plus a hook that moves the record after the `after`-th answer: the shape
/// of the measured case where DNS trails the `MOVING` by a few polls.
struct MovesAfter<'a> {
    inner: DnsResolver,
    dns: &'a SimDns,
    after: u32,
    calls: AtomicU32,
}

impl Resolve for MovesAfter<'_> {
    async fn resolve(&self, host: &str) -> Resolution {
        let answer = self.inner.resolve(host).await;
        if self.calls.fetch_add(1, Ordering::SeqCst) + 1 == self.after {
            self.dns.set_records(HOST, &[ip("127.0.0.3")], 5).await;
        }
        answer
    }
}

#[tokio::test]
async fn handoff_moves_once_real_dns_follows() {
    let dns = sim().await;
    dns.set_records(HOST, &[ip("127.0.0.2")], 5).await;
    let resolver = MovesAfter {
        inner: resolver_for(dns.addr()),
        dns: &dns,
        after: 3,
        calls: AtomicU32::new(0),
    };
    let out = handoff::run(
        &handoff_input("127.0.0.2", Duration::from_millis(20)),
        &resolver,
        &TokioClock::new(),
        &mut FixedJitter(Duration::ZERO),
        std::future::pending(),
    )
    .await;
    assert!(
        matches!(out, Outcome::Moved { to, polls: 4, .. } if to == ip("127.0.0.3")),
        "{out}"
    );
    dns.shutdown().await;
}

/// A resolver stuck on a dead nameserver: never answers.
struct NeverAnswers;

impl Resolve for NeverAnswers {
    fn resolve(&self, _host: &str) -> impl std::future::Future<Output = Resolution> + Send {
        std::future::pending()
    }

    fn source(&self) -> String {
        "nameserver 127.0.0.1:9".into()
    }
}

/// A nameserver that never answers is reported within one interval plus the query timeout,
/// and before that the slow poll says what it waits for (paused clock: exact offsets).
#[tokio::test(start_paused = true)]
async fn unanswered_poll_says_what_it_waits_for_then_cannot_tell_within_the_timeout() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let started = tokio::time::Instant::now();
    let timeout = Duration::from_secs(3);
    let _task = maintwatch::network::dns::spawn_poller_bounded(
        NeverAnswers,
        HOST.to_string(),
        Duration::from_millis(500),
        timeout,
        tx,
    );
    let waiting = next_event(&mut rx).await;
    let DnsEventKind::Waiting { what } = &waiting.kind else {
        panic!("{waiting:?}")
    };
    assert!(
        what.contains(HOST) && what.contains("nameserver 127.0.0.1:9"),
        "{what}"
    );
    assert_eq!(waiting.at - started, Duration::from_secs(1));
    let failed = next_event(&mut rx).await;
    let DnsEventKind::CannotTell { reason } = &failed.kind else {
        panic!("{failed:?}")
    };
    assert!(
        reason.contains("no answer from nameserver 127.0.0.1:9 within 3s"),
        "{reason}"
    );
    // The first poll is at once: "cannot tell" at the query timeout, not after retries.
    assert_eq!(failed.at - started, timeout);
    // The run of failures is reported once: the next slow poll says nothing new.
    let quiet = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await;
    assert!(quiet.is_err(), "{quiet:?}");
}

/// The same against a real UDP socket on loopback that never answers: the poller says it is
/// waiting, then "cannot tell", in that order, instead of staying silent.
#[tokio::test]
async fn silent_nameserver_socket_is_waiting_then_cannot_tell() {
    let silent = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let timeout = Duration::from_millis(400);
    let resolver = DnsResolver::new(&DnsOptions {
        server: Some(silent.local_addr().unwrap()),
        timeout,
    })
    .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let _task = maintwatch::network::dns::spawn_poller_bounded(
        resolver,
        HOST.to_string(),
        Duration::from_millis(100),
        timeout,
        tx,
    );
    let first = next_event(&mut rx).await;
    assert!(
        matches!(&first.kind, DnsEventKind::Waiting { what } if what.contains(&silent.local_addr().unwrap().to_string())),
        "{first:?}"
    );
    let second = next_event(&mut rx).await;
    assert!(
        matches!(second.kind, DnsEventKind::CannotTell { .. }),
        "{second:?}"
    );
}
