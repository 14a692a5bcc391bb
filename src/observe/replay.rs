//! Reading a capture back: every raw frame parsed again with today's parser, and the timeline
//! run again on the recorded inputs ([`crate::observe::timeline::rerun`]); each difference is an
//! [`Event`] for the caller to show. `maintwatch replay` wires it (`commands::replay`).
//!
//! A capture whose writer was killed ends in a torn line; that is expected, reported and
//! tolerated, since every complete line before it was flushed whole. A capture can be as large
//! as the watch that wrote it was long, so it is streamed: one line in memory at a time, each at
//! most [`MAX_LINE`] bytes, and the report keeps counts, not lists.

use std::io::BufRead;
use std::path::Path;

use anyhow::Context;

use serde::Deserialize;

use crate::observe::record::line;
use crate::observe::record::{reparse_bytes, DecodeLine, FrameRecord, WatchLine, SCHEMA_VERSION};
use crate::observe::timeline::rerun::Rerun;

/// The longest line `replay` reads. The largest frame the watch keeps whole is far below this;
/// anything longer is not a capture line, and reading it whole would only cost memory.
pub const MAX_LINE: usize = 64 << 20;

/// What one file held. Counts only: a capture of any length replays in constant memory.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// Non-blank lines read.
    pub lines: usize,
    /// Lines that were maintwatch JSON lines of a schema version this build reads.
    pub valid: usize,
    pub frames: usize,
    pub differences: usize,
    pub bad_lines: usize,
    pub torn_tail: Option<usize>,
    /// `(line number, why)`: reading stopped there (a line too long, a newer schema version).
    pub stopped: Option<(usize, String)>,
}

/// What `replay` tells its caller as it goes, in file order.
#[derive(Debug)]
pub enum Event<'a> {
    /// A watch line, with its frame's fresh parse in place of the recorded one.
    Line(&'a WatchLine),
    /// A line of one endpoint of a fleet capture: its label (`ep`) and the line.
    Tagged(&'a str, &'a WatchLine),
    /// `(line number, what differs)`: a frame's fresh parse.
    Differs(usize, String),
    /// `(line number, what differs)`: what the timeline computes again from the capture's
    /// inputs (a label, an offset, a verdict, the summary).
    Recomputed(usize, String),
    /// `(line number, why)` for a line that is not a valid capture line.
    Bad(usize, String),
}

/// The two fields every line carries, read before the whole line so that a line of a newer
/// schema is refused as such rather than as a line with unknown fields.
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "type")]
    _kind: String,
    v: u64,
}

/// The most endpoints a fleet capture's `--check` keeps a timeline for; past it the lines of
/// further labels are not checked (a label per line must not grow memory without end).
const MAX_ENDPOINTS: usize = 100_000;

/// The timelines run again, one per endpoint of a fleet capture (the key `None` for a single
/// endpoint's lines).
#[derive(Default)]
struct Reruns(std::collections::HashMap<Option<String>, Rerun>);

impl Reruns {
    fn of(&mut self, ep: Option<&str>) -> Option<&mut Rerun> {
        let key = ep.map(str::to_string);
        if !self.0.contains_key(&key) && self.0.len() >= MAX_ENDPOINTS {
            return None;
        }
        Some(self.0.entry(key).or_default())
    }
}

/// One line of input, without its newline.
enum Line {
    /// Ended by a newline.
    Whole,
    /// The input ended first.
    Last,
    /// Longer than the limit; nothing past the limit was read.
    TooLong,
}

/// Reads the next line into `buf`; `None` at the end of the input.
fn next_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<Option<Line>> {
    buf.clear();
    let limit = u64::try_from(limit).unwrap_or(u64::MAX);
    let n = std::io::Read::take(&mut *reader, limit + 1).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok(Some(Line::Whole));
    }
    if buf.len() as u64 > limit {
        return Ok(Some(Line::TooLong));
    }
    Ok(Some(Line::Last))
}

