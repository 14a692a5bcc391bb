//! The open-window countdown: one indicatif line per open window on stderr
//! ("MOVING seq 3: 7.2 s left"), while the timeline prints above it.
//!
//! An operator during a live maintenance wants to know how long until the socket is expected to
//! close; the declared window is a floor, so past it the line says how far past. The bars live on
//! stderr and only when stderr is a terminal; every timeline write goes through [`Countdown::suspend`]
//! so a bar is never torn by a line printed over it.

use crate::notification::Classified;
use crate::record::WatchLine;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

struct Open {
    name: String,
    /// Re-sent with our opt-in: the window opened before we joined, so what is left is at most
    /// the time shown.
    joined: bool,
    kind: crate::notification::Kind,
    bar: ProgressBar,
    since: Instant,
    window_s: f64,
}

pub struct Countdown {
    multi: MultiProgress,
    open: Vec<Open>,
    speed: f64,
}

impl Countdown {
    /// A countdown on stderr, or `None` when stderr is not a terminal.
    pub fn on_terminal(speed: f64) -> Option<Countdown> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        Some(Countdown {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10)),
            open: Vec::new(),
            speed,
        })
    }

    /// Runs `f` with the bars cleared, then draws them again.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.multi.suspend(f)
    }

    /// Opens or closes windows as the timeline reports them.
    pub fn on_line(&mut self, line: &WatchLine) {
        match line {
            WatchLine::Push { frame, labels, .. } => {
                let Classified::Maintenance(n) = &frame.parsed else {
                    return;
                };
                // A MOVING sent with our opt-in and never seen before is a window already open.
                let joined = labels.as_slice() == [crate::record::Label::WithOptIn];
                if n.opens() && (labels.is_empty() || joined) {
                    let window_s = n.time.unwrap_or(0).max(0) as f64;
                    let name = match n.seq {
                        Some(s) => format!("{} seq {s}", n.kind),
                        None => format!("{} seq ?", n.kind),
                    };
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
            WatchLine::Closed {
                announced: true,
                rel: Some(rel),
                ..
            } => {
                if let Some(i) = self.open.iter().position(|o| o.name == rel.to) {
                    self.open.remove(i).bar.finish_and_clear();
                }
            }
            WatchLine::Summary { .. } => self.clear(),
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

    /// Reads windows at a speed learnt after the watch started.
    pub fn set_speed(&mut self, speed: f64) {
        self.speed = speed;
    }

    /// Updates the time left on every open window.
    pub fn tick(&mut self) {
        for o in &self.open {
            let elapsed = o.since.elapsed().as_secs_f64() * self.speed;
            let left = o.window_s - elapsed;
            o.bar.set_position((elapsed.min(o.window_s) * 10.0) as u64);
            if left > 0.0 && o.joined {
                o.bar.set_message(format!(
                    "{} (open when we joined): at most {left:.1} s left",
                    o.name
                ));
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
