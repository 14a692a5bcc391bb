//! `--report FILE.html`: one self-contained HTML page of a run, for a postmortem or a CI artifact.
//!
//! Text tells a maintenance badly: what people need to see is its shape — when the MOVING came,
//! when DNS changed, when each connection moved, recycled or was cut, and how far past the window
//! the close came. The page draws that as inline SVG and puts beside it the grade and the
//! summary the terminal shows, and the raw frames.
//!
//! It is fed from what the command already built, never from a second reading: the judge's
//! [`Observations`] and [`Grade`] when the command graded, and the timeline's own lines (kept by
//! [`collect::Collected`] as they are written; `demo`'s, from the capture its watch
//! has just written: [`capture_page`]). The page is one file: CSS and SVG inline, no
//! script, no fetch, so it opens offline years later and in a CI artifact viewer that blocks
//! scripts.
//!
//! HTML is built with `maud`: its templates are checked by the compiler, and every spliced value
//! is escaped unless explicitly marked otherwise, which is the property that matters for a page
//! made of a hostile server's bytes. It has no runtime and no template files to ship. Text from
//! the wire is also shown as the terminal shows it (control and bidi characters escaped), so
//! the page and the terminal say the same thing. Sizes are bounded by the caps in
//! [`collect`] and [`model`] (stated in docs/report.md).

pub mod capture_page;
pub mod collect;
pub mod labels;
pub mod model;
mod page;
pub mod page_sink;
mod scale;
pub mod svg;

mod command_line;
pub use command_line::command_line;

use std::path::Path;

use anyhow::Context;

use crate::grading::judge::{Grade, Observations};
pub use collect::Collected;

/// What one page is made of.
pub struct Report<'a> {
    /// The command, as the page names it: `pcap --grade`, `replay`, ...
    pub command: &'a str,
    /// What was read or watched: files, a scenario, an endpoint.
    pub source: String,
    pub lines: &'a Collected,
    pub observations: Option<&'a Observations>,
    pub grade: Option<&'a Grade>,
    /// Sentences about the run the page should carry (how it stopped, events lost).
    pub notes: Vec<String>,
}

impl Report<'_> {
    /// The drawing: from the judge's observations when there are some, else from the lines.
    pub fn drawing(&self) -> model::Drawing {
        match self.observations {
            Some(obs) => model::from_observations(obs, self.grade, self.lines),
            None => model::from_lines(self.lines),
        }
    }

    /// The page.
    pub fn render(&self) -> String {
        page::page(self).into_string()
    }

    /// Writes the page to `path` (through a temporary file beside it, so a reader never sees
    /// half a page).
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        write_atomically(&self.render(), path)
    }
}

/// Writes one page for several runs (`certify --report`), a section each.
pub fn write_book(command: &str, reports: &[Report<'_>], path: &Path) -> anyhow::Result<()> {
    write_atomically(&page::book(command, reports).into_string(), path)
}

/// Through a temporary file beside `path`, so a reader never sees half a page.
fn write_atomically(html: &str, path: &Path) -> anyhow::Result<()> {
    let tmp = path.with_extension("html.tmp");
    std::fs::write(&tmp, html)
        .with_context(|| format!("writing the report to {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing the report to {}", path.display()))
}
