//! Arguments that run a watch as a service: `--metrics`, `--otlp`, `--exec` and its companions.
//! Flattened into `watch`, kept apart so the watch's own arguments stay readable.

use super::parse_duration;
use crate::defaults;
use clap::Args;
use std::net::SocketAddr;

#[derive(Args, Debug, Clone, Default)]
pub struct ServiceArgs {
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464): the Prometheus text
    /// format, or OpenMetrics when the scraper asks for it (docs/metrics.md).
    #[arg(long, value_name = "ADDR", value_parser = parse_metrics_addr)]
    pub metrics: Option<SocketAddr>,
    /// Push the same measurements to an OpenTelemetry collector over OTLP/HTTP (protobuf), e.g.
    /// http://127.0.0.1:4318/v1/metrics or https://..., every --otlp-interval and once at exit;
    /// `env` takes the endpoint from OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT. Headers, CA
    /// certificate, timeout and gzip follow the OTEL_EXPORTER_OTLP_* variables; header values are
    /// never printed. A collector that is down is retried with backoff and never delays the
    /// watch (docs/metrics.md, docs/service.md).
    #[arg(long, value_name = "URL|env")]
    pub otlp: Option<String>,
    /// How often --otlp pushes.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = defaults::OTLP_INTERVAL_TEXT,
          requires = "otlp")]
    pub otlp_interval: std::time::Duration,
    /// Run CMD with `sh -c` once per maintenance event and once for its outcome (repeatable):
    /// the JSON line on its stdin, MAINTWATCH_TYPE, MAINTWATCH_EVENT and MAINTWATCH_ENDPOINT in
    /// its environment, never a password. At most 4 run at once; a slow or failing hook never delays the watch.
    #[arg(long, value_name = "CMD")]
    pub exec: Vec<String>,
    /// The line types that run --exec (comma list of JSON `type`s, or `all`). Default: each new
    /// maintenance notification, a socket close past the declared window, and the dry-run verdict.
    #[arg(long, value_name = "TYPES", requires = "exec")]
    pub exec_on: Vec<String>,
    /// Kill a hook (its process group) still running after this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = defaults::EXEC_TIMEOUT_TEXT)]
    pub exec_timeout: std::time::Duration,
}

/// `--metrics`: `IP:PORT`, `HOST:PORT` (resolved now, the first address), or a port alone, which
/// means loopback (`9464` is `127.0.0.1:9464`: exposing metrics beyond the host is a choice to
/// spell out).
pub fn parse_metrics_addr(text: &str) -> Result<SocketAddr, String> {
    use std::net::{Ipv4Addr, ToSocketAddrs};
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let expected = "expected PORT, IP:PORT or HOST:PORT (e.g. 9464 or 127.0.0.1:9464)";
    match text.to_socket_addrs() {
        Ok(mut addrs) => addrs
            .next()
            .ok_or_else(|| format!("{text:?} resolves to no address; {expected}")),
        Err(e) => Err(format!("{e}; {expected}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_takes_a_port_alone_an_address_or_a_host() {
        assert_eq!(
            parse_metrics_addr("9464").unwrap().to_string(),
            "127.0.0.1:9464"
        );
        assert_eq!(
            parse_metrics_addr("0.0.0.0:9464").unwrap().to_string(),
            "0.0.0.0:9464"
        );
        let local = parse_metrics_addr("localhost:9466").unwrap();
        assert!(local.ip().is_loopback() && local.port() == 9466, "{local}");
        let e = parse_metrics_addr("nine").unwrap_err();
        assert!(e.contains("expected PORT, IP:PORT or HOST:PORT"), "{e}");
    }
}
