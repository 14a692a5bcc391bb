//! Where timeline lines go: one small trait, one implementation per destination (human lines,
//! JSON lines, the capture file, the countdown), and [`Sinks`] handing each line to all of them.
//!
//! The engine and `replay` know only [`Sinks`]; which destinations exist is decided where the
//! command is wired. A new destination (metrics, hooks) is one more implementation, not one more
//! `if` in the engine.

use super::countdown::Countdown;
use super::human::{self, Style};
use crate::observe::record::write as json;
use crate::observe::record::WatchLine;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A line of a command's own schema, beside the timeline's (`decode`'s, `pcap`'s): what it
/// is as JSON and as text for people. The sink that [`lines`] picks decides which is written, so
/// `--json` means the same in every command.
pub trait Record {
    /// The line as one JSON object, without the newline, made by [`json`].
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
    /// these to its sinks, and [`StderrNotices`] is the one that shows them).
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

/// JSON lines of the documented schema, one per timeline line. Each line is made once
/// ([`json::write_line`]) and handed to `out` whole ([`LineWriter::put_line`]).
pub struct JsonLines<W: LineWriter> {
    out: W,
    text: Vec<u8>,
}

impl<W: LineWriter> JsonLines<W> {
    pub fn new(out: W) -> JsonLines<W> {
        JsonLines {
            out,
            text: Vec::with_capacity(512),
        }
    }
}

impl<W: LineWriter> Sink for JsonLines<W> {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        self.out
            .put_line(&mut self.text, |text| json::write_line(text, line))
    }

    fn line_of(&mut self, ep: &str, line: &WatchLine) -> io::Result<()> {
        self.out.put_line(&mut self.text, |text| {
            crate::observe::record::write::write_json(text, Some(ep), line)?;
            text.push(b'\n');
            Ok(())
        })
    }

    fn record(&mut self, line: &dyn Record) -> io::Result<()> {
        self.out.put_line(&mut self.text, |text| {
            line.write_json(text)?;
            text.push(b'\n');
            Ok(())
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

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

/// `watch --clients`: after each maintenance notification, one more line saying what each known
/// client's parser does with that frame (`crate::grading::clients`). It wraps the human sink and writes
/// through its `note`, so it adds nothing to JSON lines or captures.
pub struct ClientLines<'a> {
    inner: Box<dyn Sink + 'a>,
    /// The endpoint type the clients asked for; `None`: each client's own auto.
    asked: Option<crate::network::conn::EndpointType>,
}

impl<'a> ClientLines<'a> {
    pub fn new(
        inner: Box<dyn Sink + 'a>,
        asked: Option<crate::network::conn::EndpointType>,
    ) -> Self {
        ClientLines { inner, asked }
    }

    /// The line for a push line that carries a maintenance notification.
    fn about(&self, line: &WatchLine) -> Option<String> {
        let WatchLine::Push(push) = line else {
            return None;
        };
        if !matches!(
            push.frame.parsed,
            crate::protocol::notification::Classified::Maintenance(_)
        ) {
            return None;
        }
        let bytes = match &push.frame.raw {
            crate::observe::record::Raw::Bytes(b) => std::borrow::Cow::Borrowed(&b[..]),
            crate::observe::record::Raw::Escaped(t) => {
                std::borrow::Cow::Owned(crate::shared::escape::unescape(t).ok()?)
            }
        };
        match crate::protocol::resp::Scanner::default().scan(&bytes) {
            Ok(crate::protocol::resp::Scan::Frame(frame, _)) => {
                Some(crate::grading::clients::summary_line(&frame, self.asked))
            }
            _ => None,
        }
    }
}

impl Sink for ClientLines<'_> {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        self.inner.line(line)?;
        match self.about(line) {
            Some(text) => self.inner.note(&format!("      {text}")),
            None => Ok(()),
        }
    }

    fn line_of(&mut self, ep: &str, line: &WatchLine) -> io::Result<()> {
        self.inner.line_of(ep, line)?;
        match self.about(line) {
            Some(text) => self.inner.note(&format!("{ep}       {text}")),
            None => Ok(()),
        }
    }

    fn reopen(&mut self) -> io::Result<bool> {
        self.inner.reopen()
    }

    fn record(&mut self, line: &dyn Record) -> io::Result<()> {
        self.inner.record(line)
    }

    fn note(&mut self, text: &str) -> io::Result<()> {
        self.inner.note(text)
    }

    fn interrupted(&mut self, fresh_line: bool) -> io::Result<()> {
        self.inner.interrupted(fresh_line)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    fn failed(&self) -> bool {
        self.inner.failed()
    }
}

/// The one place that picks between JSON and human lines on an output: for the timeline's lines
/// and for a command's own ([`Sink::record`]).
pub fn lines<'a, W: LineWriter + 'a>(
    out: W,
    json: bool,
    style: Style,
    verbose: bool,
) -> Box<dyn Sink + 'a> {
    if json {
        Box::new(JsonLines::new(out))
    } else {
        Box::new(HumanLines::new(out, style, verbose))
    }
}

/// The same switch for a command whose output is one value rather than timeline lines
/// (`decide`): `value` as one JSON line, or `text` for people.
pub fn one(
    out: &mut dyn Write,
    json: bool,
    value: &impl serde::Serialize,
    text: &impl std::fmt::Display,
) -> io::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, value)?;
        out.write_all(b"\n")
    } else {
        writeln!(out, "{text}")
    }
}

