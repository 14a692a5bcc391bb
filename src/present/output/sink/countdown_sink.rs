//! The countdown as a sink: it sees every line, to open and close its windows.

use std::io;

use super::traits::Sink;
use crate::observe::record::WatchLine;
use crate::present::output::countdown::Countdown;

impl Sink for Countdown {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        self.on_line(line);
        Ok(())
    }

    fn interrupted(&mut self, _fresh_line: bool) -> io::Result<()> {
        self.clear();
        Ok(())
    }
}
