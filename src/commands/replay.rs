//! `maintwatch replay`: a capture read back and checked ([`crate::observe::replay`]), its
//! timeline shown as it goes, its differences and bad lines on stderr
//! ([`crate::present::output::replay_screen`]); or, with `--grade`, its `grade_input` lines
//! judged again.
//!
//! Captures are the regression fixtures of this field: a frame captured during a real maintenance
//! must keep parsing the same way, and the labels, offsets, verdicts and summary computed from it
//! must stay what they were. `--check` turns any difference into a non-zero exit naming the line.

use crate::cli::replay::ReplaySettings;
use crate::exit;
use crate::grading::judge::{self, grade_lines, Grade, Observations};
use crate::observe::replay::{self, replay_with, MAX_LINE};
use crate::present::output::replay_screen::{say, verdict, ReplayLines, ReplayView};
use crate::present::output::sink::Sink;
use crate::present::report::page_sink::PageSink;
use crate::present::report::{command_line, Collected, Report};
use crate::shared::escape::sanitize;
use anyhow::Context;
use std::io::Write;

pub fn run(args: &ReplaySettings, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<i32> {
    if args.grade {
        return regrade(args, out, err);
    }
    let view = ReplayView::new(args.check, args.verbose, args.json, args.style);
    let mut code = exit::SUCCESS;
    let mut kept = (args.report.as_ref())
        .map(|path| PageSink::new(command_line("replay"), path.clone(), files(args)));
    for file in &args.files {
        let name = file.display().to_string();
        let page = kept.as_mut().map(|k| k as &mut dyn Sink);
        let mut shown = ReplayLines::new(view, &name, &mut *out, &mut *err, page);
        let report = replay_with(replay::open(file)?, MAX_LINE, args.check, |e| {
            shown.event(e)
        })
        .with_context(|| format!("reading {}", sanitize(&name)))?;
        shown.finish()?;
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
        let inputs = match grade_lines::inputs_found(&replay::read_text(file)?) {
            Ok(i) => i,
            Err(e) => {
                say(err, &format!("{name}: {}", sanitize(&e)))?;
                code = exit::FAILURE;
                continue;
            }
        };
        for obs in inputs {
            let g = judge::judge(&obs);
            super::write_grade(out, &obs, &g, args.json)?;
            // The worst grade decides: a failure over a rule not judged over a pass.
            code = exit::worse(code, g.verdict.exit_code());
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
