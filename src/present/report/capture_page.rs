//! `demo --report`: the page drawn from the watch's own lines, read back from its capture; a
//! temporary capture of this process's own when none was asked for.

use anyhow::Context;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::{command_line, Collected, Report};
use crate::observe::record::WatchLine;

/// A capture file of this process's own, removed when dropped.
pub struct TempCapture(pub PathBuf);

impl Drop for TempCapture {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl TempCapture {
    /// A fresh name in the temporary folder, for `command`. The capture sink refuses a file
    /// that exists: a file someone else put at that name is never written through.
    pub fn new(command: &str) -> TempCapture {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("maintwatch-{command}-{}-{nanos}.jsonl", std::process::id());
        TempCapture(std::env::temp_dir().join(name))
    }
}

/// The page of `command` from the capture this process wrote a moment ago, for one endpoint,
/// so each line is read as it was written (`replay`'s reader, for captures of unknown origin,
/// is not needed and is another command's). `source` says what was watched.
pub fn write_page(
    page: &Path,
    capture: &Path,
    command: &str,
    source: String,
) -> anyhow::Result<()> {
    let file =
        std::fs::File::open(capture).with_context(|| format!("reading {}", capture.display()))?;
    let mut lines = Collected::default();
    for text in std::io::BufReader::new(file).split(b'\n') {
        let mut text = text.with_context(|| format!("reading {}", capture.display()))?;
        // A line that does not read (a torn last line) is left out of the page.
        if let Ok(line) = WatchLine::from_json(&mut text) {
            lines.line(&line);
        }
    }
    Report {
        command: &command_line(command),
        source,
        lines: &lines,
        observations: None,
        grade: None,
        notes: Vec::new(),
    }
    .write(page)
}
