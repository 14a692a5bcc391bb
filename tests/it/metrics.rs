//! `watch --metrics`: `/metrics` scraped over real HTTP while the real binary watches the
//! simulator's single-proxy maintenance (MOVING, DNS change, the announced close, reconnect).
//!
//! The sink updates the metrics line by line, so a scrape shows the state after some prefix of
//! the JSON lines. Each scrape is checked against that: some prefix of the lines (one that holds
//! at least what the test had read before scraping) gives every asserted series exactly its
//! scraped value. No wall-clock bound is asserted.

use crate::common;
use common::scrape;

use maintwatch::observe::record::{line, ClosedBy, DnsEvent, Label, OptInOutcome, WatchLine};
use maintwatch::protocol::notification::{Classified, Kind};
use scrape::{samples, Watch};
use std::collections::{BTreeMap, HashMap, HashSet};
use tokio::io::AsyncWriteExt;

fn is_kind(l: &WatchLine, kind: Kind) -> bool {
    matches!(l, WatchLine::Push(line::Push { frame, .. })
        if matches!(&frame.parsed, Classified::Maintenance(n) if n.kind == kind))
}

fn reconnected(l: &[WatchLine]) -> bool {
    l.iter()
        .any(|l| matches!(l, WatchLine::Connected(line::Connected { session: 2, .. })))
}

/// What the asserted series must hold after `lines`, computed from the lines alone.
fn expected(w: &Watch, lines: &[WatchLine]) -> BTreeMap<String, f64> {
    let mut e: BTreeMap<String, f64> = BTreeMap::new();
    let mut add = |key: String, v: f64| *e.entry(key).or_default() += v;
    let l = |extra: &str| w.labels(extra);
    let mut conns: HashMap<u32, Option<OptInOutcome>> = HashMap::new();
    let mut open: Vec<String> = Vec::new();
    for line in lines {
        match line {
            WatchLine::Push(p) => {
                let Classified::Maintenance(n) = &p.frame.parsed else {
                    continue;
                };
                let key = format!(
                    "redis_client_maintenance_notifications_total{}",
                    l(&format!("notification=\"{}\"", n.kind.name()))
                );
                add(key, 1.0);
                let fresh = p.labels.is_empty() || p.labels == [Label::WithOptIn];
                if n.opens() && fresh && p.copy_of.is_none() {
                    open.push(n.event_name());
                }
            }
            WatchLine::Connected(c) => {
                conns.insert(c.conn, None);
                if c.session > 1 {
                    add(format!("maintwatch_reconnects_total{}", l("")), 1.0);
                }
            }
            WatchLine::Handshake(h) => {
                if let Some(s) = conns.get_mut(&h.conn) {
                    *s = Some(h.opt_in);
                }
            }
            WatchLine::Closed(c) => {
                conns.remove(&c.conn);
                let key = format!(
                    "redis_client_connection_closed_total{}",
                    l(&format!("reason=\"{}\"", c.by.as_str()))
                );
                add(key, 1.0);
                if c.announced {
                    if let Some(past) = c.past_s {
                        add(
                            format!("maintwatch_close_overshoot_seconds_count{}", l("")),
                            1.0,
                        );
                        add(
                            format!("maintwatch_close_overshoot_seconds_sum{}", l("")),
                            past,
                        );
                    }
                    if let Some(rel) = &c.rel {
                        open.retain(|o| *o != rel.to);
                    }
                } else if matches!(c.by, ClosedBy::Server | ClosedBy::Error) {
                    add(format!("maintwatch_unannounced_closes_total{}", l("")), 1.0);
                }
            }
            WatchLine::Dns(d) if d.event == DnsEvent::Changed => {
                add(format!("maintwatch_dns_changes_total{}", l("")), 1.0);
                if let Some(rel) = &d.rel {
                    add(
                        format!("maintwatch_dns_change_offset_seconds_count{}", l("")),
                        1.0,
                    );
                    add(
                        format!("maintwatch_dns_change_offset_seconds_sum{}", l("")),
                        rel.s,
                    );
                }
            }
            WatchLine::Handoff(h) => {
                let outcome = format!("outcome=\"{}\"", h.outcome.as_str());
                add(format!("maintwatch_dry_runs_total{}", l(&outcome)), 1.0);
                if h.moves {
                    add(
                        format!("redis_client_connection_handoff_total{}", l("")),
                        1.0,
                    );
                }
            }
            WatchLine::Verdict(v) => {
                if let Some(m) = v.margin_s {
                    add(
                        format!("maintwatch_dry_run_margin_seconds_count{}", l("")),
                        1.0,
                    );
                    add(format!("maintwatch_dry_run_margin_seconds_sum{}", l("")), m);
                }
            }
            _ => {}
        }
    }
    e.insert(
        format!("maintwatch_connections{}", l("")),
        conns.len() as f64,
    );
    let accepted = conns
        .values()
        .filter(|s| **s == Some(OptInOutcome::Accepted))
        .count();
    e.insert(
        format!("maintwatch_opt_in_connections{}", l("state=\"accepted\"")),
        accepted as f64,
    );
    e.insert(
        format!("maintwatch_windows_open{}", l("")),
        open.len() as f64,
    );
    e
}

