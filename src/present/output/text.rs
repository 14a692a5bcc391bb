//! Plain-text renderings shared by every subcommand that shows frames.

use crate::protocol::azure::{AzureEvent, CHANNEL};
use crate::shared::escape::sanitize;

/// The lines `decode` shows for an `AzureRedisEvents` message: what it says, its bytes (`raw`,
/// escaped already), the notes, and what would make StackExchange.Redis ignore or misread it.
/// The server's text is sanitised for a terminal.
pub fn azure_lines(source: &str, offset: u64, raw: &str, event: &AzureEvent) -> Vec<String> {
    let mut out = vec![
        format!("{source} @{offset}: {CHANNEL} {}", event.describe()),
        format!("    {raw}"),
    ];
    out.extend(
        event
            .notes
            .iter()
            .map(|note| format!("    note: {}", sanitize(note))),
    );
    if let Some(why) = &event.reference_ignores {
        out.push(format!(
            "    StackExchange.Redis would ignore or misread it: {}",
            sanitize(why)
        ));
    }
    out
}
