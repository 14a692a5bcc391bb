//! `maintwatch doctor`: "why am I not getting notifications?" on one screen.
//!
//! The server is asked with the probe machinery (`conn::probe`): once as the flags say, then once
//! per `moving-endpoint-type` on a connection of its own, because a server may take one form and
//! refuse another. What the known clients would do is read from `crate::grading::clients`, and the cost
//! of a refused opt-in is measured, not assumed: `INFO errorstats` on a separate connection
//! before and after the main probe.

use std::fmt;
use std::io::Write;
use std::net::IpAddr;
use std::time::Duration;

use serde::Serialize;

use crate::cli::doctor::DoctorArgs;
use crate::cli::usage::usage;
use crate::grading::clients::{self, CLIENTS};
use crate::network::conn::endpoints::{self, BadLines};
use crate::network::conn::probe::{self, ErrorStats, ProbeOutcome, ProbeReport};
use crate::network::conn::{ConnectOptions, EndpointType, EndpointTypeChoice, HelloInfo};
use crate::network::dns::DnsResolver;
use crate::present::output::terminal;
use crate::shared::escape::sanitize;

const TYPES: [(EndpointType, EndpointTypeChoice); 5] = [
    (EndpointType::InternalIp, EndpointTypeChoice::InternalIp),
    (EndpointType::InternalFqdn, EndpointTypeChoice::InternalFqdn),
    (EndpointType::ExternalIp, EndpointTypeChoice::ExternalIp),
    (EndpointType::ExternalFqdn, EndpointTypeChoice::ExternalFqdn),
    (EndpointType::None, EndpointTypeChoice::None),
];

/// Everything `doctor` found: the JSON object, and the text for people.
#[derive(Serialize)]
pub struct Diagnosis {
    #[serde(rename = "type")]
    kind: &'static str,
    v: u32,
    endpoint: String,
    address: Option<String>,
    tls: bool,
    exit_code: i32,
    server: Server,
    clients: Vec<ClientRow>,
    errorstats: Errorstats,
    /// Azure Cache's maintenance channel, on an Azure Cache host or with `--azure-events`.
    #[serde(skip_serializing_if = "Option::is_none")]
    azure: Option<AzureCheck>,
    /// An OSS cluster's health as the node asked sees it (HELLO said `mode cluster`).
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<ClusterCheck>,
    caveats: Vec<String>,
    /// Set when doctor stopped at the first failure that every other check would repeat (a
    /// TLS handshake, a refused password, nothing answering): probe's one line for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<String>,
}

/// What `doctor` says of Azure Cache for Redis's `AzureRedisEvents` channel.
#[derive(Serialize)]
struct AzureCheck {
    /// SUBSCRIBE to the channel: `allowed`, `refused` or `not_checked`.
    subscribe: &'static str,
    detail: Option<String>,
    /// The clients that listen to it by default.
    listening: Vec<String>,
    note: &'static str,
}

/// What `doctor` says of an OSS cluster: its nodes, and a topology change under way or just
/// made (a node marked `fail`, slots no live master serves), which no notification announces.
#[derive(Serialize)]
struct ClusterCheck {
    #[serde(flatten)]
    health: Option<crate::network::cluster::Health>,
    /// Why CLUSTER SHARDS could not be read (an ACL, a server before Redis 7).
    error: Option<String>,
}

impl ClusterCheck {
    /// The caveat a failed node or unserved slots call for.
    fn caveat(&self) -> Option<String> {
        let h = self.health.as_ref()?;
        if h.failed.is_empty() && h.unserved_slots == 0 {
            return None;
        }
        Some(format!(
            "the cluster's topology is changing or just changed ({}{}): no notification \
             announces a failover; watch --cluster reads the topology again when a node's \
             connection fails and every --topology-interval, and reports who took the slots",
            match h.failed.len() {
                0 => String::new(),
                _ => format!("marked fail: {}", h.failed.join(", ")),
            },
            match (h.failed.is_empty(), h.unserved_slots) {
                (_, 0) => String::new(),
                (true, n) => format!("{n} slots served by no live master"),
                (false, n) => format!("; {n} slots served by no live master"),
            }
        ))
    }

