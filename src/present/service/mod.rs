//! What a watch run for days as a service adds to its sinks: Prometheus metrics served over HTTP
//! (`--metrics`) and hooks run on chosen lines (`--exec`).
//!
//! The state shared by a process ([`Metrics`] and its HTTP server, the [`Hooks`] runner) is apart
//! from the per-endpoint sinks, so one watch adds one sink of each and a fleet of endpoints adds
//! one per endpoint, all feeding the same registry and the same hook queue:
//! [`Services::add_endpoint_sinks`].

pub mod hooks;
pub mod metrics;
pub mod metrics_http;
pub mod otlp;
pub mod otlp_config;

pub use hooks::{ExecOn, HookSettings, Hooks};
pub use metrics::Metrics;

use crate::network::conn::ConnectOptions;
use crate::present::output::sink::Sinks;
use std::net::SocketAddr;
use std::sync::Arc;

/// `--metrics`, `--otlp` and `--exec`, validated.
#[derive(Debug, Clone, Default)]
pub struct ServiceSettings {
    pub metrics: Option<SocketAddr>,
    pub otlp: Option<otlp::OtlpSettings>,
    pub hooks: Option<HookSettings>,
}

/// Where the services send what the user should hear about (a hook that failed, a collector
/// that does not answer): the services print nothing, the command reading the other end does.
pub type Notices = tokio::sync::mpsc::UnboundedSender<String>;

/// The running services of one process.
pub struct Services {
    pub metrics: Option<Arc<Metrics>>,
    pub server: Option<metrics_http::ServerHandle>,
    pub hooks: Option<Hooks>,
    pub otlp: Option<otlp::Exporter>,
    /// The other end of the services' [`Notices`]: it ends once the services have finished.
    pub notices: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
}

impl Services {
    /// Binds the metrics address and starts the hook runner (on the current runtime).
    /// `passwords`: every endpoint's, kept out of the hooks' environment.
    pub fn start(settings: &ServiceSettings, passwords: &[&str]) -> anyhow::Result<Services> {
        // One registry feeds both `/metrics` and `--otlp`.
        let wanted = settings.metrics.is_some() || settings.otlp.is_some();
        let metrics = wanted.then(|| Arc::new(Metrics::new()));
        let server = match (settings.metrics, &metrics) {
            (Some(addr), Some(m)) => Some(metrics_http::serve(addr, Arc::clone(m))?),
            _ => None,
        };
        let (notices, notices_rx) = tokio::sync::mpsc::unbounded_channel();
        let hooks = settings.hooks.as_ref().map(|h| {
            let counters = metrics
                .as_ref()
                .map(|m| m.hook_counters())
                .unwrap_or_default();
            Hooks::start(h, counters, passwords, notices.clone())
        });
        let otlp = match (&settings.otlp, &metrics) {
            (Some(o), Some(m)) => Some(otlp::Exporter::start(o, Arc::clone(m), notices.clone())),
            _ => None,
        };
        Ok(Services {
            metrics,
            server,
            hooks,
            otlp,
            notices: Some(notices_rx),
        })
    }

    /// Adds one endpoint's metrics and hook sinks to `sinks`. The fleet calls this once per
    /// endpoint, each with its own `Sinks`.
    /// `label`: the fleet's short label of the endpoint, which hooks get as
    /// `MAINTWATCH_ENDPOINT` (a single endpoint has none: its display form is used).
    pub fn add_endpoint_sinks(
        &self,
        sinks: &mut Sinks<'_>,
        endpoint: &ConnectOptions,
        label: Option<&str>,
        clock: &crate::observe::timeline::ScenarioClock,
    ) {
        if let Some(m) = &self.metrics {
            let sink = m
                .endpoint_sink(endpoint.host(), endpoint.port())
                .on(clock.clone());
            sinks.add(Box::new(sink));
        }
        if let Some(h) = &self.hooks {
            let shown = label.map_or_else(|| endpoint.display_endpoint(), str::to_string);
            sinks.add(Box::new(h.endpoint_sink(&shown)));
        }
    }

    /// After the watch, with every sink dropped: waits for the hooks (bounded by
    /// `--exec-timeout`), then pushes the last values over OTLP (bounded by a few seconds). The
    /// metrics server stops with the process.
    pub async fn finish(self) {
        if let Some(h) = self.hooks {
            h.finish().await;
        }
        if let Some(o) = self.otlp {
            o.finish().await;
        }
    }
}
