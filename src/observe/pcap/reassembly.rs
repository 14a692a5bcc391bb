//! One direction of a TCP connection put back in order.
//!
//! A capture sees segments as the wire carried them: out of order, retransmitted, overlapping,
//! and sometimes not at all (the capture dropped them). Bytes are handed on strictly in stream
//! order and at most once. A hole that cannot be filled is reported as a gap with its size, and
//! the direction stops there: RESP has no resynchronisation marker, so guessing where the next
//! frame starts could turn a reply's payload into a fake notification. Out-of-order data waiting
//! for a hole is capped; going past the cap is reported as a gap too.

use std::collections::BTreeMap;

/// Out-of-order bytes one direction may hold while waiting for a hole to fill.
pub const MAX_PENDING: usize = 4 << 20;

/// What the reassembler produced for one segment.
#[derive(Debug, PartialEq, Eq)]
pub enum Out {
    /// In-order bytes, starting at this stream offset.
    Data(u64, Vec<u8>),
    /// Bytes `[offset, offset + len)` are missing; nothing after them will be delivered.
    Gap { offset: u64, len: u64, why: GapWhy },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GapWhy {
    /// Later data was buffered past [`MAX_PENDING`] waiting for the hole.
    Overflow,
    /// The stream ended (FIN, RST or end of capture) with the hole unfilled.
    Ended,
}

/// What [`Direction::take`] produced: nothing, the segment's own bytes (borrowed), or owned output.
#[derive(Debug, PartialEq, Eq)]
pub enum Outs<'a> {
    Nothing,
    InOrder(u64, &'a [u8]),
    Owned(Vec<Out>),
}

/// One direction's state.
#[derive(Debug, Default)]
pub struct Direction {
    /// Sequence number of stream offset 0.
    base: Option<u32>,
    /// Stream offset of the next byte to deliver.
    next: u64,
    pending: BTreeMap<u64, Vec<u8>>,
    pending_bytes: usize,
    /// Stream offset where the FIN sits.
    fin_at: Option<u64>,
    /// Set after a gap: nothing more is delivered.
    broken: bool,
    /// Bytes seen after a gap (not parsed).
    pub skipped: u64,
    /// Segments whose bytes had all been delivered already.
    pub duplicates: u64,
}

impl Direction {
    /// A SYN fixes offset 0 at its sequence number plus one.
    pub fn syn(&mut self, seq: u32) {
        if self.base.is_none() {
            self.base = Some(seq.wrapping_add(1));
        }
    }

    pub fn broken(&self) -> bool {
        self.broken
    }

    /// Bytes delivered so far.
    pub fn delivered(&self) -> u64 {
        self.next
    }

    /// Whether everything up to the FIN has been delivered (or the direction gave up).
    pub fn finished(&self) -> bool {
        self.broken || self.fin_at.is_some_and(|f| self.next >= f)
    }

    /// The stream offset of a sequence number, near the next expected byte (wraps handled).
    fn offset(&mut self, seq: u32) -> i64 {
        let base = *self.base.get_or_insert(seq);
        let expected = base.wrapping_add(self.next as u32);
        self.next as i64 + i64::from(seq.wrapping_sub(expected) as i32)
    }

    /// Takes one segment; returns what can be handed on now.
    pub fn segment(&mut self, seq: u32, payload: &[u8], fin: bool) -> Vec<Out> {
        match self.take(seq, payload, fin) {
            Outs::Nothing => Vec::new(),
            Outs::InOrder(at, bytes) => vec![Out::Data(at, bytes.to_vec())],
            Outs::Owned(out) => out,
        }
    }

