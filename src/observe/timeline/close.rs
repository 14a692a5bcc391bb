//! A connection's end, and the dry-run's decision set against it: whether a close was
//! announced, by how much it overshot its window, and what a client following the dry-run
//! would have done.

use super::{event, secs, secs_f, Announced, CloseCause, Ctx, DryRun, Step, Timeline};
use crate::observe::record::{line, ClosedBy, DryRunOutcome, WatchLine, SCHEMA_VERSION};
use crate::protocol::notification::Kind;
use std::time::Instant;

/// The close that follows the simulator's end-of-scenario marker.
fn scenario_end(cx: Ctx, e: event::Closed) -> WatchLine {
    WatchLine::Closed(line::Closed {
        v: SCHEMA_VERSION,
        t: cx.t,
        at: cx.at,
        conn: cx.conn,
        by: ClosedBy::ScenarioEnd,
        error: e.error,
        announced: false,
        window_s: None,
        past_s: None,
        rel: None,
        joined_open: false,
        retry_in_s: e.retry_in.map(secs),
    })
}

impl Timeline {
    /// A connection's end: announced when it follows the MOVING this connection was told about.
    pub(super) fn closed(&mut self, step: &mut Step, cx: Ctx, e: event::Closed) {
        let (now, conn_id, cause) = (cx.now, cx.conn, e.cause);
        // No MOVING told this connection of the close, but an Azure Cache warning may have.
        let azure = self.azure_open();
        let c = self.conns.entry(conn_id).or_default();
        if std::mem::take(&mut c.scenario_end) && cause != CloseCause::Watch {
            // The end of a simulated scenario: no window, no incident, not counted as a close.
            c.moving = None;
            step.lines.push(scenario_end(cx, e));
            return;
        }
        let moving = c
            .moving
            .take()
            .or(azure)
            .filter(|&i| self.events.get(i).is_some());
        if cause != CloseCause::Watch {
            c.totals_closes += 1;
        }
        let (announced, window_s, past_s, rel) = match moving {
            Some(i) if cause != CloseCause::Watch => {
                let since = self.span(self.events[i].at, now);
                let e = &mut self.events[i];
                let past = e.row.window_s.map(|w| secs_f(since - w as f64));
                if e.row.socket_closed_s.is_none() {
                    e.row.socket_closed_s = Some(secs_f(since));
                    e.row.overshoot_s = past;
                }
                (true, e.row.window_s, past, self.rel_to(Some(i), now))
            }
            _ => {
                if cause != CloseCause::Watch {
                    self.silent_close(now);
                }
                (false, None, None, self.rel_for(conn_id, now))
            }
        };
        let joined_open = announced && moving.is_some_and(|i| self.events[i].row.joined_open);
        step.lines.push(WatchLine::Closed(line::Closed {
            v: SCHEMA_VERSION,
            t: cx.t,
            at: cx.at.clone(),
            conn: conn_id,
            by: match cause {
                CloseCause::Server => ClosedBy::Server,
                CloseCause::Error => ClosedBy::Error,
                CloseCause::Watch => ClosedBy::Watch,
            },
            error: e.error,
            announced,
            window_s,
            past_s,
            rel,
            joined_open,
            retry_in_s: e.retry_in.map(secs),
        }));
        // The dry-run is a MOVING's: an Azure warning has no handoff to set against the close.
        if let Some(i) = moving.filter(|&i| matches!(self.events[i].kind, Announced::Push(_))) {
            self.verdict(step, cx.t, cx.at, i);
        }
    }

    /// The open Azure Cache window (a Starting or Start that nothing ended): it announces any
    /// close that comes while it is open.
    fn azure_open(&self) -> Option<usize> {
        let i = self.anchor?;
        let e = self.events.get(i)?;
        (matches!(e.kind, Announced::Azure(k) if k.opens_window())
            && e.row.closed_by_notification_s.is_none())
        .then_some(i)
    }

