//! The sink that shows the library's notices on stderr.

use std::io;

use super::traits::Sink;
use crate::observe::record::WatchLine;

/// The sink that shows the library's notices on stderr, each prefixed and wrapped to the
/// terminal; it takes no timeline line.
pub struct StderrNotices;

impl Sink for StderrNotices {
    fn line(&mut self, _line: &WatchLine) -> io::Result<()> {
        Ok(())
    }

    fn notice(&mut self, text: &str) -> io::Result<()> {
        crate::present::output::terminal::tell("", text);
        Ok(())
    }
}
