//! Azure Cache for Redis's `AzureRedisEvents` messages as events of the timeline.
//!
//! Azure Cache announces a maintenance with pub/sub messages rather than push notifications
//! (docs/protocol.md section 9), so a message on that channel is read here as an event like a
//! notification: it gets a summary row, NodeMaintenanceStarting (or Start, when no Starting is
//! open) becomes what later lines are relative to, so the socket's close reads "+21.3 s after
//! NodeMaintenanceStarting", and Ended, FailoverComplete or ScaleComplete is the outcome of the
//! rows before it. The same message reaching several connections (every connection subscribes)
//! is one event, its copies counted on its row, as for a notification's.

use super::{event, kept, secs_f, Announced, Ctx, Event, Step, Timeline};
use crate::observe::record::{line, CopyOf, EventRow, FrameRecord, WatchLine, SCHEMA_VERSION};
use crate::protocol::azure::{self, AzureKind};
use crate::protocol::notification::Classified;
use std::hash::{Hash, Hasher};
use std::time::UNIX_EPOCH;

/// The payload of a pub/sub message on `AzureRedisEvents`, if the record is one. Only a push or
/// reply whose first element is `message` is looked at again: every other frame of a flood is
/// passed over on its classification.
pub(super) fn payload(record: &FrameRecord) -> Option<Vec<u8>> {
    let is_message = match &record.parsed {
        Classified::OtherPush(o) => o.name.as_deref() == Some("message"),
        Classified::NotPush => true,
        Classified::Maintenance(_) => false,
    };
    if !is_message || record.len > 64 * 1024 || !names_the_channel(&record.raw) {
        return None;
    }
    let raw = record.raw.bytes().ok()?;
    match crate::protocol::resp::Scanner::default().scan(&raw) {
        Ok(crate::protocol::resp::Scan::Frame(frame, _)) => {
            azure::message_payload(&frame).map(<[u8]>::to_vec)
        }
        _ => None,
    }
}

/// Whether the frame's bytes (or their escaped text: the channel's name is printable, so it is
/// the same there) hold the channel's name anywhere. A message on the channel always does, so
/// every other message of a flood is passed over here instead of being scanned again into a tree
/// of its own (that was a tenth of a flood's CPU). Horspool's search: a byte that is not in the
/// name moves the window past it, so a frame is passed over in a few looks, not one per byte.
fn names_the_channel(raw: &crate::observe::record::Raw) -> bool {
    let held: &[u8] = match raw {
        crate::observe::record::Raw::Bytes(b) => b,
        crate::observe::record::Raw::Escaped(t) => t.as_bytes(),
    };
    let name = azure::CHANNEL.as_bytes();
    let mut end = name.len();
    while end <= held.len() {
        let last = held[end - 1];
        if last == name[name.len() - 1] && held[end - name.len()..end] == *name {
            return true;
        }
        end += usize::from(SKIP[usize::from(last)]);
    }
    false
}

/// How far the search window may move when its last byte is the index: past the byte, unless
/// the name holds it before its last place.
const SKIP: [u8; 256] = {
    let name = azure::CHANNEL.as_bytes();
    let mut skip = [name.len() as u8; 256];
    let mut i = 0;
    while i + 1 < name.len() {
        skip[name[i] as usize] = (name.len() - 1 - i) as u8;
        i += 1;
    }
    skip
};

/// The line for a refused SUBSCRIBE, with what to change.
pub(super) fn refused(cx: Ctx, e: event::AzureRefused) -> WatchLine {
    WatchLine::AzureRefused(line::AzureRefused {
        v: SCHEMA_VERSION,
        t: cx.t,
        at: cx.at,
        conn: cx.conn,
        error: crate::shared::escape::sanitize(&e.error).into_owned(),
        fix: format!(
            "allow the channel for this user (ACL SETUSER <user> +subscribe &{}), or pass \
             --no-azure-events; the watch of push notifications goes on",
            azure::CHANNEL
        ),
    })
}

/// A stable key for a message's bytes, to know a copy on another connection.
fn key_of(payload: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    payload.hash(&mut h);
    h.finish()
}

impl Timeline {
    /// A message on `AzureRedisEvents`: its line, and (the first time it is seen) its event.
    pub(super) fn azure(&mut self, step: &mut Step, cx: Ctx, record: FrameRecord, payload: &[u8]) {
        let parsed = azure::parse(payload);
        let key = key_of(payload);
        let mut copy_of = None;
        let mut rel = self.rel_for(cx.conn, cx.now);
        if self.azure_keys.insert(key) {
            if let Some(kind) = parsed.kind {
                step.notifications += 1;
                let i = self.azure_event(&cx, kind, &parsed);
                self.azure_keys.set_event(key, i);
                if let Some(r) = self.azure_window(&cx, kind, i) {
                    rel = Some(r);
                }
            }
        } else if let Some(first) = self
            .azure_keys
            .event(&key)
            .and_then(|i| self.events.get_mut(i))
        {
            first.row.copies += 1;
            if first.conn != cx.conn {
                copy_of = Some(CopyOf {
                    conn: first.conn,
                    after_ms: (cx.now.saturating_duration_since(first.at).as_secs_f64() * 1e6)
                        .round()
                        / 1e3,
                });
            }
        }
        if let Some(c) = self.conns.get_mut(&cx.conn) {
            c.totals_notifications += 1;
        }
        let starts_in_s = parsed.start_unix_ms.map(|ms| self.starts_in(ms));
        step.lines.push(WatchLine::AzureEvent(line::AzureEvent {
            v: SCHEMA_VERSION,
            t: cx.t,
            at: cx.at,
            conn: cx.conn,
            rel,
            frame: record,
            reaction: parsed.reference_reaction(),
            event: parsed,
            starts_in_s,
            copy_of,
        }));
    }

