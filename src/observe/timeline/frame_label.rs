//! A frame read on a watched connection: how it is labelled (new, re-sent, caught up), which
//! window it opens or closes (and so what its offset is relative to), and what it asks the
//! watch to do next (a dry-run, a DNS check, a topology refresh).

use super::{event, Action, Announced, Ctx, Event, Step, Timeline};
use crate::observe::record::{line, CopyOf, EventRow, Label, Rel, WatchLine, SCHEMA_VERSION};
use crate::protocol::notification::{Classified, Kind, Migrations, Notification};

/// How a maintenance notification relates to those seen before.
struct Seen {
    labels: Vec<Label>,
    /// A `(type, seq)` seen before: counted on the first one's row.
    resent: bool,
    /// Replayed with the opt-in's reply: old news.
    catch_up: bool,
    /// The event's index in the summary rows, while it is kept.
    event: Option<usize>,
    copy_of: Option<CopyOf>,
}

/// The simulator's own marker of a scenario's end ([`super::SCENARIO_END`]).
pub fn is_scenario_end(parsed: &Classified) -> bool {
    matches!(parsed, Classified::OtherPush(o) if o.name.as_deref() == Some(super::SCENARIO_END))
}

impl Seen {
    fn is_new(&self) -> bool {
        !self.resent && !self.catch_up
    }
}

impl Timeline {
    pub(super) fn frame(&mut self, step: &mut Step, cx: Ctx, e: event::Frame) {
        if let Some(payload) = super::azure_events::payload(&e.record) {
            return self.azure(step, cx, e.record, &payload);
        }
        let mut rel = self.rel_for(cx.conn, cx.now);
        let mut labels = Vec::new();
        let mut copy_of = None;
        let mut sources_ours = Vec::new();
        if let Classified::Maintenance(n) = &e.record.parsed {
            let seen = self.label(&cx, n, e.early);
            if seen.is_new() {
                step.notifications += 1;
                if let Some(r) = self.open_or_close(&cx, n.kind, seen.event) {
                    rel = Some(r);
                }
            }
            if n.kind.opens() && seen.event.is_some() {
                if let Some(c) = self.conns.get_mut(&cx.conn) {
                    c.opened = seen.event;
                }
            }
            sources_ours = self.follow_ups(step, &cx, n, &seen);
            labels = seen.labels;
            copy_of = seen.copy_of;
            if let Some(c) = self.conns.get_mut(&cx.conn) {
                c.totals_notifications += 1;
            }
        } else if let Some(c) = self.conns.get_mut(&cx.conn) {
            c.totals_other += 1;
            c.scenario_end |= is_scenario_end(&e.record.parsed);
        }
        step.lines.push(WatchLine::Push(line::Push {
            v: SCHEMA_VERSION,
            t: cx.t,
            at: cx.at,
            conn: cx.conn,
            labels,
            rel,
            frame: e.record,
            copy_of,
            sources_ours,
        }));
    }

    /// Labels a notification and finds (or makes) its event.
    fn label(&mut self, cx: &Ctx, n: &Notification, early: bool) -> Seen {
        let catch_up = early && n.kind.is_retained();
        let key = n.seq.map(|s| (n.kind, s));
        let resent = key.is_some_and(|k| !self.keys.insert(k));
        let mut labels = Vec::new();
        if catch_up {
            labels.push(Label::CatchUp);
        }
        if resent {
            labels.push(Label::Resent);
        }
        // Only a MOVING is sent again to a new opt-in; another kind that merely arrived in
        // the same read as the +OK is news, not a re-send.
        if early && n.kind == Kind::Moving {
            labels.push(Label::WithOptIn);
        }
        let (event, copy_of) = if resent || catch_up {
            self.seen_again(cx, key, resent)
        } else {
            (Some(self.new_event(cx, n, early)), None)
        };
        Seen {
            labels,
            resent,
            catch_up,
            event,
            copy_of,
        }
    }

    /// A new event opens a window (it becomes what later offsets are relative to) or closes the
    /// latest open one of its kind. Returns what its own offset is relative to, if it changed.
    fn open_or_close(&mut self, cx: &Ctx, kind: Kind, event: Option<usize>) -> Option<Rel> {
        let mut rel = None;
        if kind.opens() {
            self.anchor = event;
            rel = self.rel_to(event, cx.now);
        }
        if let Some(opened) = kind.closes() {
            let open = self.events.rposition(|e| {
                e.kind == Announced::Push(opened) && e.row.closed_by_notification_s.is_none()
            });
            if let Some(o) = open {
                let s = self.span(self.events[o].at, cx.now);
                self.events[o].row.closed_by_notification_s = Some(s);
                rel = self.rel_to(Some(o), cx.now);
            }
        }
        rel
    }

