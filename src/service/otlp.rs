//! `watch --otlp URL`: the `--metrics` measurements pushed to an OpenTelemetry collector over
//! OTLP/HTTP (protobuf), for shops whose peers (redis-py, go-redis, node-redis) export there.
//!
//! The values are read from the same registry `/metrics` serves, through its Prometheus text
//! exposition (prometheus-client offers no other way to read a family's values): what a scrape
//! shows and what is pushed cannot drift apart. Names follow the Redis client observability
//! conventions (`redis.client.maintenance.notifications` with
//! `redis.client.connection.notification`, `redis.client.connection.closed` with `close.reason`,
//! `server.address`, `server.port`); maintwatch's own go under `maintwatch.`.
//!
//! The few OTLP messages needed are encoded by hand (a page of protobuf wire format), and the
//! POST is a plain HTTP/1.1 request: no protobuf or HTTP-client crates to build. A collector that
//! is down never holds the watch: snapshots wait in a bounded queue (the oldest dropped, and
//! counted, when it is full) and are retried with a doubling backoff; at exit one last snapshot
//! is sent within a bounded grace.

use super::metrics::{Metrics, OtlpResult};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Snapshots waiting for the collector; past this the oldest is dropped.
const QUEUE: usize = 8;
/// One export (connect, send, read the status) gives up after this long.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// Backoff after a failed export: doubling from the first to the last.
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// At exit, the last snapshot (and what is queued) gets this long to reach the collector.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// The collector's response head is read up to this size.
const MAX_HEAD: usize = 16 * 1024;

/// Where `--otlp` sends: an `http://HOST:PORT/PATH` URL, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpUrl {
    pub host: String,
    pub port: u16,
    pub path: String,
}

impl OtlpUrl {
    /// `http://HOST[:PORT][/PATH]`: the port defaults to 4318 and an empty path to
    /// `/v1/metrics` (the OTLP/HTTP defaults). https and credentials in the URL are refused.
    pub fn parse(url: &str) -> anyhow::Result<OtlpUrl> {
        let Some(rest) = url.strip_prefix("http://") else {
            anyhow::bail!(
                "--otlp {}: only http:// URLs are supported (send to a local collector)",
                crate::escape::sanitize(url)
            );
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.contains('@') {
            anyhow::bail!("--otlp: credentials in the URL are not supported");
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                let port = p.parse::<u16>().map_err(|_| {
                    anyhow::anyhow!("--otlp {}: bad port {:?}", crate::escape::sanitize(url), p)
                })?;
                (h, port)
            }
            _ => (authority, 4318),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let bad = |c: char| !(c.is_ascii_alphanumeric() || ".-_:".contains(c));
        if host.is_empty() || host.contains(bad) || path.contains(|c: char| c.is_ascii_control()) {
            anyhow::bail!("--otlp {}: not a host", crate::escape::sanitize(url));
        }
        let path = if path.is_empty() || path == "/" {
            "/v1/metrics".to_string()
        } else {
            path.to_string()
        };
        Ok(OtlpUrl {
            host: host.to_string(),
            port,
            path,
        })
    }

    fn shown(&self) -> String {
        format!("http://{}:{}{}", self.host, self.port, self.path)
    }
}

/// `--otlp` and `--otlp-interval`, validated.
#[derive(Debug, Clone)]
pub struct OtlpSettings {
    pub url: OtlpUrl,
    pub interval: Duration,
}

/// The running exporter: a task on the watch's runtime.
pub struct Exporter {
    stop: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Exporter {
    pub fn start(settings: &OtlpSettings, metrics: Arc<Metrics>) -> Exporter {
        let stop = Arc::new(Notify::new());
        let task = tokio::spawn(run(settings.clone(), metrics, Arc::clone(&stop)));
        Exporter { stop, task }
    }

    /// Pushes the latest values once more (bounded by a few seconds), then stops.
    pub async fn finish(self) {
        self.stop.notify_one();
        let _ = self.task.await;
    }
}

/// The queue of encoded snapshots and what happened to them.
struct Queue {
    items: VecDeque<Vec<u8>>,
    counters: Family<OtlpResult, Counter>,
}

impl Queue {
    fn count(&self, result: &'static str) {
        self.counters.get_or_create(&OtlpResult { result }).inc();
    }

