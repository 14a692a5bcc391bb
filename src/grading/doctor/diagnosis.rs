//! The diagnosis `doctor` shows: one value holds it all, serialized as the JSON object and
//! rendered for people by `present::output::doctor_screen`. The fields are public so that the
//! rendering can live with the other screens.

use serde::Serialize;

use crate::grading::clients;
use crate::network::conn::probe::{ProbeOutcome, ProbeReport};
use crate::network::conn::{EndpointType, HelloInfo};

/// Everything `doctor` found: the JSON object, and the text for people.
#[derive(Serialize)]
pub struct Diagnosis {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub v: u32,
    pub endpoint: String,
    pub address: Option<String>,
    pub tls: bool,
    pub exit_code: i32,
    pub server: Server,
    pub clients: Vec<ClientRow>,
    pub errorstats: Errorstats,
    /// Azure Cache's maintenance channel, on an Azure Cache host or with `--azure-events`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub azure: Option<AzureCheck>,
    /// An OSS cluster's health as the node asked sees it (HELLO said `mode cluster`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterCheck>,
    pub caveats: Vec<String>,
    /// Set when doctor stopped at the first failure that every other check would repeat (a
    /// TLS handshake, a refused password, nothing answering). It is written as probe's one line
    /// for it, in the JSON as on the screen: that text is `present`'s, so its `Serialize` is too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
}

/// The failure doctor stopped at: where, and what it met.
pub struct Stopped {
    pub endpoint: String,
    pub outcome: ProbeOutcome,
}

/// What `doctor` says of Azure Cache for Redis's `AzureRedisEvents` channel.
#[derive(Serialize)]
pub struct AzureCheck {
    /// SUBSCRIBE to the channel: `allowed`, `refused` or `not_checked`.
    pub subscribe: &'static str,
    pub detail: Option<String>,
    /// The clients that listen to it by default.
    pub listening: Vec<String>,
    pub note: &'static str,
}

/// What `doctor` says of an OSS cluster: its nodes, and a topology change under way or just
/// made (a node marked `fail`, slots no live master serves), which no notification announces.
#[derive(Serialize)]
pub struct ClusterCheck {
    #[serde(flatten)]
    pub health: Option<crate::network::cluster::Health>,
    /// Why CLUSTER SHARDS could not be read (an ACL, a server before Redis 7).
    pub error: Option<String>,
}

#[derive(Serialize)]
pub struct Server {
    pub resp3: Option<bool>,
    pub hello: Option<HelloInfo>,
    /// The opt-in as the flags ask for it.
    pub opt_in: Answer,
    pub endpoint_types: Vec<Answer>,
}

#[derive(Serialize, Clone)]
pub struct Answer {
    /// The `moving-endpoint-type` sent; `None`: a bare ON (or the opt-in was not sent).
    pub endpoint_type: Option<EndpointType>,
    pub outcome: &'static str,
    pub detail: Option<String>,
}

#[derive(Serialize)]
pub struct ClientRow {
    pub client: &'static str,
    pub version: &'static str,
    pub opts_in_by_default: Option<bool>,
    pub auto_type: Option<EndpointType>,
    /// The server's answer to that type: accepted, refused ...
    pub server_answer: Option<&'static str>,
    /// The errorstats counters one of its connections raises here (empty when it does not
    /// opt in or the server accepts).
    pub errorstats_cost: Vec<(String, u64)>,
    /// The releases that changed its handling of maintenance notifications.
    pub since: &'static [(&'static str, &'static str)],
    /// What the client tier measured, by release range.
    pub measured: &'static [clients::Measured],
}

#[derive(Serialize, Default)]
pub struct Errorstats {
    pub before: Vec<(String, u64)>,
    pub after: Vec<(String, u64)>,
    /// What one handshake (the probe's) raised.
    pub delta: Vec<(String, u64)>,
    /// Why it could not be measured.
    pub error: Option<String>,
}

/// A probe's answer as the diagnosis holds it.
pub fn answer(r: &ProbeReport) -> Answer {
    Answer {
        endpoint_type: r.endpoint_type,
        outcome: r.outcome.name(),
        detail: r.outcome.detail().map(str::to_string),
    }
}
