//! Human lines for the watch timeline: one entry per event, readable at 80 columns, with the
//! exact bytes under every frame and `+s.mmm` offsets relative to the latest opening event.
//!
//! Split by concern: `style` (colours, time, width), `lines` (one renderer per line type),
//! `wrap` (keeping within the width), `safe` (escaping what the server chose), `summary`
//! (the tables a watch ends with), `topology` (a cluster's topology change in words) and
//! `retries` (one line per state, not per retry, of a connection that cannot be made). The public items are re-exported here, so `output::human::X`
//! paths are unchanged.

use crate::observe::record::line;
use crate::observe::record::{Rel, WatchLine};
use crate::protocol::notification::Kind;

mod render;
pub mod retries;
mod safe;
mod style;
pub mod summary;
#[cfg(test)]
mod tests;
mod topology;
mod wrap;

use render::render_safe;
pub use safe::terminal_safe;
pub use style::{clock, Role, Style, TimeFormat};
pub use topology::topology_change;
pub use wrap::{
    glue_units, hanging, hanging_at, wrap_grade, wrap_with, AFTER_REFUSAL, AZURE_REFUSAL,
    CONTINUATION, WIDTH,
};
use wrap::{visible_width, wrap, wrap_bytes};

/// An offset, and what it is measured from unless that is the line's own opening event
/// (`own`): `+0.010 after SMIGRATED seq 19: `.
fn rel(r: &Option<Rel>, own: Option<&str>) -> String {
    match r {
        Some(r) if own == Some(r.to.as_str()) && opening(&r.to) => format!("+{:.3} ", r.s),
        Some(r) => format!("+{:.3} after {}: ", r.s, r.to),
        None => String::new(),
    }
}

/// Whether an event's name (`MOVING seq 3`) is that of an opening notification.
fn opening(name: &str) -> bool {
    let kind = name.split(' ').next().unwrap_or_default();
    Kind::from_name(kind.as_bytes()).is_some_and(Kind::opens)
}

/// Renders one line of the timeline as one or more lines of text, each within `style.width`
/// where spaces allow. Every text a server chose (its name and version, a refusal, a push's name,
/// a MOVING's target, an error it sent) is escaped first: a terminal must never receive a control
/// or bidi character from the wire.
pub fn render(line: &WatchLine, style: &Style) -> Vec<String> {
    let out = match terminal_safe(line) {
        std::borrow::Cow::Borrowed(line) => render_safe(line, style),
        std::borrow::Cow::Owned(line) => render_safe(&line, style),
    };
    // The summary's tables are laid out to the width already. A frame's exact bytes break only
    // after a `\r\n`, never at a space they hold: `decode` takes line breaks and indentation as
    // layout, so the rows pasted together are the same bytes.
    let whole = match line {
        WatchLine::Summary(_) => return out,
        WatchLine::Push(line::Push { copy_of: None, .. })
        | WatchLine::AzureEvent(line::AzureEvent { copy_of: None, .. }) => Some(1),
        _ => None,
    };
    // Bytes bound the width from above: most lines are told apart without decoding them.
    let too_wide = |l: &String| l.len() > style.width && visible_width(l) > style.width;
    if !out
        .iter()
        .enumerate()
        .any(|(i, l)| Some(i) != whole && too_wide(l))
    {
        return out;
    }
    let mut wrapped = Vec::with_capacity(out.len() + 2);
    for (i, l) in out.into_iter().enumerate() {
        if !too_wide(&l) {
            wrapped.push(l);
        } else if Some(i) == whole {
            wrapped.extend(wrap_bytes(&l, style.width));
        } else {
            wrapped.extend(wrap(&l, style.width));
        }
    }
    wrapped
}

/// A line as [`retries::Retries`] decided to show it: nothing, as it is, as a "still
/// unreachable" line, or after a line saying the connection is back.
pub fn render_shown(line: &WatchLine, shown: &retries::Shown, style: &Style) -> Vec<String> {
    use retries::Shown;
    match shown {
        Shown::Hidden => Vec::new(),
        Shown::Line => render(line, style),
        Shown::Still { attempts, secs } => {
            let text = render::still_unreachable(line, *attempts, *secs, style);
            text.iter().flat_map(|l| wrap(l, style.width)).collect()
        }
        Shown::Back { attempts, secs } => {
            let mut out: Vec<String> = render::back(line, *attempts, *secs, style)
                .iter()
                .flat_map(|l| wrap(l, style.width))
                .collect();
            out.extend(render(line, style));
            out
        }
    }
}

/// A line that is detail rather than news: a successful `--traffic` PING. Shown with `-v`; the
/// summary has the figures. A failed PING is news and always shown.
pub fn is_detail(line: &WatchLine) -> bool {
    matches!(line, WatchLine::Ping(line::Ping { error: None, .. }))
}