/// What `--capture` does with a file that already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureMode {
    /// Refuse it (the default: a typo must not overwrite last week's capture).
    New,
    /// `--append`.
    Append,
    /// `--force`: truncate it.
    Truncate,
}

/// The capture file: JSON lines, one whole line per write and a flush after it, so a killed watch
/// leaves at most one torn line at its end. A write that fails (a full disk) is reported, the
/// capture closed, and the watch goes on: what is on stdout, and the summary, still count.
///
/// For a watch that runs for days: SIGHUP opens the file again by its name (after logrotate
/// moved it away, new lines go to a new file), and with [`Rotation`] the file is rotated before
/// the line that would take it past its size. Both happen between two whole lines.
pub struct CaptureFile {
    file: Option<io::BufWriter<std::fs::File>>,
    path: PathBuf,
    text: Vec<u8>,
    rotation: Option<Rotation>,
    /// Bytes in the current file.
    size: u64,
}

/// `--capture-max-size` and `--capture-keep`: past `max_size` bytes the capture becomes
/// `FILE.1` (`FILE.1` becomes `FILE.2`, and so on), keeping `keep` old files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    pub max_size: u64,
    pub keep: u32,
}

impl CaptureFile {
    /// Opens `path` as `mode` allows; the error names the flag and the file.
    pub fn open(path: &Path, mode: CaptureMode) -> anyhow::Result<CaptureFile> {
        let file = open_capture(path, mode)
            .map_err(|e| anyhow::anyhow!("--capture {}: {e}", path.display()))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(CaptureFile {
            file: Some(io::BufWriter::new(file)),
            path: path.to_path_buf(),
            text: Vec::new(),
            rotation: None,
            size,
        })
    }

    /// Rotates the file as `rotation` says (see [`Rotation`]).
    pub fn rotating(mut self, rotation: Option<Rotation>) -> CaptureFile {
        self.rotation = rotation;
        self
    }

