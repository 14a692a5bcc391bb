//! `watch --metrics`: what the timeline's lines say, as Prometheus series.
//!
//! [`Metrics`] holds the registry and its families, shared by every endpoint of a process and by
//! the HTTP server that exposes them; [`Metrics::endpoint_sink`] gives one endpoint's [`Sink`],
//! which derives every value from the lines the engine hands it (nothing is measured twice, so a
//! scrape agrees with `--json`). Labels are bounded: the endpoint (`server_address`,
//! `server_port`) and closed sets of values (notification type, close reason, outcome); never a
//! sequence number, an address list or a credential.
//!
//! The names of the Redis client observability conventions are kept, translated to Prometheus
//! (`redis.client.maintenance.notifications` becomes
//! `redis_client_maintenance_notifications_total`); maintwatch's own are under `maintwatch_`.
//! Azure Cache's `AzureRedisEvents` messages are not in those conventions (they are pub/sub
//! messages, not notifications), so their counter is maintwatch's own
//! (`maintwatch_azure_events_total`), labelled with the wire type: a closed set. They open the
//! same windows as the opening notifications, so a dashboard of windows needs no second panel for
//! Azure. `docs/metrics.md` documents each one.

use crate::observe::record::{line, Label, OptInOutcome, WatchLine};
use crate::observe::timeline::ScenarioClock;
use crate::present::output::sink::Sink;
use crate::protocol::azure::AzureKind;
use crate::protocol::notification::{Classified, Kind};
use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Registry, Unit};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

/// One endpoint, as every per-endpoint series is labelled.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabels {
    pub server_address: String,
    pub server_port: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NotificationLabels {
    notification: &'static str,
    server_address: String,
    server_port: u16,
}

/// An Azure event's type: an [`AzureKind`] wire name, or `unknown` (never the server's text).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AzureTypeLabels {
    r#type: &'static str,
    server_address: String,
    server_port: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
    server_address: String,
    server_port: u16,
}

/// Why a cluster's topology was read (`topology.reason`): not `reason`, which OTLP exports as
/// the conventions' `close.reason`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TriggerLabels {
    trigger: &'static str,
    server_address: String,
    server_port: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
    server_address: String,
    server_port: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
    server_address: String,
    server_port: u16,
}

/// How a hook run ended (`maintwatch_hook_runs_total{result}`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HookResult {
    pub result: &'static str,
}

/// What became of an `--otlp` export (`maintwatch_otlp_exports_total{result}`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OtlpResult {
    pub result: &'static str,
}

type Histograms = Family<EndpointLabels, Histogram, fn() -> Histogram>;
type FloatGauges = Family<EndpointLabels, Gauge<f64, AtomicU64>>;

