//! `maintwatch decide`: the handoff decision on its own, for a client author comparing their
//! client's choice with the reference one, against the same live DNS.

use crate::cli::decide::DecideArgs;
use crate::exit;
use crate::network::dns::{DnsOptions, DnsResolver};
use crate::network::handoff::{self, EndpointHost, HandoffInput, RandJitter, TokioClock};
use crate::protocol::notification::HostPort;
use anyhow::Context;
use std::time::Duration;

pub async fn run(args: &DecideArgs) -> anyhow::Result<i32> {
    // A malformed flag value is a usage error (exit 2), as clap's own are.
    use crate::cli::usage::usage;
    let endpoint = HostPort::parse(&args.endpoint)
        .map_err(|e| usage("--endpoint", e))?
        .ok_or_else(|| {
            usage(
                "--endpoint",
                format!("{:?} names no address", args.endpoint),
            )
        })?;
    let successor = match &args.successor {
        Some(s) => HostPort::parse(s).map_err(|e| usage("--successor", e))?,
        None => None,
    };
    if args.window.subsec_nanos() != 0 {
        let whole = format!(
            "MOVING declares whole seconds; {:?} is not one",
            args.window
        );
        return Err(usage("--window", whole));
    }
    let input = HandoffInput {
        endpoint: EndpointHost::parse(&endpoint.host),
        port: endpoint.port,
        current: args.current,
        successor: successor.map(|s| (s.host, s.port)),
        window_secs: i64::try_from(args.window.as_secs()).unwrap_or(i64::MAX),
        poll_interval: args.poll,
    };
    let resolver = DnsResolver::new(&DnsOptions {
        server: args.dns_server,
        timeout: Duration::from_secs(2),
    })
    .context("setting up the resolver")?;
    let outcome = handoff::run(
        &input,
        &resolver,
        &TokioClock::new(),
        &mut RandJitter,
        std::future::pending::<()>(),
    )
    .await;
    let mut out = std::io::stdout().lock();
    crate::present::output::sink::one(&mut out, args.json, &DecideLine::new(&outcome), &outcome)?;
    Ok(exit::SUCCESS)
}

/// The one line of `decide --json`: tagged with `type` and the schema version `v` like every
/// other JSON line the tool writes, the outcome's own fields beside them.
#[derive(serde::Serialize)]
pub struct DecideLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    v: u32,
    #[serde(flatten)]
    outcome: &'a handoff::Outcome,
    /// Where a client would go (`host:port` or an address), `null` when nowhere in particular;
    /// the same for every outcome (the outcome's own `to` or `host`/`port` vary by kind).
    destination: Option<String>,
}

impl<'a> DecideLine<'a> {
    pub fn new(outcome: &'a handoff::Outcome) -> DecideLine<'a> {
        DecideLine {
            kind: "decision",
            v: crate::observe::record::SCHEMA_VERSION,
            outcome,
            destination: outcome.destination(),
        }
    }
}
