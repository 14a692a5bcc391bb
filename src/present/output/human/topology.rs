//! A cluster's topology change in words: the one wording of the topology line, the summary's
//! rows and the report's table, so that the three say a change the same way.

use crate::observe::record::line;

/// A topology change in words, one part per kind of change: `added a:1`, `removed b:1`,
/// `c:1 replica -> master`, `slots 0-5460 (5461) b:1 -> c:1`.
pub fn topology_change(
    added: &[String],
    removed: &[String],
    roles: &[line::RoleChange],
    moved: &[line::SlotsMoved],
) -> Vec<String> {
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("added {}", added.join(", ")));
    }
    if !removed.is_empty() {
        parts.push(format!("removed {}", removed.join(", ")));
    }
    for r in roles {
        parts.push(format!("{} {} -> {}", r.node, r.from, r.to));
    }
    let none = "no master";
    for m in moved {
        let range = match m.first == m.last {
            true => format!("slot {}", m.first),
            false => format!(
                "slots {}-{} ({})",
                m.first,
                m.last,
                u32::from(m.last) - u32::from(m.first) + 1
            ),
        };
        parts.push(format!(
            "{range} {} -> {}",
            m.from.as_deref().unwrap_or(none),
            m.to.as_deref().unwrap_or(none)
        ));
    }
    parts
}
