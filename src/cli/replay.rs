//! The settings `replay`'s flags make, so `commands::replay` never sees a clap type.

use super::ReplayArgs;
use crate::present::output::human::Style;
use std::path::PathBuf;

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
