//! Arguments that run a watch as a service: `--metrics`, `--otlp`, `--exec` and its companions.
//! Flattened into `watch`, kept apart so the watch's own arguments stay readable.

use super::parse_duration;
use clap::Args;
use std::net::SocketAddr;

#[derive(Args, Debug, Clone, Default)]
pub struct ServiceArgs {
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464): the Prometheus text
    /// format, or OpenMetrics when the scraper asks for it (docs/metrics.md).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Push the same measurements to an OpenTelemetry collector over OTLP/HTTP (protobuf), e.g.
    /// http://127.0.0.1:4318/v1/metrics: every --otlp-interval and once at exit. A collector
    /// that is down is retried with backoff and never delays the watch (docs/metrics.md).
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// How often --otlp pushes.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s",
          requires = "otlp")]
    pub otlp_interval: std::time::Duration,
    /// Run CMD with `sh -c` for each line an operator alerts on (repeatable): the JSON line on
    /// its stdin, MAINTWATCH_TYPE, MAINTWATCH_EVENT and MAINTWATCH_ENDPOINT in its environment,
    /// never the password. At most 4 run at once; a slow or failing hook never delays the watch.
    #[arg(long, value_name = "CMD")]
    pub exec: Vec<String>,
    /// The line types that run --exec (comma list of JSON `type`s, or `all`). Default: maintenance
    /// notifications, socket closes, DNS changes, opt-in outcomes, dry-runs and verdicts.
    #[arg(long, value_name = "TYPES", requires = "exec")]
    pub exec_on: Vec<String>,
    /// Kill a hook (its process group) still running after this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub exec_timeout: std::time::Duration,
}
