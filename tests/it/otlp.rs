//! `watch --otlp`: the real binary watching the simulator pushes to a receiver that decodes the
//! official OTLP protobuf definitions (`tests/otlp/receiver.py`, PyPI `opentelemetry-proto` in
//! `MAINTWATCH_PYTHON`; unset, or the package absent: a SKIP line), and to a collector that is
//! down, which must not hold the watch. `--otlp env` follows the `OTEL_*` variables: the endpoint,
//! an authentication header, gzip, and https to a receiver whose certificate a test CA (made
//! here with rcgen) signed; neither the header's value nor the password is ever printed.

use crate::common;
use common::scrape;

use maintwatch::observe::record::WatchLine;
use maintwatch::protocol::notification::{Classified, Kind};
use serde_json::Value;
use std::collections::HashMap;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The receiver, and the JSON lines it prints (one per request).
struct Receiver {
    _child: tokio::process::Child,
    port: u16,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

/// Starts the receiver; `None` after a SKIP line when there is no Python or no package.
async fn receiver(test: &str, args: &[&str]) -> Option<Receiver> {
    let py = std::env::var("MAINTWATCH_PYTHON").unwrap_or_default();
    if py.trim().is_empty() {
        crate::common::skip(test, "MAINTWATCH_PYTHON is unset or empty (.ci/run sets it to a venv with opentelemetry-proto)");
        return None;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otlp/receiver.py");
    let mut child = tokio::process::Command::new(py.trim())
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("MAINTWATCH_PYTHON={py} does not run: {e}"));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(scrape::GUARD, lines.next_line())
        .await
        .expect("hang guard: the receiver says where it listens")
        .unwrap();
    let Some(port) = first
        .as_deref()
        .and_then(|l| l.strip_prefix("listening "))
        .and_then(|p| p.parse().ok())
    else {
        let status = child.wait().await.unwrap();
        assert_eq!(
            status.code(),
            Some(3),
            "the OTLP receiver failed to start ({status})"
        );
        crate::common::skip(
            test,
            "MAINTWATCH_PYTHON has no opentelemetry-proto (pip install opentelemetry-proto)",
        );
        return None;
    };
    Some(Receiver {
        _child: child,
        port,
        lines,
    })
}

impl Receiver {
    /// Reads requests until one satisfies `done`; returns it.
    async fn until(&mut self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let found = tokio::time::timeout(scrape::GUARD, async {
            loop {
                let line = self
                    .lines
                    .next_line()
                    .await
                    .unwrap()
                    .unwrap_or_else(|| panic!("the receiver ended before {what}"));
                let v: Value = serde_json::from_str(&line).unwrap();
                if done(&v) {
                    return v;
                }
            }
        })
        .await;
        found.unwrap_or_else(|_| panic!("hang guard: no request showed {what}"))
    }
}

/// An OTLP JSON attribute list as key -> value (strings, and integers as their digits).
fn attrs(list: &Value) -> HashMap<String, String> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|kv| {
            let v = &kv["value"];
            let value = v["stringValue"]
                .as_str()
                .or(v["intValue"].as_str())
                .unwrap_or_default();
            (kv["key"].as_str().unwrap().to_string(), value.to_string())
        })
        .collect()
}

/// The metric named `name` in a request.
fn metric<'a>(req: &'a Value, name: &str) -> Option<&'a Value> {
    req["request"]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)
}

/// A sum's or gauge's points: attributes and value.
fn points(m: &Value) -> Vec<(HashMap<String, String>, f64)> {
    let data = if m["sum"].is_object() {
        &m["sum"]
    } else {
        &m["gauge"]
    };
    data["dataPoints"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let value = p["asInt"]
                .as_str()
                .and_then(|i| i.parse().ok())
                .or(p["asDouble"].as_f64())
                .unwrap_or(0.0);
            (attrs(&p["attributes"]), value)
        })
        .collect()
}

