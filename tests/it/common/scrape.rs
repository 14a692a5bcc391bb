//! Shared by `tests/it/metrics.rs`, `tests/it/hooks.rs`, `tests/it/deploy.rs` and `tests/it/otlp.rs`: the real
//! binary, started by the process harness, watching the simulator
//! with `--metrics 127.0.0.1:0` (the address it bound is read from its stderr), a small HTTP/1.1
//! client over a plain `TcpStream` to scrape it, a parser of the exposition's samples, and the
//! `promtool` tier (`MAINTWATCH_PROMTOOL`, else `promtool` on PATH; neither: a SKIP line).

use super::{maintwatch_async, JsonWatch};
use maintwatch::observe::record::WatchLine;
use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A hang guard only: no test waits this long unless something is broken.
pub const GUARD: Duration = Duration::from_secs(60);

pub struct Watch {
    pub sim: Simulator,
    /// The watch: its stdout lines are read into `json.seen`, its stderr is collected.
    pub json: JsonWatch,
    pub metrics: Option<SocketAddr>,
}

impl std::ops::Deref for Watch {
    type Target = JsonWatch;
    fn deref(&self) -> &JsonWatch {
        &self.json
    }
}

/// The simulator playing `scenario` at `speed` (with `password`, if any), and
/// `maintwatch watch --json` on it with `extra` arguments and `env` added to its environment.
pub async fn start(
    scenario: &str,
    speed: f64,
    password: Option<&str>,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Watch {
    let mut opts = SimOptions::new(scenarios::by_name(scenario).expect("a bundled scenario"));
    opts.speed = speed;
    opts.password = password.map(str::to_string);
    start_with(opts, extra, env).await
}

/// The same with the simulator's options as given (`--loop`, say).
pub async fn start_with(opts: SimOptions, extra: &[&str], env: &[(&str, &str)]) -> Watch {
    let speed = opts.speed;
    let sim = Simulator::start(opts).await.expect("simulator starts");
    let url = sim.url();
    let mut cmd = maintwatch_async(["watch", &url, "--json", "--dns-server"]);
    cmd.arg(sim.dns_addr().to_string())
        .args(["--sim-speed", &speed.to_string()])
        .args(extra)
        .envs(env.iter().copied());
    let json = JsonWatch::spawn(cmd);
    let metrics = if extra.contains(&"--metrics") {
        let line = json
            .proc
            .stderr_line(GUARD, "where the metrics are", |l| {
                l.starts_with("maintwatch: metrics at http://")
            })
            .await;
        let rest = line.strip_prefix("maintwatch: metrics at http://").unwrap();
        Some(
            rest.trim_end_matches("/metrics")
                .parse::<SocketAddr>()
                .unwrap_or_else(|e| panic!("{e}: {line}")),
        )
    } else {
        None
    };
    Watch { sim, json, metrics }
}

impl Watch {
    /// Reads lines until `done` holds over everything seen so far.
    pub async fn until(&mut self, what: &str, done: impl Fn(&[WatchLine]) -> bool) {
        self.json.until(GUARD, what, done).await;
    }

    /// Ctrl-C, then the rest of the output; returns the exit code.
    pub async fn interrupt(&mut self) -> i32 {
        self.json.interrupt(GUARD).await
    }

    pub fn stderr_text(&self) -> String {
        self.json.proc.stderr_text()
    }

    /// `GET /metrics` in the Prometheus text format: the body.
    pub async fn scrape(&self) -> String {
        let (head, body) = get(self.metrics.expect("--metrics"), None).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        body
    }

    /// Scrapes until `done` holds on the samples (a hang guard, not a timing).
    pub async fn scrape_until(
        &self,
        what: &str,
        done: impl Fn(&HashMap<String, f64>) -> bool,
    ) -> String {
        let result = tokio::time::timeout(GUARD, async {
            loop {
                let text = self.scrape().await;
                if done(&samples(&text)) {
                    return text;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        result.unwrap_or_else(|_| panic!("hang guard: the metrics never showed {what}"))
    }

    /// `{server_address="...",server_port="..."}` of the watched endpoint, with `extra` labels
    /// (already formatted, `name="value"`) before them as the encoder orders them.
    pub fn labels(&self, extra: &str) -> String {
        let endpoint = format!(
            "server_address=\"{}\",server_port=\"{}\"",
            self.sim.host(),
            self.sim.port()
        );
        if extra.is_empty() {
            format!("{{{endpoint}}}")
        } else {
            format!("{{{extra},{endpoint}}}")
        }
    }
}

/// One `GET /metrics` over HTTP/1.1 with `Connection: close`: (status line and headers, body).
pub async fn get(addr: SocketAddr, accept: Option<&str>) -> (String, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    let request =
        format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n");
    s.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(GUARD, s.read_to_end(&mut raw))
        .await
        .expect("hang guard: the response ends")
        .unwrap();
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
    (head.to_string(), body.to_string())
}

/// Every sample of an exposition: `name{labels}` (as written) to its value.
pub fn samples(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').expect("name and value");
            let value = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v.parse().unwrap_or_else(|_| panic!("a number: {l}")),
            };
            (series.to_string(), value)
        })
        .collect()
}

/// The configured promtool: `MAINTWATCH_PROMTOOL` (empty: none), else `promtool` on PATH; `None`
/// after a SKIP line.
pub fn promtool(test: &str) -> Option<String> {
    prometheus_part(test, "MAINTWATCH_PROMTOOL", "promtool")
}

/// The configured Prometheus server: `MAINTWATCH_PROMETHEUS` (empty: none), else `prometheus`
/// on PATH; `None` after a SKIP line.
pub fn prometheus(test: &str) -> Option<String> {
    prometheus_part(test, "MAINTWATCH_PROMETHEUS", "prometheus")
}

/// A program of the Debian package `prometheus`: the variable `var` (empty: none), else
/// `program` on PATH; `None` after a SKIP line.
fn prometheus_part(test: &str, var: &str, program: &str) -> Option<String> {
    if let Some(v) = std::env::var_os(var) {
        let v = v.to_string_lossy().trim().to_string();
        if v.is_empty() {
            crate::common::skip(test, &format!("{var} is empty"));
            return None;
        }
        return Some(v);
    }
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        crate::common::skip(
            test,
            &format!("{program} is not installed (Debian package `prometheus`) and {var} is unset"),
        );
    }
    found.map(|p| p.to_string_lossy().into_owned())
}

/// `promtool check metrics` on `text`: panics with its output unless it accepts it.
pub fn promtool_check(bin: &str, text: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new(bin)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("MAINTWATCH_PROMTOOL / promtool {bin} does not run: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics refused the exposition ({}): {}{}\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
