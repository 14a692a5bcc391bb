//! Benchmark: scrape `/metrics` holding 1,000 endpoints' worth of series, over real HTTP.
//!
//! Why an example and not a test: the figure is a wall time, which a test must never assert.
//! One [`Metrics`] registry gets one endpoint sink per endpoint (what the fleet creates), and
//! each sink is fed the lines of one whole single-proxy maintenance (connected, opt-in accepted,
//! MOVING, DNS change, dry-run, verdict, the announced close past the window, the reconnect), so
//! every family has its series for every endpoint and the histograms are filled. The registry is
//! served by the same server `watch --metrics` runs (`service::metrics_http::serve`, on 127.0.0.1:0),
//! and scraped with a plain HTTP/1.1 client over `TcpStream`, one connection per scrape as a
//! scraper without keep-alive would, in both formats.
//!
//! ```text
//! cargo run --release --example metrics_scrape                  # 1,000 endpoints, 50 scrapes
//! cargo run --release --example metrics_scrape -- --endpoints 100 --scrapes 20
//! ```

use maintwatch::observe::record::{
    line, ClosedBy, DnsEvent, DryRunOutcome, FrameRecord, OptInOutcome, Rel, WatchLine,
};
use maintwatch::present::output::sink::Sink;
use maintwatch::present::service::{metrics_http, Metrics};
use maintwatch::protocol::resp::{Scan, Scanner};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().expect("a number"))
        .unwrap_or(default)
}

/// The lines of one maintenance on one endpoint.
fn maintenance(port: u16) -> Vec<WatchLine> {
    let raw = b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n";
    let Ok(Scan::Frame(frame, _)) = Scanner::default().scan(raw) else {
        unreachable!("a valid frame")
    };
    let (at, rel) = ("2026-11-30T00:00:00.000000Z".to_string(), |s: f64| {
        Some(Rel {
            to: "MOVING seq 0".into(),
            s,
        })
    });
    let connected = |session| {
        WatchLine::Connected(line::Connected {
            v: 1,
            t: 0.0,
            at: at.clone(),
            conn: 1,
            addr: format!("127.0.0.2:{port}"),
            tls: false,
            session,
            rel: None,
        })
    };
    let handshake = WatchLine::Handshake(line::Handshake {
        v: 1,
        t: 0.0,
        at: at.clone(),
        conn: 1,
        opt_in: OptInOutcome::Accepted,
        text: None,
        server: None,
        version: None,
        mode: None,
        sent: None,
        repeat_of: None,
        sim_speed: None,
    });
    vec![
        connected(1),
        handshake.clone(),
        WatchLine::Push(line::Push {
            v: 1,
            t: 1.0,
            at: at.clone(),
            conn: 1,
            labels: vec![],
            rel: rel(0.0),
            frame: FrameRecord::new(&frame, raw, 0),
            copy_of: None,
            sources_ours: vec![],
        }),
        WatchLine::Dns(line::Dns {
            v: 1,
            t: 9.0,
            at: at.clone(),
            host: "db.example".into(),
            event: DnsEvent::Changed,
            before: vec!["127.0.0.2".into()],
            after: vec!["127.0.0.3".into()],
            ttl: Some(5),
            reason: None,
            ours: None,
            rel: rel(8.0),
        }),
        WatchLine::Handoff(line::Handoff {
            v: 1,
            t: 10.0,
            at: at.clone(),
            conn: 1,
            event: "MOVING seq 0".into(),
            outcome: DryRunOutcome::Moved,
            at_s: 9.0,
            moves: true,
            text: "moved".into(),
            rel: rel(9.0),
            to: None,
        }),
        WatchLine::Closed(line::Closed {
            v: 1,
            t: 18.0,
            at: at.clone(),
            conn: 1,
            by: ClosedBy::Server,
            error: None,
            announced: true,
            window_s: Some(15),
            past_s: Some(2.0),
            rel: rel(17.0),
            joined_open: false,
            retry_in_s: Some(0.1),
        }),
        WatchLine::Verdict(line::Verdict {
            v: 1,
            t: 18.0,
            at: at.clone(),
            conn: 1,
            event: "MOVING seq 0".into(),
            text: "early enough".into(),
            margin_s: Some(8.0),
        }),
        connected(2),
        handshake,
    ]
}

/// One scrape over a fresh connection: (wall time, body bytes).
async fn scrape(addr: SocketAddr, accept: &str) -> (Duration, usize) {
    let started = Instant::now();
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::with_capacity(8 << 20);
    s.read_to_end(&mut raw).await.unwrap();
    let took = started.elapsed();
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(raw.starts_with(b"HTTP/1.1 200"), "a 200");
    (took, raw.len() - head_end)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let endpoints = arg("--endpoints", 1000);
    let scrapes = arg("--scrapes", 50);
    let metrics = Arc::new(Metrics::new());
    let mut sinks = Vec::with_capacity(endpoints);
    for i in 0..endpoints {
        let port = 10000 + i as u16;
        let mut sink = metrics.endpoint_sink(&format!("db-{i}.example.net"), port);
        for l in maintenance(port) {
            sink.line(&l).unwrap();
        }
        sinks.push(sink);
    }
    let server = metrics_http::serve("127.0.0.1:0".parse().unwrap(), Arc::clone(&metrics)).unwrap();
    let addr = server.local_addr();
    let series = metrics
        .encode(false)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .count();
    println!("{endpoints} endpoints, {series} samples per scrape, {scrapes} scrapes per format");
    for (name, accept) in [
        ("prometheus text 0.0.4", "text/plain;version=0.0.4"),
        (
            "openmetrics 1.0",
            "application/openmetrics-text;version=1.0.0",
        ),
    ] {
        scrape(addr, accept).await; // warm-up
        let mut times = Vec::with_capacity(scrapes);
        let mut bytes = 0;
        for _ in 0..scrapes {
            let (t, n) = scrape(addr, accept).await;
            times.push(t);
            bytes = n;
        }
        times.sort();
        println!(
            "{name}: {bytes} bytes; p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms",
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.9).as_secs_f64() * 1e3,
            times.last().unwrap().as_secs_f64() * 1e3,
        );
    }
}