/// Socket close minus the declared window, in scenario seconds (negative: before it ended).
const OVERSHOOT_BUCKETS: [f64; 13] = [
    -10.0, -5.0, -1.0, 0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
/// Seconds after the opening notification.
const OFFSET_BUCKETS: [f64; 12] = [
    0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 120.0, 300.0,
];
/// Close minus the dry-run's move (positive: a client following it was early enough).
const MARGIN_BUCKETS: [f64; 12] = [
    -10.0, -5.0, -2.0, -1.0, 0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0,
];

fn overshoot_histogram() -> Histogram {
    Histogram::new(OVERSHOOT_BUCKETS)
}

fn offset_histogram() -> Histogram {
    Histogram::new(OFFSET_BUCKETS)
}

fn margin_histogram() -> Histogram {
    Histogram::new(MARGIN_BUCKETS)
}

/// The registry and every family, shared (through `Arc`) by the endpoints' sinks, the hooks and
/// the HTTP server.
pub struct Metrics {
    registry: Registry,
    notifications: Family<NotificationLabels, Counter>,
    closed: Family<ReasonLabels, Counter>,
    handoffs: Family<EndpointLabels, Counter>,
    opt_in: Family<StateLabels, Gauge>,
    connections: Family<EndpointLabels, Gauge>,
    windows_open: Family<EndpointLabels, Gauge>,
    azure_windows_open: Family<EndpointLabels, Gauge>,
    window_left: Family<EndpointLabels, SecondsLeft>,
    overshoot: Histograms,
    dns_changes: Family<EndpointLabels, Counter>,
    dns_offset: Histograms,
    dns_late: Family<EndpointLabels, Counter>,
    heartbeat: FloatGauges,
    azure_events: Family<AzureTypeLabels, Counter>,
    azure_refused: Family<EndpointLabels, Counter>,
    dry_runs: Family<OutcomeLabels, Counter>,
    margin: Histograms,
    unannounced: Family<EndpointLabels, Counter>,
    reconnects: Family<EndpointLabels, Counter>,
    connect_failures: Family<EndpointLabels, Counter>,
    malformed: Family<EndpointLabels, Counter>,
    unreachable: Family<EndpointLabels, Gauge>,
    topology_changes: Family<TriggerLabels, Counter>,
    hooks: Family<HookResult, Counter>,
    otlp: Family<OtlpResult, Counter>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// A registry with every family registered (empty families are not exposed).
    pub fn new() -> Metrics {
        let mut m = Metrics {
            registry: Registry::default(),
            notifications: Family::default(),
            closed: Family::default(),
            handoffs: Family::default(),
            opt_in: Family::default(),
            connections: Family::default(),
            windows_open: Family::default(),
            azure_windows_open: Family::default(),
            window_left: Family::default(),
            overshoot: Family::new_with_constructor(overshoot_histogram),
            dns_changes: Family::default(),
            dns_offset: Family::new_with_constructor(offset_histogram),
            dns_late: Family::default(),
            heartbeat: Family::default(),
            azure_events: Family::default(),
            azure_refused: Family::default(),
            dry_runs: Family::default(),
            margin: Family::new_with_constructor(margin_histogram),
            unannounced: Family::default(),
            reconnects: Family::default(),
            connect_failures: Family::default(),
            malformed: Family::default(),
            unreachable: Family::default(),
            topology_changes: Family::default(),
            hooks: Family::default(),
            otlp: Family::default(),
        };
        m.register();
        m
    }

    /// Registers every metric once, grouped by what it describes.
    fn register(&mut self) {
        self.register_connections();
        self.register_windows();
        self.register_azure();
        self.register_health();
    }

    /// Notifications, connections and their opt-ins.
    fn register_connections(&mut self) {
        let r = &mut self.registry;
        r.register(
            "redis_client_maintenance_notifications",
            "Maintenance notifications received, by type (every copy on every connection)",
            self.notifications.clone(),
        );
        r.register(
            "redis_client_connection_closed",
            "Connections that ended, by who ended them (server, error, watch, scenario_end)",
            self.closed.clone(),
        );
        r.register(
            "redis_client_connection_handoff",
            "Dry-run handoffs after which a client would have moved its connection",
            self.handoffs.clone(),
        );
        r.register(
            "maintwatch_opt_in_connections",
            "Connected connections by the outcome of their maintenance-notification opt-in",
            self.opt_in.clone(),
        );
        r.register(
            "maintwatch_connections",
            "Connections currently established",
            self.connections.clone(),
        );
    }

    /// Maintenance windows, the DNS changes that follow them and the dry-run handoffs.
    fn register_windows(&mut self) {
        let r = &mut self.registry;
        r.register(
            "maintwatch_windows_open",
            "Maintenance windows announced and not yet closed",
            self.windows_open.clone(),
        );
        r.register_with_unit(
            "maintwatch_window_left",
            "Declared window left on the open window that ends first (negative: past it, the close still awaited; 0 with none open)",
            Unit::Seconds,
            self.window_left.clone(),
        );
        r.register_with_unit(
            "maintwatch_close_overshoot",
            "Announced socket close minus the declared window (positive: past the window)",
            Unit::Seconds,
            self.overshoot.clone(),
        );
        r.register(
            "maintwatch_dns_changes",
            "Changes of the endpoint hostname's DNS records",
            self.dns_changes.clone(),
        );
        r.register_with_unit(
            "maintwatch_dns_change_offset",
            "DNS changes: time after the opening notification they followed",
            Unit::Seconds,
            self.dns_offset.clone(),
        );
        r.register(
            "maintwatch_dns_late",
            "MOVING windows the hostname's DNS did not follow within: changed past the window, or not by its close",
            self.dns_late.clone(),
        );
        r.register_with_unit(
            "maintwatch_heartbeat_timestamp",
            "Unix time of the endpoint's latest --heartbeat line",
            Unit::Seconds,
            self.heartbeat.clone(),
        );
        r.register(
            "maintwatch_dry_runs",
            "Dry-run handoff decisions, by outcome",
            self.dry_runs.clone(),
        );
        r.register_with_unit(
            "maintwatch_dry_run_margin",
            "Socket close minus the dry-run's move (positive: a client following it was early)",
            Unit::Seconds,
            self.margin.clone(),
        );
    }

    /// Azure Cache's `AzureRedisEvents` channel (`watch --azure-events`).
    fn register_azure(&mut self) {
        let r = &mut self.registry;
        r.register(
            "maintwatch_azure_events",
            "AzureRedisEvents messages received, by type (every copy on every connection; unknown: no documented type)",
            self.azure_events.clone(),
        );
        r.register(
            "maintwatch_azure_windows_open",
            "Of maintwatch_windows_open, the windows an Azure NodeMaintenanceStarting or Start opened",
            self.azure_windows_open.clone(),
        );
        r.register(
            "maintwatch_azure_subscribe_refused",
            "SUBSCRIBEs to AzureRedisEvents the server refused (the watch went on without the channel)",
            self.azure_refused.clone(),
        );
    }

    /// What went wrong on connections, the side channels (hooks, OTLP) and the build.
    fn register_health(&mut self) {
        let r = &mut self.registry;
        r.register(
            "maintwatch_unannounced_closes",
            "Connections the server closed (or reset) without a MOVING announcing it",
            self.unannounced.clone(),
        );
        r.register(
            "maintwatch_reconnects",
            "Connections re-established after one ended",
            self.reconnects.clone(),
        );
        r.register(
            "maintwatch_connect_failures",
            "Connection attempts that failed",
            self.connect_failures.clone(),
        );
        r.register(
            "maintwatch_unreachable_connections",
            "Connections whose latest attempt to connect failed (a node down, or the endpoint)",
            self.unreachable.clone(),
        );
        r.register(
            "maintwatch_topology_changes",
            "Changes of a cluster's topology after its discovery, by what made the watch read it (refreshed, interval, connection_lost)",
            self.topology_changes.clone(),
        );
        r.register(
            "maintwatch_malformed_frames",
            "Byte streams that could not be framed (the connection was re-established)",
            self.malformed.clone(),
        );
        r.register(
            "maintwatch_hook_runs",
            "--exec runs by result (ok, failed, timed_out, dropped: the queue was full)",
            self.hooks.clone(),
        );
        r.register(
            "maintwatch_otlp_exports",
            "--otlp exports by result (ok, failed: retried later, dropped: the queue was full)",
            self.otlp.clone(),
        );
        r.register(
            "maintwatch_build",
            "The maintwatch version serving these metrics",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
        );
    }

    /// The counters `--exec` runs report to (`maintwatch_hook_runs_total`).
    pub fn hook_counters(&self) -> Family<HookResult, Counter> {
        self.hooks.clone()
    }

    /// The counters `--otlp` reports its exports to (`maintwatch_otlp_exports_total`).
    pub fn otlp_counters(&self) -> Family<OtlpResult, Counter> {
        self.otlp.clone()
    }

    /// The exposition: OpenMetrics text when `openmetrics`, else the Prometheus text format
    /// 0.0.4. Both come from prometheus-client's encoders.
    pub fn encode(&self, openmetrics: bool) -> String {
        let mut out = String::with_capacity(4096);
        // Writing into a String cannot fail; an error here would be the encoder's bug.
        let result = if openmetrics {
            prometheus_client::encoding::text::encode(&mut out, &self.registry)
        } else {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
        };
        debug_assert!(result.is_ok());
        out
    }

    /// The sink of one endpoint: its series are labelled with `server_address` and
    /// `server_port`. The fleet creates one per endpoint, all sharing this registry. Its windows
    /// count down in real time unless it is given the endpoint's clock ([`MetricsSink::on`]).
    pub fn endpoint_sink(self: &Arc<Self>, server_address: &str, server_port: u16) -> MetricsSink {
        let endpoint = EndpointLabels {
            server_address: label_text(server_address),
            server_port,
        };
        let window = self.window_left.get_or_create_owned(&endpoint);
        // The endpoint's gauges exist from the start: 0 connections is an answer, not a gap.
        self.connections.get_or_create(&endpoint).set(0);
        self.windows_open.get_or_create(&endpoint).set(0);
        self.unreachable.get_or_create(&endpoint).set(0);
        MetricsSink {
            metrics: Arc::clone(self),
            endpoint,
            clock: ScenarioClock::default(),
            connected: HashMap::new(),
            window,
            dns_polled: false,
            unreachable: Default::default(),
        }
    }
}

/// A label value that stays readable and bounded whatever the address was: printable ASCII
/// without quotes or backslashes, at most 255 bytes.
pub(crate) fn label_text(text: &str) -> String {
    text.chars()
        .take(255)
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What opened a window, which decides what closes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opener {
    /// An opening notification: closed by its closing one or (MOVING) by the announced close.
    Push(Kind),
    /// An Azure NodeMaintenanceStarting or Start: closed only by Ended, FailoverComplete or
    /// ScaleComplete. The socket close it announces is the maintenance itself, not its end.
    Azure,
}

/// An open window: opened by an opening notification or an Azure event (see [`Opener`]).
#[derive(Debug, Clone)]
struct Open {
    name: String,
    opener: Opener,
    since: Instant,
    window_s: f64,
    /// Windows are declared in scenario seconds.
    clock: ScenarioClock,
    /// A DNS change of the endpoint's hostname followed it (or was already counted late).
    dns_done: bool,
}

/// `maintwatch_window_left_seconds`: computed when scraped, from the windows the sink keeps
/// open, so it counts down between lines.
#[derive(Debug, Clone, Default)]
pub struct SecondsLeft(Arc<Mutex<Vec<Open>>>);

impl SecondsLeft {
    fn open(&self) -> std::sync::MutexGuard<'_, Vec<Open>> {
        // A panic while holding this lock leaves a valid Vec: carry on with it.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn value(&self) -> f64 {
        self.open()
            .iter()
            .map(|o| o.window_s - o.clock.scenario_secs(o.since.elapsed()))
            .reduce(f64::min)
            .unwrap_or(0.0)
    }
}

impl TypedMetric for SecondsLeft {
    const TYPE: MetricType = MetricType::Gauge;
}

impl EncodeMetric for SecondsLeft {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&self.value())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}

