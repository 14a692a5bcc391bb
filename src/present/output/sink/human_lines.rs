//! The sink for people: each timeline line rendered, a fleet's lines labelled with their
//! endpoint.

use std::io::{self, Write};

use super::traits::{Record, Sink};
use crate::observe::record::WatchLine;
use crate::present::output::human::{self, Style};

/// Lines for people; detail lines (each successful PING) only when `verbose`.
pub struct HumanLines<W: Write> {
    out: W,
    style: Style,
    verbose: bool,
    /// One line per state, not per retry, of a connection that cannot be made (the JSON lines
    /// keep every attempt).
    retries: human::retries::Retries,
}

impl<W: Write> HumanLines<W> {
    pub fn new(out: W, style: Style, verbose: bool) -> HumanLines<W> {
        HumanLines {
            out,
            style,
            verbose,
            retries: Default::default(),
        }
    }
}

impl<W: Write> HumanLines<W> {
    fn shown(&mut self, ep: Option<&str>, line: &WatchLine) -> human::retries::Shown {
        self.retries.admit(ep, line)
    }
}

impl<W: Write> Sink for HumanLines<W> {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        if !self.verbose && human::is_detail(line) {
            return Ok(());
        }
        let shown = self.shown(None, line);
        for text in human::render_shown(line, &shown, &self.style) {
            self.out.write_all(text.as_bytes())?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Every text line starts with the label, so `grep label` keeps an endpoint's entries
    /// whole; the summary's tables get one heading instead.
    fn line_of(&mut self, ep: &str, line: &WatchLine) -> io::Result<()> {
        if !self.verbose && human::is_detail(line) {
            return Ok(());
        }
        let summary = matches!(line, WatchLine::Summary(_));
        if summary {
            writeln!(self.out, "── {ep} ──")?;
        }
        // The label is inside the width: each line is wrapped once, to what is left beside it.
        let style = match summary {
            true => self.style,
            false => Style {
                width: labelled_width(self.style.width, ep),
                ..self.style
            },
        };
        let shown = self.shown(Some(ep), line);
        for text in human::render_shown(line, &shown, &style) {
            if !summary {
                write!(self.out, "{ep} ")?;
            }
            self.out.write_all(text.as_bytes())?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn record(&mut self, line: &dyn Record) -> io::Result<()> {
        for text in line.render(&self.style) {
            self.out.write_all(text.as_bytes())?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn note(&mut self, text: &str) -> io::Result<()> {
        writeln!(self.out, "{text}")
    }

    fn interrupted(&mut self, fresh_line: bool) -> io::Result<()> {
        use std::io::IsTerminal;
        // The `^C` the terminal echoed sits at the start of the line the summary would begin on.
        if !fresh_line && std::io::stdout().is_terminal() {
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Fewer columns than this beside a label (or half the terminal, if that is less) and lines are
/// left longer than the terminal instead: wrapping a sentence into a narrow strip helps nobody.
const MIN_LABELLED_WIDTH: usize = 40;

/// The columns left for a fleet's line beside its label and the space after it.
fn labelled_width(width: usize, ep: &str) -> usize {
    width
        .saturating_sub(ep.chars().count() + 1)
        .max(MIN_LABELLED_WIDTH.min(width / 2))
}