/// Every series that [`expected`] may name (so a series the lines say is 0 must be 0 or absent).
fn keys(w: &Watch) -> Vec<String> {
    let l = |extra: &str| w.labels(extra);
    let mut k = vec![
        format!(
            "redis_client_maintenance_notifications_total{}",
            l("notification=\"MOVING\"")
        ),
        format!(
            "redis_client_connection_closed_total{}",
            l("reason=\"server\"")
        ),
        format!("redis_client_connection_handoff_total{}", l("")),
        format!("maintwatch_connections{}", l("")),
        format!("maintwatch_opt_in_connections{}", l("state=\"accepted\"")),
        format!("maintwatch_windows_open{}", l("")),
        format!("maintwatch_reconnects_total{}", l("")),
        format!("maintwatch_unannounced_closes_total{}", l("")),
        format!("maintwatch_dns_changes_total{}", l("")),
        format!("maintwatch_dry_runs_total{}", l("outcome=\"moved\"")),
    ];
    for h in [
        "maintwatch_close_overshoot_seconds",
        "maintwatch_dns_change_offset_seconds",
        "maintwatch_dry_run_margin_seconds",
    ] {
        k.push(format!("{h}_count{}", l("")));
        k.push(format!("{h}_sum{}", l("")));
    }
    k
}

