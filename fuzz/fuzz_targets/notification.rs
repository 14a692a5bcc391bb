//! The notification parser on push frames shaped like notifications: a type name (one of the
//! seven in any case and either string form, a pub/sub name, or arbitrary bytes) followed by
//! elements drawn from what servers and other clients' fixtures send (integers, integers in
//! strings, shard-id JSON, slot lists, `host:port` variants, nulls, nested SMIGRATED triplets)
//! and from arbitrary frames. Checked:
//!
//! 1. The encoded push scans back as one frame of exactly its bytes.
//! 2. A push whose type names one of the seven kinds is that notification, whatever the rest
//!    holds (a damaged element costs only that element); any other push is never maintenance.
//! 3. The parse survives the JSON-lines schema unchanged, and `record::reparse` of the escaped
//!    bytes (what `replay --check` does) gives the same parse.
//! 4. Describing it for a person does not panic.

#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use maintwatch::protocol::notification::{classify, Classified, Kind};
use maintwatch::observe::record::{reparse, FrameRecord};
use maintwatch::protocol::resp::{Frame, Scan, Scanner};
use maintwatch::shared::NOTIFICATION_TYPES;

/// Type names beside the seven of `shared::NOTIFICATION_TYPES`: other cases, pub/sub and
/// other pushes, a redirect's name and nothing.
const OTHER_NAMES: &[&str] = &[
    "moving",
    "Failed_Over",
    "message",
    "pmessage",
    "smessage",
    "subscribe",
    "invalidate",
    "MOVED",
    "",
];

const TEXTS: &[&str] = &[
    "[\"27\"]",
    "[\"21\",\"22\"]",
    "[]",
    "[27]",
    "[\"",
    "8892-8991",
    "0-16383",
    "1,5-9,,16383",
    "16384",
    "5-3",
    "-1",
    "127.0.0.1:6379",
    "10.129.228.140:13486",
    "[::1]:7000",
    "::1:7000",
    "?",
    "?:7002",
    ":7002",
    "host:0",
    "host:99999",
    "host:",
    "12",
    "-9223372036854775808",
    "99999999999999999999",
    "",
];

fn text<'a>(u: &mut Unstructured<'a>) -> Result<&'a [u8]> {
    if u.ratio(1, 4)? {
        let n = u.int_in_range(0..=24)?;
        u.bytes(n.min(u.len()))
    } else {
        Ok(u.choose(TEXTS)?.as_bytes())
    }
}

fn element<'a>(u: &mut Unstructured<'a>, depth: u32) -> Result<Frame<'a>> {
    Ok(match u.int_in_range(0..=11)? {
        0 => Frame::Integer(u.arbitrary()?),
        1 => Frame::Integer(u.int_in_range(-2..=20)?),
        2 | 3 => Frame::Blob(text(u)?),
        4 => Frame::Simple(u.choose(TEXTS)?.as_bytes()),
        5 => Frame::Null,
        6 => Frame::Double(u.arbitrary()?),
        7 => Frame::Boolean(u.arbitrary()?),
        8 | 9 if depth < 4 => {
            // SMIGRATED's [[source, target, slots], ...] and the older pair form, or anything.
            let n = u.int_in_range(0..=3)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(element(u, depth + 1)?);
            }
            Frame::Array(items)
        }
        10 => Frame::BlobError(text(u)?),
        _ => Frame::Verbatim {
            format: b"txt",
            text: text(u)?,
        },
    })
}

fn push<'a>(u: &mut Unstructured<'a>) -> Result<(Frame<'a>, Option<&'a str>)> {
    let name: &'a str = match u.ratio(1u8, 2)? {
        true => u.choose(&NOTIFICATION_TYPES)?,
        false => u.choose(OTHER_NAMES)?,
    };
    let mut items = Vec::new();
    let name_frame = match u.int_in_range(0..=7)? {
        0 => Frame::Simple(name.as_bytes()),
        1 => Frame::Blob(text(u)?),
        _ => Frame::Blob(name.as_bytes()),
    };
    let named = match &name_frame {
        Frame::Simple(t) | Frame::Blob(t) => std::str::from_utf8(t).ok(),
        _ => None,
    };
    if !u.ratio(1, 32)? {
        items.push(name_frame);
    }
    let n = u.int_in_range(0..=6)?;
    for _ in 0..n {
        items.push(element(u, 0)?);
    }
    Ok((Frame::Push(items), named))
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok((frame, name)) = push(&mut u) else {
        return;
    };
    let bytes = frame.to_bytes();

    // 1.
    let scanned = match Scanner::default().scan(&bytes) {
        Ok(Scan::Frame(f, n)) => {
            assert_eq!(n, bytes.len());
            f
        }
        other => panic!("an encoded push scanned to {other:?}"),
    };

    // 2.
    let classified = classify(&scanned);
    let first_is_name = matches!(&scanned, Frame::Push(items)
        if items.first().and_then(Frame::as_text).map(|t| std::str::from_utf8(t).ok()) == Some(name));
    let kind = name.and_then(|n| Kind::from_name(n.as_bytes()));
    match (&classified, kind) {
        (Classified::Maintenance(n), Some(k)) if first_is_name => assert_eq!(n.kind, k),
        (Classified::Maintenance(n), _) => {
            let Frame::Push(items) = &scanned else {
                unreachable!()
            };
            let first = items.first().and_then(Frame::as_text).unwrap_or_default();
            assert_eq!(
                Kind::from_name(first),
                Some(n.kind),
                "named by its first element"
            );
        }
        (Classified::OtherPush(_), Some(_)) => assert!(!first_is_name, "{classified:?}"),
        (Classified::OtherPush(_), None) => {}
        (Classified::NotPush, _) => panic!("a push classified as a reply"),
    }

    // 3.
    let json = serde_json::to_string(&classified).expect("serializes");
    let back: Classified = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(back, classified, "the schema round trip changes nothing");
    let record = FrameRecord::new(&scanned, &bytes, 0);
    let line = serde_json::to_string(&record).expect("serializes");
    let record: FrameRecord = serde_json::from_str(&line).expect("deserializes");
    assert_eq!(reparse(&record.raw.escaped()).as_ref(), Ok(&classified));

    // 4.
    let _ = classified.describe();
    if let Classified::Maintenance(n) = &classified {
        let _ = n.describe();
    }
});
