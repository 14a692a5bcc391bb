//! `watch --report` (and `replay --report`): a sink that keeps what the page draws as the lines
//! are written, and writes the page at exit and, for the watch, on SIGHUP (a watch that runs for
//! weeks gets a fresh page without stopping). Lines of a fleet are tagged with their endpoint;
//! connection numbers are per endpoint, so the page draws the first endpoint only.

use std::cell::RefCell;
use std::io;
use std::path::PathBuf;
use std::rc::Rc;

use super::{Collected, Report};
use crate::observe::record::WatchLine;
use crate::present::output::sink::Sink;

/// The sink's state, shared with the command that writes the page at exit.
struct State {
    command: String,
    lines: Collected,
    path: PathBuf,
    source: String,
    /// A fleet's page draws its first endpoint; the lines of the others are counted.
    first_label: Option<String>,
    other_lines: u64,
}

/// The sink; clones share one page.
#[derive(Clone)]
pub struct PageSink(Rc<RefCell<State>>);

impl PageSink {
    /// A page of `command` (the command line, as [`super::command_line`] shows it) of `source`,
    /// to be written to `path`.
    pub fn new(command: String, path: PathBuf, source: String) -> PageSink {
        PageSink(Rc::new(RefCell::new(State {
            command,
            lines: Collected::default(),
            path,
            source,
            first_label: None,
            other_lines: 0,
        })))
    }

    /// Writes the page of what was kept so far.
    pub fn write(&self) -> anyhow::Result<()> {
        let s = self.0.borrow();
        let mut notes = Vec::new();
        if let Some(label) = &s.first_label {
            notes.push(format!(
                "a fleet: this page draws the endpoint {}; {} line(s) of the other endpoints are not drawn",
                super::collect::bounded(label),
                s.other_lines
            ));
        }
        Report {
            command: &s.command,
            source: s.source.clone(),
            lines: &s.lines,
            observations: None,
            grade: None,
            notes,
        }
        .write(&s.path)
    }
}

impl Sink for PageSink {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        self.0.borrow_mut().lines.line(line);
        Ok(())
    }

    fn line_of(&mut self, ep: &str, line: &WatchLine) -> io::Result<()> {
        let mut s = self.0.borrow_mut();
        let first = s.first_label.get_or_insert_with(|| ep.to_string());
        if first == ep {
            s.lines.line(line);
        } else {
            s.other_lines += 1;
        }
        Ok(())
    }

    /// SIGHUP: the page is written again and the watch goes on.
    fn reopen(&mut self) -> io::Result<bool> {
        if let Err(e) = self.write() {
            crate::present::output::terminal::tell("", &format!("--report: {e:#}"));
        }
        Ok(true)
    }
}
