//! What `replay` shows of each file: its timeline as it goes (and to the page's sink), its
//! differences and bad lines on stderr as they come ([`ReplayLines`]); then how it ended (a torn
//! last line, bad lines past those shown, where reading stopped) and, with `--check`, its
//! verdict. The reading and the checks are `observe::replay`.

use std::io::Write;

use crate::observe::replay::{Event, ReplayReport};
use crate::present::output::human::Style;
use crate::present::output::sink::{self, Sink};
use crate::present::output::terminal;
use crate::shared::escape::sanitize;

/// Bad lines reported one by one; past them only their number.
pub const BAD_SHOWN: usize = 10;

/// Reports how a file ended, and with `check` its verdict; returns whether it passed.
pub fn verdict(
    check: bool,
    name: &str,
    report: &ReplayReport,
    err: &mut dyn Write,
) -> anyhow::Result<bool> {
    if let Some(n) = report.torn_tail {
        say(
            err,
            &format!("{name}:{n}: torn last line (the capture was cut mid-write), ignored"),
        )?;
    }
    let name = sanitize(name);
    let mut ok = report.bad_lines == 0;
    if report.bad_lines > BAD_SHOWN {
        say(
            err,
            &format!(
                "{name}: {} more bad lines not shown ({} in all)",
                report.bad_lines - BAD_SHOWN,
                report.bad_lines
            ),
        )?;
    }
    if let Some((n, why)) = &report.stopped {
        let why = sanitize(why);
        say(err, &format!("{name}:{n}: {why}; stopped reading"))?;
        ok = false;
    } else if report.valid == 0 {
        say(
            err,
            &format!(
                "{name}: no maintwatch JSON line in it ({} non-blank line(s) read)",
                report.lines
            ),
        )?;
        ok = false;
    }
    if check {
        ok &= report.differences == 0;
        say(
            err,
            &format!(
                "{name}: {}: {}, {} checked, {} differ",
                if ok { "ok" } else { "FAILED" },
                counted(report.lines, "line"),
                counted(report.frames, "frame"),
                report.differences
            ),
        )?;
    }
    Ok(ok)
}

/// One line on stderr about `replay`.
pub fn say(err: &mut dyn Write, text: &str) -> std::io::Result<()> {
    writeln!(err, "{}", terminal::about("replay", text))
}

/// `n` and the noun, plural unless `n` is 1 ("1 frame", "2 frames").
fn counted(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// What `replay` shows, from its flags.
#[derive(Debug, Clone, Copy)]
pub struct ReplayView {
    /// JSON lines, else text for people in `style`.
    pub json: bool,
    pub style: Style,
    /// `--check`: differences are shown, and fail the file.
    pub check: bool,
    /// The recorded lines are shown.
    pub timeline: bool,
}

impl ReplayView {
    /// `--check` is a test: its output is the differences and a verdict. The timeline comes with
    /// `-v`, and with `--json`, which asks for the lines themselves.
    pub fn new(check: bool, verbose: bool, json: bool, style: Style) -> ReplayView {
        ReplayView {
            json,
            style,
            check,
            timeline: !check || verbose || json,
        }
    }
}

/// One file's events on their way out: lines to stdout's sink and the page's, what differs or
/// is bad to stderr, after the timeline so far.
pub struct ReplayLines<'a> {
    view: ReplayView,
    lines: Box<dyn Sink + 'a>,
    kept: Option<&'a mut dyn Sink>,
    err: &'a mut dyn Write,
    /// The file's name, escaped as a line is: error texts quote the input.
    name: String,
    bad_shown: usize,
}

impl<'a> ReplayLines<'a> {
    /// The events of the file `name`; `kept` is the page's sink, given every line.
    pub fn new(
        view: ReplayView,
        name: &str,
        out: &'a mut dyn Write,
        err: &'a mut dyn Write,
        kept: Option<&'a mut dyn Sink>,
    ) -> ReplayLines<'a> {
        ReplayLines {
            view,
            // Every line is shown in `replay`, detail lines included: the file is what is
            // examined.
            lines: sink::lines(out, view.json, view.style, true),
            kept,
            err,
            name: sanitize(name).into_owned(),
            bad_shown: 0,
        }
    }

    pub fn event(&mut self, event: Event<'_>) -> anyhow::Result<()> {
        match (self.kept.as_mut(), &event) {
            (Some(k), Event::Line(line)) => k.line(line)?,
            (Some(k), Event::Tagged(ep, line)) => k.line_of(ep, line)?,
            _ => {}
        }
        if let Some(said) = self.said(event)? {
            self.lines.flush()?;
            say(self.err, &format!("{}:{said}", self.name))?;
        }
        Ok(())
    }

    /// Shows a line; returns what goes to stderr instead: a difference or a bad line.
    fn said(&mut self, event: Event<'_>) -> std::io::Result<Option<String>> {
        let (timeline, check) = (self.view.timeline, self.view.check);
        Ok(match event {
            Event::Line(line) if timeline => {
                self.lines.line(line)?;
                None
            }
            Event::Tagged(ep, line) if timeline => {
                self.lines.line_of(ep, line)?;
                None
            }
            Event::Differs(n, what) if check => {
                Some(format!("{n}: parse differs: {}", sanitize(&what)))
            }
            Event::Recomputed(n, what) if check => {
                Some(format!("{n}: timeline differs: {}", sanitize(&what)))
            }
            // A file that is no capture at all (a pcap) would give one line per line of it.
            Event::Bad(n, why) if self.bad_shown < BAD_SHOWN => {
                self.bad_shown += 1;
                Some(format!("{n}: {}", sanitize(&why)))
            }
            Event::Line(_) | Event::Tagged(..) => None,
            Event::Differs(..) | Event::Recomputed(..) | Event::Bad(..) => None,
        })
    }

    /// The file's last event shown.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.lines.flush()
    }
}