/// The count of `notification` in a request, for the watched endpoint.
fn notifications(req: &Value, host: &str, port: u16, notification: &str) -> f64 {
    metric(req, "redis.client.maintenance.notifications")
        .map(points)
        .unwrap_or_default()
        .iter()
        .filter(|(a, _)| {
            a.get("redis.client.connection.notification")
                .map(String::as_str)
                == Some(notification)
                && a.get("server.address").map(String::as_str) == Some(host)
                && a.get("server.port") == Some(&port.to_string())
        })
        .map(|(_, v)| v)
        .sum()
}

fn closed_by(req: &Value, reason: &str) -> f64 {
    metric(req, "redis.client.connection.closed")
        .map(points)
        .unwrap_or_default()
        .iter()
        .filter(|(a, _)| a.get("close.reason").map(String::as_str) == Some(reason))
        .map(|(_, v)| v)
        .sum()
}

/// A watch of `single-proxy` exporting to `rx` every `interval`, once it has printed the MOVING.
async fn watch_to_the_moving(rx: &Receiver, interval: &str) -> scrape::Watch {
    let url = format!("http://127.0.0.1:{}/v1/metrics", rx.port);
    let mut w = scrape::start(
        "single-proxy",
        4.0,
        None,
        &["--otlp", &url, "--otlp-interval", interval],
        &[],
    )
    .await;
    w.until("the MOVING", |l| {
        l.iter().any(|l| {
            matches!(l, WatchLine::Push(p)
                if matches!(&p.frame.parsed, Classified::Maintenance(n) if n.kind == Kind::Moving))
        })
    })
    .await;
    w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_otlp_receiver_gets_the_moving_counted_with_the_conventions_names() {
    const TEST: &str = "an_otlp_receiver_gets_the_moving_counted";
    let Some(mut rx) = receiver(TEST, &[]).await else {
        return;
    };
    let mut w = watch_to_the_moving(&rx, "1s").await;
    let (host, port) = (w.sim.host(), w.sim.port());
    let req = rx
        .until("the MOVING counted", |r| {
            notifications(r, host, port, "MOVING") >= 1.0
        })
        .await;
    assert_eq!(req["path"], "/v1/metrics");
    assert_eq!(req["content_type"], "application/x-protobuf");
    let resource = attrs(&req["request"]["resourceMetrics"][0]["resource"]["attributes"]);
    assert_eq!(resource["service.name"], "maintwatch", "{resource:?}");
    assert!(!resource["host.name"].is_empty(), "{resource:?}");
    let n = metric(&req, "redis.client.maintenance.notifications").unwrap();
    assert_eq!(n["sum"]["isMonotonic"], true, "{n}");
    assert_eq!(
        n["sum"]["aggregationTemporality"], "AGGREGATION_TEMPORALITY_CUMULATIVE",
        "{n}"
    );
    let library = &points(n)[0].0["redis.client.library"];
    assert!(library.starts_with("maintwatch:"), "{library}");
    assert!(
        metric(&req, "maintwatch.windows_open").is_some(),
        "maintwatch's own under its prefix: {req}"
    );

    // The server's close, with the conventions' reason; the overshoot as a histogram.
    let req = rx
        .until("the server's close", |r| {
            closed_by(r, "server_close") >= 1.0
        })
        .await;
    let h = metric(&req, "maintwatch.close_overshoot").expect("the overshoot histogram");
    assert_eq!(h["unit"], "s");
    let point = &h["histogram"]["dataPoints"][0];
    assert_eq!(point["count"], "1", "{h}");
    let counts: u64 = point["bucketCounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(counts, 1, "buckets count each observation once: {h}");
    assert_eq!(
        point["bucketCounts"].as_array().unwrap().len(),
        point["explicitBounds"].as_array().unwrap().len() + 1
    );

    assert_eq!(w.interrupt().await, 130);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watch_pushes_once_more_at_exit() {
    const TEST: &str = "the_watch_pushes_once_more_at_exit";
    let Some(mut rx) = receiver(TEST, &[]).await else {
        return;
    };
    // An interval no test reaches: the only push is the one at exit.
    let mut w = watch_to_the_moving(&rx, "1h").await;
    let (host, port) = (w.sim.host(), w.sim.port());
    assert_eq!(w.interrupt().await, 130);
    rx.until("the MOVING counted at exit", |r| {
        notifications(r, host, port, "MOVING") >= 1.0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_never_holds_the_watch() {
    let down = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/metrics", down.local_addr().unwrap());
    drop(down);
    let mut w = scrape::start(
        "single-proxy",
        4.0,
        None,
        &[
            "--otlp",
            &url,
            "--otlp-interval",
            "1s",
            "--metrics",
            "127.0.0.1:0",
        ],
        &[],
    )
    .await;
    // The whole maintenance is watched while every export fails.
    w.until("the reconnect after the close", |l| {
        l.iter()
            .any(|l| matches!(l, WatchLine::Connected(c) if c.session == 2))
    })
    .await;
    let failed = "maintwatch_otlp_exports_total{result=\"failed\"}";
    let text = w
        .scrape_until("a failed export counted", |s| {
            s.get(failed).is_some_and(|v| *v >= 1.0)
        })
        .await;
    assert!(!text.contains("result=\"ok\""), "{text}");
    assert_eq!(w.interrupt().await, 130);
    let stderr = w.stderr_text();
    assert_eq!(
        stderr.matches(&format!("--otlp {url}: connect")).count(),
        1,
        "said once, not at every retry: {stderr}"
    );
}

#[test]
fn a_url_that_is_not_http_is_a_usage_error_naming_the_flag() {
    for url in ["ftp://collector:4318", "http://user:secret@collector:4318"] {
        let out = common::maintwatch(["watch", "redis://127.0.0.1:1", "--otlp", url])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("--otlp"), "{stderr}");
        assert!(!stderr.contains("secret"), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing was watched");
    }
}

#[test]
fn a_bad_otel_variable_is_a_usage_error_naming_it_never_a_header_value() {
    for (name, value, says) in [
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "collector:4318",
            "http:// or https://",
        ),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "x-api-key=Hidden%0Avalue",
            "x-api-key",
        ),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "Hidden-value-alone",
            "entry 1",
        ),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon", "milliseconds"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "brotli", "gzip or none"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "http/protobuf"),
    ] {
        let out = common::maintwatch(["watch", "redis://127.0.0.1:1", "--otlp", "env"])
            .env(name, value)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(name) && stderr.contains(says), "{stderr}");
        assert!(!stderr.contains("Hidden"), "a header value shown: {stderr}");
        assert!(out.stdout.is_empty(), "nothing was watched");
    }
}

/// The header's value and the Redis password, which no output may hold.
const API_KEY: &str = "Key-4f9c2e7a";
const PASSWORD: &str = "Pw-81d3b6c0";

/// Watches the simulator (with a password) with `--otlp env` and `env`, until the receiver has
/// the MOVING counted; checks no output holds a secret. The request that showed it.
async fn watch_env(rx: &mut Receiver, env: &[(&str, &str)]) -> Value {
    let mut env = env.to_vec();
    env.push(("REDISCLI_AUTH", PASSWORD));
    let mut w = scrape::start(
        "single-proxy",
        4.0,
        Some(PASSWORD),
        &["--otlp", "env", "--otlp-interval", "1s"],
        &env,
    )
    .await;
    let (host, port) = (w.sim.host().to_string(), w.sim.port());
    let req = rx
        .until("the MOVING counted", |r| {
            notifications(r, &host, port, "MOVING") >= 1.0
        })
        .await;
    assert_eq!(w.interrupt().await, 130, "{}", w.stderr_text());
    let stdout: Vec<String> = w
        .seen
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    for (what, text) in [("stdout", stdout.join("\n")), ("stderr", w.stderr_text())] {
        for secret in [API_KEY, PASSWORD] {
            assert!(!text.contains(secret), "{what} holds a secret:\n{text}");
        }
    }
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_env_posts_to_v1_metrics_with_the_header_and_the_resource() {
    const TEST: &str = "otlp_env_posts_to_v1_metrics_with_the_header";
    let Some(mut rx) = receiver(TEST, &[]).await else {
        return;
    };
    let endpoint = format!("http://127.0.0.1:{}", rx.port);
    // The value percent-encoded as the specification writes it: `=` and `,` inside.
    let headers = format!("x-api-key={},tenant=a%3Db%2Cc", API_KEY);
    let req = watch_env(
        &mut rx,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_HEADERS", &headers),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ("OTEL_SERVICE_NAME", "redis-watch"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=test%20eu",
            ),
        ],
    )
    .await;
    assert_eq!(req["path"], "/v1/metrics");
    assert_eq!(req["headers"]["x-api-key"], API_KEY);
    assert_eq!(req["headers"]["tenant"], "a=b,c");
    assert_eq!(req["headers"]["content-encoding"], "gzip");
    let resource = attrs(&req["request"]["resourceMetrics"][0]["resource"]["attributes"]);
    assert_eq!(resource["service.name"], "redis-watch", "{resource:?}");
    assert_eq!(resource["deployment.environment"], "test eu");
    assert!(!resource["host.name"].is_empty(), "{resource:?}");
}

/// A CA and a certificate it signed for 127.0.0.1, as PEM files in `dir`: (ca, cert, key).
fn test_ca(dir: &std::path::Path) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "maintwatch test CA");
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, "otlp receiver");
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &ca).unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    (
        write("ca.pem", &ca.pem()),
        write("receiver.pem", &cert.pem()),
        write("receiver.key", &key.serialize_pem()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_receiver_signed_by_the_given_ca_is_reached() {
    const TEST: &str = "an_https_receiver_signed_by_the_given_ca_is_reached";
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = test_ca(dir.path());
    let Some(mut rx) = receiver(TEST, &["--tls", &cert, &key]).await else {
        return;
    };
    // The signal's own endpoint, used as it is: its path is not extended.
    let endpoint = format!("https://127.0.0.1:{}/custom/metrics", rx.port);
    let headers = format!("authorization=Bearer%20{API_KEY}");
    let req = watch_env(
        &mut rx,
        &[
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"),
            ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", &headers),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "5000"),
        ],
    )
    .await;
    assert_eq!(req["path"], "/custom/metrics");
    assert_eq!(req["headers"]["authorization"], format!("Bearer {API_KEY}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_receiver_the_system_does_not_trust_is_refused_and_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_ca, cert, key) = test_ca(dir.path());
    let Some(rx) = receiver(
        "an_https_receiver_the_system_does_not_trust",
        &["--tls", &cert, &key],
    )
    .await
    else {
        return;
    };
    let endpoint = format!("https://127.0.0.1:{}", rx.port);
    let headers = format!("x-api-key={API_KEY}");
    let mut w = scrape::start(
        "single-proxy",
        4.0,
        None,
        &[
            "--otlp",
            "env",
            "--otlp-interval",
            "1s",
            "--metrics",
            "127.0.0.1:0",
        ],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_HEADERS", &headers),
        ],
    )
    .await;
    let failed = "maintwatch_otlp_exports_total{result=\"failed\"}";
    w.scrape_until("a failed export counted", |s| {
        s.get(failed).is_some_and(|v| *v >= 1.0)
    })
    .await;
    assert_eq!(w.interrupt().await, 130);
    let stderr = w.stderr_text();
    assert_eq!(stderr.matches(": TLS: ").count(), 1, "{stderr}");
    assert!(!stderr.contains(API_KEY), "{stderr}");
}
