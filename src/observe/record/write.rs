//! JSON lines written by hand for the lines a flood is made of, byte for byte what serde_json
//! writes for them.
//!
//! Under a push flood nearly every line is a `push` of a pub/sub message, and going through
//! serde's derived `Serialize` for it (an internally tagged enum, nested structs, every string
//! scanned for escapes) was the largest cost of `watch --json`. [`write_line`] appends each line
//! once to a reused buffer: the `push` and `ping` lines field by field here, everything else
//! (rare lines, and pushes that parsed as maintenance notifications, whose parse has many
//! optional parts) through serde as before. Floats go through serde_json (but for the times,
//! written from their microseconds), unsigned integers are written as their decimal digits,
//! which is all serde writes for them; the property tests in this module compare the two for
//! every line type, so the text cannot drift from serde's.
//!
//! The frame's `raw` text is the output of [`crate::shared::escape::escape`]: printable ASCII only, so
//! the only characters JSON must escape in it are `\` and `"`. It is written directly as a JSON
//! string, one pass, without serde scanning it again for control characters.
//!
//! This is the schema's writer, so it lives with the schema and with its reader (`fast`): the two
//! are held to the same bytes.

use super::{line, CopyOf, FrameRecord, Label, Raw, Rel, WatchLine};
use crate::protocol::notification::{Classified, OtherPush};
use std::io;

/// Appends `line` and a newline to `out`, as serde_json would write them.
pub fn write_line(out: &mut Vec<u8>, line: &WatchLine) -> io::Result<()> {
    write_object(out, line)?;
    out.push(b'\n');
    Ok(())
}

/// Appends `line` as one JSON object, without the newline (a fleet's label goes in after).
pub fn write_object(out: &mut Vec<u8>, line: &WatchLine) -> io::Result<()> {
    match line {
        WatchLine::Push(p) if !matches!(p.frame.parsed, Classified::Maintenance(_)) => push(out, p),
        WatchLine::Ping(p) => ping(out, p),
        other => Ok(serde_json::to_writer(&mut *out, other)?),
    }
}

/// Appends any other line (`decode`'s, `pcap`'s own) as one JSON object, without the newline:
/// through serde, as rare lines are.
pub fn write_value(out: &mut Vec<u8>, value: &impl serde::Serialize) -> io::Result<()> {
    Ok(serde_json::to_writer(out, value)?)
}

/// Writes `line` as one JSON object (no newline) into `out`; with `ep`, the endpoint's label
/// goes right after the `type`, so every line still starts with `{"type":`.
pub fn write_json(out: &mut Vec<u8>, ep: Option<&str>, line: &WatchLine) -> serde_json::Result<()> {
    let start = out.len();
    write_object(out, line).map_err(serde_json::Error::io)?;
    if let Some(ep) = ep {
        // The tag is first and its value a bare snake_case word: the first comma ends it.
        let comma = out[start..]
            .iter()
            .position(|&b| b == b',')
            .map_or(out.len(), |i| start + i + 1);
        let mut field = b"\"ep\":".to_vec();
        serde_json::to_writer(&mut field, ep)?;
        field.push(b',');
        out.splice(comma..comma, field);
    }
    Ok(())
}

/// `{"type":…,"v":…,"t":…,"at":…,"conn":…`: how every line about a connection starts.
fn head(out: &mut Vec<u8>, start: &[u8], v: u32, t: f64, at: &str, conn: u32) -> io::Result<()> {
    out.extend_from_slice(start);
    unsigned(out, u64::from(v));
    out.extend_from_slice(b",\"t\":");
    seconds(out, t)?;
    out.extend_from_slice(b",\"at\":");
    string(out, at)?;
    out.extend_from_slice(b",\"conn\":");
    unsigned(out, u64::from(conn));
    Ok(())
}

fn push(out: &mut Vec<u8>, p: &line::Push) -> io::Result<()> {
    head(out, b"{\"type\":\"push\",\"v\":", p.v, p.t, &p.at, p.conn)?;
    out.extend_from_slice(b",\"labels\":[");
    for (i, label) in p.labels.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(match label {
            Label::CatchUp => b"\"catch_up\"".as_slice(),
            Label::Resent => b"\"resent\"",
            Label::WithOptIn => b"\"with_opt_in\"",
        });
    }
    out.extend_from_slice(b"],\"rel\":");
    rel(out, p.rel.as_ref())?;
    out.extend_from_slice(b",\"frame\":");
    frame(out, &p.frame)?;
    out.extend_from_slice(b",\"copy_of\":");
    copy_of(out, p.copy_of.as_ref())?;
    out.extend_from_slice(b",\"sources_ours\":[");
    for (i, s) in p.sources_ours.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, s)?;
    }
    out.extend_from_slice(b"]}");
    Ok(())
}

