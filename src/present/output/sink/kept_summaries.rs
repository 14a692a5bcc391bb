//! The summaries a watch keeps, to write them again on stderr when stdout could not take them.

use std::io;

use super::switch;
use super::traits::Sink;
use crate::observe::record::WatchLine;
use crate::present::output::human::Style;
use crate::present::output::terminal::tell;

/// Keeps each summary line (with its endpoint's label) that went by: when stdout could not take
/// them (a reader that stopped reading or went away), the watch writes them again on stderr.
#[derive(Default, Clone)]
pub struct KeptSummaries {
    kept: std::rc::Rc<std::cell::RefCell<Vec<Labelled>>>,
}

/// A line with its endpoint's label in a fleet.
pub type Labelled = (Option<String>, WatchLine);

impl KeptSummaries {
    /// The summaries so far, in the order they came.
    pub fn take(&self) -> Vec<Labelled> {
        std::mem::take(&mut self.kept.borrow_mut())
    }

    /// stdout lost `dropped` lines (its reader stopped reading, or went away: `gone`): says
    /// so, and writes the summaries again on stderr, where they can be read, as JSON or in
    /// `style` without colour.
    pub fn write_on_stderr(
        &self,
        (gone, dropped): (bool, u64),
        json: bool,
        style: Style,
    ) -> anyhow::Result<()> {
        let why = if gone {
            "its reader went away"
        } else {
            "its reader stopped reading"
        };
        let n = dropped;
        let lines = if n == 1 { "line" } else { "lines" };
        let lost = format!("stdout: {n} {lines} not written ({why}); the summary follows here");
        tell("", &lost);
        let style = Style {
            color: false,
            ..style
        };
        let mut err = switch::lines(std::io::stderr(), json, style, false);
        for (label, line) in &self.take() {
            match label {
                Some(label) => err.line_of(label, line)?,
                None => err.line(line)?,
            }
        }
        err.flush()?;
        Ok(())
    }
}

impl Sink for KeptSummaries {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        if matches!(line, WatchLine::Summary(_)) {
            self.kept.borrow_mut().push((None, line.clone()));
        }
        Ok(())
    }

    fn line_of(&mut self, ep: &str, line: &WatchLine) -> io::Result<()> {
        if matches!(line, WatchLine::Summary(_)) {
            self.kept
                .borrow_mut()
                .push((Some(ep.to_string()), line.clone()));
        }
        Ok(())
    }
}
