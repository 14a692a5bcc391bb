//! Asking the server everything `doctor` shows. The server is asked with the probe machinery
//! (`conn::probe`): once as the flags say, then once per `moving-endpoint-type` on a connection
//! of its own, because a server may take one form and refuse another. What the known clients
//! would do is read from `crate::grading::clients`, and the cost of a refused opt-in is
//! measured, not assumed: `INFO errorstats` on a separate connection before and after the main
//! probe.

use std::net::IpAddr;
use std::time::Duration;

use super::caveats::{caveats, client_rows};
use super::diagnosis::{
    answer, Answer, AzureCheck, ClusterCheck, Diagnosis, Errorstats, Server, Stopped,
};
use crate::network::conn::probe::{self, ErrorStats, ProbeOutcome, ProbeReport};
use crate::network::conn::{ConnectOptions, EndpointType, EndpointTypeChoice};
use crate::network::dns::DnsResolver;

const TYPES: [(EndpointType, EndpointTypeChoice); 5] = [
    (EndpointType::InternalIp, EndpointTypeChoice::InternalIp),
    (EndpointType::InternalFqdn, EndpointTypeChoice::InternalFqdn),
    (EndpointType::ExternalIp, EndpointTypeChoice::ExternalIp),
    (EndpointType::ExternalFqdn, EndpointTypeChoice::ExternalFqdn),
    (EndpointType::None, EndpointTypeChoice::None),
];

/// Said on every Azure check: the two Azure services announce maintenance differently.
const AZURE_NOTE: &str = "Azure Cache for Redis announces maintenance on AzureRedisEvents; Azure \
    Managed Redis uses the push notifications instead (the opt-in above)";

/// Asks the server everything `doctor` shows, and puts the clients' facts beside it. `step` is
/// told each check as it starts (the spinner names it; a server may take its time).
pub async fn diagnose(
    opts: &ConnectOptions,
    dns: Option<&DnsResolver>,
    azure: bool,
    step: &dyn Fn(&str),
) -> Diagnosis {
    step("connecting");
    let mut stats = match open_stats(opts, dns).await {
        Err(Stats::Stop(outcome, address)) => return stopped(opts, outcome, address),
        Err(Stats::Unread(e)) => Err(e),
        Ok(s) => Ok(s),
    };
    let before = match &mut stats {
        Ok(s) => s.read().await,
        Err(e) => Err(e.clone()),
    };
    step("the opt-in");
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
    let errorstats = errorstats(before, after);
    let server = server(&main, endpoint_types(opts, dns, step).await);
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

/// The counters before and after the main probe, and what it raised.
fn errorstats(
    before: Result<Vec<(String, u64)>, String>,
    after: Result<Vec<(String, u64)>, String>,
) -> Errorstats {
    match (before, after) {
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
    }
}

/// The opt-in asking for each `moving-endpoint-type`, each on a connection of its own.
async fn endpoint_types(
    opts: &ConnectOptions,
    dns: Option<&DnsResolver>,
    step: &dyn Fn(&str),
) -> Vec<Answer> {
    let mut out = Vec::new();
    for (tried, choice) in TYPES {
        step(&format!("the opt-in asking for {tried}"));
        let r = probe::probe(&opts.with_endpoint_type(choice), dns, Duration::ZERO).await;
        // Labelled with the type tried, also when the handshake ended before sending it.
        out.push(Answer {
            endpoint_type: Some(tried),
            ..answer(&r)
        });
    }
    out
}

/// What the server said: RESP3, HELLO, the opt-in as asked and per type.
fn server(main: &ProbeReport, endpoint_types: Vec<Answer>) -> Server {
    let resp3 = match &main.outcome {
        ProbeOutcome::Resp3Unavailable { .. } => Some(false),
        _ if main.hello.is_some() => Some(true),
        _ => None,
    };
    Server {
        resp3,
        hello: main.hello.clone(),
        opt_in: answer(main),
        endpoint_types,
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

/// The diagnosis of an endpoint doctor could not get past: the failure, what to do, and nothing
/// else (every other check needs a connection that gets past it). `address` is where it got
/// to, as probe says it (none when the name did not resolve).
fn stopped(
    opts: &ConnectOptions,
    outcome: ProbeOutcome,
    address: Option<std::net::SocketAddr>,
) -> Diagnosis {
    let report = ProbeReport::failed(opts.display_endpoint(), opts.tls(), outcome);
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
        stopped: Some(Stopped {
            endpoint: report.endpoint,
            outcome: report.outcome,
        }),
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