    fn line(&self) -> String {
        match (&self.health, &self.error) {
            (Some(h), _) => {
                let mut text = format!("{} masters, {} replicas", h.masters, h.replicas);
                if !h.failed.is_empty() {
                    text.push_str(&format!("; marked fail: {}", h.failed.join(", ")));
                }
                if h.unserved_slots > 0 {
                    text.push_str(&format!(
                        "; {} slots served by no live master",
                        h.unserved_slots
                    ));
                }
                text
            }
            (None, Some(e)) => format!("not read: {}", sanitize(e)),
            (None, None) => "not read".into(),
        }
    }
}

/// Said on every Azure check: the two Azure services announce maintenance differently.
const AZURE_NOTE: &str = "Azure Cache for Redis announces maintenance on AzureRedisEvents; Azure \
    Managed Redis uses the push notifications instead (the opt-in above)";

#[derive(Serialize)]
struct Server {
    resp3: Option<bool>,
    hello: Option<HelloInfo>,
    /// The opt-in as the flags ask for it.
    opt_in: Answer,
    endpoint_types: Vec<Answer>,
}

#[derive(Serialize, Clone)]
struct Answer {
    /// The `moving-endpoint-type` sent; `None`: a bare ON (or the opt-in was not sent).
    endpoint_type: Option<EndpointType>,
    outcome: &'static str,
    detail: Option<String>,
}

#[derive(Serialize)]
struct ClientRow {
    client: &'static str,
    version: &'static str,
    opts_in_by_default: Option<bool>,
    auto_type: Option<EndpointType>,
    /// The server's answer to that type: accepted, refused ...
    server_answer: Option<&'static str>,
    /// The errorstats counters one of its connections raises here (empty when it does not
    /// opt in or the server accepts).
    errorstats_cost: Vec<(String, u64)>,
    /// The releases that changed its handling of maintenance notifications.
    since: &'static [(&'static str, &'static str)],
    /// What the client tier measured, by release range.
    measured: &'static [clients::Measured],
}

#[derive(Serialize, Default)]
struct Errorstats {
    before: Vec<(String, u64)>,
    after: Vec<(String, u64)>,
    /// What one handshake (the probe's) raised.
    delta: Vec<(String, u64)>,
    /// Why it could not be measured.
    error: Option<String>,
}

fn answer(r: &ProbeReport) -> Answer {
    Answer {
        endpoint_type: r.endpoint_type,
        outcome: r.outcome.name(),
        detail: r.outcome.detail().map(str::to_string),
    }
}

/// Runs `doctor` on the process's stdout and stderr.
pub async fn run(args: &DoctorArgs) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    run_with(args, &mut out, &mut std::io::stderr()).await
}

