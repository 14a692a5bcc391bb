//! The `--capture` sink: JSON lines in a file, rotated by size and opened again on SIGHUP.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::traits::Sink;
use crate::observe::record::WatchLine;

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
        crate::present::output::terminal::tell(
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