    /// Writes one whole line, rotating first when it would take the file past its size.
    fn write_line(&mut self, ep: Option<&str>, line: &WatchLine) -> io::Result<()> {
        if self.file.is_none() {
            return Ok(());
        }
        self.text.clear();
        crate::observe::record::write::write_json(&mut self.text, ep, line)?;
        self.text.push(b'\n');
        let len = self.text.len() as u64;
        if let Some(r) = self.rotation {
            // A line longer than the limit still goes whole into a file of its own.
            if self.size > 0 && self.size + len > r.max_size {
                if let Err(e) = self.rotate(r.keep) {
                    self.stop(&e, "rotating it");
                    return Ok(());
                }
            }
        }
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        match file.write_all(&self.text).and_then(|()| file.flush()) {
            Ok(()) => self.size += len,
            Err(e) => self.stop(&e, "writing"),
        }
        Ok(())
    }

    /// FILE.(keep-1) → FILE.keep … FILE → FILE.1, then a new FILE (0600, never a symlink).
    fn rotate(&mut self, keep: u32) -> io::Result<()> {
        if let Some(mut file) = self.file.take() {
            file.flush()?;
        }
        let numbered = |n: u32| {
            let mut name = self.path.clone().into_os_string();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        };
        for n in (1..keep).rev() {
            match std::fs::rename(numbered(n), numbered(n + 1)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        std::fs::rename(&self.path, numbered(1))?;
        let file = open_capture(&self.path, CaptureMode::New)?;
        self.file = Some(io::BufWriter::new(file));
        self.size = 0;
        Ok(())
    }

    /// Reports a failure and closes the capture; the watch goes on.
    fn stop(&mut self, e: &io::Error, doing: &str) {
        super::terminal::tell(
            "",
            &format!(
                "--capture {}: {doing}: {e}; the capture stops here, the watch goes on",
                self.path.display()
            ),
        );
        self.file = None;
    }
}

impl Sink for CaptureFile {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        self.write_line(None, line)
    }

    fn line_of(&mut self, ep: &str, line: &WatchLine) -> io::Result<()> {
        self.write_line(Some(ep), line)
    }

    /// logrotate's convention: the name is opened anew, added to if it exists (copytruncate),
    /// created 0600 if it was moved away; a capture that had failed is tried again.
    fn reopen(&mut self) -> io::Result<bool> {
        if let Some(mut file) = self.file.take() {
            let _ = file.flush();
        }
        match open_capture(&self.path, CaptureMode::Append) {
            Ok(file) => {
                self.size = file.metadata().map(|m| m.len()).unwrap_or(0);
                self.file = Some(io::BufWriter::new(file));
            }
            Err(e) => self.stop(&e, "reopening it after SIGHUP"),
        }
        Ok(true)
    }

    fn failed(&self) -> bool {
        self.file.is_none()
    }
}

/// Opens the capture file: created 0600, never through a symlink, and an existing file only as
/// `mode` allows.
fn open_capture(path: &Path, mode: CaptureMode) -> io::Result<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let existing = match std::fs::symlink_metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let Some(before) = existing else {
        // O_CREAT|O_EXCL: fails on anything that appeared meanwhile, a symlink included.
        return std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
    };
    if before.file_type().is_symlink() {
        return Err(io::Error::other("is a symbolic link; give the file itself"));
    }
    // Said before --append or --force could be suggested: neither makes a directory writable.
    if before.is_dir() {
        return Err(io::Error::other(
            "is a directory; give a file name, e.g. DIR/capture.jsonl",
        ));
    }
    if mode == CaptureMode::New {
        return Err(io::Error::other(
            "already exists; --append adds to it, --force empties it",
        ));
    }
    // Opened without truncating, then checked to be the file that was looked at: a symlink
    // swapped in between is refused before anything is written or emptied.
    let file = std::fs::OpenOptions::new()
        .append(mode == CaptureMode::Append)
        .write(true)
        .open(path)?;
    let opened = file.metadata()?;
    if (opened.dev(), opened.ino()) != (before.dev(), before.ino()) {
        return Err(io::Error::other("changed while it was being opened"));
    }
    if mode == CaptureMode::Truncate && opened.is_file() {
        file.set_len(0)?;
    }
    Ok(file)
}

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

