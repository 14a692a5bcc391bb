//! Where timeline lines go: one small trait, one implementation per destination (human lines,
//! JSON lines, the capture file, the countdown), and [`Sinks`] handing each line to all of them.
//!
//! The engine and `replay` know only [`Sinks`]; which destinations exist is decided where the
//! command is wired. A new destination (metrics, hooks) is one more implementation, not one more
//! `if` in the engine.

use super::countdown::Countdown;
use super::human::{self, Style};
use crate::record::WatchLine;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// One destination of timeline lines.
pub trait Sink {
    /// A line of the timeline.
    fn line(&mut self, line: &WatchLine) -> io::Result<()>;

    /// Text that is not part of the timeline (the demo's simulator narration): shown to people,
    /// never recorded as a line.
    fn note(&mut self, _text: &str) -> io::Result<()> {
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

/// JSON lines of the documented schema, one per timeline line.
pub struct JsonLines<W: Write> {
    out: W,
}

impl<W: Write> JsonLines<W> {
    pub fn new(out: W) -> JsonLines<W> {
        JsonLines { out }
    }
}

impl<W: Write> Sink for JsonLines<W> {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, line)?;
        self.out.write_all(b"\n")
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
}

impl<W: Write> HumanLines<W> {
    pub fn new(out: W, style: Style, verbose: bool) -> HumanLines<W> {
        HumanLines {
            out,
            style,
            verbose,
        }
    }
}

impl<W: Write> Sink for HumanLines<W> {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        if !self.verbose && human::is_detail(line) {
            return Ok(());
        }
        for text in human::render(line, &self.style) {
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

/// The one place that picks between JSON and human lines on an output.
pub fn lines<'a, W: Write + 'a>(
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
pub struct CaptureFile {
    file: Option<io::BufWriter<std::fs::File>>,
    path: PathBuf,
    text: Vec<u8>,
}

impl CaptureFile {
    /// Opens `path` as `mode` allows; the error names the flag and the file.
    pub fn open(path: &Path, mode: CaptureMode) -> anyhow::Result<CaptureFile> {
        let file = open_capture(path, mode)
            .map_err(|e| anyhow::anyhow!("--capture {}: {e}", path.display()))?;
        Ok(CaptureFile {
            file: Some(io::BufWriter::new(file)),
            path: path.to_path_buf(),
            text: Vec::new(),
        })
    }
}

impl Sink for CaptureFile {
    fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        self.text.clear();
        serde_json::to_writer(&mut self.text, line)?;
        self.text.push(b'\n');
        if let Err(e) = file.write_all(&self.text).and_then(|()| file.flush()) {
            eprintln!(
                "maintwatch: --capture {}: {e}; the capture stops here, the watch goes on",
                self.path.display()
            );
            self.file = None;
        }
        Ok(())
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
        let sinks = &mut self.sinks;
        match &mut self.countdown {
            Some(c) => {
                // Under a countdown the line must be on the terminal before the bar is redrawn.
                c.suspend(|| -> io::Result<()> {
                    for s in sinks.iter_mut() {
                        s.line(line)?;
                        s.flush()?;
                    }
                    Ok(())
                })?;
                c.line(line)
            }
            None => {
                for s in sinks.iter_mut() {
                    s.line(line)?;
                }
                Ok(())
            }
        }
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

    /// Reads offsets at a speed learnt after the watch started (the simulator announced it).
    pub fn set_speed(&mut self, speed: f64) {
        if let Some(c) = &mut self.countdown {
            c.set_speed(speed);
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
mod tests {
    use super::*;
    use crate::record::FrameRecord;
    use crate::resp::{Scan, Scanner};
    use crate::timeline::{Observation, Timeline, What};
    use std::time::{Instant, SystemTime};

    const MIGRATING: &[u8] = b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n";
    const MIGRATED: &[u8] = b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n";

    /// The lines the timeline makes of the push `raw`.
    fn lines_of(tl: &mut Timeline, raw: &[u8]) -> Vec<WatchLine> {
        let Ok(Scan::Frame(frame, _)) = Scanner::default().scan(raw) else {
            panic!("a whole frame");
        };
        let record = FrameRecord::new(&frame, raw, 0);
        let what = What::Frame {
            record,
            early: false,
        };
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
        sinks.set_countdown(Some(Countdown::hidden(1.0)));
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
