//! StackExchange.Redis: its facts by release, and what it does with Azure Cache's
//! `AzureRedisEvents`, the one known client that listens to them. Its handling of push frames
//! was not read here, so it has no parser for them.

use crate::grading::clients::facts::Client;
use crate::grading::clients::frame_view::{acts, ignores};
use crate::observe::record::Verdict;

/// StackExchange.Redis, as read at its `version`.
pub const CLIENT: Client = Client {
    name: "StackExchange.Redis",
    version: "3.3.0",
    opts_in_by_default: None,
    opt_in_note: Some(
        "3.3.0 withholds the automatic opt-in for hosted providers, and a custom domain falls back to off",
    ),
    auto: None,
    since: &[("2.2.79", "Azure Cache's AzureRedisEvents channel"), ("3.3.0", "push notifications, experimental, off by default")],
    cluster_since: None,
    measured: &[],
    parser: None,
};

/// The one known client that listens to `AzureRedisEvents`, the release that started it
/// (PR #1876), and the release whose code was read (docs/protocol.md section 9). Its other
/// facts in [`CLIENTS`] were read at another version, for push frames.
pub(crate) const AZURE_LISTENER: &str = "StackExchange.Redis";

pub(crate) const AZURE_SINCE: &str = "2.2.79";

pub(crate) const AZURE_READ_AT: &str = "3.1.31";


/// StackExchange.Redis acts on every type it knows (at least by raising its event); a type it
/// reads as Unknown gets the event and nothing else, which counts as ignoring it.
pub(crate) fn azure_reference_verdict(event: &crate::protocol::azure::AzureEvent) -> Verdict {
    let mut text = event.reference_reaction();
    if let Some(why) = &event.reference_ignores {
        text.push_str(&format!("; it misreads: {why}"));
    }
    text.push_str(&format!(
        " (subscribed since {AZURE_SINCE}, only for hosts in Azure Cache domains)"
    ));
    match event.reference_kind {
        Some(_) => acts(text),
        None => ignores(text),
    }
}
