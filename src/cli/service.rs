//! Arguments that run a watch as a service: `--metrics`, `--exec` and its companions. Flattened
//! into `watch`, kept apart so the watch's own arguments stay readable.

use super::parse_duration;
use clap::Args;
use std::net::SocketAddr;

#[derive(Args, Debug, Clone, Default)]
pub struct ServiceArgs {
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464): the Prometheus text
    /// format, or OpenMetrics when the scraper asks for it (docs/metrics.md).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
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
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub exec_timeout: std::time::Duration,
}
