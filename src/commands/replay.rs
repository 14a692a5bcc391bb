//! `maintwatch replay`: a capture read back, every raw frame parsed again with today's parser.
//!
//! Captures are the regression fixtures of this field: a frame captured during a real maintenance
//! must keep parsing the same way. `--check` turns any difference into a non-zero exit naming the
//! line. A capture whose writer was killed ends in a torn line; that is expected, reported and
//! tolerated, since every complete line before it was flushed whole.

use crate::cli::ReplayArgs;
use crate::exit;
use crate::output::human::{self, Style};
use crate::record::{reparse, DecodeLine, FrameRecord, WatchLine};
use anyhow::Context;
use std::io::Write;

/// What one file held.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReplayReport {
    pub lines: usize,
    pub frames: usize,
    /// `(line number, what differs)`
    pub differences: Vec<(usize, String)>,
    /// `(line number, why)` for lines that are not valid capture lines.
    pub bad_lines: Vec<(usize, String)>,
    pub torn_tail: Option<usize>,
}

pub fn run(args: &ReplayArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<i32> {
    let style = Style::choose(args.color, args.json);
    let mut code = exit::SUCCESS;
    for file in &args.files {
        let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        let name = file.display().to_string();
        let report = replay(&bytes, |line| {
            if args.json {
                serde_json::to_writer(&mut *out, line)?;
                writeln!(out)?;
            } else {
                for text in human::render(line, &style) {
                    writeln!(out, "{text}")?;
                }
            }
            Ok(())
        })?;
        out.flush()?;
        if let Some(n) = report.torn_tail {
            writeln!(
                err,
                "maintwatch replay: {name}:{n}: torn last line (the capture was cut mid-write), ignored"
            )?;
        }
        for (n, why) in &report.bad_lines {
            writeln!(err, "maintwatch replay: {name}:{n}: {why}")?;
            code = exit::FAILURE;
        }
        if args.check {
            for (n, what) in &report.differences {
                writeln!(err, "maintwatch replay: {name}:{n}: parse differs: {what}")?;
                code = exit::FAILURE;
            }
            writeln!(
                err,
                "maintwatch replay: {name}: {} lines, {} frames checked, {} differ",
                report.lines,
                report.frames,
                report.differences.len()
            )?;
        }
    }
    Ok(code)
}

/// Reads a capture, re-parsing every frame; `each` receives each line with the fresh parse.
pub fn replay(
    bytes: &[u8],
    mut each: impl FnMut(&WatchLine) -> anyhow::Result<()>,
) -> anyhow::Result<ReplayReport> {
    let mut report = ReplayReport::default();
    let ends_whole = bytes.last() == Some(&b'\n');
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let count = lines.len();
    for (i, line) in lines.into_iter().enumerate() {
        let n = i + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        report.lines += 1;
        let last = n == count;
        let mut parsed: WatchLine = match serde_json::from_slice::<WatchLine>(line) {
            Ok(l) => l,
            Err(e) => match serde_json::from_slice::<DecodeLine>(line) {
                Ok(DecodeLine::Frame { frame, .. }) => {
                    report.frames += 1;
                    check(n, &frame, &mut report);
                    continue;
                }
                Ok(DecodeLine::Error { .. }) => continue,
                Err(_) if last && !ends_whole => {
                    report.torn_tail = Some(n);
                    continue;
                }
                Err(_) => {
                    report
                        .bad_lines
                        .push((n, format!("not a maintwatch JSON line: {e}")));
                    continue;
                }
            },
        };
        if let WatchLine::Push { frame, .. } = &mut parsed {
            report.frames += 1;
            if let Some(fresh) = check(n, frame, &mut report) {
                frame.parsed = fresh;
            }
        }
        each(&parsed)?;
    }
    Ok(report)
}

/// Compares a recorded frame with a fresh parse of its bytes; returns the fresh parse.
fn check(
    n: usize,
    frame: &FrameRecord,
    report: &mut ReplayReport,
) -> Option<crate::notification::Classified> {
    match reparse(&frame.raw) {
        Ok(fresh) => {
            if fresh != frame.parsed {
                report.differences.push((
                    n,
                    format!(
                        "recorded {:?}, now {:?}",
                        crate::output::text::describe(&frame.parsed),
                        crate::output::text::describe(&fresh)
                    ),
                ));
            } else if crate::escape::unescape(&frame.raw).map(|b| b.len()).ok() != Some(frame.len) {
                report.differences.push((
                    n,
                    format!("recorded length {} differs from the raw bytes", frame.len),
                ));
            }
            Some(fresh)
        }
        Err(why) => {
            report
                .differences
                .push((n, format!("the raw bytes no longer parse: {why}")));
            None
        }
    }
}