/// `run` with its streams given.
pub async fn run_with(
    args: &DoctorArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<i32> {
    if args.url.is_some() && (args.connect.has_host_or_port() || args.connect.uri.is_some()) {
        let flag = if args.connect.uri.is_some() {
            "-u"
        } else {
            "-h/-p"
        };
        return Err(usage(
            flag,
            "give the endpoint once: a URL, or -u, or -h/-p",
        ));
    }
    let request = args
        .connect
        .endpoint_request(args.url.as_slice(), None, BadLines::Refuse);
    let mut setup = endpoints::setup(request, &args.connect.config(), &mut std::io::empty())?;
    args.connect.warn_command_line_password(args.url.as_slice());
    for w in &setup.warnings {
        writeln!(err, "{}", terminal::message("warning", w))?;
    }
    for note in &setup.notes {
        writeln!(err, "{}", terminal::message("note", note))?;
    }
    let dns = setup.resolver()?;
    let opts = setup.options.remove(0);
    let azure = args.azure_events || crate::protocol::azure::is_azure_host(opts.host());
    let progress = if args.json {
        Progress::none()
    } else {
        Progress::on_stderr(&opts.display_endpoint())
    };
    let diagnosis = diagnose(&opts, dns.as_deref(), azure, &progress).await;
    progress.clear();
    let all_versions = args.clients.is_some();
    let text = Wrapped(&diagnosis, terminal::stdout_width(), all_versions);
    crate::present::output::sink::one(out, args.json, &diagnosis, &text)?;
    out.flush()?;
    Ok(diagnosis.exit_code)
}

/// Asks the server everything `doctor` shows, and puts the clients' facts beside it.
pub async fn diagnose(
    opts: &ConnectOptions,
    dns: Option<&DnsResolver>,
    azure: bool,
    progress: &Progress,
) -> Diagnosis {
    progress.step("connecting");
    let mut stats = match open_stats(opts, dns).await {
        Err(Stats::Stop(outcome, address)) => return stopped(opts, outcome, address),
        Err(Stats::Unread(e)) => Err(e),
        Ok(s) => Ok(s),
    };
    let before = match &mut stats {
        Ok(s) => s.read().await,
        Err(e) => Err(e.clone()),
    };
    progress.step("the opt-in");
    let main = probe::probe(opts, dns, Duration::from_millis(50)).await;
    if stops(&main.outcome) {
        return stopped(opts, main.outcome, main.address);
    }
    let after = match &mut stats {
        Ok(s) => s.read().await,
        Err(e) => Err(e.clone()),
    };
    let cluster = cluster_check(&main, &mut stats).await;
    // Last on that connection: a granted SUBSCRIBE leaves it subscribed.
    let azure = match (azure, &mut stats) {
        (false, _) => None,
        (true, Ok(s)) => Some(azure_check(
            s.may_subscribe(crate::protocol::azure::CHANNEL).await,
        )),
        (true, Err(e)) => Some(azure_check(Err(format!("not checked: {e}")))),
    };
    let errorstats = match (before, after) {
        (Ok(before), Ok(after)) => Errorstats {
            delta: probe::errorstats_delta(&before, &after),
            before,
            after,
            error: None,
        },
        (Err(e), _) | (_, Err(e)) => Errorstats {
            error: Some(e),
            ..Errorstats::default()
        },
    };
    let mut endpoint_types = Vec::new();
    for (tried, choice) in TYPES {
        progress.step(&format!("the opt-in asking for {tried}"));
        let r = probe::probe(&opts.with_endpoint_type(choice), dns, Duration::ZERO).await;
        // Labelled with the type tried, also when the handshake ended before sending it.
        endpoint_types.push(Answer {
            endpoint_type: Some(tried),
            ..answer(&r)
        });
    }
    let resp3 = match &main.outcome {
        ProbeOutcome::Resp3Unavailable { .. } => Some(false),
        _ if main.hello.is_some() => Some(true),
        _ => None,
    };
    let server = Server {
        resp3,
        hello: main.hello.clone(),
        opt_in: answer(&main),
        endpoint_types,
    };
    let clients = client_rows(opts, &main, &server, &errorstats);
    let mut caveats = caveats(opts, &main, &server, &clients);
    caveats.extend(cluster.as_ref().and_then(ClusterCheck::caveat));
    Diagnosis {
        kind: "doctor",
        v: crate::observe::record::SCHEMA_VERSION,
        endpoint: main.endpoint.clone(),
        address: main.address.map(|a| a.to_string()),
        tls: main.tls,
        exit_code: main.outcome.exit_code(),
        server,
        clients,
        errorstats,
        azure,
        cluster,
        caveats,
        stopped: None,
    }
}

/// On a cluster (HELLO said `mode cluster`), its health read on the errorstats connection.
async fn cluster_check(
    main: &ProbeReport,
    stats: &mut Result<ErrorStats, String>,
) -> Option<ClusterCheck> {
    let in_cluster = main
        .hello
        .as_ref()
        .is_some_and(|h| h.mode.as_deref() == Some("cluster"));
    if !in_cluster {
        return None;
    }
    let read = match stats {
        Ok(s) => s.cluster_health().await,
        Err(e) => Err(e.clone()),
    };
    Some(match read {
        Ok(h) => ClusterCheck {
            health: Some(h),
            error: None,
        },
        Err(e) => ClusterCheck {
            health: None,
            error: Some(e),
        },
    })
}

/// Whether an outcome ends the diagnosis: a failure every later connection would meet the same
/// way (a TLS handshake that fails or times out, a refused password, nothing answering, an
/// answer that is not Redis), so doctor says it once, as probe does, rather than once per check.
fn stops(outcome: &ProbeOutcome) -> bool {
    !matches!(
        outcome,
        ProbeOutcome::Accepted
            | ProbeOutcome::Refused { .. }
            | ProbeOutcome::Resp3Unavailable { .. }
    )
}

/// The diagnosis of an endpoint doctor could not get past: the failure in probe's one line, what
/// to do, and nothing else (every other check needs a connection that gets past it).
/// `address` is where it got to, as probe says it (none when the name did not resolve).
fn stopped(
    opts: &ConnectOptions,
    outcome: ProbeOutcome,
    address: Option<std::net::SocketAddr>,
) -> Diagnosis {
    let report = ProbeReport::failed(opts.display_endpoint(), opts.tls(), outcome);
    let line = crate::present::output::probe_table::note_line(&report.endpoint, &report.outcome);
    Diagnosis {
        kind: "doctor",
        v: crate::observe::record::SCHEMA_VERSION,
        endpoint: report.endpoint.clone(),
        address: address.map(|a| a.to_string()),
        tls: report.tls,
        exit_code: report.outcome.exit_code(),
        server: Server {
            resp3: None,
            hello: None,
            opt_in: answer(&report),
            endpoint_types: Vec::new(),
        },
        clients: Vec::new(),
        errorstats: Errorstats {
            error: Some("not measured: doctor stopped at the first failure".into()),
            ..Errorstats::default()
        },
        azure: None,
        cluster: None,
        caveats: Vec::new(),
        stopped: Some(line),
    }
}

/// A spinner on stderr while doctor waits on the server (a TLS handshake that is never answered
/// takes the whole --connect-timeout), naming the check under way; nothing off a terminal.
pub struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    /// On stderr when it is a terminal, else silent.
    pub fn on_stderr(endpoint: &str) -> Progress {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} doctor: asking {prefix}: {msg} ({elapsed})",
        ) {
            bar.set_style(style);
        }
        bar.set_prefix(sanitize(endpoint).into_owned());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress(Some(bar))
    }

    /// Silent: for tests and JSON pipes.
    pub fn none() -> Progress {
        Progress(None)
    }

    fn step(&self, what: &str) {
        if let Some(bar) = &self.0 {
            bar.set_message(what.to_string());
        }
    }

    fn clear(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

fn azure_check(subscribed: Result<(), String>) -> AzureCheck {
    let (subscribe, detail) = match subscribed {
        Ok(()) => ("allowed", None),
        Err(e) if e.starts_with("not checked") => ("not_checked", Some(e)),
        Err(e) => (
            "refused",
            Some(format!(
                "{e}; allow it with ACL SETUSER <user> +subscribe &{}",
                crate::protocol::azure::CHANNEL
            )),
        ),
    };
    AzureCheck {
        subscribe,
        detail,
        listening: vec!["StackExchange.Redis, from 2.2.79, on Azure Cache host names".into()],
        note: AZURE_NOTE,
    }
}

/// Why the `INFO errorstats` connection is missing.
enum Stats {
    /// A failure that ends the diagnosis ([`stops`]), as an outcome, with the address it met
    /// it at (none: the name did not resolve).
    Stop(ProbeOutcome, Option<std::net::SocketAddr>),
    /// Errorstats cannot be read, but the other checks can go on (`INFO` refused, say).
    Unread(String),
}

/// The connection that reads `INFO errorstats`, on the first address of the endpoint. It is
/// doctor's first connection, so it is where a TLS mismatch or a wrong password shows first.
async fn open_stats(opts: &ConnectOptions, dns: Option<&DnsResolver>) -> Result<ErrorStats, Stats> {
    let failed_at = |at: Option<std::net::SocketAddr>| {
        move |e: crate::network::conn::ConnectError| {
            let outcome = ProbeOutcome::from_error(&e);
            if stops(&outcome) {
                Stats::Stop(outcome, at)
            } else {
                Stats::Unread(e.reason())
            }
        }
    };
    let addr: IpAddr = match (opts.host().parse(), dns) {
        (Ok(ip), _) => ip,
        (Err(_), Some(dns)) => *crate::network::conn::resolve(opts, dns)
            .await
            .map_err(failed_at(None))?
            .first()
            .ok_or(Stats::Unread("no address".into()))?,
        (Err(_), None) => return Err(Stats::Unread("no resolver".into())),
    };
    // A bare ON: the reading connection asks for nothing in particular.
    let quiet = opts.with_endpoint_type(EndpointTypeChoice::ServerDefault);
    let at = std::net::SocketAddr::new(addr, opts.port());
    ErrorStats::open(&quiet, addr)
        .await
        .map_err(failed_at(Some(at)))
}

fn client_rows(
    opts: &ConnectOptions,
    main: &ProbeReport,
    server: &Server,
    stats: &Errorstats,
) -> Vec<ClientRow> {
    let resolved = main.address.map(|a| a.ip());
    CLIENTS
        .iter()
        .map(|c| {
            let auto_type = c
                .auto
                .and_then(|a| clients::auto_type(a, opts.host(), resolved, opts.tls()));
            let server_answer = auto_type.and_then(|t| {
                server
                    .endpoint_types
                    .iter()
                    .find(|a| a.endpoint_type == Some(t))
                    .map(|a| a.outcome)
            });
            let refused =
                server_answer.map_or(server.opt_in.outcome == "refused", |a| a == "refused");
            let errorstats_cost = if c.opts_in_by_default == Some(true) && refused {
                stats.delta.clone()
            } else {
                Vec::new()
            };
            ClientRow {
                client: c.name,
                version: c.version,
                opts_in_by_default: c.opts_in_by_default,
                auto_type,
                server_answer,
                errorstats_cost,
                since: c.since,
                measured: c.measured,
            }
        })
        .collect()
}

/// Caveats, each from a documented fact (docs/clients.md), shown only where it applies.
fn caveats(
    opts: &ConnectOptions,
    main: &ProbeReport,
    server: &Server,
    clients: &[ClientRow],
) -> Vec<String> {
    let mut out = Vec::new();
    if server.resp3 == Some(false) {
        out.push(
            "HELLO 3 was refused: no client can receive push frames from this server, whatever \
             it is configured to do"
                .into(),
        );
    }
    if main.outcome.name() == "refused" {
        out.push(
            "the opt-in is refused: clients that opt in by default send it on every new \
             connection (redis-py, node-redis and go-redis in their auto mode then carry on \
             without notifications); each attempt is one more error in \
             the server's errorstats, and users of go-redis (#3536) and redis-py (#4242) \
             reported log noise from it. Redis Open Source and Valkey do not support the \
             feature; on Redis Enterprise / Redis Software (8.0.2+) the cluster setting \
             client_maint_notifications must be on"
                .into(),
        );
    }
    let node = clients.iter().find(|c| c.client == "node-redis");
    if let Some(node) = node.filter(|n| n.server_answer == Some("accepted")) {
        if node.auto_type != Some(EndpointType::None) {
            out.push(format!(
                "node-redis 6.3.1 with its auto type ({}) fails on a MOVING that names no \
                 endpoint (an assertion in an async handler, an unhandled promise rejection); \
                 every MOVING captured so far named none: set maintEndpointType to 'none'",
                node.auto_type.map_or("-".to_string(), |t| t.to_string())
            ));
        }
    }
    if let Some(IpAddr::V4(v4)) = main.address.map(|a| a.ip()) {
        if v4.is_loopback() {
            out.push(
                "node-redis 6.3.1 counts 127.0.0.0/8 as external (its private list has IPv6 \
                 ::1 but not IPv4 loopback), so its auto asks for external-*"
                    .into(),
            );
        }
    }
    if opts.tls() && opts.host_is_ip() {
        out.push(
            "TLS to an IP address: redis-py's auto follows what was typed, not TLS, and asks \
             for an *-ip endpoint; a MOVING naming an address then has no host name for \
             certificate verification"
                .into(),
        );
    }
    out
}

fn yes_no(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "not established",
    }
}

