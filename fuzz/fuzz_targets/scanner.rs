//! The RESP3 scanner on arbitrary bytes, checked against itself:
//!
//! 1. Frames tile the input: each span starts where the previous one ended.
//! 2. A frame's exact bytes, scanned alone, give the same frame and occupy all of them.
//! 3. Every strict prefix of a frame is `Incomplete` with `need` in `(prefix, frame length]`:
//!    never an error, never another frame (so a reader never loses sync on a slow stream).
//! 4. Fed to a `StreamReader` in chunks (the size taken from the first input byte), the stream
//!    yields the same frames at the same offsets, and the same error at the same offset.
//! 5. The canonical encoding of a frame scans back to a frame with the same encoding.
//! 6. Every frame classifies, and the classification survives the JSON-lines schema unchanged
//!    (what `replay --check` relies on).
//!
//! Both the default limits and tiny ones (so that every limit is reached) are exercised.

#![no_main]

use libfuzzer_sys::fuzz_target;
use maintwatch::protocol::notification::{classify, Classified};
use maintwatch::protocol::resp::{ErrorKind, Frame, Limits, RespError, Scan, Scanner, StreamReader};
use std::mem::discriminant;

const TINY: Limits = Limits {
    max_blob: 64,
    max_elements: 16,
    max_depth: 8,
    max_frame: 256,
    // Large enough that no frame under `max_frame` is elided: the round trips below need whole
    // trees.
    max_decoded: 1 << 18,
};

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(first % 64) + 1;
    let limits = if first & 0x80 != 0 {
        TINY
    } else {
        Limits::default()
    };
    check(input, limits, chunk);
});

/// An error's identity for comparison: where, and what kind.
fn key(e: &RespError) -> (u64, std::mem::Discriminant<ErrorKind>) {
    (e.offset, discriminant(&e.kind))
}

fn check(input: &[u8], limits: Limits, chunk: usize) {
    let scanner = Scanner::new(limits);
    let (frames, end, error) = scanner.scan_all(input);
    // A frame over `max_frame` is refused whole or streamed alike (this target found the gap
    // when only incomplete frames were checked), but which error comes first still depends on
    // how much had arrived, so such frames stay out of the prefix and streaming checks.
    let oversized = |len: usize| len as u64 > limits.max_frame;

    let mut pos = 0;
    for (frame, span) in &frames {
        // 1.
        assert_eq!(span.start, pos, "frames tile the input");
        pos = span.end;
        let raw = &input[span.clone()];
        // 2.
        match scanner.scan(raw) {
            Ok(Scan::Frame(again, n)) => {
                assert_eq!(n, raw.len());
                assert_same(&again, frame);
            }
            other => panic!("a frame's own bytes scanned to {other:?}"),
        }
        // 3. (every cut of small frames, a few cuts of large ones)
        let cuts: Vec<usize> = if oversized(raw.len()) {
            Vec::new()
        } else if raw.len() <= 64 {
            (0..raw.len()).collect()
        } else {
            vec![0, 1, raw.len() / 2, raw.len() - 2, raw.len() - 1]
        };
        for cut in cuts {
            match scanner.scan(&raw[..cut]) {
                Ok(Scan::Incomplete { need }) => assert!(
                    need > cut && need <= raw.len(),
                    "cut {cut} of {}: need {need}",
                    raw.len()
                ),
                other => panic!("cut {cut} of a {}-byte frame: {other:?}", raw.len()),
            }
        }
        // 5.
        let canonical = frame.to_bytes();
        match Scanner::new(Limits::default()).scan(&canonical) {
            Ok(Scan::Frame(again, n)) => {
                assert_eq!(n, canonical.len());
                assert_eq!(again.to_bytes(), canonical, "canonical encoding is stable");
            }
            other => panic!("canonical encoding scanned to {other:?}"),
        }
        // 6.
        let classified = classify(frame);
        let json = serde_json::to_string(&classified).expect("serializes");
        let back: Classified = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, classified, "the schema round trip changes nothing");
        let _ = classified.describe();
    }
    assert_eq!(pos, end);
    if error.is_none() && end < input.len() {
        // What is left is a frame still arriving.
        assert!(matches!(
            scanner.scan(&input[end..]),
            Ok(Scan::Incomplete { .. })
        ));
    }

    // 4.
    let mut reader = StreamReader::new(limits);
    let mut streamed: Vec<(Vec<u8>, u64)> = Vec::new();
    let mut stream_error = None;
    for piece in input.chunks(chunk) {
        reader.extend(piece);
        if let Err(e) = reader.drain(|_, raw, offset| streamed.push((raw.to_vec(), offset))) {
            stream_error = Some(e);
            break;
        }
    }
    let whole: Vec<(Vec<u8>, u64)> = frames
        .iter()
        .map(|(_, span)| (input[span.clone()].to_vec(), span.start as u64))
        .collect();
    if let Some(i) = whole.iter().position(|(raw, _)| oversized(raw.len())) {
        assert!(
            whole[..i].starts_with(&streamed) || streamed.starts_with(&whole[..i]),
            "chunks of {chunk} give the same frames before an oversized one"
        );
        return;
    }
    assert_eq!(streamed, whole, "chunks of {chunk} give the same frames");
    let too_large = |e: &Option<RespError>| {
        matches!(
            e,
            Some(RespError {
                kind: ErrorKind::FrameTooLarge { .. },
                ..
            })
        )
    };
    if too_large(&stream_error) || too_large(&error) {
        // Over `max_frame`, which error is met first depends on how much had arrived: a header
        // line longer than the limit is "too large" while it streams in and a bad number when
        // seen whole. Either way the frame is refused, at the same frame.
        assert_eq!(stream_error.is_some(), error.is_some());
    } else {
        assert_eq!(
            stream_error.as_ref().map(key),
            error.as_ref().map(key),
            "chunks of {chunk} give the same error ({stream_error:?} / {error:?})"
        );
    }
}

/// Frame equality where NaN equals NaN (a double is compared by its bits).
fn assert_same(a: &Frame<'_>, b: &Frame<'_>) {
    match (a, b) {
        (Frame::Double(x), Frame::Double(y)) => assert_eq!(x.to_bits(), y.to_bits()),
        _ => assert_eq!(a.to_bytes(), b.to_bytes()),
    }
    if !has_double(a) {
        assert_eq!(a, b);
    }
}

fn has_double(f: &Frame<'_>) -> bool {
    match f {
        Frame::Double(_) => true,
        Frame::Array(v) | Frame::Set(v) | Frame::Push(v) => v.iter().any(has_double),
        Frame::Map(p) => p.iter().any(|(k, v)| has_double(k) || has_double(v)),
        Frame::Attributed { attributes, value } => {
            has_double(value)
                || attributes
                    .iter()
                    .any(|(k, v)| has_double(k) || has_double(v))
        }
        _ => false,
    }
}