/// One endpoint's metrics, derived from its lines. Keeps only what a gauge needs (the
/// connections up and their opt-in outcome, the windows open): bounded by the connections.
pub struct MetricsSink {
    metrics: Arc<Metrics>,
    endpoint: EndpointLabels,
    /// The endpoint's scenario clock (the simulator's speed, adopted or given).
    clock: ScenarioClock,
    /// Connections up, with the outcome of their latest opt-in (`None` before the handshake).
    connected: HashMap<u32, Option<OptInOutcome>>,
    window: SecondsLeft,
    /// The endpoint's hostname is polled (a `dns` line was seen): only then can DNS be late.
    dns_polled: bool,
    /// Connections whose latest attempt failed and that have not connected since.
    unreachable: std::collections::HashSet<u32>,
}

const OPT_IN_STATES: [OptInOutcome; 4] = [
    OptInOutcome::Accepted,
    OptInOutcome::Refused,
    OptInOutcome::Resp3Unavailable,
    OptInOutcome::AuthFailed,
];

fn opt_in_name(o: OptInOutcome) -> &'static str {
    match o {
        OptInOutcome::Accepted => "accepted",
        OptInOutcome::Refused => "refused",
        OptInOutcome::Resp3Unavailable => "resp3_unavailable",
        OptInOutcome::AuthFailed => "auth_failed",
    }
}