    fn push(&mut self, snapshot: Vec<u8>) {
        if self.items.len() >= QUEUE {
            self.items.pop_front();
            self.count("dropped");
        }
        self.items.push_back(snapshot);
    }
}

async fn run(settings: OtlpSettings, metrics: Arc<Metrics>, stop: Arc<Notify>) {
    let resource = Resource::here();
    let mut queue = Queue {
        items: VecDeque::new(),
        counters: metrics.otlp_counters(),
    };
    let mut ticker =
        tokio::time::interval_at(Instant::now() + settings.interval, settings.interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut backoff = BACKOFF_FIRST;
    let mut next_try = Instant::now();
    let mut failing = false;
    loop {
        tokio::select! {
            _ = stop.notified() => break,
            _ = ticker.tick() => queue.push(resource.snapshot(&metrics)),
            _ = tokio::time::sleep_until(next_try), if !queue.items.is_empty() => {
                match export(&settings.url, &queue.items[0]).await {
                    Ok(()) => {
                        queue.items.pop_front();
                        queue.count("ok");
                        backoff = BACKOFF_FIRST;
                        failing = false;
                    }
                    Err(e) => {
                        queue.count("failed");
                        if !failing {
                            eprintln!(
                                "maintwatch: --otlp {}: {e}; retrying with backoff (at most {QUEUE} exports wait)",
                                settings.url.shown()
                            );
                        }
                        failing = true;
                        next_try = Instant::now() + backoff;
                        backoff = (backoff * 2).min(BACKOFF_MAX);
                    }
                }
            }
        }
    }
    queue.push(resource.snapshot(&metrics));
    let deadline = Instant::now() + EXIT_GRACE;
    while let Some(front) = queue.items.front() {
        match tokio::time::timeout_at(deadline, export(&settings.url, front)).await {
            Ok(Ok(())) => {
                queue.items.pop_front();
            }
            _ => {
                eprintln!(
                    "maintwatch: --otlp {}: the last {} export(s) were not delivered",
                    settings.url.shown(),
                    queue.items.len()
                );
                break;
            }
        }
    }
}

/// One POST of an encoded request; `Ok` on a 2xx answer.
async fn export(url: &OtlpUrl, body: &[u8]) -> Result<(), String> {
    match tokio::time::timeout(EXPORT_TIMEOUT, post(url, body)).await {
        Ok(result) => result,
        Err(_) => Err(format!("no answer within {} s", EXPORT_TIMEOUT.as_secs())),
    }
}

async fn post(url: &OtlpUrl, body: &[u8]) -> Result<(), String> {
    let mut s = tokio::net::TcpStream::connect((url.host.as_str(), url.port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let host = if url.host.contains(':') {
        format!("[{}]:{}", url.host, url.port)
    } else {
        format!("{}:{}", url.host, url.port)
    };
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: maintwatch/{}\r\n\
         Content-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        url.path,
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    s.write_all(&request)
        .await
        .map_err(|e| format!("send: {e}"))?;
    let mut got = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") && got.len() < MAX_HEAD {
        let n = s.read(&mut buf).await.map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    // The status code only: nothing else the collector says reaches a terminal.
    let status = got
        .split(|&b| b == b' ')
        .nth(1)
        .and_then(|c| std::str::from_utf8(c).ok())
        .and_then(|c| c.parse::<u16>().ok());
    match status {
        Some(code) if (200..300).contains(&code) => Ok(()),
        Some(code) => Err(format!("the collector answered HTTP {code}")),
        None => Err("the collector's answer is not HTTP".to_string()),
    }
}

/// The resource every export describes: this process on this host.
struct Resource {
    host: String,
    start_ns: u64,
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    if rc != 0 {
        return "unknown".to_string();
    }
    String::from_utf8_lossy(&buf[..end])
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .collect()
}

impl Resource {
    fn here() -> Resource {
        Resource {
            host: hostname(),
            start_ns: unix_ns(),
        }
    }

    fn snapshot(&self, metrics: &Metrics) -> Vec<u8> {
        encode_request(&metrics.encode(false), &self.host, self.start_ns, unix_ns())
    }
}

/// One family of the exposition, as read back.
#[derive(Debug, Default)]
struct FamilyText {
    name: String,
    kind: String,
    help: String,
    /// Counter and gauge samples: labels, value.
    points: Vec<(Labels, f64)>,
    /// Histogram samples by their labels without `le`.
    histograms: BTreeMap<Labels, HistogramText>,
}

#[derive(Debug, Default)]
struct HistogramText {
    /// (upper bound, cumulative count), +Inf excluded.
    buckets: Vec<(f64, u64)>,
    count: u64,
    sum: f64,
}

/// A series' labels, in the exposition's order.
type Labels = Vec<(String, String)>;

/// `name{a="x",b="y"} value` → (name, labels, value).
fn sample(line: &str) -> Option<(&str, Labels, f64)> {
    let (series, value) = line.rsplit_once(' ')?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    let Some((name, rest)) = series.split_once('{') else {
        return Some((series, Vec::new(), value));
    };
    let mut labels = Vec::new();
    let mut rest = rest.strip_suffix('}')?;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"")?;
        let mut v = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => v.push(match chars.next()?.1 {
                    'n' => '\n',
                    c => c,
                }),
                (_, c) => v.push(c),
            }
        };
        labels.push((key.trim_start_matches(',').to_string(), v));
        rest = after[end + 1..].trim_start_matches(',');
    }
    Some((name, labels, value))
}

/// The families of a Prometheus text exposition (as `Metrics::encode(false)` writes it).
fn families(text: &str) -> Vec<FamilyText> {
    let mut out: Vec<FamilyText> = Vec::new();
    let mut help = String::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("# HELP ") {
            help = h.split_once(' ').map_or("", |(_, t)| t).to_string();
        } else if let Some(t) = line.strip_prefix("# TYPE ") {
            let (name, kind) = t.split_once(' ').unwrap_or((t, "unknown"));
            out.push(FamilyText {
                name: name.to_string(),
                kind: kind.to_string(),
                help: std::mem::take(&mut help),
                ..FamilyText::default()
            });
        } else if !line.starts_with('#') && !line.is_empty() {
            let (Some(f), Some((name, mut labels, value))) = (out.last_mut(), sample(line)) else {
                continue;
            };
            if f.kind != "histogram" {
                f.points.push((labels, value));
                continue;
            }
            let le = labels
                .iter()
                .position(|(k, _)| k == "le")
                .map(|i| labels.remove(i).1);
            let h = f.histograms.entry(labels).or_default();
            match (name.strip_prefix(f.name.as_str()), le) {
                (Some("_bucket"), Some(le)) if le != "+Inf" => {
                    if let Ok(bound) = le.parse() {
                        h.buckets.push((bound, value as u64));
                    }
                }
                (Some("_count"), _) => h.count = value as u64,
                (Some("_sum"), _) => h.sum = value,
                _ => {}
            }
        }
    }
    out
}

