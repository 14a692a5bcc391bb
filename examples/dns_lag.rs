//! How long the DNS watch takes to notice a record change, against the simulator's authoritative
//! server on loopback: with no maintenance window open (the 500 ms `--dns-interval`) and with one
//! open (the 100 ms `--dns-interval-open`), in the same run.
//!
//! Run: `cargo run --release --example dns_lag [-- CHANGES]` (default 40 per pace). Each change is
//! made at a random moment relative to the poller's ticks; the lag is from `set_records`
//! returning to the `Changed` event's arrival stamp. The poller is the watch's own
//! (`spawn_poller_paced`), told that a window is open the way the watch's engine tells it.

use maintwatch::network::dns::{
    spawn_poller_paced, DnsEvent, DnsEventKind, DnsOptions, DnsResolver, PollPace,
};
use maintwatch::simulator::sim::dns_server::SimDns;
use std::net::IpAddr;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

const HOST: &str = "db.sim.maintwatch.test.";

#[tokio::main]
async fn main() {
    let changes: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(40);
    let pace = PollPace {
        normal: Duration::from_millis(500),
        open: Duration::from_millis(100),
    };
    let dns = SimDns::start("127.0.0.1:0".parse().unwrap(), "sim.maintwatch.test.")
        .await
        .expect("DNS server");
    dns.set_records(HOST, &[ip("127.0.0.2")], 5).await;
    for open in [false, true] {
        let lags = measure(&dns, pace, open, changes).await;
        let (what, interval) = if open {
            ("a window open", pace.open)
        } else {
            ("no window open", pace.normal)
        };
        report(what, interval, lags);
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// `changes` record changes, each at a random moment, with the window signalled open or not;
/// the lag of each.
async fn measure(dns: &SimDns, pace: PollPace, open: bool, changes: usize) -> Vec<Duration> {
    let resolver = DnsResolver::new(&DnsOptions {
        server: Some(dns.addr()),
        timeout: Duration::from_secs(2),
    })
    .expect("resolver");
    let until = open.then(|| Instant::now() + Duration::from_secs(3600));
    let (_window_tx, window) = tokio::sync::watch::channel(until);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let timeout = Duration::from_secs(2);
    let poller = spawn_poller_paced(resolver, HOST.to_string(), pace, timeout, window, tx);
    let mut current = next_event(&mut rx, |k| match k {
        DnsEventKind::Initial { addrs, .. } => addrs.iter().next().copied(),
        _ => None,
    })
    .await
    .0;
    let mut lags = Vec::with_capacity(changes);
    for _ in 0..changes {
        tokio::time::sleep(Duration::from_millis(rand::random::<u64>() % 500)).await;
        let next = if current == ip("127.0.0.2") {
            ip("127.0.0.3")
        } else {
            ip("127.0.0.2")
        };
        dns.set_records(HOST, &[next], 5).await;
        let changed_at = Instant::now();
        let (_, at) = next_event(&mut rx, |k| match k {
            DnsEventKind::Changed { after, .. } if after.contains(&next) => Some(next),
            _ => None,
        })
        .await;
        lags.push(at.saturating_duration_since(changed_at));
        current = next;
    }
    poller.abort();
    lags
}

/// The first event `pick` accepts, with its arrival stamp.
async fn next_event<T>(
    rx: &mut UnboundedReceiver<DnsEvent>,
    pick: impl Fn(&DnsEventKind) -> Option<T>,
) -> (T, Instant) {
    loop {
        let ev = rx.recv().await.expect("poller running");
        if let Some(v) = pick(&ev.kind) {
            return (v, ev.at);
        }
    }
}

fn report(what: &str, interval: Duration, mut lags: Vec<Duration>) {
    lags.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = lags.iter().map(|d| ms(*d)).sum::<f64>() / lags.len() as f64;
    let pct = |p: f64| ms(lags[((lags.len() as f64 - 1.0) * p).round() as usize]);
    println!(
        "dns change detection lag, {what} ({} ms interval), {} changes: mean {:.1} ms, p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        interval.as_millis(),
        lags.len(),
        mean,
        pct(0.5),
        pct(0.95),
        ms(*lags.last().unwrap())
    );
}
