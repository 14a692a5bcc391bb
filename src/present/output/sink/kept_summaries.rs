//! The summaries a watch keeps, to write them again on stderr when stdout could not take them.

use std::io;

use super::traits::Sink;
use crate::observe::record::WatchLine;

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
