//! The open-window countdown: one indicatif line per open window on stderr
//! ("MOVING seq 3: 7.2 s left"), while the timeline prints above it.
//!
//! An operator during a live maintenance wants to know how long until the socket is expected to
//! close; the declared window is a floor, so past it the line says how far past. The bars live on
//! stderr and only when stderr is a terminal; every timeline write goes through [`Countdown::suspend`]
//! so a bar is never torn by a line printed over it.

use crate::observe::record::line;
use crate::observe::record::WatchLine;
use crate::observe::timeline::ScenarioClock;
use crate::protocol::notification::Classified;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

struct Open {
    name: String,
    /// Came with our opt-in: the window may have opened before we joined, so what is left is at
    /// most the time shown.
    joined: bool,
    kind: crate::protocol::notification::Kind,
    bar: ProgressBar,
    since: Instant,
    window_s: f64,
}

/// Columns kept free at the end of a bar line: the two of an echoed `^C`.
const ECHO_ROOM: u16 = 2;

/// Standard error as indicatif's terminal, [`ECHO_ROOM`] columns narrower than the real one.
///
/// indicatif pads every bar line to the full width and leaves the cursor past the last column,
/// so the `^C` a terminal echoes wraps onto the next line, and clearing the bars then clears that
/// line instead of the bar (the countdown stayed above the summary). With room for the echo, it
/// lands on the bar's own line and is cleared with it.
#[derive(Debug)]
struct NarrowStderr;

impl NarrowStderr {
    fn write(&self, s: &str) -> std::io::Result<()> {
        use std::io::Write;
        std::io::stderr().lock().write_all(s.as_bytes())
    }

    fn move_by(&self, n: usize, code: char) -> std::io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.write(&format!("\x1b[{n}{code}"))
    }
}

impl indicatif::TermLike for NarrowStderr {
    fn width(&self) -> u16 {
        let mut probe = comfy_table::Table::new();
        probe.use_stderr();
        probe
            .width()
            .unwrap_or(80)
            .saturating_sub(ECHO_ROOM)
            .max(20)
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.move_by(n, 'A')
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.move_by(n, 'B')
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.move_by(n, 'C')
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.move_by(n, 'D')
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.write(s)?;
        self.write("\n")
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.write(s)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.write("\r\x1b[2K")
    }

    fn flush(&self) -> std::io::Result<()> {
        use std::io::Write;
        std::io::stderr().flush()
    }
}

pub struct Countdown {
    multi: MultiProgress,
    open: Vec<Open>,
    /// Windows are declared in scenario seconds.
    clock: ScenarioClock,
}

impl Countdown {
    /// A countdown on stderr, or `None` when stderr is not a terminal.
    pub fn on_terminal(clock: ScenarioClock) -> Option<Countdown> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        Some(Countdown {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::term_like_with_hz(
                Box::new(NarrowStderr),
                10,
            )),
            open: Vec::new(),
            clock,
        })
    }

    /// A countdown drawn nowhere, for tests of what drives it.
    #[cfg(test)]
    pub(crate) fn hidden(clock: ScenarioClock) -> Countdown {
        Countdown {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::hidden()),
            open: Vec::new(),
            clock,
        }
    }

    /// Runs `f` with the bars cleared, then draws them again.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.multi.suspend(f)
    }

    /// Opens or closes windows as the timeline reports them.
    pub fn on_line(&mut self, line: &WatchLine) {
        match line {
            WatchLine::Push(line::Push { frame, labels, .. }) => {
                let Classified::Maintenance(n) = &frame.parsed else {
                    return;
                };
                // A MOVING that came with our opt-in, never seen before, may be a window already
                // open (servers re-send it to a new opt-in): counted from receipt.
                let joined = labels.as_slice() == [crate::observe::record::Label::WithOptIn];
                if n.opens() && (labels.is_empty() || joined) {
                    let window_s = n.time.unwrap_or(0).max(0) as f64;
                    let name = n.event_name();
                    let bar = self.multi.add(ProgressBar::new((window_s * 10.0) as u64));
                    bar.set_style(
                        ProgressStyle::with_template("{msg} [{bar:30}]")
                            .unwrap_or_else(|_| ProgressStyle::default_bar())
                            .progress_chars("=> "),
                    );
                    self.open.push(Open {
                        name,
                        joined,
                        kind: n.kind,
                        bar,
                        since: Instant::now(),
                        window_s,
                    });
                    self.tick();
                } else if let Some(opened) = n.closes() {
                    // (A closing notification with labels is a replay: it closes nothing now.)
                    if labels.is_empty() {
                        if let Some(i) = self.open.iter().rposition(|o| o.kind == opened) {
                            self.open.remove(i).bar.finish_and_clear();
                        }
                    }
                }
            }
            WatchLine::Closed(line::Closed {
                announced: true,
                rel: Some(rel),
                ..
            }) => {
                if let Some(i) = self.open.iter().position(|o| o.name == rel.to) {
                    self.open.remove(i).bar.finish_and_clear();
                }
            }
            WatchLine::Summary(line::Summary { .. }) => self.clear(),
            _ => {}
        }
    }

    /// Removes every bar from the terminal (before the summary of an interrupted watch).
    pub fn clear(&mut self) {
        for o in self.open.drain(..) {
            o.bar.finish_and_clear();
        }
        let _ = self.multi.clear();
    }

    /// Updates the time left on every open window.
    pub fn tick(&mut self) {
        for o in &self.open {
            let elapsed = self.clock.scenario_secs(o.since.elapsed());
            let left = o.window_s - elapsed;
            o.bar.set_position((elapsed.min(o.window_s) * 10.0) as u64);
            if left > 0.0 && o.joined {
                // It may have opened before we joined: what is left is an upper bound.
                o.bar
                    .set_message(format!("{}: at most {left:.1} s left", o.name));
            } else if left > 0.0 {
                o.bar.set_message(format!("{}: {left:.1} s left", o.name));
            } else {
                o.bar.set_message(format!(
                    "{}: window over, {:.1} s past; waiting for the close",
                    o.name, -left
                ));
            }
        }
    }

    pub fn is_active(&self) -> bool {
        !self.open.is_empty()
    }
}
