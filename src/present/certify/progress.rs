//! What `certify --jobs 1` shows while it plays: a bar across the scenarios on a terminal
//! ([`Progress`]), and each finished scenario's line ([`finished_line`]), which `--jobs N`'s
//! board prints as well.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::present::certify::played::{played, Outcome};
use crate::present::output::{human, terminal};

/// How a scenario's play ended, as its finished line tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The scenario played to its end.
    Whole,
    /// The client exited before the scenario ended.
    ClientExited,
    /// The scenario never started; `too_loaded` when the run was too loaded to tell why.
    NeverStarted { too_loaded: bool },
    /// Stopped by the signal of this name.
    Signal(&'static str),
}

/// `certify: failover: every rule held (5 passed, 0 failed, 0 not judged)`, with why the
/// scenario ended early when it did.
pub fn finished_line(o: &Outcome, ended: Ended, lost: u64) -> String {
    let verdict = o.grade.verdict_line();
    let verdict = verdict.strip_prefix("grade: ").unwrap_or(&verdict);
    let mut line = format!("certify: {}: {verdict}", played(o));
    match ended {
        Ended::ClientExited => line.push_str(" (the client exited before the scenario ended)"),
        Ended::NeverStarted { too_loaded: false } => line.push_str(" (the scenario never started)"),
        Ended::NeverStarted { too_loaded: true } => {
            line.push_str(" (the scenario never started: the run was too loaded to tell why)")
        }
        Ended::Signal(name) => {
            let _ = write!(line, " (stopped by {name}: what happened so far)");
        }
        Ended::Whole => {}
    }
    if lost > 0 {
        let _ = write!(line, " ({lost} events lost: figures may be low)");
    }
    wrapped(line)
}

/// The line of a scenario whose worker handed back no grade, and why (`exit 3`, an error).
pub fn not_played_line(name: &str, why: &str) -> String {
    wrapped(format!("certify: {name}: not played ({why})"))
}

/// Wrapped between words on a terminal, which cut it mid-word ("0 not judge", "d)").
fn wrapped(line: String) -> String {
    match terminal::stdout_columns() {
        Some(w) => human::wrap_with(&line, w, "    ").join("\n"),
        None => line,
    }
}

/// A finished scenario's line (its rows, when wrapped) on stdout.
pub fn print_rows(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// A bar across the scenarios on a terminal; nothing but the finished lines on a pipe.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(len: u64) -> Progress {
        let bar = std::io::stdout().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stdout());
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:24} {pos}/{len} scenarios; playing {msg} (for {elapsed})",
            ) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        });
        Progress { bar }
    }

    /// A scenario starts: its label, and its length on the scenario clock (a built-in
    /// scenario's), to compare with the time elapsed.
    pub fn start(&mut self, label: &str, length: Option<f64>) {
        if let Some(bar) = &self.bar {
            let length = length.map_or(String::new(), |end| format!(", {end} s long"));
            bar.set_message(format!("{label}{length}"));
        }
    }

    pub fn finished(&mut self, line: &str) {
        match &self.bar {
            Some(bar) => {
                // Written with the bar out of the way rather than by `println`, which pads each
                // row to the terminal's width so that the terminal takes the rows of a wrapped
                // line for one line it wrapped itself.
                bar.suspend(|| print_rows(line));
                bar.inc(1);
            }
            None => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
        }
    }

    pub fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_scenario_not_played_says_which_and_why() {
        // Off a terminal (as under `cargo test`) the line is whole, as certify's logs keep it.
        let line = super::not_played_line("dns-race", "exit 3");
        assert_eq!(line, "certify: dns-race: not played (exit 3)");
    }
}