fn counters(list: &[(String, u64)]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    list.iter()
        .map(|(n, c)| format!("errorstat_{n} +{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `client versions`: each client's releases that changed what it does, then what the client
/// tier measured in which releases.
fn versions(f: &mut fmt::Formatter<'_>, clients: &[ClientRow]) -> fmt::Result {
    writeln!(
        f,
        "client versions (the releases that changed what it does, and what the client tier measured)"
    )?;
    for c in clients {
        let since: Vec<String> = c
            .since
            .iter()
            .map(|(v, what)| format!("{v} {what}"))
            .collect();
        writeln!(f, "  {:<19} {}", c.client, since.join("; "))?;
        for m in c.measured {
            writeln!(
                f,
                "  {:<19} measured in {}: {} ({})",
                "",
                m.range(),
                m.what,
                m.run
            )?;
        }
    }
    Ok(())
}

/// The whole diagnosis, each client's version history included (`--clients all`).
impl fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Text(self, true).fmt(f)
    }
}

/// The diagnosis for people; the version history only when asked for (`.1`): it does not bear
/// on the usual answers (a server that refuses the opt-in), and it was 90 of 146 lines.
struct Text<'a>(&'a Diagnosis, bool);

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Text(d, all_versions) = *self;
        if let Some(line) = &d.stopped {
            writeln!(f, "{line}")?;
            writeln!(
                f,
                "doctor stopped there: every other check needs a connection that gets past it"
            )?;
            return write!(f, "exit code {}", d.exit_code);
        }
        d.write_server(f)?;
        d.write_clients(f, all_versions)?;
        d.write_rest(f)
    }
}

