//! Plain-text renderings shared by every subcommand that shows frames.

use crate::protocol::azure::{AzureEvent, CHANNEL};
use crate::protocol::notification::{Classified, OtherPush};
use crate::shared::escape::sanitize;
use std::fmt::Write;

/// One line saying what a frame is.
pub fn describe(parsed: &Classified) -> String {
    let mut out = String::new();
    describe_into(&mut out, parsed);
    out
}

/// [`describe`], appended to `out`: a flood's every human line says this, so a pub/sub push is
/// written piece by piece rather than through a format string into a string of its own.
pub fn describe_into(out: &mut String, parsed: &Classified) {
    match parsed {
        Classified::Maintenance(n) => out.push_str(&n.describe()),
        Classified::OtherPush(p) => describe_other_into(out, p),
        Classified::NotPush => out.push_str("reply (not a push frame)"),
    }
}

/// A non-maintenance push, named so nobody mistakes it for one.
fn describe_other_into(out: &mut String, p: &OtherPush) {
    if !p.known {
        out.push_str("unknown ");
    }
    out.push_str("push '");
    out.push_str(p.name.as_deref().unwrap_or("<no name>"));
    out.push_str("' (");
    // Writing into a String cannot fail.
    let _ = write!(out, "{}", p.elements);
    out.push_str(" elements): not a maintenance notification");
}

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
