//! Resolving the endpoint and watching its address set change.
//!
//! A `MOVING` is only half the story: the other half is when DNS stops naming the node being
//! retired (measured at +4.4 s, +9.7 s and once +18.7 s after the notification). This module owns
//! the resolver that sees those changes as they happen (no cache, no hosts file, optionally one
//! given nameserver) and a poller that turns successive answers into address-set change events.
//! It prints nothing; the timeline decides what an event means.

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_resolver::config::{
    ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::NetError;
use hickory_resolver::proto::rr::{RData, RecordType};
use hickory_resolver::{Resolver, TokioResolver};
use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::network::handoff::{Resolution, Resolve};

/// Errors of this module; each names the host or nameserver it is about.
#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    #[error("invalid DNS server {input:?}: expected IP, IP:PORT or [IPv6]:PORT")]
    BadServer { input: String },
    #[error("cannot read the system resolver configuration: {reason}")]
    SystemConfig { reason: String },
    #[error("cannot set up a resolver for nameserver {server}: {reason}")]
    Setup { server: String, reason: String },
    #[error("{host} has no A or AAAA records")]
    NoAddresses { host: String },
    #[error("cannot resolve {host}: {reason}")]
    Lookup { host: String, reason: String },
}

/// How to resolve: the `--dns-server` and `--dns-timeout` of the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsOptions {
    /// One nameserver to ask instead of the system's (`--dns-server`); `None` = system resolver.
    pub server: Option<SocketAddr>,
    /// Per-query timeout.
    pub timeout: Duration,
}

impl Default for DnsOptions {
    /// The system resolver with a 2 s timeout: long enough for a distant nameserver, short
    /// enough that a lost answer is reported within a couple of 1 s polls.
    fn default() -> Self {
        Self {
            server: None,
            timeout: Duration::from_secs(2),
        }
    }
}

/// Parse `--dns-server`: `IP` (port 53), `IP:PORT`, `[IPv6]:PORT` or `[IPv6]`.
pub fn parse_dns_server(s: &str) -> Result<SocketAddr, DnsError> {
    let s = s.trim();
    let bad = || DnsError::BadServer {
        input: s.to_string(),
    };
    let addr = if let Ok(sa) = s.parse::<SocketAddr>() {
        sa
    } else {
        let bare = s
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .unwrap_or(s);
        SocketAddr::new(bare.parse::<IpAddr>().map_err(|_| bad())?, 53)
    };
    if addr.port() == 0 {
        return Err(bad());
    }
    Ok(addr)
}

/// The resolver used by the watcher and the handoff dry run.
///
/// The cache is off (`cache_size = 0`): a cache would hide exactly the change being watched for,
/// and answering from the authoritative data keeps the real TTL. The hosts file is off too, so a
/// stale `/etc/hosts` entry cannot mask what DNS says.
#[derive(Clone)]
pub struct DnsResolver {
    inner: TokioResolver,
    /// For `Debug` and error messages: "system" or the nameserver address.
    source: String,
}

impl fmt::Debug for DnsResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DnsResolver")
            .field("nameserver", &self.source)
            .finish()
    }
}

impl DnsResolver {
    /// With `opts.server`, that one nameserver over UDP with TCP fallback; otherwise the system
    /// configuration (`/etc/resolv.conf`).
    pub fn new(opts: &DnsOptions) -> Result<Self, DnsError> {
        match opts.server {
            Some(server) => Self::with_connections(
                server,
                vec![ConnectionConfig::udp(), ConnectionConfig::tcp()],
                opts.timeout,
            ),
            None => {
                let mut builder =
                    TokioResolver::builder_tokio().map_err(|e| DnsError::SystemConfig {
                        reason: e.to_string(),
                    })?;
                tune(builder.options_mut(), opts.timeout);
                let inner = builder.build().map_err(|e| DnsError::Setup {
                    server: "system".into(),
                    reason: e.to_string(),
                })?;
                Ok(Self {
                    inner,
                    source: "system".into(),
                })
            }
        }
    }

    /// One nameserver over TCP only: for networks that drop UDP, and to test the TCP path.
    pub fn tcp_only(server: SocketAddr, timeout: Duration) -> Result<Self, DnsError> {
        Self::with_connections(server, vec![ConnectionConfig::tcp()], timeout)
    }