/// Every sink of a run. The countdown, when there is one, owns the terminal: the other sinks
/// write with its bars cleared and flush before they are drawn again, then it sees the line.
#[derive(Default)]
pub struct Sinks<'a> {
    sinks: Vec<Box<dyn Sink + 'a>>,
    countdown: Option<Countdown>,
}

impl<'a> Sinks<'a> {
    pub fn new() -> Sinks<'a> {
        Sinks::default()
    }

    pub fn add(&mut self, sink: Box<dyn Sink + 'a>) {
        self.sinks.push(sink);
    }

    /// Shows open windows counting down (nothing happens if `countdown` is `None`).
    pub fn set_countdown(&mut self, countdown: Option<Countdown>) {
        self.countdown = countdown;
    }

    /// Hands `line` to every sink.
    pub fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        self.line_of(None, line)
    }

    /// Hands `line` to every sink, with its endpoint's label in a fleet.
    pub fn line_of(&mut self, ep: Option<&str>, line: &WatchLine) -> io::Result<()> {
        let sinks = &mut self.sinks;
        let one = |s: &mut Box<dyn Sink + 'a>| match ep {
            Some(ep) => s.line_of(ep, line),
            None => s.line(line),
        };
        match &mut self.countdown {
            Some(c) => {
                // Under a countdown the line must be on the terminal before the bar is redrawn.
                c.suspend(|| -> io::Result<()> {
                    for s in sinks.iter_mut() {
                        one(s)?;
                        s.flush()?;
                    }
                    Ok(())
                })?;
                c.line(line)
            }
            None => {
                for s in sinks.iter_mut() {
                    one(s)?;
                }
                Ok(())
            }
        }
    }

    /// SIGHUP: every sink that writes a named file opens it again. Whether one did (with none,
    /// SIGHUP stops the watch as it always did).
    pub fn reopen(&mut self) -> io::Result<bool> {
        let mut any = false;
        for s in &mut self.sinks {
            any |= s.reopen()?;
        }
        Ok(any)
    }

    /// Text beside the timeline, shown at once.
    pub fn note(&mut self, text: &str) -> io::Result<()> {
        let sinks = &mut self.sinks;
        let mut write = || -> io::Result<()> {
            for s in sinks.iter_mut() {
                s.note(text)?;
                s.flush()?;
            }
            Ok(())
        };
        match &self.countdown {
            Some(c) => c.suspend(write),
            None => write(),
        }
    }

    /// A warning or note for stderr, with the countdown (on stdout's terminal) out of its way.
    pub fn notice(&mut self, text: &str) -> io::Result<()> {
        let sinks = &mut self.sinks;
        let mut write = || -> io::Result<()> {
            for s in sinks.iter_mut() {
                s.notice(text)?;
            }
            Ok(())
        };
        match &self.countdown {
            Some(c) => c.suspend(write),
            None => write(),
        }
    }

    /// A countdown is shown with a window on it: only then is there anything to redraw (an idle
    /// watch of thousands of connections should not wake ten times a second for nothing).
    pub fn animating(&self) -> bool {
        self.countdown.as_ref().is_some_and(Countdown::is_active)
    }

    /// Refreshes the countdown, if one is shown.
    pub fn tick(&mut self) {
        if let Some(c) = &mut self.countdown {
            c.tick();
        }
    }

    /// Before the summary of an interrupted watch: the countdown is cleared, and a human summary
    /// starts on a line of its own rather than after the `^C` the terminal echoed.
    pub fn interrupted(&mut self) -> io::Result<()> {
        // A bar being cleared takes the echoed `^C` with it, leaving a fresh line.
        let mut fresh_line = false;
        if let Some(c) = &mut self.countdown {
            fresh_line = c.is_active();
            c.interrupted(fresh_line)?;
        }
        for s in &mut self.sinks {
            s.interrupted(fresh_line)?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        for s in &mut self.sinks {
            s.flush()?;
        }
        Ok(())
    }

    /// Whether some sink stopped working on the way.
    pub fn failed(&self) -> bool {
        self.sinks.iter().any(|s| s.failed())
    }
}

