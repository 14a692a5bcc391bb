//! One human line per state, not per retry, for a connection that cannot be made: the first
//! failure is shown, then at most one "still unreachable" line per widening interval, then one
//! line when it is back. A node that stays down for half a minute made fourteen lines of the
//! same fact; the JSON lines still keep every attempt, for programs.
//!
//! Its clock is the lines' own `t`: the decision is a function of the lines, so a capture
//! replayed reads as the live watch did, and a test gives the times it wants.

use crate::observe::record::{line, WatchLine};
use std::collections::HashMap;

/// The first interval after the failure's line before another is shown; it doubles after each.
pub const FIRST_GAP_S: f64 = 5.0;

/// The widest interval between two lines of one failing connection.
pub const MAX_GAP_S: f64 = 600.0;

/// What the human sink does with a line.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// As it is.
    Line,
    /// Not at all: a retry inside the interval.
    Hidden,
    /// As a "still unreachable" line: `attempts` failed in `secs`.
    Still { attempts: u32, secs: f64 },
    /// As it is, after a line saying the connection is back after `attempts` failures in `secs`.
    Back { attempts: u32, secs: f64 },
}

/// A run of failed attempts of one connection.
#[derive(Debug, Clone)]
struct Streak {
    first_t: f64,
    attempts: u32,
    shown_t: f64,
    gap: f64,
    hidden: u32,
}

/// The failing connections, by endpoint label (in a fleet) and connection number.
#[derive(Debug, Default)]
pub struct Retries {
    failing: HashMap<(Option<String>, u32), Streak>,
}

impl Retries {
    /// How to show `line` of endpoint `ep`.
    pub fn admit(&mut self, ep: Option<&str>, line: &WatchLine) -> Shown {
        match line {
            WatchLine::ConnectFailed(line::ConnectFailed {
                conn,
                t,
                retry_in_s: Some(_),
                ..
            }) => self.failed(ep, *conn, *t),
            WatchLine::Connected(line::Connected { conn, t, .. }) => {
                match self.failing.remove(&(ep.map(str::to_string), *conn)) {
                    Some(s) if s.hidden > 0 || s.attempts > 1 => Shown::Back {
                        attempts: s.attempts,
                        secs: t - s.first_t,
                    },
                    _ => Shown::Line,
                }
            }
            // The watch stopped watching it (its node left the cluster): no more attempts.
            WatchLine::Closed(line::Closed { conn, .. }) => {
                self.failing.remove(&(ep.map(str::to_string), *conn));
                Shown::Line
            }
            _ => Shown::Line,
        }
    }

    fn failed(&mut self, ep: Option<&str>, conn: u32, t: f64) -> Shown {
        let key = (ep.map(str::to_string), conn);
        let Some(s) = self.failing.get_mut(&key) else {
            self.failing.insert(
                key,
                Streak {
                    first_t: t,
                    attempts: 1,
                    shown_t: t,
                    gap: FIRST_GAP_S,
                    hidden: 0,
                },
            );
            return Shown::Line;
        };
        s.attempts += 1;
        if t - s.shown_t < s.gap {
            s.hidden += 1;
            return Shown::Hidden;
        }
        s.shown_t = t;
        s.gap = (s.gap * 2.0).min(MAX_GAP_S);
        Shown::Still {
            attempts: s.attempts,
            secs: t - s.first_t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(conn: u32, t: f64) -> WatchLine {
        WatchLine::ConnectFailed(line::ConnectFailed {
            v: 1,
            t,
            at: "2026-01-01T00:00:00.000000Z".into(),
            conn,
            error: "connecting to 127.0.0.1:1: Connection refused".into(),
            retry_in_s: Some(3.0),
        })
    }

    fn connected(conn: u32, t: f64) -> WatchLine {
        WatchLine::Connected(line::Connected {
            v: 1,
            t,
            at: "2026-01-01T00:00:00.000000Z".into(),
            conn,
            addr: "127.0.0.1:1".into(),
            tls: false,
            session: 2,
            rel: None,
        })
    }

    /// A connection failing every 3 s (the backoff's cap is 5 s) on the lines' clock.
    #[test]
    fn a_connection_down_for_half_a_minute_gets_three_lines_then_one_when_back() {
        let mut r = Retries::default();
        let mut shown = Vec::new();
        for i in 0..11 {
            let t = 10.0 + 3.0 * f64::from(i);
            match r.admit(None, &failed(2, t)) {
                Shown::Hidden => {}
                other => shown.push((t, other)),
            }
        }
        assert_eq!(
            shown,
            vec![
                (10.0, Shown::Line),
                (
                    16.0,
                    Shown::Still {
                        attempts: 3,
                        secs: 6.0
                    }
                ),
                (
                    28.0,
                    Shown::Still {
                        attempts: 7,
                        secs: 18.0
                    }
                )
            ],
            "the first failure, then after 5 s, then after 10 s more"
        );
        assert_eq!(
            r.admit(None, &connected(2, 41.0)),
            Shown::Back {
                attempts: 11,
                secs: 31.0
            }
        );
        // Back to normal: a new failure is a new first line.
        assert_eq!(r.admit(None, &failed(2, 50.0)), Shown::Line);
    }

    #[test]
    fn the_interval_widens_to_its_cap_and_each_connection_counts_alone() {
        let mut r = Retries::default();
        let mut shown_at = Vec::new();
        // A failure every second for three hours.
        for i in 0..10_800 {
            let t = f64::from(i);
            if r.admit(None, &failed(1, t)) != Shown::Hidden {
                shown_at.push(t);
            }
            if i < 3 {
                // Another connection, and the same one of another endpoint, start their own.
                assert_eq!(r.admit(None, &failed(7, t)) == Shown::Hidden, i > 0);
                assert_eq!(r.admit(Some("b:1"), &failed(1, t)) == Shown::Hidden, i > 0);
            }
        }
        let gaps: Vec<f64> = shown_at.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(
            &gaps[..8],
            &[5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 600.0]
        );
        assert!(gaps[8..].iter().all(|g| *g == MAX_GAP_S), "{gaps:?}");
    }

    #[test]
    fn a_first_session_or_one_failure_is_no_news_and_a_removed_node_is_forgotten() {
        let mut r = Retries::default();
        assert_eq!(r.admit(None, &connected(1, 0.0)), Shown::Line);
        assert_eq!(r.admit(None, &failed(1, 1.0)), Shown::Line);
        assert_eq!(r.admit(None, &connected(1, 1.5)), Shown::Line);
        assert_eq!(r.admit(None, &failed(1, 2.0)), Shown::Line);
        assert_eq!(r.admit(None, &failed(1, 3.0)), Shown::Hidden);
        let closed = WatchLine::Closed(line::Closed {
            v: 1,
            t: 4.0,
            at: "2026-01-01T00:00:00.000000Z".into(),
            conn: 1,
            by: crate::observe::record::ClosedBy::Watch,
            error: Some("left the cluster".into()),
            announced: false,
            window_s: None,
            past_s: None,
            rel: None,
            joined_open: false,
            retry_in_s: None,
        });
        assert_eq!(r.admit(None, &closed), Shown::Line);
        assert_eq!(r.admit(None, &failed(1, 5.0)), Shown::Line);
    }
}
