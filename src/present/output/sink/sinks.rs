//! [`Sinks`]: every sink of a run, handed each line in turn, with the countdown out of their
//! way.

use std::io;

use super::traits::Sink;
use crate::observe::record::WatchLine;
use crate::present::output::countdown::Countdown;

/// Every sink of a run. The countdown, when there is one, owns the terminal: the other sinks
/// write with its bars cleared and flush before they are drawn again, then it sees the line.
#[derive(Default)]
pub struct Sinks<'a> {
    sinks: Vec<Box<dyn Sink + 'a>>,
    countdown: Option<Countdown>,
}

impl<'a> Sinks<'a> {
    pub fn new() -> Sinks<'a> {
        Sinks::default()
    }

    pub fn add(&mut self, sink: Box<dyn Sink + 'a>) {
        self.sinks.push(sink);
    }

    /// Shows open windows counting down (nothing happens if `countdown` is `None`).
    pub fn set_countdown(&mut self, countdown: Option<Countdown>) {
        self.countdown = countdown;
    }

    /// Hands `line` to every sink.
    pub fn line(&mut self, line: &WatchLine) -> io::Result<()> {
        self.line_of(None, line)
    }

    /// Hands `line` to every sink, with its endpoint's label in a fleet.
    pub fn line_of(&mut self, ep: Option<&str>, line: &WatchLine) -> io::Result<()> {
        let sinks = &mut self.sinks;
        let one = |s: &mut Box<dyn Sink + 'a>| match ep {
            Some(ep) => s.line_of(ep, line),
            None => s.line(line),
        };
        match &mut self.countdown {
            Some(c) => {
                // Under a countdown the line must be on the terminal before the bar is redrawn.
                c.suspend(|| -> io::Result<()> {
                    for s in sinks.iter_mut() {
                        one(s)?;
                        s.flush()?;
                    }
                    Ok(())
                })?;
                c.line(line)
            }
            None => {
                for s in sinks.iter_mut() {
                    one(s)?;
                }
                Ok(())
            }
        }
    }

    /// SIGHUP: every sink that writes a named file opens it again. Whether one did (with none,
    /// SIGHUP stops the watch as it always did).
    pub fn reopen(&mut self) -> io::Result<bool> {
        let mut any = false;
        for s in &mut self.sinks {
            any |= s.reopen()?;
        }
        Ok(any)
    }

    /// Text beside the timeline, shown at once.
    pub fn note(&mut self, text: &str) -> io::Result<()> {
        let sinks = &mut self.sinks;
        let mut write = || -> io::Result<()> {
            for s in sinks.iter_mut() {
                s.note(text)?;
                s.flush()?;
            }
            Ok(())
        };
        match &self.countdown {
            Some(c) => c.suspend(write),
            None => write(),
        }
    }

    /// A warning or note for stderr, with the countdown (on stdout's terminal) out of its way.
    pub fn notice(&mut self, text: &str) -> io::Result<()> {
        let sinks = &mut self.sinks;
        let mut write = || -> io::Result<()> {
            for s in sinks.iter_mut() {
                s.notice(text)?;
            }
            Ok(())
        };
        match &self.countdown {
            Some(c) => c.suspend(write),
            None => write(),
        }
    }

    /// A countdown is shown with a window on it: only then is there anything to redraw (an idle
    /// watch of thousands of connections should not wake ten times a second for nothing).
    pub fn animating(&self) -> bool {
        self.countdown.as_ref().is_some_and(Countdown::is_active)
    }

    /// Refreshes the countdown, if one is shown.
    pub fn tick(&mut self) {
        if let Some(c) = &mut self.countdown {
            c.tick();
        }
    }

    /// Before the summary of an interrupted watch: the countdown is cleared, and a human summary
    /// starts on a line of its own rather than after the `^C` the terminal echoed.
    pub fn interrupted(&mut self) -> io::Result<()> {
        // A bar being cleared takes the echoed `^C` with it, leaving a fresh line.
        let mut fresh_line = false;
        if let Some(c) = &mut self.countdown {
            fresh_line = c.is_active();
            c.interrupted(fresh_line)?;
        }
        for s in &mut self.sinks {
            s.interrupted(fresh_line)?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        for s in &mut self.sinks {
            s.flush()?;
        }
        Ok(())
    }

    /// Whether some sink stopped working on the way.
    pub fn failed(&self) -> bool {
        self.sinks.iter().any(|s| s.failed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::record::FrameRecord;
    use crate::observe::timeline::{event, Observation, Timeline, What};
    use crate::protocol::resp::{Scan, Scanner};
    use std::time::{Instant, SystemTime};

    const MIGRATING: &[u8] = b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n";
    const MIGRATED: &[u8] = b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n";

    /// The lines the timeline makes of the push `raw`.
    fn lines_of(tl: &mut Timeline, raw: &[u8]) -> Vec<WatchLine> {
        let Ok(Scan::Frame(frame, _)) = Scanner::default().scan(raw) else {
            panic!("a whole frame");
        };
        let record = FrameRecord::new(&frame, raw, 0);
        let what = What::Frame(event::Frame {
            record,
            early: false,
        });
        let obs = Observation {
            at: Instant::now(),
            wall: SystemTime::now(),
            conn: 1,
            what,
        };
        tl.observe(obs).lines
    }

    #[test]
    fn the_watch_redraws_only_while_a_countdown_shows_a_window() {
        // The watch loop's redraw tick runs only while this holds: an idle watch (of thousands
        // of connections) must not wake ten times a second for nothing.
        let mut sinks = Sinks::new();
        assert!(!sinks.animating(), "no countdown: nothing to redraw");
        sinks.set_countdown(Some(Countdown::hidden(Default::default())));
        assert!(!sinks.animating(), "no window open");
        let mut tl = Timeline::new(Instant::now());
        for line in lines_of(&mut tl, MIGRATING) {
            sinks.line(&line).unwrap();
        }
        assert!(sinks.animating(), "a window on the countdown");
        for line in lines_of(&mut tl, MIGRATED) {
            sinks.line(&line).unwrap();
        }
        assert!(!sinks.animating(), "the window closed");
    }
}