fn ping(out: &mut Vec<u8>, p: &line::Ping) -> io::Result<()> {
    head(out, b"{\"type\":\"ping\",\"v\":", p.v, p.t, &p.at, p.conn)?;
    out.extend_from_slice(b",\"latency_ms\":");
    match p.latency_ms {
        Some(ms) => number(out, ms)?,
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"error\":");
    optional_string(out, p.error.as_deref())?;
    out.extend_from_slice(b",\"window\":");
    optional_string(out, p.window.as_deref())?;
    out.push(b'}');
    Ok(())
}

/// A frame whose parse is not a maintenance notification (the caller checked).
fn frame(out: &mut Vec<u8>, f: &FrameRecord) -> io::Result<()> {
    out.extend_from_slice(b"{\"offset\":");
    unsigned(out, f.offset);
    out.extend_from_slice(b",\"len\":");
    unsigned(out, f.len as u64);
    out.extend_from_slice(b",\"raw\":");
    match &f.raw {
        Raw::Bytes(bytes) => raw_bytes(out, bytes),
        Raw::Escaped(text) => escaped_raw(out, text)?,
    }
    out.extend_from_slice(b",\"parsed\":");
    match &f.parsed {
        Classified::OtherPush(p) => other_push(out, p)?,
        Classified::NotPush => out.extend_from_slice(b"{\"class\":\"not_push\"}"),
        maintenance @ Classified::Maintenance(_) => serde_json::to_writer(&mut *out, maintenance)?,
    }
    out.push(b'}');
    Ok(())
}

fn other_push(out: &mut Vec<u8>, p: &OtherPush) -> io::Result<()> {
    out.extend_from_slice(b"{\"class\":\"other_push\",\"name\":");
    optional_string(out, p.name.as_deref())?;
    out.extend_from_slice(b",\"elements\":");
    unsigned(out, p.elements as u64);
    out.extend_from_slice(if p.known {
        b",\"known\":true}".as_slice()
    } else {
        b",\"known\":false}"
    });
    Ok(())
}

fn rel(out: &mut Vec<u8>, r: Option<&Rel>) -> io::Result<()> {
    let Some(r) = r else {
        out.extend_from_slice(b"null");
        return Ok(());
    };
    out.extend_from_slice(b"{\"to\":");
    string(out, &r.to)?;
    out.extend_from_slice(b",\"s\":");
    number(out, r.s)?;
    out.push(b'}');
    Ok(())
}

fn copy_of(out: &mut Vec<u8>, c: Option<&CopyOf>) -> io::Result<()> {
    let Some(c) = c else {
        out.extend_from_slice(b"null");
        return Ok(());
    };
    out.extend_from_slice(b"{\"conn\":");
    unsigned(out, u64::from(c.conn));
    out.extend_from_slice(b",\"after_ms\":");
    number(out, c.after_ms)?;
    out.push(b'}');
    Ok(())
}

/// An unsigned integer as serde_json writes it: its decimal digits (serde's own way there,
/// through its serializer and `io::Write`, cost more than the digits; the property tests
/// compare every line with serde's).
fn unsigned(out: &mut Vec<u8>, n: u64) {
    decimal(out, n);
}

/// A number, as serde_json writes it (integers, and floats in its shortest form; a non-finite
/// float is `null`).
fn number<T: serde::Serialize>(out: &mut Vec<u8>, n: T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &n).map_err(io::Error::from)
}

/// A time in seconds as serde_json writes it. The timeline rounds times to the microsecond, and
/// such a value from a millisecond to a thousand million seconds is written here from its
/// microseconds as integers: its shortest form is that decimal (any shorter one is at least a
/// microsecond away, far more than the float's own spacing there), in the plain notation serde
/// uses for that range. Anything else goes to serde.
fn seconds(out: &mut Vec<u8>, t: f64) -> io::Result<()> {
    if !(1e-3..1e9).contains(&t) {
        return number(out, t);
    }
    let micros = (t * 1e6).round() as u64;
    if micros as f64 / 1e6 != t {
        return number(out, t);
    }
    let (whole, fraction) = (micros / 1_000_000, micros % 1_000_000);
    decimal(out, whole);
    out.push(b'.');
    let mut digits = [b'0'; 6];
    let mut rest = fraction;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    // At least one fraction digit ("2.0"), no trailing zeros after it.
    let kept = digits.iter().rposition(|&d| d != b'0').map_or(1, |i| i + 1);
    out.extend_from_slice(&digits[..kept]);
    Ok(())
}

