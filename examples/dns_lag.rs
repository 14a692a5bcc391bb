//! How long the DNS watch takes to notice a record change, at its default 500 ms interval,
//! against the simulator's authoritative server on loopback.
//!
//! Run: `cargo run --release --example dns_lag [-- CHANGES]`. Each change is made at a random
//! moment relative to the poller's ticks; the lag is from `set_records` returning to the
//! `Changed` event's arrival stamp.

use maintwatch::dns::{spawn_poller, DnsEventKind, DnsOptions, DnsResolver};
use maintwatch::sim::dns::SimDns;
use std::net::IpAddr;
use std::time::Duration;
use tokio::time::Instant;

#[tokio::main]
async fn main() {
    let changes: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(40);
    let interval = Duration::from_millis(500);
    let host = "db.sim.maintwatch.test.";
    let dns = SimDns::start("127.0.0.1:0".parse().unwrap(), "sim.maintwatch.test.")
        .await
        .expect("DNS server");
    let a: IpAddr = "127.0.0.2".parse().unwrap();
    let b: IpAddr = "127.0.0.3".parse().unwrap();
    dns.set_records(host, &[a], 5).await;
    let resolver = DnsResolver::new(&DnsOptions {
        server: Some(dns.addr()),
        timeout: Duration::from_secs(2),
    })
    .expect("resolver");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let _poller = spawn_poller(resolver, host.to_string(), interval, tx);
    // The first answer.
    while let Some(ev) = rx.recv().await {
        if matches!(ev.kind, DnsEventKind::Initial { .. }) {
            break;
        }
    }
    let mut lags = Vec::with_capacity(changes);
    for i in 0..changes {
        tokio::time::sleep(Duration::from_millis(rand::random::<u64>() % 500)).await;
        let next = if i % 2 == 0 { b } else { a };
        dns.set_records(host, &[next], 5).await;
        let changed_at = Instant::now();
        loop {
            let ev = rx.recv().await.expect("poller running");
            if let DnsEventKind::Changed { after, .. } = &ev.kind {
                if after.contains(&next) {
                    lags.push(ev.at.saturating_duration_since(changed_at));
                    break;
                }
            }
        }
    }
    lags.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = lags.iter().map(|d| ms(*d)).sum::<f64>() / lags.len() as f64;
    let pct = |p: f64| ms(lags[((lags.len() as f64 - 1.0) * p).round() as usize]);
    println!(
        "dns change detection lag over {} changes at a {} ms interval: mean {:.1} ms, p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        lags.len(),
        interval.as_millis(),
        mean,
        pct(0.5),
        pct(0.95),
        ms(*lags.last().unwrap())
    );
}
