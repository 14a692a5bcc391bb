//! What ships under `deploy/`: the Prometheus rules (`promtool check rules` and the unit tests in
//! `deploy/prometheus/tests/`), the Grafana dashboard (every query valid PromQL over documented
//! series), and both on a real Prometheus server scraping a watch of the simulator (single-proxy
//! for the notification alerts, azure-failover for the Azure Cache one).
//!
//! promtool comes from `MAINTWATCH_PROMTOOL` (else PATH), the server from
//! `MAINTWATCH_PROMETHEUS` (else `prometheus` on PATH); absent, a SKIP line; configured but
//! broken, a failure.

use crate::common;
use common::scrape;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rules_path() -> PathBuf {
    root().join("deploy/prometheus/maintwatch.rules.yml")
}

fn dashboard() -> serde_json::Value {
    let text = std::fs::read_to_string(root().join("deploy/grafana/maintwatch.json")).unwrap();
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

/// Every PromQL expression of the dashboard (panels' targets and annotations), as written.
fn dashboard_queries(d: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            let title = p["title"].as_str().unwrap_or("?").to_string();
            out.push((title, t["expr"].as_str().unwrap().to_string()));
        }
    }
    for a in d["annotations"]["list"].as_array().unwrap() {
        out.push(("annotation".into(), a["expr"].as_str().unwrap().to_string()));
    }
    out
}

/// A dashboard query as Prometheus runs it for "all watchers".
fn concrete(expr: &str) -> String {
    expr.replace("$instance", ".+")
}

/// `promtool ARGS...`: panics with its output unless it succeeds.
fn promtool_ok(bin: &str, args: &[&str], dir: &Path) -> String {
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("MAINTWATCH_PROMTOOL / promtool {bin} does not run: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?}: {text}");
    text
}

