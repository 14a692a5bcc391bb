//! What `certify --jobs N` shows while its scenarios play at once ([`Board`]), each finished
//! scenario's line printed as `--jobs 1` prints it.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::present::certify::progress::print_rows;

/// What is shown while scenarios play: on a terminal, a line per running scenario with its own
/// clock, and each finished scenario's line above them; on a pipe, each finished scenario's line
/// in the list's order (a line waits for those before it).
pub struct Board {
    /// What each play is called on screen (its run with several).
    labels: Vec<String>,
    /// Each play's length on the scenario clock, when known (a built-in scenario's).
    lengths: Vec<Option<f64>>,
    multi: Option<MultiProgress>,
    bars: BTreeMap<usize, ProgressBar>,
    /// Pipe: lines finished but not printed yet, and the next index to print.
    held: BTreeMap<usize, String>,
    printed: usize,
}

impl Board {
    pub fn new(labels: Vec<String>, lengths: Vec<Option<f64>>) -> Board {
        let multi = std::io::stdout()
            .is_terminal()
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stdout()));
        Board {
            labels,
            lengths,
            multi,
            bars: BTreeMap::new(),
            held: BTreeMap::new(),
            printed: 0,
        }
    }

    pub fn start(&mut self, i: usize) {
        let Some(multi) = &self.multi else { return };
        let bar = multi.add(ProgressBar::new_spinner());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}") {
            bar.set_style(style);
        }
        let length = self.lengths[i].map_or(String::new(), |end| format!(" ({end} s long)"));
        bar.set_message(format!("playing {}{length}", self.labels[i]));
        bar.enable_steady_tick(Duration::from_millis(500));
        self.bars.insert(i, bar);
    }

    pub fn finish(&mut self, i: usize, line: String) {
        if let Some(multi) = &self.multi {
            if let Some(bar) = self.bars.remove(&i) {
                bar.finish_and_clear();
                multi.remove(&bar);
            }
            // With the bars out of the way, as `--jobs 1` prints it (`println` pads each row).
            multi.suspend(|| print_rows(&line));
            return;
        }
        self.held.insert(i, line);
        let mut out = std::io::stdout().lock();
        while let Some(line) = self.held.remove(&self.printed) {
            let _ = writeln!(out, "{line}");
            self.printed += 1;
        }
        let _ = out.flush();
    }

    /// The end: any line still held (after an interruption, a later scenario may have finished
    /// when an earlier one did not) is printed, in order.
    pub fn clear(&mut self) {
        if let Some(multi) = self.multi.take() {
            let _ = multi.clear();
        }
        let mut out = std::io::stdout().lock();
        for line in std::mem::take(&mut self.held).into_values() {
            let _ = writeln!(out, "{line}");
        }
        let _ = out.flush();
    }
}