    fn with_connections(
        server: SocketAddr,
        mut connections: Vec<ConnectionConfig>,
        timeout: Duration,
    ) -> Result<Self, DnsError> {
        for c in &mut connections {
            c.port = server.port();
        }
        // trust_negative_responses: there is only one server, NXDOMAIN from it is the answer.
        let ns = NameServerConfig::new(server.ip(), true, connections);
        let mut builder = Resolver::builder_with_config(
            ResolverConfig::from_name_servers(vec![ns]),
            TokioRuntimeProvider::default(),
        );
        tune(builder.options_mut(), timeout);
        let inner = builder.build().map_err(|e| DnsError::Setup {
            server: server.to_string(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            inner,
            source: server.to_string(),
        })
    }

    /// "system" or the nameserver address.
    pub fn nameserver(&self) -> &str {
        &self.source
    }

    /// The addresses to connect to. An IP literal (bracketed IPv6 included) is returned as is,
    /// without a query.
    pub async fn resolve_for_connect(&self, host: &str) -> Result<Vec<IpAddr>, DnsError> {
        match self.lookup(host).await {
            Resolution::Addresses { addrs, .. } if addrs.is_empty() => Err(DnsError::NoAddresses {
                host: host.to_string(),
            }),
            Resolution::Addresses { addrs, .. } => Ok(addrs),
            Resolution::Failed { reason } => Err(DnsError::Lookup {
                host: host.to_string(),
                reason,
            }),
        }
    }

    async fn lookup(&self, host: &str) -> Resolution {
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Resolution::Addresses {
                addrs: vec![ip],
                ttl: None,
            };
        }
        // A and AAAA are asked separately (not with `lookup_ip`) so that a failure of either is
        // seen: `lookup_ip` returns whichever family answered, and a blip on one family would
        // read as that family's addresses leaving the record.
        let (v4, v6) = tokio::join!(
            self.inner.lookup(host, RecordType::A),
            self.inner.lookup(host, RecordType::AAAA)
        );
        let mut addrs = Vec::new();
        let mut ttl: Option<u32> = None;
        let mut failures = Vec::new();
        for (family, result) in [("A", v4), ("AAAA", v6)] {
            match result {
                Ok(lookup) => {
                    for record in lookup.answers() {
                        // The TTL bounds how long the answer stays true, CNAME links included.
                        ttl = Some(ttl.map_or(record.ttl, |t| t.min(record.ttl)));
                        match &record.data {
                            RData::A(a) => addrs.push(IpAddr::V4(a.0)),
                            RData::AAAA(a) => addrs.push(IpAddr::V6(a.0)),
                            _ => {}
                        }
                    }
                }
                // NXDOMAIN or no records of this type: an answer, just an empty one.
                Err(e) if e.is_no_records_found() => {}
                Err(e) => failures.push((family, short_reason(&e))),
            }
        }
        // Half an answer is not an answer: if either family failed, the set is unknown.
        match failures.as_slice() {
            [] => {
                if addrs.is_empty() {
                    ttl = None;
                }
                Resolution::Addresses { addrs, ttl }
            }
            [(_, a), (_, b)] if a == b => Resolution::Failed { reason: a.clone() },
            _ => Resolution::Failed {
                reason: failures
                    .iter()
                    .map(|(family, reason)| format!("{family}: {reason}"))
                    .collect::<Vec<_>>()
                    .join("; "),
            },
        }
    }
}

fn tune(opts: &mut ResolverOpts, timeout: Duration) {
    opts.cache_size = 0;
    opts.use_hosts_file = ResolveHosts::Never;
    opts.timeout = timeout;
    // One retry absorbs a lost UDP datagram; more would only delay the next poll, which is the
    // real retry.
    opts.attempts = 1;
    opts.try_tcp_on_error = true;
}

fn short_reason(e: &NetError) -> String {
    match e {
        NetError::Timeout => "timed out".into(),
        other => other.to_string(),
    }
}

impl Resolve for DnsResolver {
    fn resolve(&self, host: &str) -> impl Future<Output = Resolution> + Send {
        self.lookup(host)
    }

    fn source(&self) -> String {
        if self.source == "system" {
            "the system's nameservers".into()
        } else {
            format!("nameserver {}", self.source)
        }
    }
}