    /// What a notification asks of the watch: a MOVING's dry-run, a topology refresh for an
    /// SMIGRATED naming our nodes (whose names it returns), a DNS check after a MIGRATED.
    fn follow_ups(
        &mut self,
        step: &mut Step,
        cx: &Ctx,
        n: &Notification,
        seen: &Seen,
    ) -> Vec<String> {
        let new = seen.is_new();
        if n.kind == Kind::Moving && !seen.catch_up {
            self.moving(step, cx.conn, n, new, seen.event);
        }
        let mut sources_ours = Vec::new();
        if let (Some(m), true, Some(i)) = (&n.migrations, new, seen.event) {
            sources_ours = self.sources_ours(m);
            if !sources_ours.is_empty() {
                step.actions.push(Action::RefreshTopology {
                    conn: cx.conn,
                    event: i,
                    sources: sources_ours.clone(),
                });
            }
        }
        if n.kind == Kind::Migrated && new {
            if let Some(addr) = self.conns.get(&cx.conn).and_then(|c| c.addr) {
                step.actions.push(Action::CheckAdvertised {
                    conn: cx.conn,
                    addr: addr.ip(),
                });
            }
        }
        sources_ours
    }

    /// A copy of an event already seen (re-sent, or a catch-up replay): counted on the first
    /// one's row; a re-send from another connection says where and how much earlier it came.
    fn seen_again(
        &mut self,
        cx: &Ctx,
        key: Option<(Kind, i64)>,
        resent: bool,
    ) -> (Option<usize>, Option<CopyOf>) {
        let (conn_id, now) = (cx.conn, cx.now);
        let idx = key
            .and_then(|k| self.keys.event(&k))
            .filter(|&i| self.events.get(i).is_some());
        let mut copy_of = None;
        if let Some(first) = idx.and_then(|i| self.events.get_mut(i)) {
            first.row.copies += 1;
            if resent && first.conn != conn_id {
                copy_of = Some(CopyOf {
                    conn: first.conn,
                    after_ms: (now.saturating_duration_since(first.at).as_secs_f64() * 1e6).round()
                        / 1e3,
                });
            }
        }
        (idx, copy_of)
    }

    /// A new event: its summary row, and its `(type, seq)` remembered. Returns its index.
    fn new_event(&mut self, cx: &Ctx, n: &Notification, early: bool) -> usize {
        let (now, t, conn_id) = (cx.now, cx.t, cx.conn);
        let i = self.events.len();
        self.events.push(Event {
            kind: Announced::Push(n.kind),
            seq: n.seq,
            at: now,
            row: EventRow {
                window_s: n.time,
                // A MOVING re-sent to our opt-in, never seen before: we joined its window
                // after it opened.
                joined_open: early && n.kind == Kind::Moving,
                ..EventRow::new(n.kind.name(), n.seq, t)
            },
            moved_s: None,
            stale: false,
            unresolved: false,
            verdict_done: false,
            conn: conn_id,
        });
        if let Some(k) = n.seq.map(|s| (n.kind, s)) {
            self.keys.set_event(k, i);
        }
        i
    }

    /// A MOVING (not a catch-up): the connection expects its close, and a new one starts a
    /// dry-run.
    fn moving(
        &mut self,
        step: &mut Step,
        conn_id: u32,
        n: &Notification,
        new: bool,
        event_index: Option<usize>,
    ) {
        let current = self
            .conns
            .get(&conn_id)
            .and_then(|c| c.addr)
            .map(|a| a.ip());
        let before = self.conns.get_mut(&conn_id).and_then(|c| {
            let before = c.moving;
            c.moving = event_index;
            before
        });
        // The connection's earlier MOVING, still open: its close will be this one's.
        if let (true, Some(b), Some(i)) = (new, before, event_index) {
            let name = self.events.get(i).map(Event::name);
            if let (Some(e), false) = (self.events.get_mut(b), b == i) {
                e.row.superseded_by = name;
            }
        }
        // Only a new (type, seq) starts a decision: acting on re-sent MOVINGs loops.
        if let (true, Some(i)) = (new, event_index) {
            step.actions.push(Action::StartHandoff {
                conn: conn_id,
                event: i,
                window_s: n.time.unwrap_or(0),
                successor: n.successor().cloned(),
                current,
            });
        }
    }

    /// The sources of an SMIGRATED's moves that are nodes this watch is connected to.
    fn sources_ours(&self, m: &Migrations) -> Vec<String> {
        let ours: Vec<String> = self
            .conns
            .values()
            .flat_map(|c| [c.addr.map(|a| a.to_string()), Some(c.endpoint.clone())])
            .flatten()
            .collect();
        let mut sources: Vec<String> = m
            .moves
            .iter()
            .filter_map(|mv| mv.source.clone())
            .filter(|s| {
                ours.iter()
                    .any(|o| o == s || o.ends_with(&format!("//{s}")))
            })
            .collect();
        sources.sort();
        sources.dedup();
        sources
    }
}