/// The length of the shortest prefix of `lines`, at least `from` long, whose expected values are
/// the scraped ones; panics with the differences when none is.
fn matching_prefix(
    w: &Watch,
    lines: &[WatchLine],
    from: usize,
    got: &HashMap<String, f64>,
) -> usize {
    let keys = keys(w);
    let mut last = Vec::new();
    for n in from..=lines.len() {
        let want = expected(w, &lines[..n]);
        let diff: Vec<String> = keys
            .iter()
            .filter_map(|k| {
                let (a, b) = (
                    want.get(k).copied().unwrap_or(0.0),
                    got.get(k).copied().unwrap_or(0.0),
                );
                ((a - b).abs() > 1e-9 * a.abs().max(1.0))
                    .then(|| format!("{k}: lines say {a}, scrape says {b}"))
            })
            .collect();
        if diff.is_empty() {
            return n;
        }
        last = diff;
    }
    panic!("no prefix of the lines (from {from}) gives the scrape; after all of them: {last:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraped_metrics_hold_what_the_lines_say_through_a_moving_and_its_close() {
    // Speed 2: the 15 s window lasts 7.5 s of real time, ample for a scrape inside it.
    let mut w = scrape::start(
        "single-proxy",
        2.0,
        None,
        &["--metrics", "127.0.0.1:0"],
        &[],
    )
    .await;
    w.until("the MOVING", |l| l.iter().any(|l| is_kind(l, Kind::Moving)))
        .await;
    let read = w.seen.len();
    let during = w.scrape().await;
    w.until("the reconnect after the close", reconnected).await;
    let read_after = w.seen.len();
    let after = w.scrape().await;
    let (head, openmetrics) = scrape::get(
        w.metrics.unwrap(),
        Some("application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1"),
    )
    .await;
    assert_eq!(w.interrupt().await, 130);

    let (s1, s2) = (samples(&during), samples(&after));
    let n1 = matching_prefix(&w, &w.seen, read, &s1);
    let n2 = matching_prefix(&w, &w.seen, read_after.max(n1), &s2);
    // Inside the window: it is open, and what is left of it is at most the declared 15 s.
    let open = format!("maintwatch_windows_open{}", w.labels(""));
    assert_eq!(s1[&open], 1.0, "{during}");
    let left = s1[&format!("maintwatch_window_left_seconds{}", w.labels(""))];
    assert!(left <= 15.0 && left > -60.0, "{left}");
    // After the close and the reconnect: the close was counted and timed, the window is shut.
    let want = expected(&w, &w.seen[..n2]);
    let k = |name: &str, extra: &str| format!("{name}{}", w.labels(extra));
    assert_eq!(s2[&open], 0.0, "{after}");
    assert!(want[&k("redis_client_connection_closed_total", "reason=\"server\"")] >= 1.0);
    assert_eq!(
        s2[&k("maintwatch_close_overshoot_seconds_count", "")],
        1.0,
        "{after}"
    );
    assert!(
        s2[&k("maintwatch_close_overshoot_seconds_sum", "")] > 0.0,
        "past the window"
    );
    assert_eq!(s2[&k("maintwatch_reconnects_total", "")], 1.0);
    assert_eq!(s2[&k("maintwatch_dns_changes_total", "")], 1.0);
    assert!(
        s2[&k(
            "redis_client_maintenance_notifications_total",
            "notification=\"MOVING\""
        )] >= 1.0
    );
    // A histogram's +Inf bucket is its count (the bucket's `le` comes after the endpoint).
    let endpoint = w.labels("");
    let inf = format!(
        "maintwatch_close_overshoot_seconds_bucket{},le=\"+Inf\"}}",
        endpoint.trim_end_matches('}')
    );
    assert_eq!(s2[&inf], 1.0, "{after}");
    assert!(
        after.contains("# TYPE maintwatch_build_info gauge"),
        "{after}"
    );
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(openmetrics.ends_with("# EOF\n"), "{openmetrics}");
    assert!(
        openmetrics.contains("# TYPE maintwatch_build info"),
        "{openmetrics}"
    );

    // Every family exposed is documented.
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/metrics.md")).unwrap();
    for help in after.lines().filter_map(|l| l.strip_prefix("# HELP ")) {
        let name = help.split(' ').next().unwrap();
        assert!(
            doc.contains(&format!("`{name}`")),
            "docs/metrics.md lacks `{name}`"
        );
    }

    if let Some(bin) = scrape::promtool("scraped_metrics_hold_what_the_lines_say") {
        scrape::promtool_check(&bin, &during);
        scrape::promtool_check(&bin, &after);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metrics_address_in_use_is_refused_naming_the_flag() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let closed = format!("redis://{}", common::closed_port());
    let out = tokio::time::timeout(
        scrape::GUARD,
        common::maintwatch_async(["watch", &closed, "--metrics", &addr]).output(),
    )
    .await
    .expect("the watch ends")
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("--metrics {addr}")), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing was watched");
}

#[test]
fn a_series_set_is_distinct_per_endpoint() {
    // The labels of one endpoint never collide with another's: two sinks, two series.
    use maintwatch::present::service::Metrics;
    let m = std::sync::Arc::new(Metrics::new());
    let _a = m.endpoint_sink("a.example", 1);
    let _b = m.endpoint_sink("b.example", 1);
    let text = m.encode(false);
    let conns: HashSet<&str> = text
        .lines()
        .filter(|l| l.starts_with("maintwatch_connections{"))
        .collect();
    assert_eq!(conns.len(), 2, "{text}");
}

/// A watch of `single-proxy` at speed 5 serving `--metrics` on a port of its own: the watch and
/// that address.
async fn serving_metrics() -> (scrape::Watch, std::net::SocketAddr) {
    let w = scrape::start(
        "single-proxy",
        5.0,
        None,
        &["--metrics", "127.0.0.1:0"],
        &[],
    )
    .await;
    let addr = w.metrics.expect("--metrics");
    (w, addr)
}

/// Idle peers cannot lock a scraper out: with more connections held open, sending nothing,
/// than the server has slots, a scrape still gets its answer (before, 16 idle connections made
/// every scrape fail for 10 s each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_gets_through_while_idle_connections_are_held() {
    let (mut w, addr) = serving_metrics().await;
    let mut held = Vec::new();
    for _ in 0..100 {
        held.push(tokio::net::TcpStream::connect(addr).await.expect("connect"));
    }
    for _ in 0..3 {
        let (head, body) = scrape::get(addr, None).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(body.contains("maintwatch_"), "{body}");
    }
    drop(held);
    assert_eq!(w.interrupt().await, 130);
}