impl Diagnosis {
    fn write_server(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |t: &str| sanitize(t).into_owned();
        let address = self.address.as_deref().unwrap_or("-");
        writeln!(
            f,
            "endpoint {} ({address}{})",
            s(&self.endpoint),
            if self.tls { ", TLS" } else { "" }
        )?;
        writeln!(f, "server")?;
        let hello = self
            .server
            .hello
            .as_ref()
            .map(HelloInfo::describe)
            .unwrap_or_default();
        let resp3 = match self.server.resp3 {
            Some(true) => format!("yes ({})", s(&hello)),
            Some(false) => "no".into(),
            None => "unknown (no answer)".into(),
        };
        writeln!(f, "  RESP3 (HELLO 3)   {resp3}")?;
        writeln!(f, "  opt-in            {}", line(&self.server.opt_in))?;
        let first = line(&self.server.opt_in);
        let types = &self.server.endpoint_types;
        if !types.is_empty() && types.iter().all(|a| line(a) == first) {
            // One answer to every type: said once, not five times over.
            return writeln!(f, "    the same answer to every moving-endpoint-type");
        }
        for a in types {
            let t = a.endpoint_type.map_or("bare ON".into(), |t| t.to_string());
            writeln!(f, "    {t:<15} {}", line(a))?;
        }
        Ok(())
    }