/// The OTLP name and unit of a Prometheus family; `None`: not exported (the build info is the
/// resource's `service.version`).
fn otel_name(family: &str, kind: &str) -> Option<(String, &'static str)> {
    let base = if kind == "counter" {
        family.strip_suffix("_total").unwrap_or(family)
    } else {
        family
    };
    if base == "maintwatch_build_info" || base == "maintwatch_build" {
        return None;
    }
    if let Some(rest) = base.strip_prefix("redis_client_") {
        let unit = if rest == "connection_handoff" {
            "1"
        } else {
            ""
        };
        return Some((format!("redis.client.{}", rest.replace('_', ".")), unit));
    }
    let rest = base.strip_prefix("maintwatch_")?;
    match rest.strip_suffix("_seconds") {
        Some(r) => Some((format!("maintwatch.{r}"), "s")),
        None => Some((format!("maintwatch.{rest}"), "")),
    }
}

/// A label as an OTLP attribute: the conventions' keys, `server.port` an integer.
fn attribute(out: &mut Vec<u8>, field: u32, key: &str, value: &str) {
    let key = match key {
        "server_address" => "server.address",
        "server_port" => {
            if let Ok(port) = value.parse::<i64>() {
                return key_value(out, field, "server.port", Any::Int(port));
            }
            "server.port"
        }
        "notification" => "redis.client.connection.notification",
        "reason" => {
            // The conventions' close reasons.
            let reason = match value {
                "server" => "server_close",
                "watch" => "application_close",
                other => other,
            };
            return key_value(out, field, "close.reason", Any::Str(reason));
        }
        other => other,
    };
    key_value(out, field, key, Any::Str(value));
}