/// One poller event, stamped when the answer arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DnsEvent {
    /// Monotonic arrival time; not serialized (it means nothing outside this process); the
    /// timeline turns it into an offset.
    #[serde(skip)]
    pub at: tokio::time::Instant,
    #[serde(flatten)]
    pub kind: DnsEventKind,
}

/// What a poll found. Any event other than `CannotTell` also ends a run of failures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "dns", rename_all = "snake_case")]
pub enum DnsEventKind {
    /// The first usable answer.
    Initial {
        addrs: BTreeSet<IpAddr>,
        ttl: Option<u32>,
    },
    /// The address set differs from the last usable answer.
    Changed {
        before: BTreeSet<IpAddr>,
        after: BTreeSet<IpAddr>,
        ttl: Option<u32>,
    },
    /// A poll failed or came back empty. Sent once per run of such polls; never a change to the
    /// empty set.
    CannotTell { reason: String },
    /// A usable answer after a run of `CannotTell`, naming the same set as before the run.
    Recovered {
        addrs: BTreeSet<IpAddr>,
        ttl: Option<u32>,
    },
    /// A poll is slow: what it is waiting for. Said once per run of slow or failed polls, so a
    /// dead nameserver is visible before its timeout ends the poll as `CannotTell`.
    Waiting { what: String },
}

/// The change detection of the poller, separate from the timer so it is tested on its own.
#[derive(Debug, Default)]
pub struct ChangeTracker {
    last: Option<BTreeSet<IpAddr>>,
    failing: bool,
}

impl ChangeTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the latest poll could not tell (a run of failures is under way).
    pub fn failing(&self) -> bool {
        self.failing
    }

    /// The last usable address set, if any answer was usable yet.
    pub fn current(&self) -> Option<&BTreeSet<IpAddr>> {
        self.last.as_ref()
    }

    /// Feed one resolution; returns the event it causes, if any.
    pub fn observe(&mut self, res: Resolution) -> Option<DnsEventKind> {
        let (addrs, ttl) = match res {
            Resolution::Addresses { addrs, ttl } if !addrs.is_empty() => {
                (addrs.into_iter().collect::<BTreeSet<_>>(), ttl)
            }
            other => {
                if std::mem::replace(&mut self.failing, true) {
                    return None;
                }
                let reason = match other {
                    Resolution::Failed { reason } => reason,
                    Resolution::Addresses { .. } => "no A or AAAA records".to_string(),
                };
                return Some(DnsEventKind::CannotTell { reason });
            }
        };
        let was_failing = std::mem::replace(&mut self.failing, false);
        match self.last.replace(addrs.clone()) {
            None => Some(DnsEventKind::Initial { addrs, ttl }),
            Some(before) if before != addrs => Some(DnsEventKind::Changed {
                before,
                after: addrs,
                ttl,
            }),
            Some(_) if was_failing => Some(DnsEventKind::Recovered { addrs, ttl }),
            Some(_) => None,
        }
    }
}

/// Resolve `host` every `interval` (the first time at once) and send what changed to `tx`.
///
/// Polls do not overlap: a slow answer delays the next poll instead of stacking queries on a
/// struggling nameserver. The task ends when the receiver is dropped.
pub fn spawn_poller<R>(
    resolver: R,
    host: String,
    interval: Duration,
    tx: UnboundedSender<DnsEvent>,
) -> JoinHandle<()>
where
    R: Resolve + Send + Sync + 'static,
{
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval.max(Duration::from_millis(1)));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut tracker = ChangeTracker::new();
        loop {
            let res = tokio::select! {
                () = tx.closed() => return,
                res = async {
                    ticker.tick().await;
                    resolver.resolve(&host).await
                } => res,
            };
            let at = tokio::time::Instant::now();
            if let Some(kind) = tracker.observe(res) {
                if tx.send(DnsEvent { at, kind }).is_err() {
                    return;
                }
            }
        }
    })
}

/// How long a poll may take before the poller says what it is waiting for.
const SLOW_POLL: Duration = Duration::from_secs(1);