/// The names of the alerts in the rules file (`- alert: NAME` lines).
fn alert_names() -> Vec<String> {
    std::fs::read_to_string(rules_path())
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_rules_pass_promtool_check_and_their_unit_tests() {
    let Some(bin) = scrape::promtool("the_rules_pass_promtool_check_and_their_unit_tests") else {
        return;
    };
    let dir = root().join("deploy/prometheus");
    let checked = promtool_ok(&bin, &["check", "rules", "maintwatch.rules.yml"], &dir);
    assert!(checked.contains("SUCCESS"), "{checked}");
    let tested = promtool_ok(&bin, &["test", "rules", "tests/maintwatch_test.yml"], &dir);
    assert!(tested.contains("SUCCESS"), "{tested}");
}

#[test]
fn every_alert_has_a_unit_test_that_fires_and_one_that_does_not() {
    let names = alert_names();
    assert!(names.len() >= 10, "{names:?}");
    let tests = std::fs::read_to_string(root().join("deploy/prometheus/tests/maintwatch_test.yml"))
        .unwrap();
    // Each `alertname:` line is followed by its `exp_alerts:` line: `[]` or a list.
    let lines: Vec<&str> = tests.lines().map(str::trim).collect();
    for name in &names {
        let cases: Vec<&str> = lines
            .windows(2)
            .filter(|w| w[0] == format!("alertname: {name}"))
            .map(|w| w[1])
            .collect();
        assert!(
            cases.contains(&"exp_alerts: []"),
            "{name}: no case where it stays quiet"
        );
        assert!(
            cases.contains(&"exp_alerts:"),
            "{name}: no case where it fires"
        );
    }
    let rules = std::fs::read_to_string(rules_path()).unwrap();
    assert_eq!(
        rules.matches("summary:").count(),
        names.len(),
        "a summary per alert"
    );
    assert_eq!(
        rules.matches("description:").count(),
        names.len(),
        "a description per alert"
    );
}

/// Series names a PromQL text reads that are maintwatch's (histogram suffixes removed).
fn series_read(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest
        .find("maintwatch_")
        .into_iter()
        .chain(rest.find("redis_client_"))
        .min()
    {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        let preceded_by_colon = i > 0 && rest.as_bytes()[i - 1] == b':';
        if !preceded_by_colon {
            let base = ["_bucket", "_count", "_sum"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(name);
            out.push(base.to_string());
        }
        rest = &tail[end..];
    }
    out
}

#[test]
fn the_rules_and_the_dashboard_read_only_documented_series() {
    let doc = std::fs::read_to_string(root().join("docs/metrics.md")).unwrap();
    let rules = std::fs::read_to_string(rules_path()).unwrap();
    let exprs: Vec<String> = rules
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(str::to_string)
        .chain(dashboard_queries(&dashboard()).into_iter().map(|(_, e)| e))
        .collect();
    let mut seen = 0;
    for e in &exprs {
        for name in series_read(e) {
            let documented = doc.contains(&format!("`{name}`"))
                || (name == "maintwatch_build_info" && doc.contains("`maintwatch_build_info`"));
            assert!(documented, "{name} (in {e}) is not in docs/metrics.md");
            seen += 1;
        }
    }
    assert!(seen > 20, "{seen}");
}

#[test]
fn the_dashboard_has_a_row_per_watcher_and_every_query_is_valid_promql() {
    let d = dashboard();
    let vars = d["templating"]["list"].as_array().unwrap();
    assert!(vars.iter().any(|v| v["name"] == "instance"));
    let panels = d["panels"].as_array().unwrap();
    assert_eq!(panels[0]["type"], "row");
    assert_eq!(panels[0]["repeat"], "instance", "one row per watcher");
    let queries = dashboard_queries(&d);
    for (title, q) in &queries {
        assert!(
            q.contains("instance=~\"$instance\""),
            "{title}: {q} is not per watcher"
        );
    }
    let Some(bin) =
        scrape::promtool("the_dashboard_has_a_row_per_watcher_and_every_query_is_valid_promql")
    else {
        return;
    };
    // promtool parses an expression only inside a rule file: each query becomes a recording rule.
    let dir = tempfile::tempdir().unwrap();
    let mut file = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, (_, q)) in queries.iter().enumerate() {
        let quoted = serde_json::to_string(&concrete(q)).unwrap();
        file.push_str(&format!(
            "      - record: dashboard:query{i}\n        expr: {quoted}\n"
        ));
    }
    std::fs::write(dir.path().join("dashboard.rules.yml"), &file).unwrap();
    let out = promtool_ok(&bin, &["check", "rules", "dashboard.rules.yml"], dir.path());
    assert!(
        out.contains(&format!("SUCCESS: {} rules found", queries.len())),
        "{out}"
    );
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One HTTP/1.0 GET (no chunked body, the server closes): (status code, body). `None` when the
/// server does not answer yet.
async fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let req = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    s.write_all(req.as_bytes()).await.ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let code = head.split(' ').nth(1)?.parse().ok()?;
    Some((code, body.to_string()))
}

/// A Prometheus server on a loopback port with a temporary storage folder, scraping one target
/// and evaluating the shipped rules `every` (a Prometheus duration: `1s`, `250ms`).
struct Server {
    child: tokio::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(bin: &str, target: u16, every: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let config = format!(
            "global:\n  scrape_interval: {every}\n  scrape_timeout: {every}\n  evaluation_interval: {every}\n\
             rule_files:\n  - {rules:?}\n\
             scrape_configs:\n  - job_name: maintwatch\n    static_configs:\n      - targets: [\"127.0.0.1:{target}\"]\n",
            rules = rules_path().display().to_string(),
        );
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let port = common::closed_port().port();
        let child = tokio::process::Command::new(bin)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("MAINTWATCH_PROMETHEUS / prometheus {bin} does not run: {e}")
            });
        let mut server = Server {
            child,
            port,
            _dir: dir,
        };
        server.until_ready().await;
        server
    }

    async fn until_ready(&mut self) {
        let ready = tokio::time::timeout(GUARD, async {
            loop {
                if let Ok(Some(status)) = self.child.try_wait() {
                    return Err(status);
                }
                if let Some((200, _)) = http_get(self.port, "/-/ready").await {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .expect("hang guard: prometheus never became ready");
        if let Err(status) = ready {
            let mut err = String::new();
            use tokio::io::AsyncReadExt;
            let _ = self
                .child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .await;
            panic!("prometheus exited before it was ready ({status}): {err}");
        }
    }

    /// `GET path` on the API: the JSON's `data`, after checking `status` is `success`.
    async fn api(&self, path: &str) -> serde_json::Value {
        let (code, body) = http_get(self.port, path)
            .await
            .unwrap_or_else(|| panic!("prometheus did not answer {path}"));
        let v: serde_json::Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
        assert_eq!(
            (code, v["status"].as_str()),
            (200, Some("success")),
            "{path}: {body}"
        );
        v["data"].clone()
    }

    /// Whether an instant query returns at least one sample now.
    async fn has_data(&self, query: &str) -> bool {
        let data = self
            .api(&format!("/api/v1/query?query={}", percent_encode(query)))
            .await;
        data["result"].as_array().is_some_and(|r| !r.is_empty())
    }

    /// The samples of a range-vector query (`name{...}[5m]`) now: (labels, [(time, value)]) per
    /// series.
    async fn range(&self, query: &str) -> Vec<(serde_json::Value, Vec<(f64, f64)>)> {
        let data = self
            .api(&format!("/api/v1/query?query={}", percent_encode(query)))
            .await;
        let series = data["result"].as_array().cloned().unwrap_or_default();
        series
            .into_iter()
            .map(|s| {
                let values = s["values"].as_array().cloned().unwrap_or_default();
                let points = values
                    .iter()
                    .map(|v| {
                        let value = v[1].as_str().and_then(|t| t.parse().ok());
                        (v[0].as_f64().unwrap(), value.unwrap())
                    })
                    .collect();
                (s["metric"].clone(), points)
            })
            .collect()
    }

    /// The alerts now pending or firing: (name, state).
    async fn alerts(&self) -> Vec<(String, String)> {
        let data = self.api("/api/v1/alerts").await;
        data["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["labels"]["alertname"].as_str().unwrap().to_string(),
                    a["state"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

/// Whether a query reads the Azure series (they exist only with `--azure-events`).
fn reads_azure(query: &str) -> bool {
    query.contains("maintwatch_azure_")
}

use scrape::GUARD;
use std::collections::BTreeSet;
use std::time::Duration;

/// The alerts a maintenance in the single-proxy scenario raises (its close is 1.6 s past the
/// window).
const DURING: [&str; 3] = [
    "MaintwatchMaintenanceStarted",
    "MaintwatchMaintenanceWindowOpen",
    "MaintwatchClosedPastWindow",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scraping_a_watch_fires_and_resolves_the_alerts_and_feeds_the_dashboard()
{
    const TEST: &str = "a_real_prometheus_scraping_a_watch";
    let Some(bin) = scrape::prometheus(TEST) else {
        return;
    };
    let target = common::closed_port().port();
    let server = Server::start(&bin, target, "1s").await;
    // Speed 0.5: the 15 s window lasts 30 s, many scrapes and evaluations at 1 s.
    let metrics = format!("127.0.0.1:{target}");
    let mut w = scrape::start(
        "single-proxy",
        0.5,
        None,
        &["--metrics", &metrics, "--heartbeat", "1s"],
        &[],
    )
    .await;
    // The Azure panel has data only with --azure-events: the Azure test below reads it.
    let queries: Vec<(String, String)> = dashboard_queries(&dashboard())
        .into_iter()
        .filter(|(_, q)| !reads_azure(q))
        .map(|(t, q)| (t, concrete(&q)))
        .collect();
    // During the scenario, poll until every query has had data and each maintenance alert has
    // been pending or firing at least once (a hang guard, not a timing).
    let mut had_data: BTreeSet<usize> = BTreeSet::new();
    let mut raised: BTreeSet<String> = BTreeSet::new();
    let polled = tokio::time::timeout(Duration::from_secs(180), async {
        while had_data.len() < queries.len() || !DURING.iter().all(|a| raised.contains(*a)) {
            for (i, (_, q)) in queries.iter().enumerate() {
                if !had_data.contains(&i) && server.has_data(q).await {
                    had_data.insert(i);
                }
            }
            raised.extend(server.alerts().await.into_iter().map(|(name, _)| name));
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await;
    let missing: Vec<&(String, String)> = queries
        .iter()
        .enumerate()
        .filter(|(i, _)| !had_data.contains(i))
        .map(|(_, q)| q)
        .collect();
    assert!(
        polled.is_ok(),
        "hang guard: alerts raised {raised:?} (want {DURING:?}); queries without data: {missing:#?}\nwatch stderr: {}",
        w.stderr_text()
    );
    // After it: the window is closed and the watch reconnected; the window's alert resolves.
    w.until("the reconnect after the close", |l| {
        l.iter().any(|l| {
            matches!(
                l,
                maintwatch::observe::record::WatchLine::Connected(c) if c.session == 2
            )
        })
    })
    .await;
    let resolved = tokio::time::timeout(GUARD, async {
        loop {
            let now = server.alerts().await;
            if !now
                .iter()
                .any(|(n, _)| n == "MaintwatchMaintenanceWindowOpen")
            {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await
    .expect("hang guard: the window's alert never resolved");
    // No alert the scenario does not warrant: the opt-in stayed accepted, every close was
    // announced, DNS followed inside the window, the dry-run moved in time.
    // (The opt-in alert may be pending for one evaluation if a scrape fell between a reconnect
    // and its handshake: its `for: 1m` is there for that.)
    for (name, state) in &resolved {
        let transient = name == "MaintwatchOptInLost" && state == "pending";
        assert!(
            DURING.contains(&name.as_str()) || transient,
            "unexpected {name}: {resolved:?}"
        );
    }
    assert_eq!(w.interrupt().await, 130);
    // The watcher gone: its target is down and MaintwatchDown is raised (pending for 2 min).
    tokio::time::timeout(GUARD, async {
        while !server
            .alerts()
            .await
            .iter()
            .any(|(n, _)| n == "MaintwatchDown")
        {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await
    .expect("hang guard: MaintwatchDown never raised after the watch stopped");
}

const AZURE_ALERT: &str = "MaintwatchAzureMaintenanceWindowOpen";

/// Polls (a hang guard, not a timing) until `done` holds for the server.
async fn poll_until<F, Fut>(what: &str, done: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    tokio::time::timeout(GUARD, async {
        while !done().await {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("hang guard: {what}"));
}

/// The first time in `series` (the samples of one series) with a value of at least `min`.
fn first_at(series: &[(serde_json::Value, Vec<(f64, f64)>)], min: f64) -> Option<f64> {
    series
        .iter()
        .flat_map(|(_, points)| points.iter())
        .filter(|(_, v)| *v >= min)
        .map(|(t, _)| *t)
        .reduce(f64::min)
}

/// The Azure alert on a real server: the watch of azure-failover (speed 8: under 5 s of
/// scenario) scraped and evaluated every 250 ms. Read back from the server's own history
/// (`ALERTS`, the series), so the assertions are on what it recorded and in which order, not on
/// catching it live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_fires_the_azure_alert_while_the_azure_window_is_open_and_resolves_it() {
    const TEST: &str = "a_real_prometheus_fires_the_azure_alert";
    let Some(bin) = scrape::prometheus(TEST) else {
        return;
    };
    let target = common::closed_port().port();
    let server = Server::start(&bin, target, "250ms").await;
    // The server's first scrape comes seconds after it is ready (its target discovery is
    // throttled), longer than the whole scenario: wait for it (`up` exists, 0 with nothing on
    // the port) before starting the watch.
    poll_until("the target never scraped", || server.has_data("up")).await;
    let metrics = format!("127.0.0.1:{target}");
    let mut w = scrape::start(
        "azure-failover",
        8.0,
        None,
        &["--metrics", &metrics, "--azure-events"],
        &[],
    )
    .await;
    w.until("NodeMaintenanceEnded", |l| {
        l.iter().any(|l| {
            matches!(l, maintwatch::observe::record::WatchLine::AzureEvent(a)
                if a.event.kind == Some(maintwatch::protocol::azure::AzureKind::Ended))
        })
    })
    .await;
    // Ended scraped: the Azure window (closed by FailoverComplete before it) is 0 on the server.
    let ended = r#"maintwatch_azure_events_total{type="NodeMaintenanceEnded"}"#;
    poll_until("Ended never scraped", || server.has_data(ended)).await;
    poll_until("the Azure alert never resolved", || async {
        !server.alerts().await.iter().any(|(n, _)| n == AZURE_ALERT)
    })
    .await;
    // Resolved by the lines, not by the watcher going away: it is still scraped.
    assert!(server.has_data("up == 1").await, "{}", w.stderr_text());
    let firing = server
        .range(&format!(
            r#"ALERTS{{alertname="{AZURE_ALERT}",alertstate="firing"}}[5m]"#
        ))
        .await;
    assert_eq!(firing.len(), 1, "one endpoint's alert: {firing:?}");
    let port = w.sim.port().to_string();
    assert_eq!(firing[0].0["server_port"].as_str(), Some(port.as_str()));
    assert_eq!(firing[0].0["severity"].as_str(), Some("info"));
    let starting = server
        .range(r#"maintwatch_azure_events_total{type="NodeMaintenanceStarting"}[5m]"#)
        .await;
    let open = server.range("maintwatch_azure_windows_open[5m]").await;
    let (fired, opened) = (first_at(&firing, 1.0), first_at(&open, 1.0));
    let started = first_at(&starting, 1.0);
    // Starting scraped, then the window seen open, then the alert: each read the one before.
    assert!(
        started.is_some() && started <= opened && opened <= fired,
        "Starting {started:?}, window {opened:?}, alert {fired:?}"
    );
    // The window was seen closed after it was seen open.
    let closed = open[0]
        .1
        .iter()
        .any(|(t, v)| *v == 0.0 && Some(*t) > opened);
    assert!(closed, "{open:?}");
    // The dashboard's Azure panel has its data now.
    for (title, q) in dashboard_queries(&dashboard()) {
        if reads_azure(&q) {
            assert!(server.has_data(&concrete(&q)).await, "{title}: {q}");
        }
    }
    assert_eq!(w.interrupt().await, 130, "{}", w.stderr_text());
}
