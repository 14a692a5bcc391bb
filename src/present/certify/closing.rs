//! certify's last lines on stdout: the summary, what an interruption left unplayed, and the
//! verdict line a person (or a CI log's tail) reads first ([`print_summary`]).

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use crate::present::certify::played::{worst, Outcome};
use crate::present::certify::tables::{by_scenario, summary};
use crate::present::output::{human, terminal};
use crate::shared::escape::sanitize;

/// How a certification ended, for its last lines.
pub struct End<'a> {
    pub names: &'a [String],
    /// Where the client's output went.
    pub dir: &'a Path,
    /// The files written, when asked for: `--junit`, `--report`, `--grade-json`.
    pub junit: Option<&'a Path>,
    pub report: Option<&'a Path>,
    pub grades: Option<&'a Path>,
    pub interrupted: bool,
    pub code: i32,
}

/// The matrix row, every scenario's rules, then the verdict line last: what a person (or a CI
/// log's tail) reads first.
pub fn print_summary(outcomes: &[Outcome], end: &End<'_>) -> anyhow::Result<()> {
    let width = terminal::stdout_columns();
    let mut text = summary(outcomes, width);
    let left: Vec<&str> = end
        .names
        .iter()
        .filter(|n| !outcomes.iter().any(|o| &o.scenario == *n))
        .map(String::as_str)
        .collect();
    if end.interrupted && !left.is_empty() {
        let line = format!("certify: interrupted; not played: {}", left.join(", "));
        push_wrapped(&mut text, &line, width);
    }
    push_wrapped(&mut text, &verdict_line(outcomes, end), width);
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// `line` and a line break, wrapped between words to `width` (on a terminal), going on 4 in.
fn push_wrapped(text: &mut String, line: &str, width: Option<usize>) {
    let pieces = match width {
        Some(w) => human::wrap_with(line, w, "    "),
        None => vec![line.to_string()],
    };
    for piece in pieces {
        let _ = writeln!(text, "{piece}");
    }
}

/// certify's last word, one line: the verdict and the exit code, the matrix row, the counts over
/// every scenario, and where the files are.
fn verdict_line(outcomes: &[Outcome], end: &End<'_>) -> String {
    let verdict = if end.interrupted {
        "interrupted".to_string()
    } else {
        worst(outcomes).words().to_string()
    };
    let row: Vec<String> = by_scenario(outcomes)
        .into_iter()
        .map(|(scenario, runs)| {
            let fulls: Vec<String> = runs
                .iter()
                .map(|o| crate::grading::matrix::cell(&o.grade))
                .collect();
            let short = crate::grading::matrix::short_over(&fulls);
            format!("{} {short}", sanitize(scenario))
        })
        .collect();
    let (mut pass, mut fail, mut not_judged) = (0, 0, 0);
    for o in outcomes {
        pass += o.grade.counts.pass;
        fail += o.grade.counts.fail;
        not_judged += o.grade.counts.not_judged;
    }
    let per_run = match outcomes.iter().find_map(|o| o.run) {
        Some((_, n)) => format!(" (a folder per run, run-1 to run-{n})"),
        None => String::new(),
    };
    let mut files = vec![format!(
        "client output in {}{per_run}",
        sanitize(&end.dir.to_string_lossy())
    )];
    for (what, path) in [
        ("JUnit", end.junit),
        ("report", end.report),
        ("grades", end.grades),
    ] {
        if let Some(p) = path {
            files.push(format!("{what} in {}", sanitize(&p.to_string_lossy())));
        }
    }
    let row = if row.is_empty() {
        "nothing played".to_string()
    } else {
        row.join(", ")
    };
    format!(
        "certify: {verdict} (exit {}): {row}; {pass} passed, {fail} failed, {not_judged} not \
         judged; {}",
        end.code,
        files.join(", ")
    )
}
