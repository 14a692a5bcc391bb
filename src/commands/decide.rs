//! `maintwatch decide`: the handoff decision on its own, for a client author comparing their
//! client's choice with the reference one, against the same live DNS.

use crate::cli::decide::DecideSettings;
use crate::exit;
use crate::network::dns::DnsResolver;
use crate::network::handoff::{self, RandJitter, TokioClock};
use crate::observe::record::DecideLine;
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