/// An export request holding every family of `exposition`: resource attributes
/// (`service.name`, `service.version`, `host.name`), one scope, cumulative sums and histograms
/// since `start_ns`.
pub fn encode_request(exposition: &str, host: &str, start_ns: u64, now_ns: u64) -> Vec<u8> {
    let library = format!("maintwatch:{}", env!("CARGO_PKG_VERSION"));
    let mut scope = Vec::new();
    nested(&mut scope, 1, |s| {
        string(s, 1, "maintwatch");
        string(s, 2, env!("CARGO_PKG_VERSION"));
    });
    for f in families(exposition) {
        let Some((name, unit)) = otel_name(&f.name, &f.kind) else {
            continue;
        };
        let redis = name.starts_with("redis.client.");
        let attrs = |p: &mut Vec<u8>, field: u32, labels: &[(String, String)]| {
            for (k, v) in labels {
                attribute(p, field, k, v);
            }
            if redis {
                key_value(p, field, "redis.client.library", Any::Str(&library));
            }
        };
        nested(&mut scope, 2, |m| {
            string(m, 1, &name);
            string(m, 2, &f.help);
            string(m, 3, unit);
            match f.kind.as_str() {
                "histogram" => nested(m, 9, |h| {
                    for (labels, hist) in &f.histograms {
                        nested(h, 1, |p| {
                            attrs(p, 9, labels);
                            histogram_point(p, hist, start_ns, now_ns);
                        });
                    }
                    varint_field(h, 2, 2); // AGGREGATION_TEMPORALITY_CUMULATIVE
                }),
                kind => {
                    let (field, int) = match kind {
                        "counter" => (7, true),
                        _ => (5, unit != "s"),
                    };
                    nested(m, field, |g| {
                        for (labels, value) in &f.points {
                            nested(g, 1, |p| {
                                attrs(p, 7, labels);
                                number_point(p, *value, int, start_ns, now_ns, field == 7);
                            });
                        }
                        if field == 7 {
                            varint_field(g, 2, 2); // cumulative
                            varint_field(g, 3, 1); // monotonic
                        }
                    });
                }
            }
        });
    }
    let mut resource_metrics = Vec::new();
    nested(&mut resource_metrics, 1, |r| {
        key_value(r, 1, "service.name", Any::Str("maintwatch"));
        key_value(r, 1, "service.version", Any::Str(env!("CARGO_PKG_VERSION")));
        key_value(r, 1, "host.name", Any::Str(host));
    });
    bytes_field(&mut resource_metrics, 2, &scope);
    let mut request = Vec::new();
    bytes_field(&mut request, 1, &resource_metrics);
    request
}

fn number_point(p: &mut Vec<u8>, value: f64, int: bool, start: u64, now: u64, sum: bool) {
    if sum {
        fixed64_field(p, 2, start);
    }
    fixed64_field(p, 3, now);
    if int && value.fract() == 0.0 && value.abs() < 9.0e15 {
        fixed64_field(p, 6, value as i64 as u64); // sfixed64 as_int
    } else {
        fixed64_field(p, 4, value.to_bits()); // double as_double
    }
}

fn histogram_point(p: &mut Vec<u8>, h: &HistogramText, start: u64, now: u64) {
    fixed64_field(p, 2, start);
    fixed64_field(p, 3, now);
    fixed64_field(p, 4, h.count);
    fixed64_field(p, 5, h.sum.to_bits());
    // OTLP counts each bucket alone (the exposition's are cumulative), +Inf last.
    let mut buckets = h.buckets.clone();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut counts = Vec::with_capacity(buckets.len() + 1);
    let mut below = 0u64;
    for (_, cumulative) in &buckets {
        counts.push(cumulative.saturating_sub(below));
        below = below.max(*cumulative);
    }
    counts.push(h.count.saturating_sub(below));
    let packed: Vec<u8> = counts.iter().flat_map(|c| c.to_le_bytes()).collect();
    bytes_field(p, 6, &packed);
    let bounds: Vec<u8> = buckets
        .iter()
        .flat_map(|(b, _)| b.to_bits().to_le_bytes())
        .collect();
    bytes_field(p, 7, &bounds);
}

// Protobuf wire format: the handful of encodings the OTLP messages above use.