/// A capture to read as it streams: the file, or standard input for `-`.
pub fn open(file: &Path) -> anyhow::Result<Box<dyn BufRead>> {
    if file.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    let name = file.display();
    let f = std::fs::File::open(file).with_context(|| format!("reading {name}"))?;
    Ok(Box::new(std::io::BufReader::with_capacity(1 << 16, f)))
}

/// A file's whole text (`replay --grade` reads the judge's lines, a few per run), or standard
/// input's for `-`.
pub fn read_text(file: &Path) -> anyhow::Result<String> {
    let name = file.display();
    if file.as_os_str() == "-" {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut t)
            .with_context(|| format!("reading {name}"))?;
        return Ok(t);
    }
    std::fs::read_to_string(file).with_context(|| format!("reading {name}"))
}

/// Reads a capture line by line, re-parsing every frame; `each` receives the events in order.
/// An error from `each` or from reading ends the replay with that error.
pub fn replay(
    reader: impl BufRead,
    limit: usize,
    each: impl FnMut(Event<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<ReplayReport> {
    replay_with(reader, limit, true, each)
}

/// [`replay`], with the timeline run again only when `rerun` (it is what `--check` compares;
/// without `--check` it would be work whose result nobody reads).
pub fn replay_with(
    mut reader: impl BufRead,
    limit: usize,
    rerun: bool,
    mut each: impl FnMut(Event<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<ReplayReport> {
    let mut report = ReplayReport::default();
    let mut rerun = rerun.then(Reruns::default);
    let mut buf = Vec::new();
    let mut n = 0;
    while let Some(kind) = next_line(&mut reader, &mut buf, limit)? {
        n += 1;
        if let Line::TooLong = kind {
            report.stopped = Some((n, format!("line longer than {}", size(limit))));
            break;
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        report.lines += 1;
        let last = matches!(kind, Line::Last);
        if let Some(stop) = one_line(n, &mut buf, last, &mut report, &mut rerun, &mut each)? {
            report.stopped = Some((n, stop));
            break;
        }
    }
    Ok(report)
}

/// Handles one non-blank line; returns why reading must stop, if it must.
fn one_line(
    n: usize,
    line: &mut [u8],
    last: bool,
    report: &mut ReplayReport,
    rerun: &mut Option<Reruns>,
    each: &mut impl FnMut(Event<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<Option<String>> {
    // A line is read once; only one that does not read as a watch line is looked at again: as a
    // fleet's line (its label beside the payload), for its schema version (a newer one is
    // refused as such, not as a line with unknown fields), as a torn last line, or as a
    // `decode --json` line.
    let mut ep = None;
    let read = WatchLine::from_json(line).or_else(|e| match fleet_line(line) {
        Some(tagged) => {
            ep = Some(tagged.ep);
            Ok(tagged.line)
        }
        None => Err(e),
    });
    let mut parsed = match read {
        Ok(l) if l.v() > SCHEMA_VERSION => return Ok(Some(newer(u64::from(l.v())))),
        Ok(l) => l,
        Err(e) => return not_a_watch_line(n, line, last, e, report, each),
    };
    report.valid += 1;
    // The timeline runs again on the recorded inputs, the recorded parse included: a parser
    // change is a parse difference below, not a cascade of timeline differences.
    let again = rerun.as_mut().and_then(|r| r.of(ep.as_deref()));
    for what in again.map(|r| r.line(&parsed)).unwrap_or_default() {
        report.differences += 1;
        each(Event::Recomputed(n, what))?;
    }
    if let WatchLine::Push(line::Push { frame, .. }) = &mut parsed {
        report.frames += 1;
        if let Some(fresh) = check(n, frame, report, each)? {
            frame.parsed = fresh;
        }
    }
    match &ep {
        Some(ep) => each(Event::Tagged(ep, &parsed))?,
        None => each(Event::Line(&parsed))?,
    }
    Ok(None)
}

/// A fleet's line (`"ep"` right after `"type"`), read with its label; only such a line pays for
/// the second read.
fn fleet_line(line: &[u8]) -> Option<crate::observe::record::TaggedLine> {
    let rest = line.strip_prefix(br#"{"type":""#)?;
    let end = rest.iter().position(|&b| b == b'"')?;
    if !rest[end..].starts_with(br#"","ep":"#) {
        return None;
    }
    serde_json::from_slice(line).ok()
}

/// Why reading stops at a line of schema version `v`.
fn newer(v: u64) -> String {
    format!(
        "schema version {v} is newer than this maintwatch reads ({SCHEMA_VERSION}); \
         replay it with a newer maintwatch"
    )
}

/// A line that did not read as a watch line: a newer schema (returned: reading stops), a torn
/// last line, a `decode --json` line, or a bad line.
fn not_a_watch_line(
    n: usize,
    line: &[u8],
    last: bool,
    e: serde_json::Error,
    report: &mut ReplayReport,
    each: &mut impl FnMut(Event<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<Option<String>> {
    match serde_json::from_slice::<Head>(line) {
        Ok(head) if head.v > u64::from(SCHEMA_VERSION) => return Ok(Some(newer(head.v))),
        // Only a line that starts the way ours do can be one cut short by a kill.
        Err(_) if last && line.starts_with(br#"{"type":"#) => {
            report.torn_tail = Some(n);
            return Ok(None);
        }
        _ => {}
    }
    match serde_json::from_slice::<DecodeLine>(line) {
        Ok(DecodeLine::Frame { frame, .. }) => {
            report.valid += 1;
            report.frames += 1;
            check(n, &frame, report, each)?;
        }
        Ok(DecodeLine::AzureEvent {
            frame,
            payload,
            event,
            ..
        }) => {
            report.valid += 1;
            if let Some(frame) = frame {
                report.frames += 1;
                check(n, &frame, report, each)?;
            }
            check_azure(n, &payload, &event, report, each)?;
        }
        Ok(DecodeLine::Error { .. }) => report.valid += 1,
        Err(_) => {
            report.bad_lines += 1;
            each(Event::Bad(n, format!("not a maintwatch JSON line: {e}")))?;
        }
    }
    Ok(None)
}

/// Compares a recorded frame with a fresh parse of its bytes; returns the fresh parse.
fn check(
    n: usize,
    frame: &FrameRecord,
    report: &mut ReplayReport,
    each: &mut impl FnMut(Event<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<Option<crate::protocol::notification::Classified>> {
    let (fresh, difference) = match frame.raw.bytes().and_then(|b| reparse_bytes(&b)) {
        Ok((fresh, len)) => {
            let difference = if fresh != frame.parsed {
                Some(format!(
                    "recorded {:?}, now {:?}",
                    frame.parsed.describe(),
                    fresh.describe()
                ))
            } else if len != frame.len {
                Some(format!(
                    "recorded length {} differs from the raw bytes",
                    frame.len
                ))
            } else {
                None
            };
            (Some(fresh), difference)
        }
        Err(why) => (None, Some(format!("the raw bytes no longer parse: {why}"))),
    };
    if let Some(what) = difference {
        report.differences += 1;
        each(Event::Differs(n, what))?;
    }
    Ok(fresh)
}

/// Compares a recorded `AzureRedisEvents` parse with a fresh parse of its payload, as
/// [`check`] does for a frame.
fn check_azure(
    n: usize,
    payload: &crate::observe::record::Raw,
    recorded: &crate::protocol::azure::AzureEvent,
    report: &mut ReplayReport,
    each: &mut impl FnMut(Event<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let difference = match payload.bytes() {
        Ok(bytes) => {
            let fresh = crate::protocol::azure::parse(&bytes);
            (fresh != *recorded).then(|| {
                format!(
                    "recorded {:?}, now {:?}",
                    recorded.describe(),
                    fresh.describe()
                )
            })
        }
        Err(why) => Some(format!("the payload's bytes do not read back: {why}")),
    };
    if let Some(what) = difference {
        report.differences += 1;
        each(Event::Differs(n, what))?;
    }
    Ok(())
}

/// `64 MiB`, `512 KiB`, `100 bytes`.
fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}