/// Like [`spawn_poller`], with one deadline per poll: a poll that has no answer after
/// `timeout` (the query timeout) is "cannot tell", so a nameserver that never answers is reported
/// within one interval plus the timeout, not after the resolver's own retries and fallbacks. A
/// poll slower than a second (or half the timeout) first says what it waits for.
pub fn spawn_poller_bounded<R>(
    resolver: R,
    host: String,
    interval: Duration,
    timeout: Duration,
    tx: UnboundedSender<DnsEvent>,
) -> JoinHandle<()>
where
    R: Resolve + Send + Sync + 'static,
{
    // No window is ever signalled: the sender is dropped at once and the pace stays normal.
    let (_, window) = watch::channel(None);
    let pace = PollPace {
        normal: interval,
        open: interval,
    };
    spawn_poller_paced(resolver, host, pace, timeout, window, tx)
}

/// The two poll intervals: the lag between a record changing and the watch seeing it is bounded
/// by the interval, and that lag only matters while a maintenance window is open (the change
/// being waited for comes then), so the poller asks faster then and stays light otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollPace {
    /// Between polls when no window is open (`--dns-interval`).
    pub normal: Duration,
    /// Between polls while a window is open (`--dns-interval-open`).
    pub open: Duration,
}

impl PollPace {
    /// The interval after a poll at `now`, when a window is open until `open_until`.
    pub fn interval(&self, open_until: Option<Instant>, now: Instant) -> Duration {
        let open = open_until.is_some_and(|until| until > now);
        let d = if open { self.open } else { self.normal };
        d.max(Duration::from_millis(1))
    }
}

/// Like [`spawn_poller_bounded`], at the pace `window` asks for: `window` carries until when a
/// maintenance window is open (the watch's timeline knows; `None` when none is). While one is,
/// polls are `pace.open` apart, otherwise `pace.normal`. A window opening between two polls takes
/// effect at once: the next poll comes `pace.open` after the last one (or immediately, if that is
/// already past), not at the end of the normal interval. Polls still never overlap.
pub fn spawn_poller_paced<R>(
    resolver: R,
    host: String,
    pace: PollPace,
    timeout: Duration,
    mut window: watch::Receiver<Option<Instant>>,
    tx: UnboundedSender<DnsEvent>,
) -> JoinHandle<()>
where
    R: Resolve + Send + Sync + 'static,
{
    let slow = SLOW_POLL.min(timeout / 2);
    tokio::spawn(async move {
        let mut tracker = ChangeTracker::new();
        let mut last: Option<Instant> = None;
        loop {
            if let Some(last) = last {
                if !wait_turn(last, pace, &mut window, &tx).await {
                    return;
                }
            }
            let asked = Instant::now();
            last = Some(asked);
            let query = resolver.resolve(&host);
            tokio::pin!(query);
            let mut said = tracker.failing();
            let res = loop {
                let notice = tokio::time::sleep_until(asked + slow);
                tokio::select! {
                    () = tx.closed() => return,
                    res = tokio::time::timeout_at(asked + timeout, &mut query) => {
                        break res.unwrap_or_else(|_| Resolution::Failed {
                            reason: format!("no answer from {} within {timeout:?}", resolver.source()),
                        });
                    }
                    () = notice, if !said => {
                        said = true;
                        let what = format!(
                            "an answer for {host} (A and AAAA) from {}, asked {slow:?} ago; the query times out after {timeout:?}",
                            resolver.source()
                        );
                        let at = Instant::now();
                        if tx.send(DnsEvent { at, kind: DnsEventKind::Waiting { what } }).is_err() {
                            return;
                        }
                    }
                }
            };
            let at = Instant::now();
            if let Some(kind) = tracker.observe(res) {
                if tx.send(DnsEvent { at, kind }).is_err() {
                    return;
                }
            }
        }
    })
}