    /// Takes one segment, lending the payload back when it is simply the next bytes in order
    /// and nothing waits behind it: the usual case, which then costs no allocation and no copy.
    pub fn take<'a>(&mut self, seq: u32, payload: &'a [u8], fin: bool) -> Outs<'a> {
        if payload.is_empty() && !fin {
            return Outs::Nothing;
        }
        let start = self.offset(seq);
        if fin {
            let end = (start + payload.len() as i64).max(0) as u64;
            self.fin_at.get_or_insert(end);
        }
        if payload.is_empty() {
            return Outs::Nothing;
        }
        if self.broken {
            self.skipped += payload.len() as u64;
            return Outs::Nothing;
        }
        let end = start + payload.len() as i64;
        if end <= self.next as i64 {
            self.duplicates += 1;
            return Outs::Nothing;
        }
        // A segment that begins before the next expected byte (a retransmission covering bytes
        // already delivered, or bytes before the first one captured mid-connection) is cut to
        // start exactly there: its new bytes follow on, with no hole in front of them.
        let skip = (self.next as i64 - start).max(0);
        let start = (start + skip) as u64;
        let data = &payload[skip as usize..];
        if start == self.next {
            self.next += data.len() as u64;
            if self.pending.is_empty() {
                return Outs::InOrder(start, data);
            }
            let mut bytes = data.to_vec();
            self.drain_pending(&mut bytes);
            return Outs::Owned(vec![Out::Data(start, bytes)]);
        }
        // Ahead of a hole: keep the longest copy at each offset.
        let keep = self
            .pending
            .get(&start)
            .is_none_or(|v| v.len() < data.len());
        if keep {
            if let Some(old) = self.pending.insert(start, data.to_vec()) {
                self.pending_bytes -= old.len();
            }
            self.pending_bytes += data.len();
        }
        if self.pending_bytes > MAX_PENDING {
            return Outs::Owned(vec![self.give_up(GapWhy::Overflow)]);
        }
        Outs::Nothing
    }

    /// Appends every pending segment that now follows on.
    fn drain_pending(&mut self, bytes: &mut Vec<u8>) {
        while let Some((&at, _)) = self.pending.first_key_value() {
            if at > self.next {
                break;
            }
            let (_, seg) = self.pending.pop_first().expect("a first entry");
            self.pending_bytes -= seg.len();
            let end = at + seg.len() as u64;
            if end > self.next {
                bytes.extend_from_slice(&seg[(self.next - at) as usize..]);
                self.next = end;
            } else {
                self.duplicates += 1;
            }
        }
    }

    /// The stream ended: a hole still open is a gap.
    pub fn end(&mut self) -> Option<Out> {
        if self.broken {
            return None;
        }
        let hole_before_fin = self.fin_at.is_some_and(|f| f > self.next);
        if self.pending.is_empty() && !hole_before_fin {
            return None;
        }
        Some(self.give_up(GapWhy::Ended))
    }

    fn give_up(&mut self, why: GapWhy) -> Out {
        let first = self.pending.keys().next().copied();
        let until = first.or(self.fin_at).unwrap_or(self.next);
        let len = until.saturating_sub(self.next);
        self.skipped += self.pending_bytes as u64;
        self.pending.clear();
        self.pending_bytes = 0;
        self.broken = true;
        Out::Gap {
            offset: self.next,
            len,
            why,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(out: &[Out]) -> Vec<u8> {
        out.iter()
            .flat_map(|o| match o {
                Out::Data(_, d) => d.clone(),
                _ => vec![],
            })
            .collect()
    }

    #[test]
    fn reordered_and_duplicated_segments_come_out_once_in_order() {
        let mut d = Direction::default();
        d.syn(999);
        assert!(data(&d.segment(1005, b"fgh", false)).is_empty());
        assert_eq!(data(&d.segment(1000, b"abcde", false)), b"abcdefgh");
        assert!(d.segment(1000, b"abc", false).is_empty());
        // Overlapping retransmission with new bytes at the end.
        assert_eq!(data(&d.segment(1006, b"ghij", false)), b"ij");
        assert_eq!(d.duplicates, 1);
        assert_eq!(d.end(), None);
    }

    #[test]
    fn a_missing_segment_is_a_gap_with_its_size_and_stops_the_direction() {
        let mut d = Direction::default();
        d.syn(0);
        d.segment(1, b"abc", false);
        d.segment(10, b"xyz", true);
        assert_eq!(
            d.end(),
            Some(Out::Gap {
                offset: 3,
                len: 6,
                why: GapWhy::Ended
            })
        );
        assert!(d.broken());
        assert!(
            d.segment(4, b"defghi", false).is_empty(),
            "never delivered after a gap"
        );
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut d = Direction::default();
        d.syn(u32::MAX - 2);
        assert_eq!(data(&d.segment(u32::MAX - 1, b"ab", false)), b"ab");
        assert_eq!(data(&d.segment(0, b"cd", false)), b"cd");
        assert_eq!(d.delivered(), 4);
    }

    #[test]
    fn out_of_order_buffering_is_capped() {
        let mut d = Direction::default();
        d.syn(0);
        let chunk = vec![b'x'; 1 << 16];
        let mut seq = 100u32;
        let mut gap = None;
        for _ in 0..(MAX_PENDING / chunk.len() + 2) {
            for o in d.segment(seq, &chunk, false) {
                gap = Some(o);
            }
            seq += chunk.len() as u32;
        }
        assert_eq!(
            gap,
            Some(Out::Gap {
                offset: 0,
                len: 99,
                why: GapWhy::Overflow
            })
        );
    }

    #[test]
    fn a_retransmission_from_before_the_first_captured_byte_follows_on() {
        // Captured mid-connection: no SYN, the first segment fixes offset 0.
        let mut d = Direction::default();
        assert_eq!(data(&d.segment(1000, b"abc", false)), b"abc");
        // The sender retransmits from 7 bytes before it, with new bytes at the end.
        assert_eq!(data(&d.segment(993, b"1234567abcdef", false)), b"def");
        assert_eq!(d.delivered(), 6);
        assert!(!d.broken());
        assert_eq!(d.end(), None);
        // And one wholly before the first captured byte is a duplicate.
        assert!(d.segment(990, b"xyz", false).is_empty());
        assert_eq!(d.duplicates, 1);
    }

    #[test]
    fn in_order_bytes_are_lent_and_bytes_behind_a_hole_are_joined() {
        let mut d = Direction::default();
        d.syn(99);
        let first = b"abc".to_vec();
        match d.take(100, &first, false) {
            Outs::InOrder(0, bytes) => assert!(std::ptr::eq(bytes, first.as_slice())),
            other => panic!("{other:?}"),
        }
        assert_eq!(d.take(106, b"gh", false), Outs::Nothing);
        assert_eq!(
            d.take(103, b"def", false),
            Outs::Owned(vec![Out::Data(3, b"defgh".to_vec())])
        );
        assert_eq!(d.take(108, b"i", false), Outs::InOrder(8, b"i"));
    }
}
