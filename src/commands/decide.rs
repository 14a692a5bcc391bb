//! `maintwatch decide`: the handoff decision on its own, for a client author comparing their
//! client's choice with the reference one, against the same live DNS.

use crate::cli::decide::DecideSettings;
use crate::exit;
use crate::network::dns::DnsResolver;
use crate::network::handoff::{self, RandJitter, TokioClock};
use anyhow::Context;

pub async fn run(settings: &DecideSettings) -> anyhow::Result<i32> {
    let resolver = DnsResolver::new(&settings.dns).context("setting up the resolver")?;
    let outcome = handoff::run(
        &settings.input,
        &resolver,
        &TokioClock::new(),
        &mut RandJitter,
        std::future::pending::<()>(),
    )
    .await;
    let mut out = std::io::stdout().lock();
    crate::present::output::sink::one(
        &mut out,
        settings.json,
        &DecideLine::new(&outcome),
        &outcome,
    )?;
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