enum Any<'a> {
    Str(&'a str),
    Int(i64),
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn varint_field(out: &mut Vec<u8>, field: u32, v: u64) {
    tag(out, field, 0);
    varint(out, v);
}

fn fixed64_field(out: &mut Vec<u8>, field: u32, v: u64) {
    tag(out, field, 1);
    out.extend_from_slice(&v.to_le_bytes());
}

fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    tag(out, field, 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    if !s.is_empty() {
        bytes_field(out, field, s.as_bytes());
    }
}

fn nested(out: &mut Vec<u8>, field: u32, fill: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    fill(&mut inner);
    bytes_field(out, field, &inner);
}

/// A `KeyValue` (key 1, `AnyValue` 2: string 1 or int 3).
fn key_value(out: &mut Vec<u8>, field: u32, key: &str, value: Any<'_>) {
    nested(out, field, |kv| {
        string(kv, 1, key);
        nested(kv, 2, |v| match value {
            Any::Str(s) => bytes_field(v, 1, s.as_bytes()),
            Any::Int(i) => varint_field(v, 3, i as u64),
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_default_the_port_and_path_and_refuse_what_is_not_plain_http() {
        let u = OtlpUrl::parse("http://127.0.0.1:4318/v1/metrics").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 4318, "/v1/metrics")
        );
        let u = OtlpUrl::parse("http://collector").unwrap();
        assert_eq!((u.port, u.path.as_str()), (4318, "/v1/metrics"));
        let u = OtlpUrl::parse("http://[::1]:9/x").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 9));
        for bad in [
            "https://c:4318",
            "c:4318",
            "http://u:p@c:4318",
            "http://c:99999",
            "http://",
        ] {
            let e = OtlpUrl::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("--otlp"), "{bad}: {e}");
            assert!(!e.contains("u:p"), "{e}");
        }
    }

    #[test]
    fn samples_and_histograms_are_read_back_from_the_exposition() {
        let text = "# HELP maintwatch_close_overshoot_seconds Close.\n\
            # TYPE maintwatch_close_overshoot_seconds histogram\n\
            maintwatch_close_overshoot_seconds_sum{server_address=\"db\",server_port=\"1\"} 1.5\n\
            maintwatch_close_overshoot_seconds_count{server_address=\"db\",server_port=\"1\"} 2\n\
            maintwatch_close_overshoot_seconds_bucket{le=\"0.0\",server_address=\"db\",server_port=\"1\"} 1\n\
            maintwatch_close_overshoot_seconds_bucket{le=\"5.0\",server_address=\"db\",server_port=\"1\"} 2\n\
            maintwatch_close_overshoot_seconds_bucket{le=\"+Inf\",server_address=\"db\",server_port=\"1\"} 2\n\
            # HELP redis_client_connection_closed_total Closed.\n\
            # TYPE redis_client_connection_closed_total counter\n\
            redis_client_connection_closed_total{reason=\"server\",server_address=\"a\\\"b\",server_port=\"1\"} 3\n";
        let f = families(text);
        assert_eq!(f.len(), 2);
        let labels = vec![
            ("server_address".to_string(), "db".to_string()),
            ("server_port".to_string(), "1".to_string()),
        ];
        let h = &f[0].histograms[&labels];
        assert_eq!(
            (h.count, h.sum, h.buckets.clone()),
            (2, 1.5, vec![(0.0, 1), (5.0, 2)])
        );
        assert_eq!(f[1].points[0].0[1].1, "a\"b");
        assert_eq!(f[1].points[0].1, 3.0);
        assert_eq!(
            otel_name(&f[1].name, &f[1].kind).unwrap().0,
            "redis.client.connection.closed"
        );
        assert_eq!(
            otel_name(&f[0].name, &f[0].kind).unwrap(),
            ("maintwatch.close_overshoot".to_string(), "s")
        );
        assert_eq!(otel_name("maintwatch_build_info", "gauge"), None);
    }

    #[test]
    fn a_full_queue_drops_its_oldest_and_counts_it() {
        let m = Metrics::new();
        let mut q = Queue {
            items: VecDeque::new(),
            counters: m.otlp_counters(),
        };
        for i in 0..QUEUE + 2 {
            q.push(vec![i as u8]);
        }
        assert_eq!(q.items.len(), QUEUE);
        assert_eq!(q.items[0], [2]);
        let text = m.encode(false);
        assert!(
            text.contains("maintwatch_otlp_exports_total{result=\"dropped\"} 2"),
            "{text}"
        );
    }

    #[test]
    fn varints_follow_the_wire_format() {
        let mut v = Vec::new();
        varint(&mut v, 300);
        assert_eq!(v, [0xac, 0x02]);
        let mut kv = Vec::new();
        key_value(&mut kv, 1, "k", Any::Int(-1));
        // field 1, length 16: key "k", value { int_value: -1 as ten varint bytes }.
        assert_eq!(kv[..5], [0x0a, 16, 0x0a, 1, b'k']);
    }
}