    fn write_clients(&self, f: &mut fmt::Formatter<'_>, all_versions: bool) -> fmt::Result {
        writeln!(
            f,
            "clients (would it opt in by default / its auto type / the server's answer)"
        )?;
        for c in &self.clients {
            let auto = c
                .auto_type
                .map_or("not established".into(), |t| t.to_string());
            let cost = if c.errorstats_cost.is_empty() {
                String::new()
            } else {
                format!(", costs {} per connection", counters(&c.errorstats_cost))
            };
            writeln!(
                f,
                "  {:<27} {} / {auto} / {}{cost}",
                format!("{} {}", c.client, c.version),
                yes_no(c.opts_in_by_default),
                c.server_answer.map_or("-".into(), |a| a.replace('_', " ")),
            )?;
        }
        if all_versions {
            return versions(f, &self.clients);
        }
        writeln!(
            f,
            "client versions: the releases that changed what each does, and what the client tier \
             measured: doctor --clients all"
        )
    }

    fn write_rest(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |t: &str| sanitize(t).into_owned();
        match &self.errorstats.error {
            Some(e) => writeln!(f, "errorstats: not measured: {}", s(e))?,
            None => writeln!(
                f,
                "errorstats: one handshake raised {}",
                counters(&self.errorstats.delta)
            )?,
        }
        if let Some(a) = &self.azure {
            let detail = a
                .detail
                .as_deref()
                .map(|d| format!(" ({})", s(d)))
                .unwrap_or_default();
            writeln!(
                f,
                "azure: SUBSCRIBE {} {}{detail}",
                crate::protocol::azure::CHANNEL,
                a.subscribe.replace('_', " ")
            )?;
            writeln!(f, "  listens by default: {}", a.listening.join("; "))?;
            writeln!(f, "  note: {}", a.note)?;
        }
        if let Some(c) = &self.cluster {
            writeln!(f, "cluster: {}", c.line())?;
        }
        for c in &self.caveats {
            writeln!(f, "caveat: {c}")?;
        }
        write!(f, "exit code {}", self.exit_code)
    }
}