impl MetricsSink {
    fn count(&self, family: &Family<EndpointLabels, Counter>) {
        family.get_or_create(&self.endpoint).inc();
    }

    fn observe(&self, family: &Histograms, value: f64) {
        if value.is_finite() {
            family.get_or_create(&self.endpoint).observe(value);
        }
    }

    fn with<T>(&self, f: impl FnOnce(String, u16) -> T) -> T {
        f(
            self.endpoint.server_address.clone(),
            self.endpoint.server_port,
        )
    }

    /// The gauges that follow the connections: how many are up, and their opt-in outcomes.
    fn connections_changed(&self) {
        let m = &self.metrics;
        m.connections
            .get_or_create(&self.endpoint)
            .set(self.connected.len() as i64);
        for state in OPT_IN_STATES {
            let n = self
                .connected
                .values()
                .filter(|o| **o == Some(state))
                .count();
            let labels = self.with(|server_address, server_port| StateLabels {
                state: opt_in_name(state),
                server_address,
                server_port,
            });
            m.opt_in.get_or_create(&labels).set(n as i64);
        }
    }

    fn windows_changed(&self) {
        let (n, azure) = {
            let open = self.window.open();
            let azure = open.iter().filter(|o| o.opener == Opener::Azure).count();
            (open.len(), azure)
        };
        let m = &self.metrics;
        m.windows_open.get_or_create(&self.endpoint).set(n as i64);
        // Created at the first Azure event only: an endpoint without the channel has no series.
        if azure > 0 || m.azure_windows_open.get(&self.endpoint).is_some() {
            m.azure_windows_open
                .get_or_create(&self.endpoint)
                .set(azure as i64);
        }
    }

    fn push(&mut self, push: &line::Push) {
        let Classified::Maintenance(n) = &push.frame.parsed else {
            return;
        };
        let labels = self.with(|server_address, server_port| NotificationLabels {
            notification: n.kind.name(),
            server_address,
            server_port,
        });
        self.metrics.notifications.get_or_create(&labels).inc();
        // A window opens on a new event (or a MOVING that came with the opt-in, whose window may
        // be open still); a copy from another connection or a replay opens nothing.
        let joined = push.labels.as_slice() == [Label::WithOptIn];
        let fresh = push.labels.is_empty() || joined;
        if n.opens() && fresh && push.copy_of.is_none() {
            self.window.open().push(Open {
                name: n.event_name(),
                opener: Opener::Push(n.kind),
                since: Instant::now(),
                window_s: n.time.unwrap_or(0).max(0) as f64,
                clock: self.clock.clone(),
                dns_done: false,
            });
        } else if let (Some(opened), true) = (n.closes(), push.labels.is_empty()) {
            let mut open = self.window.open();
            if let Some(i) = open.iter().rposition(|o| o.opener == Opener::Push(opened)) {
                let shut = open.remove(i);
                drop(open);
                self.window_shut(&shut);
            }
        }
        self.windows_changed();
    }

    /// An `AzureRedisEvents` message: counted by type, every copy (as notifications are); the
    /// first copy of Starting (or of Start with no Azure window open, as the timeline reads it)
    /// opens a window, and of Ended, FailoverComplete or ScaleComplete closes every Azure one.
    fn azure_event(&mut self, a: &line::AzureEvent) {
        let labels = self.with(|server_address, server_port| AzureTypeLabels {
            r#type: a.event.kind.map_or("unknown", AzureKind::wire_name),
            server_address,
            server_port,
        });
        self.metrics.azure_events.get_or_create(&labels).inc();
        let Some(kind) = a.event.kind.filter(|_| a.copy_of.is_none()) else {
            return;
        };
        let mut open = self.window.open();
        let azure_open = open.iter().any(|o| o.opener == Opener::Azure);
        if kind.opens_window() && (kind == AzureKind::Starting || !azure_open) {
            open.push(Open {
                name: kind.wire_name().to_string(),
                opener: Opener::Azure,
                since: Instant::now(),
                window_s: self.azure_window_s(a.starts_in_s),
                clock: self.clock.clone(),
                dns_done: false,
            });
        } else if kind.closes_window() {
            open.retain(|o| o.opener != Opener::Azure);
        }
        drop(open);
        self.windows_changed();
    }

