//! Arguments of `replay`, and the settings they make, so `commands::replay` never sees a clap
//! type.

use super::ColorChoice;
use crate::present::output::human::Style;
use clap::Args;
use std::path::PathBuf;

/// The long description of `replay`. The `Command::Replay` variant repeats it
/// (`#[command(long_about = ...)]`): a variant's doc comment resets it.
pub const LONG_ABOUT: &str =
    "Reads a JSON-lines capture written by `watch --json` or `--capture` (`-` reads standard \
input), parses every captured raw frame again with this version's parser and prints the timeline. \
With --check it is a regression test: each line whose fresh parse differs from the one recorded, \
and each line where the timeline run again on the recorded inputs computes something else (a label, \
an offset, a verdict, the summary), is listed by line number, a verdict line ends each file, and the exit code is 1 on any difference; \
the timeline is then printed only with -v (or --json). A torn last line (the watch was killed \
mid-write) is reported and tolerated. A file with no maintwatch line in it, a line of a newer \
schema version, or a line longer than 64 MiB is an error (exit 1) naming the line. The capture \
is read line by line, so its size does not matter.";

#[derive(Args, Debug, Clone)]
#[command(
    long_about = LONG_ABOUT,
    after_help = "Examples:\n  maintwatch replay maint.jsonl\n  maintwatch replay --check tests/fixtures/captures/*.jsonl"
)]
pub struct ReplayArgs {
    /// Capture files (JSON lines); `-` reads standard input.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Compare each frame's fresh parse, and what the timeline computes again, with what was
    /// recorded; exit 1 on any difference.
    #[arg(long)]
    pub check: bool,
    /// With --check, also print the timeline.
    #[arg(short, long)]
    pub verbose: bool,
    /// Grade again, with this maintwatch's judge, the `grade_input` lines that `simulate
    /// --grade-json` and `pcap --grade --json` wrote (a table, or `grade_input` and `grade`
    /// lines with --json; exit 0 when every rule passed, 1 when a rule failed, 9 when none
    /// failed but some were not judged).
    #[arg(long, conflicts_with = "check")]
    pub grade: bool,
    /// Also write a self-contained HTML page of the files read to FILE: the timeline drawn
    /// (classed by the grade's verdicts with --grade), the summary and the raw frames
    /// (docs/report.md).
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Print the re-parsed lines as JSON instead of human lines.
    #[arg(long)]
    pub json: bool,
    /// Colour: auto, always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// What `replay` runs: the captures in order, what to check, and how to print.
pub struct ReplaySettings {
    /// Captures, `-` for standard input.
    pub files: Vec<PathBuf>,
    /// `--check`: a regression test, each difference a failure.
    pub check: bool,
    /// `-v`: the timeline too under `--check`.
    pub verbose: bool,
    /// `--grade`: judge the captures' `grade_input` lines again.
    pub grade: bool,
    /// `--report`: the page to write.
    pub report: Option<PathBuf>,
    /// JSON lines, else text for people in `style`.
    pub json: bool,
    pub style: Style,
}

impl ReplayArgs {
    /// The settings of these flags.
    pub fn settings(&self) -> ReplaySettings {
        ReplaySettings {
            files: self.files.clone(),
            check: self.check,
            verbose: self.verbose,
            grade: self.grade,
            report: self.report.clone(),
            json: self.json,
            style: self.color.style(self.json),
        }
    }
}