/// The diagnosis at the terminal's width: each line wrapped between words, continued 2 spaces
/// deeper than its own indent (a caveat quotes long facts); the version history if asked for.
struct Wrapped<'a>(&'a Diagnosis, usize, bool);

impl fmt::Display for Wrapped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = Text(self.0, self.2).to_string();
        let mut first = true;
        for line in text.lines() {
            let indent = line.len() - line.trim_start().len();
            let more = " ".repeat(indent + 2);
            for part in crate::present::output::human::wrap_with(line, self.1, &more) {
                if !first {
                    writeln!(f)?;
                }
                first = false;
                write!(f, "{part}")?;
            }
        }
        Ok(())
    }
}

fn line(a: &Answer) -> String {
    let outcome = a.outcome.replace('_', " ");
    match &a.detail {
        Some(d) => format!("{outcome}: {}", sanitize(d)),
        None => outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit;
    use clap::Parser;
    use std::net::SocketAddr;

    /// A HELLO whose `server` holds CR, LF, ESC and a bidi override, and a refusal with ESC and
    /// a C1 control: everything a hostile server could put on the screen.
    const HOSTILE_HELLO: &[u8] =
        b"%1\r\n$6\r\nserver\r\n$27\r\nredis\r\n00:00:00 FAKE\x1b[2J\xe2\x80\xae\r\n";
    const HOSTILE_REFUSAL: &[u8] = b"-ERR bad\x1b[31mRED\xc2\x9b\r\n";

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        doctor: DoctorArgs,
    }

    /// Answers the first command of each connection (HELLO) with `HOSTILE_HELLO`, every other
    /// command (the opt-in, INFO) with `HOSTILE_REFUSAL`.
    async fn hostile() -> SocketAddr {
        crate::network::conn::test_server::serve(vec![HOSTILE_HELLO], HOSTILE_REFUSAL).await
    }

    #[tokio::test]
    async fn a_hostile_server_cannot_reach_the_terminal() {
        let addr = hostile().await;
        let args = T::try_parse_from(["doctor", &format!("redis://{addr}")])
            .unwrap()
            .doctor;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(&args, &mut out, &mut err).await.unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(code, exit::REFUSED, "{out}");
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        assert!(!out.contains('\u{202e}'), "{out:?}");
        assert!(out.contains("refused: ERR bad\\x1b[31mRED\\u{9b}"), "{out}");
        assert!(
            out.contains("errorstats: not measured: ERR bad\\x1b[31mRED"),
            "{out}"
        );
        assert!(
            out.contains("redis\\r\\n00:00:00 FAKE\\x1b[2J\\u{202e}"),
            "{out}"
        );
    }
}