    /// An unannounced close while a MIGRATING (or another opening event that is not a MOVING)
    /// is the latest event: the silent end of a shrink. Its row records the close, relative to it.
    fn silent_close(&mut self, now: Instant) {
        let Some(i) = self.anchor else { return };
        let since = self.span(self.events[i].at, now);
        let e = &mut self.events[i];
        if e.kind != Announced::Push(Kind::Moving) && e.row.socket_closed_s.is_none() {
            e.row.socket_closed_s = Some(since);
            e.row.silent_close = true;
        }
    }

    /// A dry-run's decision: recorded on its event's row, and set against the close if that
    /// came first.
    pub(super) fn handoff(&mut self, step: &mut Step, cx: Ctx, event: usize, dry_run: DryRun) {
        let (now, t, at, conn_id) = (cx.now, cx.t, cx.at, cx.conn);
        let Some(e) = self.events.get_mut(event) else {
            return;
        };
        let DryRun {
            outcome: name,
            at_s,
            moves,
            text,
            to,
        } = dry_run;
        if name != DryRunOutcome::Cancelled || e.row.handoff.is_none() {
            e.row.handoff = Some(name.as_str().to_string());
            e.row.handoff_s = Some(at_s);
        }
        if moves {
            e.moved_s = Some(at_s);
        }
        e.stale = matches!(
            name,
            DryRunOutcome::StaleAtExpiry | DryRunOutcome::Unresolved
        );
        e.unresolved = name == DryRunOutcome::Unresolved;
        let event_name = e.name();
        let rel = self.rel_to(Some(event), now);
        step.lines.push(WatchLine::Handoff(line::Handoff {
            v: SCHEMA_VERSION,
            t,
            at: at.clone(),
            conn: conn_id,
            event: event_name,
            outcome: name,
            at_s,
            moves,
            text,
            rel,
            to,
        }));
        if self.events[event].row.socket_closed_s.is_some() {
            self.verdict(step, t, at, event);
        }
    }

    /// Sets the dry-run against the close, once both are known.
    fn verdict(&mut self, step: &mut Step, t: f64, at: String, i: usize) {
        let Some(e) = self.events.get_mut(i) else {
            return;
        };
        if e.verdict_done {
            return;
        }
        let Some(closed) = e.row.socket_closed_s else {
            return;
        };
        let text;
        let mut margin = None;
        // The words are the judge's (docs/protocol.md section 8): moved, recycled onto the
        // retiring address, stayed, cut; the offsets are from this connection's own event.
        let recycle = e.row.handoff.as_deref() == Some("reconnect_on_clock");
        if let Some(moved) = e.moved_s {
            let m = secs_f(closed - moved);
            margin = Some(m);
            text = if m >= 0.0 && recycle {
                format!(
                    "a client following the dry-run would have recycled at +{moved:.1} s (reconnecting the way it connected: onto the retiring address when that is an address), {m:.1} s before the close at +{closed:.1} s"
                )
            } else if m >= 0.0 {
                format!(
                    "a client following the dry-run would have moved at +{moved:.1} s, {m:.1} s before the close at +{closed:.1} s"
                )
            } else {
                format!(
                    "a client following the dry-run would have been cut by the close at +{closed:.1} s, acting only at +{moved:.1} s, {:.1} s after it",
                    -m
                )
            };
        } else if e.unresolved {
            text = format!(
                "a client following the dry-run would have stayed: DNS gave no address at all; cut by the close at +{closed:.1} s"
            );
        } else if e.stale {
            text = format!(
                "a client following the dry-run would have stayed: nothing else was offered (the record was still stale when the window expired); cut by the close at +{closed:.1} s"
            );
        } else {
            // The dry-run has not decided yet; its result will bring the verdict.
            return;
        }
        e.verdict_done = true;
        e.row.margin_s = margin;
        let (conn, event) = (e.conn, e.name());
        step.lines.push(WatchLine::Verdict(line::Verdict {
            v: SCHEMA_VERSION,
            t,
            at,
            conn,
            event,
            text,
            margin_s: margin,
        }));
    }
}