    /// An Azure window's length: the time to the announced start, read in scenario seconds like
    /// every window (`starts_in_s` is wall time, which a simulator compresses); 0 without one.
    fn azure_window_s(&self, starts_in_s: Option<f64>) -> f64 {
        let real = starts_in_s
            .filter(|s| s.is_finite())
            .unwrap_or(0.0)
            .max(0.0);
        self.clock
            .scenario_secs(std::time::Duration::from_secs_f64(real))
    }

    /// Whether connection `conn` can be reached, as its latest attempt said.
    fn reachable(&mut self, conn: u32, yes: bool) {
        let changed = match yes {
            true => self.unreachable.remove(&conn),
            false => self.unreachable.insert(conn),
        };
        if changed || !yes {
            self.metrics
                .unreachable
                .get_or_create(&self.endpoint)
                .set(self.unreachable.len() as i64);
        }
    }

    /// A cluster's topology line: counted when it says something changed after the discovery.
    fn topology(&self, t: &line::Topology) {
        if t.reason == crate::observe::record::TopologyReason::Discovered || !t.changed() {
            return;
        }
        let labels = self.with(|server_address, server_port| TriggerLabels {
            trigger: t.reason.as_str(),
            server_address,
            server_port,
        });
        self.metrics.topology_changes.get_or_create(&labels).inc();
    }

    fn closed(&mut self, c: &line::Closed) {
        let labels = self.with(|server_address, server_port| ReasonLabels {
            reason: c.by.as_str(),
            server_address,
            server_port,
        });
        self.metrics.closed.get_or_create(&labels).inc();
        self.connected.remove(&c.conn);
        self.connections_changed();
        if c.by == crate::observe::record::ClosedBy::Watch {
            // No longer watched (a node that left the cluster): not unreachable any more.
            self.reachable(c.conn, true);
        }
        use crate::observe::record::ClosedBy;
        if c.announced {
            if let Some(past) = c.past_s {
                self.observe(&self.metrics.overshoot, past);
            }
            if let Some(rel) = &c.rel {
                let shut: Vec<Open> = {
                    let mut open = self.window.open();
                    let (shut, kept) = open
                        .drain(..)
                        .partition(|o| o.name == rel.to && o.opener != Opener::Azure);
                    *open = kept;
                    shut
                };
                shut.iter().for_each(|o| self.window_shut(o));
                self.windows_changed();
            }
        } else if matches!(c.by, ClosedBy::Server | ClosedBy::Error) {
            self.count(&self.metrics.unannounced);
        }
    }

    fn handoff(&self, h: &line::Handoff) {
        let labels = self.with(|server_address, server_port| OutcomeLabels {
            outcome: h.outcome.as_str(),
            server_address,
            server_port,
        });
        self.metrics.dry_runs.get_or_create(&labels).inc();
        if h.moves {
            self.count(&self.metrics.handoffs);
        }
    }

    fn dns(&mut self, d: &line::Dns) {
        self.dns_polled = true;
        if d.event != crate::observe::record::DnsEvent::Changed {
            return;
        }
        self.count(&self.metrics.dns_changes);
        if let Some(rel) = &d.rel {
            self.observe(&self.metrics.dns_offset, rel.s);
            // The change followed the window it is relative to: in time, or late (counted now,
            // not again when the window closes).
            let late = {
                let mut open = self.window.open();
                // An Azure window declares no DNS change: only a notification's can be late.
                let followed = open
                    .iter_mut()
                    .find(|o| o.name == rel.to && !o.dns_done && o.opener != Opener::Azure);
                followed.map(|o| {
                    o.dns_done = true;
                    rel.s > o.window_s
                })
            };
            if late == Some(true) {
                self.count(&self.metrics.dns_late);
            }
        }
    }

    /// A window closed: a MOVING's that no DNS change followed, on a polled hostname, is late.
    fn window_shut(&self, o: &Open) {
        if o.opener == Opener::Push(Kind::Moving) && self.dns_polled && !o.dns_done {
            self.count(&self.metrics.dns_late);
        }
    }

    fn heartbeat(&self) {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.metrics
            .heartbeat
            .get_or_create(&self.endpoint)
            .set(now);
    }
}

impl MetricsSink {
    /// Reads windows on `clock`: the endpoint's, whose speed a simulator may set.
    pub fn on(mut self, clock: ScenarioClock) -> MetricsSink {
        self.clock = clock;
        self
    }
}