    /// Seconds from the time shown (to the microsecond, as the line's `at` is written, so a
    /// replay computes the same) to a start time in Unix milliseconds.
    fn starts_in(&self, start_ms: i64) -> f64 {
        let now_us = self
            .shown
            .1
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        secs_f((start_ms * 1000 - now_us) as f64 / 1e6)
    }

    /// A new Azure event's summary row. Its window is the time to its announced start.
    fn azure_event(&mut self, cx: &Ctx, kind: AzureKind, e: &azure::AzureEvent) -> usize {
        let i = self.events.len();
        // In scenario seconds, as every offset after an event is.
        let window_s = e.start_unix_ms.map(|ms| {
            let real = std::time::Duration::from_secs_f64(self.starts_in(ms).max(0.0));
            self.clock.scenario_secs(real).round() as i64
        });
        self.events.push(Event {
            kind: Announced::Azure(kind),
            seq: None,
            at: cx.now,
            row: EventRow {
                window_s,
                ..EventRow::new(kind.wire_name(), None, cx.t)
            },
            moved_s: None,
            stale: false,
            unresolved: false,
            verdict_done: false,
            conn: cx.conn,
        });
        i
    }

    /// Starting opens the window; Start does too unless a Starting is open (the close then
    /// stays timed from the first warning); an ending event is the outcome of every Azure row
    /// still without one, and closes the open window.
    fn azure_window(
        &mut self,
        cx: &Ctx,
        kind: AzureKind,
        i: usize,
    ) -> Option<crate::observe::record::Rel> {
        let open = self.events.rposition(|e| {
            matches!(e.kind, Announced::Azure(k) if k.opens_window())
                && e.row.closed_by_notification_s.is_none()
        });
        if kind.opens_window() && (kind == AzureKind::Starting || open.is_none()) {
            self.anchor = Some(i);
            return self.rel_to(Some(i), cx.now);
        }
        if !kind.closes_window() {
            return None;
        }
        // The ending is the outcome of every warning before it (Scheduled too, which opens no
        // window) and its time is each one's `done`: a row that says "then FailoverComplete"
        // also says when.
        let now = cx.now;
        let clock = &self.clock;
        let span = |at| secs_f(clock.scenario_secs(now.saturating_duration_since(at)));
        for e in self.events.iter_mut() {
            if matches!(e.kind, Announced::Azure(k) if !k.closes_window() && !k.opens_window())
                && e.row.outcome.is_none()
            {
                e.row.outcome = Some(kind.wire_name().to_string());
                e.row.closed_by_notification_s = Some(span(e.at));
            }
            if matches!(e.kind, Announced::Azure(k) if k.opens_window()) && e.row.outcome.is_none()
            {
                e.row.outcome = Some(kind.wire_name().to_string());
            }
        }
        open?;
        // Every warning still open ends here; the lines stay relative to the first of them.
        let mut first = None;
        for (j, e) in self.events.iter_mut().enumerate() {
            if matches!(e.kind, Announced::Azure(k) if k.opens_window())
                && e.row.closed_by_notification_s.is_none()
            {
                e.row.closed_by_notification_s = Some(span(e.at));
                first = first.or(Some(j));
            }
        }
        let first = first.map(|j| self.events.retired() as usize + j);
        self.rel_to(first.or(self.anchor), cx.now)
    }
}

/// The bound on messages remembered to recognise a copy.
pub(super) type AzureKeys = kept::RecentKeys<u64>;

#[cfg(test)]
mod tests {
    use super::names_the_channel;
    use crate::observe::record::Raw;

    #[test]
    fn the_look_for_the_channel_finds_it_anywhere_and_nothing_else() {
        let bytes = |b: &[u8]| Raw::Bytes(bytes::Bytes::copy_from_slice(b));
        let message = b">3\r\n$7\r\nmessage\r\n$16\r\nAzureRedisEvents\r\n$2\r\n{}\r\n";
        assert!(names_the_channel(&bytes(message)));
        assert!(names_the_channel(&bytes(b"AzureRedisEvents")));
        assert!(names_the_channel(&bytes(
            b"AAzureRedisEvent AzureRedisEvents"
        )));
        assert!(names_the_channel(&Raw::Escaped(
            r">3\r\n$7\r\nmessage\r\n$16\r\nAzureRedisEvents\r\n$2\r\n{}\r\n".into()
        )));
        assert!(!names_the_channel(&bytes(b"AzureRedisEvent")));
        assert!(!names_the_channel(&bytes(
            b"AzureRedisEventz AzureRedisEvent"
        )));
        assert!(!names_the_channel(&bytes(
            b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n"
        )));
        assert!(!names_the_channel(&bytes(b"")));
    }

    #[test]
    fn the_look_for_the_channel_agrees_with_a_plain_search() {
        let name = crate::protocol::azure::CHANNEL.as_bytes();
        let pieces: [&[u8]; 6] = [
            b"Azure",
            b"RedisEvents",
            b"s",
            b"\r\n",
            b"AzureRedisEvent",
            name,
        ];
        // Every sequence of up to four pieces, so the name is met whole, split and overlapped.
        let mut held = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<u8>> = held
                .iter()
                .flat_map(|h: &Vec<u8>| pieces.iter().map(move |p| [h.as_slice(), p].concat()))
                .collect();
            held.extend(longer);
        }
        for h in held {
            let plain = h.windows(name.len()).any(|w| w == name);
            assert_eq!(
                names_the_channel(&Raw::Bytes(h.clone().into())),
                plain,
                "{h:?}"
            );
        }
    }
}