/// Waits until the next poll is due after one asked at `last`, re-reading the pace whenever the
/// window signal changes. False when the receiver of the events is gone.
async fn wait_turn(
    last: Instant,
    pace: PollPace,
    window: &mut watch::Receiver<Option<Instant>>,
    tx: &UnboundedSender<DnsEvent>,
) -> bool {
    // Once the sender is gone its last value stands; `changed` would return at once for ever.
    let mut signalled = true;
    loop {
        let open_until = *window.borrow_and_update();
        let due = last + pace.interval(open_until, Instant::now());
        tokio::select! {
            () = tx.closed() => return false,
            () = tokio::time::sleep_until(due) => return true,
            changed = window.changed(), if signalled => signalled = changed.is_ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn set(list: &[&str]) -> BTreeSet<IpAddr> {
        list.iter().map(|s| ip(s)).collect()
    }

    fn answer(list: &[&str]) -> Resolution {
        Resolution::Addresses {
            addrs: list.iter().map(|s| ip(s)).collect(),
            ttl: Some(5),
        }
    }

    fn failed(reason: &str) -> Resolution {
        Resolution::Failed {
            reason: reason.into(),
        }
    }

    #[test]
    fn parse_dns_server_forms() {
        assert_eq!(
            parse_dns_server("127.0.0.1").unwrap(),
            "127.0.0.1:53".parse().unwrap()
        );
        assert_eq!(
            parse_dns_server("10.0.0.2:5353").unwrap(),
            "10.0.0.2:5353".parse().unwrap()
        );
        assert_eq!(
            parse_dns_server("[::1]:5353").unwrap(),
            "[::1]:5353".parse().unwrap()
        );
        assert_eq!(
            parse_dns_server("::1").unwrap(),
            "[::1]:53".parse().unwrap()
        );
        assert_eq!(
            parse_dns_server(" [fd00::2] ").unwrap(),
            "[fd00::2]:53".parse().unwrap()
        );
        for bad in [
            "",
            "dns.example",
            "10.0.0.2:",
            "10.0.0.2:0",
            "10.0.0.2:99999",
            "::1:53x",
        ] {
            let err = parse_dns_server(bad).unwrap_err();
            assert!(
                matches!(&err, DnsError::BadServer { input } if input == bad.trim()),
                "{bad}: {err}"
            );
        }
        assert!(parse_dns_server("dns.example")
            .unwrap_err()
            .to_string()
            .contains("\"dns.example\""));
    }

    #[test]
    fn tracker_reports_initial_then_changes_only() {
        let mut t = ChangeTracker::new();
        assert_eq!(
            t.observe(answer(&["127.0.0.2"])),
            Some(DnsEventKind::Initial {
                addrs: set(&["127.0.0.2"]),
                ttl: Some(5)
            })
        );
        assert_eq!(t.observe(answer(&["127.0.0.2"])), None);
        assert_eq!(
            t.observe(answer(&["127.0.0.3", "127.0.0.2"])),
            Some(DnsEventKind::Changed {
                before: set(&["127.0.0.2"]),
                after: set(&["127.0.0.2", "127.0.0.3"]),
                ttl: Some(5)
            })
        );
        // Order within the answer is not a change (round-robin servers rotate it).
        assert_eq!(t.observe(answer(&["127.0.0.2", "127.0.0.3"])), None);
        assert_eq!(t.current(), Some(&set(&["127.0.0.2", "127.0.0.3"])));
    }

    #[test]
    fn tracker_never_reports_a_change_to_empty() {
        let mut t = ChangeTracker::new();
        t.observe(answer(&["127.0.0.2"]));
        assert_eq!(
            t.observe(answer(&[])),
            Some(DnsEventKind::CannotTell {
                reason: "no A or AAAA records".into()
            })
        );
        // Once per run, however long the run.
        assert_eq!(t.observe(failed("timed out")), None);
        assert_eq!(t.observe(answer(&[])), None);
        assert_eq!(t.current(), Some(&set(&["127.0.0.2"])));
        assert_eq!(
            t.observe(answer(&["127.0.0.2"])),
            Some(DnsEventKind::Recovered {
                addrs: set(&["127.0.0.2"]),
                ttl: Some(5)
            })
        );
        // A new run gets its own event, with its own reason.
        assert_eq!(
            t.observe(failed("timed out")),
            Some(DnsEventKind::CannotTell {
                reason: "timed out".into()
            })
        );
        // Recovering to a different set is reported as the change it is.
        assert_eq!(
            t.observe(answer(&["127.0.0.3"])),
            Some(DnsEventKind::Changed {
                before: set(&["127.0.0.2"]),
                after: set(&["127.0.0.3"]),
                ttl: Some(5)
            })
        );
    }

    #[test]
    fn tracker_failure_before_any_answer() {
        let mut t = ChangeTracker::new();
        assert!(matches!(
            t.observe(failed("connection refused")),
            Some(DnsEventKind::CannotTell { .. })
        ));
        assert_eq!(
            t.observe(answer(&["127.0.0.2"])),
            Some(DnsEventKind::Initial {
                addrs: set(&["127.0.0.2"]),
                ttl: Some(5)
            })
        );
    }

    #[test]
    fn dns_event_serializes_flat_with_a_tag() {
        let ev = DnsEvent {
            at: tokio::time::Instant::now(),
            kind: DnsEventKind::Changed {
                before: set(&["127.0.0.2"]),
                after: set(&["127.0.0.3"]),
                ttl: Some(5),
            },
        };
        assert_eq!(
            serde_json::to_string(&ev).unwrap(),
            r#"{"dns":"changed","before":["127.0.0.2"],"after":["127.0.0.3"],"ttl":5}"#
        );
    }

    #[tokio::test]
    async fn ip_literal_resolves_without_a_query() {
        // Port 9 (discard) on loopback: nothing answers DNS there, so a query would fail.
        let r = DnsResolver::new(&DnsOptions {
            server: Some("127.0.0.1:9".parse().unwrap()),
            timeout: Duration::from_millis(200),
        })
        .unwrap();
        assert_eq!(
            r.resolve_for_connect("127.0.0.7").await.unwrap(),
            vec![ip("127.0.0.7")]
        );
        assert_eq!(
            r.resolve_for_connect("[::1]").await.unwrap(),
            vec![ip("::1")]
        );
    }

    /// Answers at once, always the same address, and notes (in paused tokio time) when it was
    /// asked.
    struct Recording(std::sync::Arc<std::sync::Mutex<Vec<Instant>>>);

    impl Resolve for Recording {
        fn resolve(&self, _host: &str) -> impl Future<Output = Resolution> + Send {
            self.0.lock().unwrap().push(Instant::now());
            std::future::ready(answer(&["127.0.0.2"]))
        }
    }

    /// The poll times, in milliseconds after `t0`.
    fn polls_ms(asked: &std::sync::Mutex<Vec<Instant>>, t0: Instant) -> Vec<u64> {
        let asked = asked.lock().unwrap();
        asked.iter().map(|a| (*a - t0).as_millis() as u64).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn the_poller_speeds_up_while_a_window_is_open_and_slows_down_after() {
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (window_tx, window) = watch::channel(None);
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let pace = PollPace {
            normal: Duration::from_millis(500),
            open: Duration::from_millis(100),
        };
        let t0 = Instant::now();
        let _poller = spawn_poller_paced(
            Recording(asked.clone()),
            "db.example".into(),
            pace,
            Duration::from_secs(2),
            window,
            tx,
        );
        // No window: the normal pace.
        tokio::time::sleep_until(t0 + Duration::from_millis(1150)).await;
        assert_eq!(polls_ms(&asked, t0), [0, 500, 1000]);
        // A window opens 150 ms after a poll, for 600 ms: the next poll comes at once (100 ms
        // after the last one is already past), then every 100 ms while the window lasts.
        window_tx.send_replace(Some(Instant::now() + Duration::from_millis(600)));
        tokio::time::sleep_until(t0 + Duration::from_millis(2900)).await;
        assert_eq!(
            polls_ms(&asked, t0),
            [0, 500, 1000, 1150, 1250, 1350, 1450, 1550, 1650, 1750, 2250, 2750]
        );
        // A window that a closing notification ends early: back to normal at the next poll.
        window_tx.send_replace(Some(Instant::now() + Duration::from_secs(60)));
        tokio::time::sleep_until(t0 + Duration::from_millis(3120)).await;
        window_tx.send_replace(None);
        tokio::time::sleep_until(t0 + Duration::from_millis(3700)).await;
        assert_eq!(polls_ms(&asked, t0)[12..], [2900, 3000, 3100, 3600]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_poller_whose_window_sender_is_gone_keeps_its_last_pace() {
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let t0 = Instant::now();
        let _poller = spawn_poller_bounded(
            Recording(asked.clone()),
            "db.example".into(),
            Duration::from_millis(500),
            Duration::from_secs(2),
            tx,
        );
        tokio::time::sleep_until(t0 + Duration::from_millis(1600)).await;
        assert_eq!(polls_ms(&asked, t0), [0, 500, 1000, 1500]);
    }
}