/// Neither idle nor half-sent requests lock a scraper out: with 500 connections held open, half
/// sending nothing and half stopped in the middle of a request head (before, 130 of these
/// refused every scrape until they timed out), 5 scrapes in a row get their answer. 500 sockets
/// stay under the usual soft limit of 1024 descriptors, so the test needs no raised limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_scrapes_get_through_500_idle_and_half_sent_connections() {
    let (mut w, addr) = serving_metrics().await;
    let mut held = Vec::new();
    for i in 0..500 {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        if i % 2 == 1 {
            // The server may have closed it already (evicted): a failed write is no matter.
            let _ = s
                .write_all(b"GET /metrics HTTP/1.1\r\nHost: held\r\nAccept: text/")
                .await;
        }
        held.push(s);
    }
    for n in 1..=5 {
        let (head, body) = scrape::get(addr, None).await;
        assert!(head.starts_with("HTTP/1.1 200"), "scrape {n}: {head}");
        assert!(body.contains("maintwatch_"), "scrape {n}: {body}");
    }
    drop(held);
    assert_eq!(w.interrupt().await, 130);
}

/// Two endpoints whose addresses differ only in what the label sanitises (`a"b` and `a_b`)
/// would write one series: refused like two on the same address.
#[test]
fn endpoints_whose_labels_collide_after_sanitising_are_refused() {
    let out = common::maintwatch(["watch", "a\"b:7000", "a_b:7000", "--metrics", "127.0.0.1:0"])
        .args(["--duration", "1s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("share a server address and port"),
        "{stderr}"
    );
}

/// `--azure-events` with `--metrics` on the azure-failover scenario (speed 8): after Ended, each
/// type's counter is the number of its `azure_event` lines (every copy), the window Starting
/// opened is closed, the families are documented and promtool accepts the exposition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_events_are_counted_by_type_and_their_window_closes() {
    use maintwatch::protocol::azure::AzureKind;
    let mut w = scrape::start(
        "azure-failover",
        8.0,
        None,
        &["--metrics", "127.0.0.1:0", "--azure-events"],
        &[],
    )
    .await;
    let ended = |l: &WatchLine| matches!(l, WatchLine::AzureEvent(a) if a.event.kind == Some(AzureKind::Ended));
    w.until("NodeMaintenanceEnded", |l| l.iter().any(ended))
        .await;
    let lines: Vec<WatchLine> = w.seen.clone();
    let mut want: BTreeMap<String, f64> = BTreeMap::new();
    for l in &lines {
        if let WatchLine::AzureEvent(a) = l {
            let kind = a.event.kind.map_or("unknown", AzureKind::wire_name);
            let key = format!(
                "maintwatch_azure_events_total{}",
                w.labels(&format!("type=\"{kind}\""))
            );
            *want.entry(key).or_default() += 1.0;
        }
    }
    assert_eq!(want.len(), 5, "the five types: {want:?}");
    let open = format!("maintwatch_azure_windows_open{}", w.labels(""));
    let text = w
        .scrape_until("Ended counted", |s| {
            want.iter().all(|(k, v)| s.get(k) == Some(v))
        })
        .await;
    let s = samples(&text);
    assert_eq!(s.get(&open), Some(&0.0), "{text}");
    assert_eq!(s[&format!("maintwatch_windows_open{}", w.labels(""))], 0.0);
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/metrics.md")).unwrap();
    for name in [
        "maintwatch_azure_events_total",
        "maintwatch_azure_windows_open",
    ] {
        assert!(text.contains(&format!("# HELP {name} ")), "{text}");
        assert!(
            doc.contains(&format!("`{name}`")),
            "docs/metrics.md lacks {name}"
        );
    }
    if let Some(bin) = scrape::promtool("azure_events_are_counted_by_type") {
        scrape::promtool_check(&bin, &text);
    }
    assert_eq!(w.interrupt().await, 130);
}