#[cfg(test)]
mod one_tests {
    #[test]
    fn one_value_is_a_json_line_or_its_text() {
        let value = serde_json::json!({"type": "decision", "v": 1});
        let mut json = Vec::new();
        super::one(&mut json, true, &value, &"moves to x").unwrap();
        assert_eq!(json, b"{\"type\":\"decision\",\"v\":1}\n");
        let mut human = Vec::new();
        super::one(&mut human, false, &value, &"moves to x").unwrap();
        assert_eq!(human, b"moves to x\n");
    }

    /// A line of another schema, as `decode` and `pcap` hand them to their sink.
    struct Other;

    impl super::Record for Other {
        fn write_json(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
            crate::observe::record::write::write_value(
                out,
                &serde_json::json!({"type": "other", "v": 1}),
            )
        }

        fn render(&self, _style: &super::Style) -> Vec<String> {
            vec!["first".into(), "    second".into()]
        }
    }

    #[test]
    fn a_record_is_a_json_line_or_its_text_lines_by_the_same_switch() {
        let style = super::Style::default();
        let mut json = Vec::new();
        super::lines(&mut json, true, style, true)
            .record(&Other)
            .unwrap();
        assert_eq!(json, b"{\"type\":\"other\",\"v\":1}\n");
        let mut human = Vec::new();
        let inner = super::lines(&mut human, false, style, true);
        // `--clients` wraps the human sink: a record still reaches it.
        let mut clients = super::ClientLines::new(inner, None);
        super::Sink::record(&mut clients, &Other).unwrap();
        drop(clients);
        assert_eq!(human, b"first\n    second\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::record::FrameRecord;
    use crate::observe::timeline::{event, Observation, Timeline, What};
    use crate::protocol::resp::{Scan, Scanner};
    use std::time::{Instant, SystemTime};

    const MIGRATING: &[u8] = b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n";
    const MIGRATED: &[u8] = b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n";

    /// The lines the timeline makes of the push `raw`.
    fn lines_of(tl: &mut Timeline, raw: &[u8]) -> Vec<WatchLine> {
        let Ok(Scan::Frame(frame, _)) = Scanner::default().scan(raw) else {
            panic!("a whole frame");
        };
        let record = FrameRecord::new(&frame, raw, 0);
        let what = What::Frame(event::Frame {
            record,
            early: false,
        });
        let obs = Observation {
            at: Instant::now(),
            wall: SystemTime::now(),
            conn: 1,
            what,
        };
        tl.observe(obs).lines
    }

    #[test]
    fn the_watch_redraws_only_while_a_countdown_shows_a_window() {
        // The watch loop's redraw tick runs only while this holds: an idle watch (of thousands
        // of connections) must not wake ten times a second for nothing.
        let mut sinks = Sinks::new();
        assert!(!sinks.animating(), "no countdown: nothing to redraw");
        sinks.set_countdown(Some(Countdown::hidden(Default::default())));
        assert!(!sinks.animating(), "no window open");
        let mut tl = Timeline::new(Instant::now());
        for line in lines_of(&mut tl, MIGRATING) {
            sinks.line(&line).unwrap();
        }
        assert!(sinks.animating(), "a window on the countdown");
        for line in lines_of(&mut tl, MIGRATED) {
            sinks.line(&line).unwrap();
        }
        assert!(!sinks.animating(), "the window closed");
    }
}

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

/// The sink that shows the library's notices on stderr, each prefixed and wrapped to the
/// terminal; it takes no timeline line.
pub struct StderrNotices;

impl Sink for StderrNotices {
    fn line(&mut self, _line: &WatchLine) -> io::Result<()> {
        Ok(())
    }

    fn notice(&mut self, text: &str) -> io::Result<()> {
        super::terminal::tell("", text);
        Ok(())
    }
}
