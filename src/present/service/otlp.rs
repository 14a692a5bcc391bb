//! `watch --otlp URL|env`: the `--metrics` measurements pushed to an OpenTelemetry collector over
//! OTLP/HTTP (protobuf), for shops whose peers (redis-py, go-redis, node-redis) export there.
//!
//! The values are read from the same registry `/metrics` serves, through its Prometheus text
//! exposition (prometheus-client offers no other way to read a family's values): what a scrape
//! shows and what is pushed cannot drift apart. Names follow the Redis client observability
//! conventions (`redis.client.maintenance.notifications` with
//! `redis.client.connection.notification`, `redis.client.connection.closed` with `close.reason`,
//! `server.address`, `server.port`); maintwatch's own go under `maintwatch.`.
//!
//! The messages are the official definitions' (`opentelemetry-proto`'s types, encoded by prost):
//! no protobuf of our own to keep in step with the specification, for about 5 s of build (7
//! crates) and 66 KB of stripped release binary (11.07 to 11.14 MB). The POST is a plain HTTP/1.1 request, over rustls for https: an HTTP client crate
//! would add more than the page it replaces. Where it sends, with which headers, certificate,
//! timeout and compression, follows the `OTEL_*` variables ([`super::otlp_config`]). A collector
//! that is down never holds the watch: snapshots wait in a bounded queue (the oldest dropped, and
//! counted, when it is full) and are retried with a doubling backoff; at exit one last snapshot
//! is sent within a bounded grace.

use super::metrics::{Metrics, OtlpResult};
pub use super::otlp_config::{OtlpSettings, OtlpUrl};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Gauge, Histogram, HistogramDataPoint,
    Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prost::Message;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_rustls::rustls::pki_types::ServerName;

/// Snapshots waiting for the collector; past this the oldest is dropped.
const QUEUE: usize = 8;
/// Backoff after a failed export: doubling from the first to the last.
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// At exit, the last snapshot (and what is queued) gets this long to reach the collector.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// The collector's response head is read up to this size.
const MAX_HEAD: usize = 16 * 1024;

