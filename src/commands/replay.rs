//! `maintwatch replay`: a capture read back and checked ([`crate::observe::replay`]), its
//! timeline shown as it goes, its differences and bad lines on stderr; or, with `--grade`, its
//! `grade_input` lines judged again.
//!
//! Captures are the regression fixtures of this field: a frame captured during a real maintenance
//! must keep parsing the same way, and the labels, offsets, verdicts and summary computed from it
//! must stay what they were. `--check` turns any difference into a non-zero exit naming the line.

use crate::cli::replay::ReplaySettings;
use crate::exit;
use crate::grading::judge::{Grade, Observations};
use crate::observe::replay::{replay_with, Event, ReplayReport, MAX_LINE};
use crate::present::output::human::Style;
use crate::present::output::replay_screen::{say, verdict, BAD_SHOWN};
use crate::present::output::sink;
use crate::present::output::sink::Sink as _;
use crate::present::report::page_sink::PageSink;
use crate::present::report::{Collected, Report};
use crate::shared::escape::sanitize;
use anyhow::Context;
use std::io::{BufRead, Write};

pub fn run(args: &ReplaySettings, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<i32> {
    if args.grade {
        return regrade(args, out, err);
    }
    let style = args.style;
    // `--check` is a test: its output is the differences and a verdict. The timeline comes with
    // `-v`, and with `--json`, which asks for the lines themselves.
    let timeline = !args.check || args.verbose || args.json;
    let mut code = exit::SUCCESS;
    let mut kept = args.report.as_ref().map(|path| {
        PageSink::new(
            crate::present::report::command_line("replay"),
            path.clone(),
            files(args),
        )
    });
    for file in &args.files {
        let name = file.display().to_string();
        let report = if name == "-" {
            let input = std::io::stdin().lock();
            replay_file(input, args, (&style, timeline), &name, &mut kept, out, err)?
        } else {
            let f = std::fs::File::open(file).with_context(|| format!("reading {name}"))?;
            let reader = std::io::BufReader::with_capacity(1 << 16, f);
            replay_file(reader, args, (&style, timeline), &name, &mut kept, out, err)?
        };
        if !verdict(args.check, &name, &report, err)? {
            code = exit::FAILURE;
        }
    }
    if let Some(page) = &kept {
        page.write()?;
    }
    Ok(code)
}

/// The files read, as the report's header names them.
fn files(args: &ReplaySettings) -> String {
    let names: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
    format!("capture {}", names.join(", "))
}

/// `replay --grade`: every `grade_input` line of every file, judged again.
fn regrade(args: &ReplaySettings, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<i32> {
    let mut code = exit::SUCCESS;
    // The page draws the first run graded; the rest are counted on it.
    let mut first: Option<(Observations, Grade)> = None;
    let mut more = 0;
    for file in &args.files {
        let name = file.display().to_string();
        let text = if name == "-" {
            let mut t = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut t)
                .with_context(|| format!("reading {name}"))?;
            t
        } else {
            std::fs::read_to_string(file).with_context(|| format!("reading {name}"))?
        };
        let inputs = match crate::grading::judge::grade_lines::inputs(&text) {
            Ok(i) if i.is_empty() => Err(
                "no grade_input line (written by simulate --grade-json or pcap --grade --json)"
                    .to_string(),
            ),
            other => other,
        };
        let inputs = match inputs {
            Ok(i) => i,
            Err(e) => {
                say(
                    err,
                    &format!("{name}: {}", crate::shared::escape::sanitize(&e)),
                )?;
                code = exit::FAILURE;
                continue;
            }
        };
        for obs in inputs {
            let g = crate::grading::judge::judge(&obs);
            super::write_grade(out, &obs, &g, args.json)?;
            // The worst grade decides: a failure over a rule not judged over a pass.
            code = worse(code, g.verdict.exit_code());
            if first.is_none() {
                first = Some((obs, g));
            } else {
                more += 1;
            }
        }
    }
    out.flush()?;
    if let (Some(path), Some((obs, g))) = (&args.report, &first) {
        let lines = Collected::default();
        let mut notes = Vec::new();
        if more > 0 {
            notes.push(format!(
                "{more} more graded run(s) in these files are not drawn: this page is the first"
            ));
        }
        Report {
            command: "replay --grade",
            source: files(args),
            lines: &lines,
            observations: Some(obs),
            grade: Some(g),
            notes,
        }
        .write(path)?;
    }
    Ok(code)
}

/// Of two grading exit codes, the one that says more is wrong: 1 (a rule failed) over 9 (not
/// judged) over 0.
fn worse(a: i32, b: i32) -> i32 {
    let rank = |c: i32| match c {
        exit::SUCCESS => 0,
        exit::NOT_JUDGED => 1,
        _ => 2,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// Replays one input, writing its timeline and its bad lines and differences as they come (and
/// keeping what `--report` draws in `kept`).
fn replay_file(
    reader: impl BufRead,
    args: &ReplaySettings,
    (style, timeline): (&Style, bool),
    name: &str,
    kept: &mut Option<PageSink>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<ReplayReport> {
    // Every line is shown in `replay`, detail lines included: the file is what is examined.
    let mut lines = sink::lines(&mut *out, args.json, *style, true);
    // Error texts quote the input (serde names the unknown field it read): escaped like a line.
    let name = sanitize(name);
    let mut bad_shown = 0;
    let report = replay_with(reader, MAX_LINE, args.check, |event| {
        match (kept.as_mut(), &event) {
            (Some(k), Event::Line(line)) => k.line(line)?,
            (Some(k), Event::Tagged(ep, line)) => k.line_of(ep, line)?,
            _ => {}
        }
        // What goes to stderr, after the timeline so far: a difference or a bad line.
        let said = match event {
            Event::Line(line) if timeline => {
                lines.line(line)?;
                None
            }
            Event::Tagged(ep, line) if timeline => {
                lines.line_of(ep, line)?;
                None
            }
            Event::Differs(n, what) if args.check => {
                Some(format!("{n}: parse differs: {}", sanitize(&what)))
            }
            Event::Recomputed(n, what) if args.check => {
                Some(format!("{n}: timeline differs: {}", sanitize(&what)))
            }
            // A file that is no capture at all (a pcap) would give one line per line of it.
            Event::Bad(n, why) if bad_shown < BAD_SHOWN => {
                bad_shown += 1;
                Some(format!("{n}: {}", sanitize(&why)))
            }
            Event::Line(_) | Event::Tagged(..) => None,
            Event::Differs(..) | Event::Recomputed(..) | Event::Bad(..) => None,
        };
        if let Some(said) = said {
            lines.flush()?;
            say(err, &format!("{name}:{said}"))?;
        }
        Ok(())
    })
    .with_context(|| format!("reading {name}"))?;
    lines.flush()?;
    Ok(report)
}