/// The decimal digits of `n`. Most numbers of a line (`v`, `conn`, a frame's length and
/// element count) have one or two digits: those take no loop.
fn decimal(out: &mut Vec<u8>, mut n: u64) {
    if n < 10 {
        out.push(b'0' + n as u8);
        return;
    }
    if n < 100 {
        out.extend_from_slice(&[b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
        return;
    }
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Any string, escaped as serde_json escapes it. Text with nothing to escape (timestamps, push
/// names, addresses: nearly all of it) is copied as it is; anything else, which a server may
/// have chosen, takes serde's own escaping.
fn string(out: &mut Vec<u8>, s: &str) -> io::Result<()> {
    if !to_escape(s.as_bytes()) {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return Ok(());
    }
    serde_json::to_writer(&mut *out, s).map_err(io::Error::from)
}

/// Whether JSON escapes any byte of `s` (a control character, `"` or `\\`). Eight bytes are
/// looked at together, as one word, with no branch until the end: the `at` field and a push's
/// name are most of the strings of a flood, and a byte at a time (with or without an early exit)
/// was four instructions a byte.
fn to_escape(s: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    /// The high bit of a byte is set where a byte of `w` is below `n` (at 0x80 or below): exact,
    /// as a yes or no for the word, since only a byte below `n` starts a borrow.
    fn below(w: u64, n: u64) -> u64 {
        w.wrapping_sub(ONES * n) & !w & HIGH
    }
    let word = |w: u64| below(w, 0x20) | below(w ^ (ONES * 0x22), 1) | below(w ^ (ONES * 0x5c), 1);
    let load = |at: usize| u64::from_ne_bytes(s[at..at + 8].try_into().unwrap_or([0; 8]));
    if s.len() < 8 {
        return s.iter().fold(false, |any, &b| {
            any | (b < 0x20) | (b == b'"') | (b == b'\\')
        });
    }
    let mut found = 0;
    let mut at = 0;
    while at + 8 <= s.len() {
        found |= word(load(at));
        at += 8;
    }
    // The last eight bytes, which cover what the words left (looked at twice is harmless).
    found |= word(load(s.len() - 8));
    found != 0
}

fn optional_string(out: &mut Vec<u8>, s: Option<&str>) -> io::Result<()> {
    match s {
        Some(s) => string(out, s),
        None => {
            out.extend_from_slice(b"null");
            Ok(())
        }
    }
}

/// The escaped raw bytes as a JSON string. What [`crate::shared::escape::escape`] makes is printable
/// ASCII, where JSON escapes only `\` and `"`; anything else (a record not made by `escape`,
/// which replay could hold) takes serde's general path.
fn escaped_raw(out: &mut Vec<u8>, raw: &str) -> io::Result<()> {
    let bytes = raw.as_bytes();
    if !bytes.iter().all(|b| (0x20..=0x7e).contains(b)) {
        return string(out, raw);
    }
    out.reserve(bytes.len() + bytes.len() / 4 + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\\' || b == b'"' {
            out.extend_from_slice(&bytes[start..i]);
            out.push(b'\\');
            start = i;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
    Ok(())
}

/// Live bytes as the JSON string of their escaped text, in one pass: what `escape` would make,
/// with JSON's own escapes (`\\` for each backslash, `\"`) applied on the way.
fn raw_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    crate::shared::escape::escape_in_json(out, bytes);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::record::{line, CopyOf, FrameRecord, Label, Raw, Rel, WatchLine};
    use crate::protocol::notification::{Classified, OtherPush};
    use proptest::prelude::*;

    fn by_hand(line: &WatchLine) -> String {
        let mut out = Vec::new();
        write_line(&mut out, line).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn by_serde(line: &WatchLine) -> String {
        serde_json::to_string(line).unwrap() + "\n"
    }

    fn any_text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ -~]{0,12}",
            any::<String>(),
            Just(String::new()),
            Just("\\\"\u{7f}\u{1b}\u{202e}\n\t".to_string()),
        ]
    }

    fn any_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>(),
            0.0..1e6f64,
            Just(0.0),
            Just(-0.0),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(1e21),
            Just(1.5e-7),
        ]
    }

    fn any_parsed() -> impl Strategy<Value = Classified> {
        prop_oneof![
            Just(Classified::NotPush),
            (
                proptest::option::of(any_text()),
                any::<usize>(),
                any::<bool>()
            )
                .prop_map(|(name, elements, known)| Classified::OtherPush(OtherPush {
                    name: name.map(Into::into),
                    elements,
                    known
                })),
            // A real notification's parse (with a note): a push of one goes through serde.
            Just(
                crate::observe::record::reparse(&crate::shared::escape::escape(
                    b">4\r\n$6\r\nMOVING\r\n:7\r\n:15\r\n$14\r\n10.0.0.1:6379\x01\r\n",
                ))
                .unwrap()
            ),
        ]
    }

    fn any_push() -> impl Strategy<Value = WatchLine> {
        (
            (any::<u32>(), any_f64(), any_text(), any::<u32>()),
            proptest::collection::vec(
                prop_oneof![
                    Just(Label::CatchUp),
                    Just(Label::Resent),
                    Just(Label::WithOptIn)
                ],
                0..3,
            ),
            proptest::option::of((any_text(), any_f64()).prop_map(|(to, s)| Rel { to, s })),
            (
                any::<u64>(),
                proptest::collection::vec(any::<u8>(), 0..64),
                any_parsed(),
            ),
            proptest::option::of(
                (any::<u32>(), any_f64()).prop_map(|(conn, after_ms)| CopyOf { conn, after_ms }),
            ),
            proptest::collection::vec(any_text(), 0..3),
            0..3u8,
        )
            .prop_map(
                |((v, t, at, conn), labels, rel, (offset, bytes, parsed), copy_of, ours, kind)| {
                    // Live bytes (escaped while written), or recorded text: normally escape's
                    // output, or an odd one (a hand-edited capture) that takes the general path
                    // and must still match.
                    let raw = match kind {
                        0 => Raw::Bytes(bytes.clone().into()),
                        1 => Raw::Escaped(crate::shared::escape::escape(&bytes)),
                        _ => Raw::Escaped(String::from_utf8_lossy(&bytes).into_owned()),
                    };
                    WatchLine::Push(line::Push {
                        v,
                        t,
                        at,
                        conn,
                        labels,
                        rel,
                        frame: FrameRecord {
                            offset,
                            len: bytes.len(),
                            raw,
                            parsed,
                        },
                        copy_of,
                        sources_ours: ours,
                    })
                },
            )
    }

    fn any_ping() -> impl Strategy<Value = WatchLine> {
        (
            (any::<u32>(), any_f64(), any_text(), any::<u32>()),
            proptest::option::of(any_f64()),
            proptest::option::of(any_text()),
            proptest::option::of(any_text()),
        )
            .prop_map(|((v, t, at, conn), latency_ms, error, window)| {
                WatchLine::Ping(line::Ping {
                    v,
                    t,
                    at,
                    conn,
                    latency_ms,
                    error,
                    window,
                })
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn times_are_written_as_serde_writes_them(
            micros in prop_oneof![0..2_000_000u64, 0..1_000_000_000_000_000u64, any::<u64>()],
            off in prop_oneof![Just(0.0), any::<f64>()],
        ) {
            // A timeline's times (whole microseconds), any float near or far from one, and the
            // edges of the range written by hand.
            let edges = [1e-3, 0.0015, 1.0, 2.5, 999_999_999.999_999, 123_456.000_001, 1e9];
            for t in [micros as f64 / 1e6, micros as f64 / 1e6 + off, off].into_iter().chain(edges) {
                let mut hand = Vec::new();
                seconds(&mut hand, t).unwrap();
                prop_assert_eq!(String::from_utf8(hand).unwrap(), serde_json::to_string(&t).unwrap());
            }
        }

        #[test]
        fn push_lines_are_byte_identical_to_serde(line in any_push()) {
            prop_assert_eq!(by_hand(&line), by_serde(&line));
        }

        #[test]
        fn push_lines_read_back_as_serde_reads_them(line in any_push()) {
            // `replay` reads push lines by hand (record::fast): what it reads must be what
            // serde reads, and write back to the same bytes as that (serde's own reading of a
            // float in exponent notation is not always exact: that line is serde's anyway).
            let written = by_hand(&line);
            let mut text = written.trim_end_matches('\n').as_bytes().to_vec();
            let by_serde = serde_json::from_slice::<WatchLine>(&text);
            match (WatchLine::from_json(&mut text), by_serde) {
                (Ok(ours), Ok(theirs)) => {
                    prop_assert_eq!(&ours, &theirs);
                    prop_assert_eq!(by_hand(&ours), by_hand(&theirs));
                }
                (Err(_), Err(_)) => {}
                (ours, theirs) => prop_assert!(false, "{:?} vs serde {:?}", ours, theirs),
            }
        }

        #[test]
        fn ping_lines_are_byte_identical_to_serde(line in any_ping()) {
            prop_assert_eq!(by_hand(&line), by_serde(&line));
        }
    }

    /// The word-at-a-time check says what a byte-at-a-time one says: every byte value at every
    /// place of strings of 1 to 24 bytes (the words and the remainder), among plain text and
    /// among other bytes that need escaping or sit at the edges of the checks' ranges.
    #[test]
    fn the_check_for_bytes_to_escape_looks_at_every_byte() {
        let by_byte = |s: &[u8]| s.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
        let mut checked = 0;
        for len in 1..=24 {
            for background in [b'a', 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xff, 0x1f] {
                for at in 0..len {
                    for b in 0..=255u8 {
                        let mut s = vec![background; len];
                        s[at] = b;
                        assert_eq!(to_escape(&s), by_byte(&s), "{s:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 700_000);
    }

    proptest! {
        #[test]
        fn the_check_for_bytes_to_escape_agrees_on_any_bytes(s in proptest::collection::vec(any::<u8>(), 0..40)) {
            prop_assert_eq!(to_escape(&s), s.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\'));
        }
    }

    /// Every line type, as the committed captures and the simulator write them, comes out as
    /// serde writes it (the types not written by hand go through serde: this pins that too).
    #[test]
    fn every_line_type_of_the_captures_is_byte_identical_to_serde() {
        let captures = [
            include_str!("../../../tests/fixtures/captures/oss-cluster.jsonl"),
            include_str!("../../../tests/fixtures/captures/shard-migration.jsonl"),
            include_str!("../../../tests/fixtures/captures/single-proxy.jsonl"),
            // The two types no committed capture holds.
            r#"{"type":"malformed","v":1,"t":0.5,"at":"2026-11-30T20:49:23.448800Z","conn":2,"offset":17,"error":"bad \"tag\" \u001b"}"#,
            r#"{"type":"ping","v":1,"t":0.25,"at":"2026-11-30T20:49:23.448800Z","conn":1,"latency_ms":0.173,"error":null,"window":"MOVING seq 2"}"#,
        ];
        let mut seen = std::collections::BTreeSet::new();
        for text in captures.iter().flat_map(|c| c.lines()) {
            let line: WatchLine = serde_json::from_str(text).unwrap();
            seen.insert(serde_json::to_value(&line).unwrap()["type"].to_string());
            assert_eq!(by_hand(&line), by_serde(&line));
        }
        assert_eq!(seen.len(), 14, "{seen:?}");
    }
}

#[cfg(test)]
mod fleet_tests {
    use super::*;
    use crate::observe::record::TaggedLine;

    #[test]
    fn a_fleet_line_carries_its_label_after_the_type_and_reads_back() {
        let text = r#"{"type":"verdict","v":1,"t":1.5,"at":"x","conn":1,"event":"MOVING seq 0","text":"x","margin_s":6.1}"#;
        let line: WatchLine = serde_json::from_str(text).unwrap();
        let mut out = Vec::new();
        write_json(&mut out, Some("db\"1"), &line).unwrap();
        let written = String::from_utf8(out).unwrap();
        assert!(
            written.starts_with(r#"{"type":"verdict","ep":"db\"1","v":1,"#),
            "{written}"
        );
        let back: TaggedLine = serde_json::from_str(&written).unwrap();
        assert_eq!((back.ep.as_str(), &back.line), ("db\"1", &line));
        // Without a label the line is written as it always was.
        let mut plain = Vec::new();
        write_json(&mut plain, None, &line).unwrap();
        assert_eq!(plain, text.as_bytes());
        // The payload still refuses a field it does not know.
        let extra = written.replace(r#""conn":1,"#, r#""conn":1,"extra":true,"#);
        let err = serde_json::from_str::<TaggedLine>(&extra).unwrap_err();
        assert!(err.to_string().contains("extra"), "{err}");
    }
}