/// The running exporter: a task on the watch's runtime.
pub struct Exporter {
    stop: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Exporter {
    /// Starts the exporter; what goes wrong with the collector is sent to `notices` (this
    /// module prints nothing).
    pub fn start(
        settings: &OtlpSettings,
        metrics: Arc<Metrics>,
        notices: super::Notices,
    ) -> Exporter {
        let stop = Arc::new(Notify::new());
        let task = tokio::spawn(run(settings.clone(), metrics, Arc::clone(&stop), notices));
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

async fn run(
    settings: OtlpSettings,
    metrics: Arc<Metrics>,
    stop: Arc<Notify>,
    notices: super::Notices,
) {
    let resource = Snapshots::here(&settings.resource);
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
                match export(&settings, &queue.items[0]).await {
                    Ok(()) => {
                        queue.items.pop_front();
                        queue.count("ok");
                        backoff = BACKOFF_FIRST;
                        failing = false;
                    }
                    Err(e) => {
                        queue.count("failed");
                        if !failing {
                            let _ = notices.send(format!(
                                "--otlp {}: {e}; retrying with backoff (at most {QUEUE} exports \
                                 wait)",
                                settings.url.shown()
                            ));
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
        match tokio::time::timeout_at(deadline, export(&settings, front)).await {
            Ok(Ok(())) => {
                queue.items.pop_front();
            }
            _ => {
                let _ = notices.send(format!(
                    "--otlp {}: the last {} export(s) were not delivered",
                    settings.url.shown(),
                    queue.items.len()
                ));
                break;
            }
        }
    }
}

/// One POST of an encoded request; `Ok` on a 2xx answer.
async fn export(settings: &OtlpSettings, body: &[u8]) -> Result<(), String> {
    match tokio::time::timeout(settings.timeout, post(settings, body)).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "no answer within {} ms",
            settings.timeout.as_millis()
        )),
    }
}

async fn post(settings: &OtlpSettings, body: &[u8]) -> Result<(), String> {
    let url = &settings.url;
    let tcp = tokio::net::TcpStream::connect((url.host.as_str(), url.port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let request = request(settings, body)?;
    let Some(tls) = &settings.tls else {
        return exchange(tcp, &request).await;
    };
    // Checked when the settings were read: an https host is a valid server name.
    let name = ServerName::try_from(url.host.clone()).map_err(|e| format!("TLS: {e}"))?;
    let stream = tokio_rustls::TlsConnector::from(Arc::clone(tls))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    exchange(stream, &request).await
}

/// The request's bytes: head, the configured headers, the body (gzipped if asked).
fn request(settings: &OtlpSettings, body: &[u8]) -> Result<Vec<u8>, String> {
    let url = &settings.url;
    let gzipped;
    let (body, encoding) = if settings.gzip {
        gzipped = gzip(body).map_err(|e| format!("gzip: {e}"))?;
        (gzipped.as_slice(), "Content-Encoding: gzip\r\n")
    } else {
        (body, "")
    };
    let host = if url.host.contains(':') {
        format!("[{}]:{}", url.host, url.port)
    } else {
        format!("{}:{}", url.host, url.port)
    };
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: maintwatch/{}\r\n\
         Content-Type: application/x-protobuf\r\n{encoding}Content-Length: {}\r\n\
         Connection: close\r\n",
        url.path,
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    for (key, value) in &settings.headers.0 {
        head.push_str(&format!("{key}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    Ok(request)
}

fn gzip(body: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(body)?;
    encoder.finish()
}

/// Sends `request` and reads the status of the answer; `Ok` on 2xx.
async fn exchange<S>(mut s: S, request: &[u8]) -> Result<(), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    s.write_all(request)
        .await
        .map_err(|e| format!("send: {e}"))?;
    s.flush().await.map_err(|e| format!("send: {e}"))?;
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
struct Snapshots {
    /// `service.name` and `OTEL_RESOURCE_ATTRIBUTES`, then `service.version` and `host.name`
    /// unless those were given.
    attributes: Vec<(String, String)>,
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

impl Snapshots {
    fn here(given: &[(String, String)]) -> Snapshots {
        let mut attributes = given.to_vec();
        for (key, value) in [
            ("service.version", env!("CARGO_PKG_VERSION").to_string()),
            ("host.name", hostname()),
        ] {
            if !attributes.iter().any(|(k, _)| k == key) {
                attributes.push((key.to_string(), value));
            }
        }
        Snapshots {
            attributes,
            start_ns: unix_ns(),
        }
    }

    fn snapshot(&self, metrics: &Metrics) -> Vec<u8> {
        encode_request(
            &metrics.encode(false),
            &self.attributes,
            self.start_ns,
            unix_ns(),
        )
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

/// A string attribute.
fn text(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_string())),
        }),
        ..KeyValue::default()
    }
}

/// A label as an OTLP attribute: the conventions' keys, `server.port` an integer.
fn attribute(key: &str, value: &str) -> KeyValue {
    match key {
        "server_address" => text("server.address", value),
        "server_port" => match value.parse::<i64>() {
            Ok(port) => KeyValue {
                key: "server.port".to_string(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::IntValue(port)),
                }),
                ..KeyValue::default()
            },
            Err(_) => text("server.port", value),
        },
        "notification" => text("redis.client.connection.notification", value),
        // The conventions' close reasons.
        "reason" => text(
            "close.reason",
            match value {
                "server" => "server_close",
                "watch" => "application_close",
                other => other,
            },
        ),
        other => text(other, value),
    }
}

/// What every point of one export shares: its times, and the library attribute of the Redis
/// client conventions' points.
struct Points<'a> {
    start_ns: u64,
    now_ns: u64,
    library: &'a str,
}

impl Points<'_> {
    fn attributes(&self, labels: &[(String, String)], redis: bool) -> Vec<KeyValue> {
        let mut out: Vec<KeyValue> = labels.iter().map(|(k, v)| attribute(k, v)).collect();
        if redis {
            out.push(text("redis.client.library", self.library));
        }
        out
    }

    /// A counter's or gauge's point; `sum`: it has a start time (a cumulative sum).
    fn number(
        &self,
        attributes: Vec<KeyValue>,
        value: f64,
        int: bool,
        sum: bool,
    ) -> NumberDataPoint {
        let value = if int && value.fract() == 0.0 && value.abs() < 9.0e15 {
            number_data_point::Value::AsInt(value as i64)
        } else {
            number_data_point::Value::AsDouble(value)
        };
        NumberDataPoint {
            attributes,
            start_time_unix_nano: if sum { self.start_ns } else { 0 },
            time_unix_nano: self.now_ns,
            value: Some(value),
            ..NumberDataPoint::default()
        }
    }

    fn histogram(&self, attributes: Vec<KeyValue>, h: &HistogramText) -> HistogramDataPoint {
        // OTLP counts each bucket alone (the exposition's are cumulative), +Inf last.
        let mut buckets = h.buckets.clone();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut bucket_counts = Vec::with_capacity(buckets.len() + 1);
        let mut below = 0u64;
        for (_, cumulative) in &buckets {
            bucket_counts.push(cumulative.saturating_sub(below));
            below = below.max(*cumulative);
        }
        bucket_counts.push(h.count.saturating_sub(below));
        HistogramDataPoint {
            attributes,
            start_time_unix_nano: self.start_ns,
            time_unix_nano: self.now_ns,
            count: h.count,
            sum: Some(h.sum),
            bucket_counts,
            explicit_bounds: buckets.iter().map(|(bound, _)| *bound).collect(),
            ..HistogramDataPoint::default()
        }
    }
}

/// One family as an OTLP metric: cumulative monotonic sums for counters, gauges, cumulative
/// explicit-bucket histograms. `None`: not exported.
fn metric(f: &FamilyText, points: &Points<'_>) -> Option<Metric> {
    let (name, unit) = otel_name(&f.name, &f.kind)?;
    let redis = name.starts_with("redis.client.");
    let cumulative = AggregationTemporality::Cumulative as i32;
    let data = match f.kind.as_str() {
        "histogram" => metric::Data::Histogram(Histogram {
            data_points: f
                .histograms
                .iter()
                .map(|(labels, h)| points.histogram(points.attributes(labels, redis), h))
                .collect(),
            aggregation_temporality: cumulative,
        }),
        kind => {
            let sum = kind == "counter";
            // Seconds stay doubles; counts are integers.
            let int = sum || unit != "s";
            let data_points = f
                .points
                .iter()
                .map(|(labels, v)| points.number(points.attributes(labels, redis), *v, int, sum))
                .collect();
            if sum {
                metric::Data::Sum(Sum {
                    data_points,
                    aggregation_temporality: cumulative,
                    is_monotonic: true,
                })
            } else {
                metric::Data::Gauge(Gauge { data_points })
            }
        }
    };
    Some(Metric {
        name,
        description: f.help.clone(),
        unit: unit.to_string(),
        data: Some(data),
        ..Metric::default()
    })
}

/// An export request holding every family of `exposition`, encoded with the official OTLP
/// definitions (the `opentelemetry-proto` crate): the resource's attributes (`service.name`,
/// `service.version`, `host.name` and what `OTEL_RESOURCE_ATTRIBUTES` adds), one scope,
/// cumulative sums and histograms since `start_ns`.
pub fn encode_request(
    exposition: &str,
    resource: &[(String, String)],
    start_ns: u64,
    now_ns: u64,
) -> Vec<u8> {
    let library = format!("maintwatch:{}", env!("CARGO_PKG_VERSION"));
    let points = Points {
        start_ns,
        now_ns,
        library: &library,
    };
    let metrics = families(exposition)
        .iter()
        .filter_map(|f| metric(f, &points))
        .collect();
    let scope = ScopeMetrics {
        scope: Some(InstrumentationScope {
            name: "maintwatch".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            ..InstrumentationScope::default()
        }),
        metrics,
        ..ScopeMetrics::default()
    };
    let request = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: resource.iter().map(|(k, v)| text(k, v)).collect(),
                ..Resource::default()
            }),
            scope_metrics: vec![scope],
            ..ResourceMetrics::default()
        }],
    };
    request.encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_and_histograms_are_read_back_from_the_exposition() {
        let text = concat!(
            "# HELP maintwatch_close_overshoot_seconds Close.\n",
            "# TYPE maintwatch_close_overshoot_seconds histogram\n",
            r#"maintwatch_close_overshoot_seconds_sum{server_address="db",server_port="1"} 1.5"#,
            "\n",
            r#"maintwatch_close_overshoot_seconds_count{server_address="db",server_port="1"} 2"#,
            "\n",
            r#"maintwatch_close_overshoot_seconds_bucket{le="0.0",server_address="db",server_port="1"} 1"#,
            "\n",
            r#"maintwatch_close_overshoot_seconds_bucket{le="5.0",server_address="db",server_port="1"} 2"#,
            "\n",
            r#"maintwatch_close_overshoot_seconds_bucket{le="+Inf",server_address="db",server_port="1"} 2"#,
            "\n",
            "# HELP redis_client_connection_closed_total Closed.\n",
            "# TYPE redis_client_connection_closed_total counter\n",
            r#"redis_client_connection_closed_total{reason="server",server_address="a\"b",server_port="1"} 3"#,
            "\n",
        );
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
    fn a_request_decodes_with_the_official_definitions() {
        let exposition = "# HELP redis_client_connection_closed_total Closed.\n\
            # TYPE redis_client_connection_closed_total counter\n\
            redis_client_connection_closed_total{reason=\"server\",server_address=\"db\",server_port=\"7\"} 3\n\
            # HELP maintwatch_close_overshoot_seconds Close.\n\
            # TYPE maintwatch_close_overshoot_seconds histogram\n\
            maintwatch_close_overshoot_seconds_sum 1.5\n\
            maintwatch_close_overshoot_seconds_count 3\n\
            maintwatch_close_overshoot_seconds_bucket{le=\"1.0\"} 1\n\
            maintwatch_close_overshoot_seconds_bucket{le=\"+Inf\"} 3\n";
        let resource = [("service.name".to_string(), "w".to_string())];
        let bytes = encode_request(exposition, &resource, 10, 20);
        let request = ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap();
        let rm = &request.resource_metrics[0];
        assert_eq!(
            rm.resource.as_ref().unwrap().attributes,
            [text("service.name", "w")]
        );
        let metrics = &rm.scope_metrics[0].metrics;
        let Some(metric::Data::Sum(sum)) = &metrics[0].data else {
            panic!("{metrics:?}")
        };
        assert_eq!(metrics[0].name, "redis.client.connection.closed");
        assert!(sum.is_monotonic);
        let point = &sum.data_points[0];
        assert_eq!(point.value, Some(number_data_point::Value::AsInt(3)));
        assert_eq!((point.start_time_unix_nano, point.time_unix_nano), (10, 20));
        assert!(point
            .attributes
            .contains(&text("close.reason", "server_close")));
        let Some(metric::Data::Histogram(h)) = &metrics[1].data else {
            panic!("{metrics:?}")
        };
        assert_eq!(h.data_points[0].bucket_counts, [1, 2]);
        assert_eq!(h.data_points[0].explicit_bounds, [1.0]);
    }

    #[test]
    fn azure_events_are_a_maintwatch_sum_keeping_their_type() {
        // Not a Redis client convention's name: under `maintwatch.`, the label as it is.
        let exposition = concat!(
            "# HELP maintwatch_azure_events_total Azure.\n",
            "# TYPE maintwatch_azure_events_total counter\n",
            r#"maintwatch_azure_events_total{type="NodeMaintenanceStarting",server_address="db",server_port="7"} 2"#,
            "\n",
        );
        let bytes = encode_request(exposition, &[], 10, 20);
        let request = ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap();
        let metric = &request.resource_metrics[0].scope_metrics[0].metrics[0];
        assert_eq!(metric.name, "maintwatch.azure_events");
        let Some(metric::Data::Sum(sum)) = &metric.data else {
            panic!("{metric:?}")
        };
        assert!(sum.is_monotonic);
        let point = &sum.data_points[0];
        assert_eq!(point.value, Some(number_data_point::Value::AsInt(2)));
        assert!(point
            .attributes
            .contains(&text("type", "NodeMaintenanceStarting")));
        assert!(point.attributes.contains(&text("server.address", "db")));
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
}
