//! The one JSON line `decide --json` writes: the handoff decision's outcome, tagged as every
//! line the tool writes is, so that a script reads it with the same schema.

use crate::network::handoff;

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
            v: super::SCHEMA_VERSION,
            outcome,
            destination: outcome.destination(),
        }
    }
}