impl Sink for MetricsSink {
    fn line(&mut self, l: &WatchLine) -> std::io::Result<()> {
        let m = Arc::clone(&self.metrics);
        match l {
            WatchLine::Connected(c) => {
                self.reachable(c.conn, true);
                self.connected.insert(c.conn, None);
                if c.session > 1 {
                    self.count(&m.reconnects);
                }
                self.connections_changed();
            }
            WatchLine::ConnectFailed(f) => {
                self.count(&m.connect_failures);
                if f.retry_in_s.is_some() {
                    self.reachable(f.conn, false);
                }
            }
            WatchLine::Handshake(h) => {
                if let Some(state) = self.connected.get_mut(&h.conn) {
                    *state = Some(h.opt_in);
                }
                self.connections_changed();
            }
            WatchLine::Push(p) => self.push(p),
            WatchLine::AzureEvent(a) => self.azure_event(a),
            WatchLine::AzureRefused(_) => self.count(&m.azure_refused),
            WatchLine::Malformed(_) => self.count(&m.malformed),
            WatchLine::Closed(c) => self.closed(c),
            WatchLine::Dns(d) => self.dns(d),
            WatchLine::Handoff(h) => self.handoff(h),
            WatchLine::Verdict(v) => {
                if let Some(margin) = v.margin_s {
                    self.observe(&m.margin, margin);
                }
            }
            WatchLine::Summary(_) => {
                // The watch is over: nothing is open any more.
                self.window.open().clear();
                self.windows_changed();
            }
            WatchLine::Heartbeat(_) => self.heartbeat(),
            WatchLine::Topology(t) => self.topology(t),
            WatchLine::Start(_) | WatchLine::Advertised(_) | WatchLine::Ping(_) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: &str = "\"v\":1,\"at\":\"2026-12-01T15:07:58.124806Z\"";

    /// The single-proxy scenario's lines as a watch writes them (trimmed to what the sink reads),
    /// with the DNS change at `dns_s` after the MOVING (`None`: no change) and the hostname polled
    /// or not.
    fn moving_lines(dns_s: Option<f64>, polled: bool) -> Vec<String> {
        let mut l = Vec::new();
        if polled {
            l.push(format!(r#"{{"type":"dns",{AT},"t":0.0,"host":"db","event":"initial","before":[],"after":["127.0.0.2"],"ttl":1,"reason":null,"ours":null,"rel":null}}"#));
        }
        l.push(format!(r#"{{"type":"connected",{AT},"t":0.01,"conn":1,"addr":"127.0.0.2:1","tls":false,"session":1,"rel":null}}"#));
        l.push(format!(r#"{{"type":"push",{AT},"t":0.01,"conn":1,"labels":[],"rel":{{"to":"MOVING seq 0","s":0.0}},"frame":{{"offset":0,"len":28,"raw":">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n","parsed":{{"class":"maintenance","kind":"MOVING","type_text":"MOVING","seq":0,"time":15,"target":{{"raw":null,"address":null}}}}}},"copy_of":null,"sources_ours":[]}}"#));
        if let Some(s) = dns_s {
            l.push(format!(r#"{{"type":"dns",{AT},"t":1.0,"host":"db","event":"changed","before":["127.0.0.2"],"after":["127.0.0.3"],"ttl":1,"reason":null,"ours":"left","rel":{{"to":"MOVING seq 0","s":{s}}}}}"#));
        }
        l.push(format!(r#"{{"type":"closed",{AT},"t":3.3,"conn":1,"by":"server","error":null,"announced":true,"window_s":15,"past_s":1.6,"rel":{{"to":"MOVING seq 0","s":16.6}},"joined_open":false,"retry_in_s":0.05}}"#));
        l.push(format!(r#"{{"type":"heartbeat",{AT},"t":4.0,"conns":1,"up":0,"opted_in":0,"notifications":1,"since_notification_s":4.0}}"#));
        l
    }

    /// The exposition after `lines` went through one endpoint's sink.
    fn after(lines: &[String]) -> String {
        let m = Arc::new(Metrics::new());
        let mut sink = m.endpoint_sink("db", 1);
        for l in lines {
            let line: WatchLine = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            sink.line(&line).unwrap();
        }
        m.encode(false)
    }

    const LATE: &str = "maintwatch_dns_late_total{server_address=\"db\",server_port=\"1\"} 1";

    /// A cluster node killed: its connection fails twice, the topology read again drops it
    /// and the watch stops watching it; the discovery is not a change.
    #[test]
    fn an_unreachable_node_is_a_gauge_and_each_topology_change_is_counted_by_reason() {
        let failed = |t: f64| {
            format!(
                r#"{{"type":"connect_failed",{AT},"t":{t},"conn":2,"error":"refused","retry_in_s":0.1}}"#
            )
        };
        let topology = |reason: &str, removed: &str| {
            format!(
                r#"{{"type":"topology",{AT},"t":1.0,"reason":"{reason}","nodes":["a:1"],"added":[],"removed":[{removed}],"replicas":[],"roles":[],"moved":[],"rel":null}}"#
            )
        };
        let gauge = "maintwatch_unreachable_connections{server_address=\"db\",server_port=\"1\"}";
        let mut lines = vec![
            topology("discovered", ""),
            format!(
                r#"{{"type":"connected",{AT},"t":0.01,"conn":2,"addr":"127.0.0.2:1","tls":false,"session":1,"rel":null}}"#
            ),
        ];
        assert!(
            after(&lines).contains(&format!("{gauge} 0")),
            "0 from the start"
        );
        lines.extend([failed(2.0), failed(2.5)]);
        assert!(
            after(&lines).contains(&format!("{gauge} 1")),
            "one connection, however many attempts"
        );
        lines.push(topology("interval", r#""127.0.0.2:1""#));
        lines.push(topology("interval", ""));
        lines.push(format!(r#"{{"type":"closed",{AT},"t":3.0,"conn":2,"by":"watch","error":"left","announced":false,"window_s":null,"past_s":null,"rel":null,"joined_open":false}}"#));
        let text = after(&lines);
        assert!(text.contains(&format!("{gauge} 0")), "{text}");
        assert!(
            text.contains("maintwatch_topology_changes_total{trigger=\"interval\",server_address=\"db\",server_port=\"1\"} 1"),
            "only the change counts: {text}"
        );
        assert!(!text.contains("trigger=\"discovered\""), "{text}");
    }

    #[test]
    fn dns_following_within_the_window_is_not_late() {
        let text = after(&moving_lines(Some(9.8), true));
        assert!(text.contains("maintwatch_dns_changes_total{"), "{text}");
        assert!(!text.contains("maintwatch_dns_late_total{"), "{text}");
    }

    #[test]
    fn dns_changing_past_the_window_is_late_once() {
        // Counted at the change, not again at the close of the same window.
        let text = after(&moving_lines(Some(15.5), true));
        assert!(text.contains(LATE), "{text}");
    }

    #[test]
    fn dns_not_changing_by_the_close_is_late_only_where_a_hostname_is_polled() {
        let text = after(&moving_lines(None, true));
        assert!(text.contains(LATE), "{text}");
        let ip = after(&moving_lines(None, false));
        assert!(!ip.contains("maintwatch_dns_late_total{"), "{ip}");
    }

    #[test]
    fn a_heartbeat_line_sets_its_wall_time() {
        let before = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(!after(&moving_lines(None, false)[..2]).contains("maintwatch_heartbeat"));
        let text = after(&moving_lines(None, false));
        let value: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("maintwatch_heartbeat_timestamp_seconds{server_address=\"db\",server_port=\"1\"} "))
            .unwrap_or_else(|| panic!("{text}"))
            .parse()
            .unwrap();
        assert!(value >= before.floor(), "{value} {before}");
    }

    /// An `azure_event` line on `conn` for the payload `NotificationType|TYPE` (a copy when
    /// `copy`), with `starts_in_s`.
    fn azure(conn: u32, type_text: &str, copy: bool, starts_in_s: Option<f64>) -> WatchLine {
        let payload = format!("NotificationType|{type_text}");
        WatchLine::AzureEvent(line::AzureEvent {
            v: 1,
            t: 1.0,
            at: "2026-12-01T15:07:58.124806Z".into(),
            conn,
            rel: None,
            frame: crate::observe::record::FrameRecord {
                offset: 0,
                len: payload.len(),
                raw: crate::observe::record::Raw::Bytes(payload.clone().into_bytes().into()),
                parsed: Classified::NotPush,
            },
            event: crate::protocol::azure::parse(payload.as_bytes()),
            starts_in_s,
            copy_of: copy.then_some(crate::observe::record::CopyOf {
                conn: 1,
                after_ms: 0.3,
            }),
            reaction: String::new(),
        })
    }

    /// The value of the sample `name{server_address="db",server_port="1"}`, with `extra` labels
    /// before the endpoint's; `None` when absent.
    fn value(text: &str, name: &str, extra: &str) -> Option<f64> {
        let series = format!("{name}{{{extra}server_address=\"db\",server_port=\"1\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .map(|v| v.parse().unwrap())
    }

    fn azure_count(text: &str, kind: &str) -> Option<f64> {
        value(
            text,
            "maintwatch_azure_events_total",
            &format!("type=\"{kind}\","),
        )
    }

    /// (windows open, Azure windows open) as exposed.
    fn windows(text: &str) -> (Option<f64>, Option<f64>) {
        (
            value(text, "maintwatch_windows_open", ""),
            value(text, "maintwatch_azure_windows_open", ""),
        )
    }

    #[test]
    fn azure_starting_opens_a_window_that_failover_complete_closes_and_copies_only_count() {
        let m = Arc::new(Metrics::new());
        let mut sink = m.endpoint_sink("db", 1);
        assert_eq!(windows(&m.encode(false)), (Some(0.0), None));
        sink.line(&azure(1, "NodeMaintenanceStarting", false, Some(20.0)))
            .unwrap();
        sink.line(&azure(2, "NodeMaintenanceStarting", true, Some(20.0)))
            .unwrap();
        let text = m.encode(false);
        assert_eq!(azure_count(&text, "NodeMaintenanceStarting"), Some(2.0));
        assert_eq!(windows(&text), (Some(1.0), Some(1.0)), "{text}");
        // Start with a Starting open keeps the one window, as the timeline reads it.
        sink.line(&azure(1, "NodeMaintenanceStart", false, None))
            .unwrap();
        assert_eq!(windows(&m.encode(false)), (Some(1.0), Some(1.0)));
        sink.line(&azure(1, "NodeMaintenanceFailoverComplete", false, None))
            .unwrap();
        sink.line(&azure(2, "NodeMaintenanceFailoverComplete", true, None))
            .unwrap();
        let text = m.encode(false);
        assert_eq!(
            azure_count(&text, "NodeMaintenanceFailoverComplete"),
            Some(2.0)
        );
        assert_eq!(azure_count(&text, "NodeMaintenanceStart"), Some(1.0));
        assert_eq!(windows(&text), (Some(0.0), Some(0.0)), "{text}");
        assert_eq!(
            value(&text, "maintwatch_window_left_seconds", ""),
            Some(0.0)
        );
    }

    #[test]
    fn an_azure_copy_opens_nothing_and_start_alone_opens_a_window_of_zero() {
        let m = Arc::new(Metrics::new());
        let mut sink = m.endpoint_sink("db", 1);
        sink.line(&azure(2, "NodeMaintenanceStarting", true, Some(20.0)))
            .unwrap();
        assert_eq!(windows(&m.encode(false)), (Some(0.0), None));
        sink.line(&azure(1, "NodeMaintenanceStart", false, None))
            .unwrap();
        assert_eq!(windows(&m.encode(false)), (Some(1.0), Some(1.0)));
        assert_eq!(sink.window.open()[0].window_s, 0.0);
    }

    #[test]
    fn an_azure_window_is_the_start_time_in_scenario_seconds() {
        let m = Arc::new(Metrics::new());
        let clock = ScenarioClock::new(8.0).unwrap();
        let mut sink = m.endpoint_sink("db", 1).on(clock);
        // 2.5 real seconds ahead at speed 8: a 20 s window, as the scenario declares it.
        sink.line(&azure(1, "NodeMaintenanceStarting", false, Some(2.5)))
            .unwrap();
        assert_eq!(sink.window.open()[0].window_s, 20.0);
        assert_eq!(sink.azure_window_s(Some(-3.0)), 0.0);
    }

    #[test]
    fn an_announced_close_leaves_the_azure_window_open_until_ended() {
        let m = Arc::new(Metrics::new());
        let mut sink = m.endpoint_sink("db", 1);
        sink.line(&azure(1, "NodeMaintenanceStarting", false, Some(20.0)))
            .unwrap();
        let closed = format!(
            r#"{{"type":"closed",{AT},"t":3.3,"conn":1,"by":"server","error":null,"announced":true,"window_s":20,"past_s":0.1,"rel":{{"to":"NodeMaintenanceStarting","s":20.1}},"joined_open":false,"retry_in_s":0.05}}"#
        );
        sink.line(&serde_json::from_str(&closed).unwrap()).unwrap();
        assert_eq!(windows(&m.encode(false)), (Some(1.0), Some(1.0)));
        sink.line(&azure(1, "NodeMaintenanceEnded", false, Some(0.0)))
            .unwrap();
        assert_eq!(windows(&m.encode(false)), (Some(0.0), Some(0.0)));
    }

    #[test]
    fn an_unknown_azure_type_is_counted_as_unknown_and_a_refused_subscribe_is_counted() {
        let m = Arc::new(Metrics::new());
        let mut sink = m.endpoint_sink("db", 1);
        sink.line(&azure(1, "Node\"Maintenance\nWeird", false, None))
            .unwrap();
        let refused = format!(
            r#"{{"type":"azure_refused",{AT},"t":0.1,"conn":1,"error":"NOPERM user has no permissions","fix":"allow"}}"#
        );
        sink.line(&serde_json::from_str(&refused).unwrap()).unwrap();
        let text = m.encode(false);
        assert_eq!(azure_count(&text, "unknown"), Some(1.0), "{text}");
        assert!(!text.contains("Weird"), "{text}");
        assert!(!text.contains("NOPERM"), "{text}");
        assert_eq!(
            value(&text, "maintwatch_azure_subscribe_refused_total", ""),
            Some(1.0)
        );
        assert_eq!(windows(&text), (Some(0.0), None));
    }

    #[test]
    fn label_values_are_printable_and_bounded() {
        assert_eq!(label_text("db.example:1"), "db.example:1");
        assert_eq!(label_text("a\"b\\c\nd é"), "a_b_c_d__");
        assert_eq!(label_text(&"x".repeat(1000)).len(), 255);
    }

    #[test]
    fn both_formats_carry_the_endpoint_series_and_the_build_info() {
        let m = Arc::new(Metrics::new());
        let _sink = m.endpoint_sink("db.example", 12000);
        let text = m.encode(false);
        assert!(
            text.contains(
                "maintwatch_connections{server_address=\"db.example\",server_port=\"12000\"} 0"
            ),
            "{text}"
        );
        assert!(
            text.contains("# TYPE maintwatch_build_info gauge"),
            "{text}"
        );
        assert!(!text.contains("# EOF"), "{text}");
        let om = m.encode(true);
        assert!(om.ends_with("# EOF\n"), "{om}");
        assert!(om.contains("# TYPE maintwatch_build info"), "{om}");
    }
}
