//! Plain-text renderings shared by every subcommand that shows frames.

use crate::notification::{Classified, OtherPush};

/// One line saying what a frame is.
pub fn describe(parsed: &Classified) -> String {
    match parsed {
        Classified::Maintenance(n) => n.describe(),
        Classified::OtherPush(p) => describe_other(p),
        Classified::NotPush => "reply (not a push frame)".to_string(),
    }
}

/// A non-maintenance push, named so nobody mistakes it for one.
pub fn describe_other(p: &OtherPush) -> String {
    let name = p.name.as_deref().unwrap_or("<no name>");
    let what = if p.known { "" } else { "unknown " };
    format!(
        "{what}push '{name}' ({} elements): not a maintenance notification",
        p.elements
    )
}
