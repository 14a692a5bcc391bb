//! What a destination of lines is ([`Sink`]), what a command's own line is ([`Record`]), and
//! what JSON lines are written to ([`LineWriter`]).

use std::io::{self, Write};

use crate::observe::record::WatchLine;
use crate::present::output::human::Style;

/// A line of a command's own schema, beside the timeline's (`decode`'s, `pcap`'s): what it
/// is as JSON and as text for people. The sink that [`super::lines`] picks decides which is written, so
/// `--json` means the same in every command.
pub trait Record {
    /// The line as one JSON object, without the newline, made by `record::write`.
    fn write_json(&self, out: &mut Vec<u8>) -> io::Result<()>;

    /// The line for people: none, one or several text lines.
    fn render(&self, style: &Style) -> Vec<String>;
}

/// One destination of timeline lines.
pub trait Sink {
    /// A line of the timeline.
    fn line(&mut self, line: &WatchLine) -> io::Result<()>;

    /// A line of one endpoint of a fleet, `ep` its label: shown or written with it. A sink that
    /// serves one endpoint only never gets this call.
    fn line_of(&mut self, _ep: &str, line: &WatchLine) -> io::Result<()> {
        self.line(line)
    }

    /// SIGHUP: open the file again by its name (logrotate moved it). `Ok(true)`: this sink did.
    fn reopen(&mut self) -> io::Result<bool> {
        Ok(false)
    }

    /// Text that is not part of the timeline (the demo's simulator narration): shown to people,
    /// never recorded as a line.
    fn note(&mut self, _text: &str) -> io::Result<()> {
        Ok(())
    }

    /// A warning or note about the run, for stderr (the engine prints nothing itself: it hands
    /// these to its sinks, and [`super::StderrNotices`] is the one that shows them).
    fn notice(&mut self, _text: &str) -> io::Result<()> {
        Ok(())
    }

    /// A line of a command's own schema. Only the JSON and human sinks write it; the watch's
    /// other sinks (capture, countdown, metrics, hooks) take timeline lines alone.
    fn record(&mut self, _line: &dyn Record) -> io::Result<()> {
        Ok(())
    }

    /// A signal stopped the watch; `fresh_line`: the terminal is already at a line's start.
    fn interrupted(&mut self, _fresh_line: bool) -> io::Result<()> {
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// The sink stopped working on the way (it said so on stderr); the exit code reports it.
    fn failed(&self) -> bool {
        false
    }
}

/// A writer JSON lines go to: each line is made by a closure into a byte buffer, then written.
/// By default the line is made in the sink's own buffer (`scratch`) and written with one
/// `write_all`; a writer with a buffer of its own takes the line straight into it, with no copy
/// (the watch's stdout: [`crate::present::output::stdout::Stdout`], where under a push flood the copy
/// from one buffer into the other was a fifteenth of a line's cost).
pub trait LineWriter: Write {
    /// Writes the line `make` appends to a buffer. On an error nothing of the line is written.
    fn put_line<F>(&mut self, scratch: &mut Vec<u8>, make: F) -> io::Result<()>
    where
        F: FnOnce(&mut Vec<u8>) -> io::Result<()>,
    {
        scratch.clear();
        make(scratch)?;
        self.write_all(scratch)
    }
}

impl<W: Write + ?Sized> LineWriter for &mut W {}
impl LineWriter for io::Stdout {}
impl LineWriter for io::Stderr {}
impl LineWriter for Vec<u8> {}
