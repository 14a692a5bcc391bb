//! Property tests of the RESP3 scanner (`maintwatch::protocol::resp`).
//!
//! - (a) A generator of arbitrary *valid* RESP3 frames (every type: attributes, verbatim, big
//!   numbers, doubles with inf/nan, maps, sets, pushes, nesting), encoded canonically, decodes to
//!   the same frames and byte spans however the bytes are split into the chunks fed to
//!   `StreamReader`; every strict prefix is `Incomplete` with a sound `need`.
//! - (b) The scanner agrees with the `redis-protocol` crate, used as an oracle, on every valid
//!   frame generated: same structure and same number of bytes consumed.
//! - (c) Fuzz-style tests (their names start with `fuzz_`): arbitrary bytes, valid frames with
//!   random mutations and truncations, and headers declaring huge sizes never panic, report
//!   error offsets inside the input, `need` beyond it, and allocate no more than a bound
//!   proportional to the input (checked with a counting allocator in this test binary).
//!
//! Case counts are small by default so the file runs in seconds in debug builds; set
//! `PROPTEST_CASES` for a long run (`scripts/fuzz/proptest-long.sh` runs the fuzz tests with 1,000,000).

use maintwatch::protocol::resp::{
    ErrorKind, FlatScan, Frame, Kind, Limits, RespError, Scan, Scanner, StreamReader, Value,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use redis_protocol::resp3::types::{OwnedFrame, VerbatimStringFormat};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

// ---------------------------------------------------------------------------------------------
// A counting allocator: per-thread live bytes and peak, so a test can bound what one call
// allocated while other tests run on other threads.

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| {
            if now > peak.get() {
                peak.set(now)
            }
        });
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the most bytes it had allocated at once (on this
/// thread, beyond what was live before it started; the result's own allocations included).
fn peak_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let out = f();
    let peak = PEAK.with(Cell::get);
    (out, (peak - before).max(0) as usize)
}

/// What scanning `len` bytes may allocate at most, by the scanner's design: frames borrow their
/// text, so the only allocations are one `Vec` per aggregate. A finished aggregate's `Vec` holds
/// its elements (each at least 3 bytes of input), and one still open on the path being scanned
/// reserves at most what the remaining bytes could hold; error messages quote at most the input.
fn allocation_bound(len: usize) -> usize {
    let pair = std::mem::size_of::<(Frame<'static>, Frame<'static>)>();
    let elements = len / 3 + 2;
    let open_levels = (len / 4 + 1).min(Limits::default().max_depth + 1);
    2 * elements * pair + open_levels * elements.min(1024) * pair + 16 * len + 4096
}

// ---------------------------------------------------------------------------------------------
// Generated values, their canonical encoding, and a comparable form.

/// An owned RESP3 value: what the generator produces.
#[derive(Debug, Clone)]
enum V {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Blob(Vec<u8>),
    BlobError(Vec<u8>),
    Verbatim([u8; 3], Vec<u8>),
    Null,
    Double(f64),
    Bool(bool),
    /// The digits with an optional leading `-`.
    Big(Vec<u8>),
    Array(Vec<V>),
    Map(Vec<(V, V)>),
    Set(Vec<V>),
    Push(Vec<V>),
    Attr(Vec<(V, V)>, Box<V>),
}

fn put_line(out: &mut Vec<u8>, tag: u8, text: &[u8]) {
    out.push(tag);
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

fn put_blob(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    put_line(out, tag, body.len().to_string().as_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

/// The canonical RESP3 spelling of a double (what `Frame::encode` writes).
fn double_text(d: f64) -> String {
    if d.is_nan() {
        "nan".into()
    } else if d == f64::INFINITY {
        "inf".into()
    } else if d == f64::NEG_INFINITY {
        "-inf".into()
    } else {
        format!("{d:?}")
    }
}

/// Encodes a value canonically, independently of the project's encoder.
fn encode_into(v: &V, out: &mut Vec<u8>) {
    match v {
        V::Simple(s) => put_line(out, b'+', s),
        V::Error(s) => put_line(out, b'-', s),
        V::Int(n) => put_line(out, b':', n.to_string().as_bytes()),
        V::Blob(s) => put_blob(out, b'$', s),
        V::BlobError(s) => put_blob(out, b'!', s),
        V::Verbatim(format, text) => put_blob(out, b'=', &[&format[..], b":", text].concat()),
        V::Null => out.extend_from_slice(b"_\r\n"),
        V::Double(d) => put_line(out, b',', double_text(*d).as_bytes()),
        V::Bool(b) => put_line(out, b'#', if *b { b"t" } else { b"f" }),
        V::Big(s) => put_line(out, b'(', s),
        V::Array(items) | V::Set(items) | V::Push(items) => {
            let tag = match v {
                V::Array(_) => b'*',
                V::Set(_) => b'~',
                _ => b'>',
            };
            put_line(out, tag, items.len().to_string().as_bytes());
            for item in items {
                encode_into(item, out);
            }
        }
        V::Map(pairs) => encode_pairs(b'%', pairs, out),
        V::Attr(pairs, value) => {
            encode_pairs(b'|', pairs, out);
            encode_into(value, out);
        }
    }
}

fn encode_pairs(tag: u8, pairs: &[(V, V)], out: &mut Vec<u8>) {
    put_line(out, tag, pairs.len().to_string().as_bytes());
    for (k, v) in pairs {
        encode_into(k, out);
        encode_into(v, out);
    }
}

fn encode(v: &V) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(v, &mut out);
    out
}

/// Encodes several values back to back; returns the bytes and each value's span.
fn encode_all(values: &[V]) -> (Vec<u8>, Vec<std::ops::Range<usize>>) {
    let mut out = Vec::new();
    let mut spans = Vec::new();
    for v in values {
        let start = out.len();
        encode_into(v, &mut out);
        spans.push(start..out.len());
    }
    (out, spans)
}

/// A comparable, ordered form of a frame from any of the three sources (generator, scanner,
/// oracle). Doubles compare by bits with every NaN made one. With `unordered`, map pairs, set
/// members and attributes are sorted, for the oracle, which keeps them in hash containers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum C {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Blob(Vec<u8>),
    BlobError(Vec<u8>),
    Verbatim(Vec<u8>, Vec<u8>),
    Null,
    Double(u64),
    Bool(bool),
    Big(Vec<u8>),
    Array(Vec<C>),
    Map(Vec<(C, C)>),
    Set(Vec<C>),
    Push(Vec<C>),
    Attr(Vec<(C, C)>, Box<C>),
    /// An aggregate cut short by the decode budget: marker, declared elements, the head.
    Elided(u8, u64, Vec<C>),
}

fn dbits(d: f64) -> u64 {
    if d.is_nan() {
        f64::NAN.to_bits()
    } else {
        d.to_bits()
    }
}

fn ordered<T: Ord>(mut items: Vec<T>, unordered: bool) -> Vec<T> {
    if unordered {
        items.sort();
    }
    items
}

fn c_of_v(v: &V, u: bool) -> C {
    let pairs = |p: &[(V, V)]| {
        ordered(
            p.iter()
                .map(|(k, v)| (c_of_v(k, u), c_of_v(v, u)))
                .collect(),
            u,
        )
    };
    match v {
        V::Simple(s) => C::Simple(s.clone()),
        V::Error(s) => C::Error(s.clone()),
        V::Int(n) => C::Int(*n),
        V::Blob(s) => C::Blob(s.clone()),
        V::BlobError(s) => C::BlobError(s.clone()),
        V::Verbatim(f, t) => C::Verbatim(f.to_vec(), t.clone()),
        V::Null => C::Null,
        V::Double(d) => C::Double(dbits(*d)),
        V::Bool(b) => C::Bool(*b),
        V::Big(s) => C::Big(s.clone()),
        V::Array(items) => C::Array(items.iter().map(|i| c_of_v(i, u)).collect()),
        V::Push(items) => C::Push(items.iter().map(|i| c_of_v(i, u)).collect()),
        V::Set(items) => C::Set(ordered(items.iter().map(|i| c_of_v(i, u)).collect(), u)),
        V::Map(p) => C::Map(pairs(p)),
        V::Attr(p, value) => C::Attr(pairs(p), Box::new(c_of_v(value, u))),
    }
}

fn c_of_frame(f: &Frame<'_>, u: bool) -> C {
    let pairs = |p: &[(Frame<'_>, Frame<'_>)]| {
        ordered(
            p.iter()
                .map(|(k, v)| (c_of_frame(k, u), c_of_frame(v, u)))
                .collect(),
            u,
        )
    };
    match f {
        Frame::Simple(s) => C::Simple(s.to_vec()),
        Frame::Error(s) => C::Error(s.to_vec()),
        Frame::Integer(n) => C::Int(*n),
        Frame::Blob(s) => C::Blob(s.to_vec()),
        Frame::BlobError(s) => C::BlobError(s.to_vec()),
        Frame::Verbatim { format, text } => C::Verbatim(format.to_vec(), text.to_vec()),
        Frame::Null => C::Null,
        Frame::Double(d) => C::Double(dbits(*d)),
        Frame::Boolean(b) => C::Bool(*b),
        Frame::BigNumber(s) => C::Big(s.to_vec()),
        Frame::Array(items) => C::Array(items.iter().map(|i| c_of_frame(i, u)).collect()),
        Frame::Push(items) => C::Push(items.iter().map(|i| c_of_frame(i, u)).collect()),
        Frame::Set(items) => C::Set(ordered(items.iter().map(|i| c_of_frame(i, u)).collect(), u)),
        Frame::Map(p) => C::Map(pairs(p)),
        Frame::Attributed { attributes, value } => {
            C::Attr(pairs(attributes), Box::new(c_of_frame(value, u)))
        }
        Frame::Elided {
            tag,
            elements,
            head,
        } => C::Elided(
            *tag,
            *elements,
            head.iter().map(|i| c_of_frame(i, u)).collect(),
        ),
    }
}

/// The oracle's frame in comparable form. Its quirks, handled here: maps, sets and attributes
/// are hash containers (order lost: compared sorted); attributes are an optional map on the
/// frame they describe (an attributed value); verbatim formats are an enum of `txt`/`mkd`;
/// simple errors are `String`s; big numbers are kept as their bytes.
fn c_of_oracle(f: &OwnedFrame) -> C {
    let pairs = |m: &redis_protocol::resp3::types::FrameMap<OwnedFrame, OwnedFrame>| {
        ordered(
            m.iter()
                .map(|(k, v)| (c_of_oracle(k), c_of_oracle(v)))
                .collect(),
            true,
        )
    };
    let (value, attributes) = match f {
        OwnedFrame::SimpleString { data, attributes } => (C::Simple(data.clone()), attributes),
        OwnedFrame::SimpleError { data, attributes } => {
            (C::Error(data.as_bytes().to_vec()), attributes)
        }
        OwnedFrame::Number { data, attributes } => (C::Int(*data), attributes),
        OwnedFrame::BlobString { data, attributes } => (C::Blob(data.clone()), attributes),
        OwnedFrame::BlobError { data, attributes } => (C::BlobError(data.clone()), attributes),
        OwnedFrame::VerbatimString {
            data,
            format,
            attributes,
        } => {
            let format = match format {
                VerbatimStringFormat::Text => b"txt".to_vec(),
                VerbatimStringFormat::Markdown => b"mkd".to_vec(),
            };
            (C::Verbatim(format, data.clone()), attributes)
        }
        OwnedFrame::Null => return C::Null,
        OwnedFrame::Double { data, attributes } => (C::Double(dbits(*data)), attributes),
        OwnedFrame::Boolean { data, attributes } => (C::Bool(*data), attributes),
        OwnedFrame::BigNumber { data, attributes } => (C::Big(data.clone()), attributes),
        OwnedFrame::Array { data, attributes } => {
            (C::Array(data.iter().map(c_of_oracle).collect()), attributes)
        }
        OwnedFrame::Push { data, attributes } => {
            (C::Push(data.iter().map(c_of_oracle).collect()), attributes)
        }
        OwnedFrame::Set { data, attributes } => (
            C::Set(ordered(data.iter().map(c_of_oracle).collect(), true)),
            attributes,
        ),
        OwnedFrame::Map { data, attributes } => (C::Map(pairs(data)), attributes),
        OwnedFrame::Hello { .. } | OwnedFrame::ChunkedString(_) => {
            panic!("the generator never produces {f:?}")
        }
    };
    match attributes {
        Some(a) => C::Attr(pairs(a), Box::new(value)),
        None => value,
    }
}

/// The identity the oracle's hash containers use for a key, made coarser: `0.0 == -0.0` (they
/// hash differently there, so which survives would depend on the hasher) and NaNs merge.
fn key_identity(v: &V) -> C {
    fn norm(c: C) -> C {
        match c {
            C::Double(b) if b == (-0.0f64).to_bits() => C::Double(0.0f64.to_bits()),
            C::Array(i) => C::Array(i.into_iter().map(norm).collect()),
            C::Set(i) => C::Set(i.into_iter().map(norm).collect()),
            C::Push(i) => C::Push(i.into_iter().map(norm).collect()),
            C::Map(p) => C::Map(p.into_iter().map(|(k, v)| (norm(k), norm(v))).collect()),
            C::Attr(p, v) => C::Attr(
                p.into_iter().map(|(k, v)| (norm(k), norm(v))).collect(),
                Box::new(norm(*v)),
            ),
            other => other,
        }
    }
    norm(c_of_v(v, true))
}

// ---------------------------------------------------------------------------------------------
// Strategies

/// Which shapes to generate. `oracle` restricts to what redis-protocol 6 can represent; every
/// restriction is a documented quirk of the oracle, not of RESP3:
/// - map keys, set members and attribute keys must be hashable there (no aggregates), and equal
///   keys collapse in its hash containers, so keys are made distinct;
/// - it cannot attach attributes to a null, nor attributes to attributes (`|1..|1..value`: "Unexpected
///   attribute frame");
/// - verbatim formats other than `txt` and `mkd` are refused ("Invalid format");
/// - simple errors must be UTF-8 (they become `String`).
#[derive(Debug, Clone, Copy)]
struct Mode {
    oracle: bool,
}

const GENERAL: Mode = Mode { oracle: false };
const ORACLE: Mode = Mode { oracle: true };

/// A byte allowed in a simple line: anything but CR and LF.
fn line_byte() -> impl Strategy<Value = u8> {
    prop_oneof![0u8..=9, 11u8..=12, 14u8..=255, b' '..=b'~']
}

/// Blob contents, often holding CR and LF (which a blob may).
fn blob_bytes() -> impl Strategy<Value = Vec<u8>> {
    vec(
        prop_oneof![3 => any::<u8>(), 1 => Just(b'\r'), 1 => Just(b'\n'), 2 => b'a'..=b'z'],
        0..24,
    )
}

fn double() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => any::<f64>(),
        2 => (-4000i32..4000).prop_map(|n| f64::from(n) / 8.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(-0.0),
        1 => Just(0.0),
        1 => Just(f64::MAX),
        1 => Just(f64::MIN_POSITIVE),
        1 => Just(5e-324),
        1 => Just(1e300),
    ]
}

fn leaf(mode: Mode) -> BoxedStrategy<V> {
    let error: BoxedStrategy<Vec<u8>> = if mode.oracle {
        "[^\r\n]{0,12}".prop_map(String::into_bytes).boxed()
    } else {
        vec(line_byte(), 0..12).boxed()
    };
    let format: BoxedStrategy<[u8; 3]> = if mode.oracle {
        prop_oneof![Just(*b"txt"), Just(*b"mkd")].boxed()
    } else {
        prop_oneof![Just(*b"txt"), Just(*b"mkd"), any::<[u8; 3]>()].boxed()
    };
    prop_oneof![
        vec(line_byte(), 0..12).prop_map(V::Simple),
        error.prop_map(V::Error),
        any::<i64>().prop_map(V::Int),
        prop_oneof![
            Just(0i64),
            Just(-1),
            Just(i64::MIN),
            Just(i64::MAX),
            0i64..100
        ]
        .prop_map(V::Int),
        blob_bytes().prop_map(V::Blob),
        blob_bytes().prop_map(V::BlobError),
        (format, blob_bytes()).prop_map(|(f, t)| V::Verbatim(f, t)),
        Just(V::Null),
        double().prop_map(V::Double),
        any::<bool>().prop_map(V::Bool),
        "-?[0-9]{1,40}".prop_map(|s| V::Big(s.into_bytes())),
    ]
    .boxed()
}

fn distinct_keys(pairs: Vec<(V, V)>, mode: Mode) -> Vec<(V, V)> {
    if !mode.oracle {
        return pairs; // the scanner keeps duplicates, in wire order
    }
    let mut seen = std::collections::BTreeSet::new();
    pairs
        .into_iter()
        .filter(|(k, _)| seen.insert(key_identity(k)))
        .collect()
}

fn distinct_members(items: Vec<V>, mode: Mode) -> Vec<V> {
    if !mode.oracle {
        return items;
    }
    let mut seen = std::collections::BTreeSet::new();
    items
        .into_iter()
        .filter(|k| seen.insert(key_identity(k)))
        .collect()
}

fn attach(pairs: Vec<(V, V)>, value: V, mode: Mode) -> V {
    if mode.oracle && matches!(value, V::Null | V::Attr(..)) {
        return value; // the oracle cannot represent attributes on these (see Mode)
    }
    V::Attr(distinct_keys(pairs, mode), Box::new(value))
}

/// Keys (of maps and attributes) and set members.
fn key(mode: Mode, inner: BoxedStrategy<V>) -> BoxedStrategy<V> {
    if !mode.oracle {
        return inner;
    }
    let leaf = leaf(mode);
    prop_oneof![
        4 => leaf.clone(),
        1 => (vec((leaf.clone(), leaf.clone()), 0..3), leaf)
            .prop_map(move |(p, v)| attach(p, v, mode)),
    ]
    .boxed()
}

/// Any valid value, nested up to a few levels.
fn value(mode: Mode) -> BoxedStrategy<V> {
    leaf(mode)
        .prop_recursive(4, 48, 5, move |inner| {
            let key = key(mode, inner.clone());
            prop_oneof![
                vec(inner.clone(), 0..5).prop_map(V::Array),
                vec(inner.clone(), 0..5).prop_map(V::Push),
                vec(key.clone(), 0..5).prop_map(move |i| V::Set(distinct_members(i, mode))),
                vec((key.clone(), inner.clone()), 0..4)
                    .prop_map(move |p| V::Map(distinct_keys(p, mode))),
                (vec((key, inner.clone()), 0..3), inner).prop_map(move |(p, v)| attach(p, v, mode)),
            ]
        })
        .boxed()
}

/// Splits `bytes` into chunks whose sizes cycle through `sizes` (each at least 1).
fn chunks<'b>(bytes: &'b [u8], sizes: &[usize]) -> Vec<&'b [u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < bytes.len() {
        let n = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(1)
            .max(1);
        let end = (at + n).min(bytes.len());
        out.push(&bytes[at..end]);
        at = end;
        i += 1;
    }
    out
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn config(default_cases: u32) -> Config {
    Config {
        cases: cases(default_cases),
        // Failures print their minimal input; no regression files are written into tests/.
        failure_persistence: None,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------------------------
// (a) valid frames, however split

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn stream_reader_gives_the_same_frames_and_spans_however_split(
        values in vec(value(GENERAL), 1..5),
        sizes in vec(prop_oneof![Just(1usize), 1usize..8, 1usize..200], 1..8),
    ) {
        let (bytes, spans) = encode_all(&values);
        let mut reader = StreamReader::default();
        let mut seen: Vec<(C, Vec<u8>, u64)> = Vec::new();
        for chunk in chunks(&bytes, &sizes) {
            reader.extend(chunk);
            reader
                .drain(|f, raw, offset| seen.push((c_of_frame(f, false), raw.to_vec(), offset)))
                .map_err(|e| TestCaseError::fail(format!("valid input reported {e}")))?;
        }
        prop_assert_eq!(seen.len(), values.len());
        for ((got, raw, offset), (v, span)) in seen.iter().zip(values.iter().zip(&spans)) {
            prop_assert_eq!(got, &c_of_v(v, false));
            prop_assert_eq!(*offset, span.start as u64);
            prop_assert_eq!(raw.as_slice(), &bytes[span.clone()]);
        }
        prop_assert!(reader.buffered().is_empty());
        prop_assert_eq!(reader.offset(), bytes.len() as u64);
    }

    #[test]
    fn scan_all_gives_the_same_frames_and_spans(values in vec(value(GENERAL), 1..5)) {
        let (bytes, spans) = encode_all(&values);
        let (frames, end, error) = Scanner::default().scan_all(&bytes);
        prop_assert_eq!(error, None);
        prop_assert_eq!(end, bytes.len());
        prop_assert_eq!(frames.len(), values.len());
        for ((frame, span), (v, want)) in frames.iter().zip(values.iter().zip(&spans)) {
            prop_assert_eq!(c_of_frame(frame, false), c_of_v(v, false));
            prop_assert_eq!(span, want);
        }
    }

    #[test]
    fn canonical_encoding_round_trips_through_frame_encode(v in value(GENERAL)) {
        let bytes = encode(&v);
        match Scanner::default().scan(&bytes) {
            Ok(Scan::Frame(frame, n)) => {
                prop_assert_eq!(n, bytes.len());
                prop_assert_eq!(frame.to_bytes(), bytes);
            }
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        }
    }

    #[test]
    fn every_strict_prefix_is_incomplete_with_a_sound_need(v in value(GENERAL)) {
        let bytes = encode(&v);
        let scanner = Scanner::default();
        for cut in 0..bytes.len() {
            match scanner.scan(&bytes[..cut]) {
                Ok(Scan::Incomplete { need }) => prop_assert!(
                    need > cut && need <= bytes.len(),
                    "cut {} of {}: need {}", cut, bytes.len(), need
                ),
                other => {
                    return Err(TestCaseError::fail(format!("cut {cut}: {other:?}")));
                }
            }
        }
        // Whatever follows the frame is left alone.
        let mut more = bytes.clone();
        more.extend_from_slice(b"?garbage");
        match scanner.scan(&more) {
            Ok(Scan::Frame(_, n)) => prop_assert_eq!(n, bytes.len()),
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (b) the redis-protocol crate as an oracle

fn oracle_decode(bytes: &[u8]) -> Result<Option<(OwnedFrame, usize)>, String> {
    redis_protocol::resp3::decode::complete::decode(bytes).map_err(|e| format!("{e:?}"))
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn agrees_with_redis_protocol_on_valid_frames(v in value(ORACLE), next in value(ORACLE)) {
        let first = encode(&v);
        // Another frame follows, so both must also agree on where the first one ends.
        let bytes = [first.clone(), encode(&next)].concat();
        let (ours, n) = match Scanner::default().scan(&bytes) {
            Ok(Scan::Frame(f, n)) => (c_of_frame(&f, true), n),
            other => return Err(TestCaseError::fail(format!("scanner: {other:?}"))),
        };
        let (theirs, m) = match oracle_decode(&bytes) {
            Ok(Some((f, m))) => (c_of_oracle(&f), m),
            other => return Err(TestCaseError::fail(format!("oracle: {other:?}"))),
        };
        prop_assert_eq!(n, first.len(), "scanner consumed");
        prop_assert_eq!(m, first.len(), "oracle consumed");
        prop_assert_eq!(&ours, &theirs);
        prop_assert_eq!(&ours, &c_of_v(&v, true));
    }

    #[test]
    fn agrees_with_redis_protocol_that_prefixes_are_incomplete(
        v in value(ORACLE),
        cut in any::<prop::sample::Index>(),
    ) {
        let bytes = encode(&v);
        let cut = cut.index(bytes.len());
        let prefix = &bytes[..cut];
        prop_assert!(
            matches!(Scanner::default().scan(prefix), Ok(Scan::Incomplete { .. })),
            "scanner on {} of {} bytes", cut, bytes.len()
        );
        prop_assert!(
            matches!(oracle_decode(prefix), Ok(None)),
            "oracle on {} of {} bytes: {:?}", cut, bytes.len(), oracle_decode(prefix)
        );
    }
}

#[test]
fn captures_agree_with_redis_protocol() {
    let dir = format!("{}/tests/fixtures/captures", env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "resp") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let Ok(Scan::Frame(frame, n)) = Scanner::default().scan(&bytes) else {
            panic!("{path:?} does not scan");
        };
        let (theirs, m) = oracle_decode(&bytes).unwrap().unwrap();
        assert_eq!((n, m), (bytes.len(), bytes.len()), "{path:?}");
        assert_eq!(c_of_frame(&frame, true), c_of_oracle(&theirs), "{path:?}");
        checked += 1;
    }
    assert_eq!(checked, 7);
}

#[test]
fn oracle_quirks_excluded_from_the_generator_are_real() {
    // Each exclusion in `Mode` is a shape the scanner takes (valid RESP3) and the oracle refuses
    // or cannot represent; if the oracle ever learns one, this test says the exclusion can go.
    let scanner = Scanner::default();
    let whole = |b: &[u8]| matches!(scanner.scan(b), Ok(Scan::Frame(_, n)) if n == b.len());
    for bytes in [
        b"|1\r\n+a\r\n:1\r\n_\r\n".as_slice(), // attributes on a null
        b"|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n:3\r\n", // attributes on attributes
        b"=7\r\nhtm:abc\r\n",                  // another verbatim format
        b"-\xff\r\n",                          // a simple error that is not UTF-8
        b"%1\r\n*1\r\n:1\r\n:2\r\n",           // an aggregate map key
    ] {
        assert!(whole(bytes), "{bytes:?} should scan");
        assert!(
            oracle_decode(bytes).is_err(),
            "{bytes:?}: the oracle accepts it now"
        );
    }
    // Duplicate keys collapse in the oracle's hash map; the scanner keeps both, in wire order.
    let dup = b"%2\r\n+k\r\n:1\r\n+k\r\n:2\r\n";
    let Ok(Scan::Frame(Frame::Map(pairs), _)) = scanner.scan(dup) else {
        panic!()
    };
    assert_eq!(pairs.len(), 2);
    let Ok(Some((OwnedFrame::Map { data, .. }, _))) = oracle_decode(dup) else {
        panic!()
    };
    assert_eq!(data.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// (c) fuzz-style: arbitrary and damaged input

/// Everything a scan of arbitrary bytes must satisfy.
fn check_scan(input: &[u8]) -> Result<(), TestCaseError> {
    let scanner = Scanner::default();
    let (result, peak) = peak_allocation(|| scanner.scan(input));
    let bound = allocation_bound(input.len());
    prop_assert!(
        peak <= bound,
        "scanning {} bytes allocated {} bytes at peak (bound {})",
        input.len(),
        peak,
        bound
    );
    match result {
        Ok(Scan::Frame(frame, n)) => {
            prop_assert!(n >= 3 && n <= input.len(), "frame of {} bytes", n);
            // A frame depends only on its own bytes.
            match scanner.scan(&input[..n]) {
                Ok(Scan::Frame(again, m)) => {
                    prop_assert_eq!(m, n);
                    prop_assert_eq!(c_of_frame(&again, false), c_of_frame(&frame, false));
                }
                other => return Err(TestCaseError::fail(format!("alone: {other:?}"))),
            }
            // Its canonical encoding scans back to the same value.
            let canonical = frame.to_bytes();
            match scanner.scan(&canonical) {
                Ok(Scan::Frame(again, m)) => {
                    prop_assert_eq!(m, canonical.len());
                    prop_assert_eq!(c_of_frame(&again, false), c_of_frame(&frame, false));
                }
                other => return Err(TestCaseError::fail(format!("re-encoded: {other:?}"))),
            }
        }
        Ok(Scan::Incomplete { need }) => {
            prop_assert!(
                need > input.len(),
                "need {} for {} bytes",
                need,
                input.len()
            );
        }
        Err(e) => check_error(&e, input.len())?,
    }
    // StreamReader given the same bytes at once agrees with scan_all.
    let (frames, _, error) = scanner.scan_all(input);
    let mut reader = StreamReader::default();
    reader.extend(input);
    let mut seen = Vec::new();
    let drained = reader.drain(|f, raw, off| seen.push((c_of_frame(f, false), raw.len(), off)));
    let want: Vec<_> = frames
        .iter()
        .map(|(f, span)| (c_of_frame(f, false), span.len(), span.start as u64))
        .collect();
    prop_assert_eq!(seen, want);
    prop_assert_eq!(drained.err(), error.clone());
    if let Some(e) = error {
        check_error(&e, input.len())?;
    }
    Ok(())
}

fn check_error(e: &RespError, len: usize) -> Result<(), TestCaseError> {
    prop_assert!(
        (e.offset as usize) < len,
        "error offset {} outside {} bytes: {}",
        e.offset,
        len,
        e
    );
    let text = e.to_string();
    prop_assert!(
        text.starts_with(&format!("at byte {}: ", e.offset)),
        "{}",
        text
    );
    Ok(())
}

/// RESP-significant bytes, so arbitrary input often gets past the first byte.
const ALPHABET: &[u8] = b"+-:$!=_,#(*%~>|?\r\n\r\n0123456789-.eEtfinax ";

fn resp_byte() -> impl Strategy<Value = u8> {
    prop_oneof![1 => any::<u8>(), 3 => prop::sample::select(ALPHABET)]
}

#[derive(Debug, Clone)]
enum Mutation {
    Set(prop::sample::Index, u8),
    Insert(prop::sample::Index, u8),
    Delete(prop::sample::Index),
    Truncate(prop::sample::Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<prop::sample::Index>(), resp_byte()).prop_map(|(i, b)| Mutation::Set(i, b)),
        2 => (any::<prop::sample::Index>(), resp_byte()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        2 => any::<prop::sample::Index>().prop_map(Mutation::Delete),
        1 => any::<prop::sample::Index>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        if bytes.is_empty() {
            break;
        }
        match m {
            Mutation::Set(i, b) => {
                let i = i.index(bytes.len());
                bytes[i] = *b;
            }
            Mutation::Insert(i, b) => {
                let i = i.index(bytes.len() + 1);
                bytes.insert(i, *b);
            }
            Mutation::Delete(i) => {
                let i = i.index(bytes.len());
                bytes.remove(i);
            }
            Mutation::Truncate(i) => {
                let i = i.index(bytes.len());
                bytes.truncate(i);
            }
        }
    }
    bytes
}

/// A header declaring a huge (or boundary) length or count, maybe nested, then a little data.
fn huge_declaration() -> impl Strategy<Value = Vec<u8>> {
    let limits = Limits::default();
    let size = prop_oneof![
        Just(u64::MAX.to_string()),
        Just(i64::MAX.to_string()),
        Just((i64::MAX as u64 + 1).to_string()),
        Just(limits.max_blob.to_string()),
        Just((limits.max_blob + 1).to_string()),
        Just(limits.max_elements.to_string()),
        Just((limits.max_elements + 1).to_string()),
        Just((limits.max_elements / 2).to_string()),
        Just(limits.max_frame.to_string()),
        Just("-1".to_string()),
        Just("-2".to_string()),
        Just("?".to_string()),
        (1u64..u64::MAX).prop_map(|n| n.to_string()),
        (1000u64..100_000_000).prop_map(|n| n.to_string()),
    ];
    (
        prop::sample::select(b"$!=*%~>|".to_vec()),
        size,
        vec(resp_byte(), 0..40),
        0usize..4,
        prop::sample::select(vec![
            "*1\r\n",
            "%1\r\n+k\r\n",
            ">2\r\n:1\r\n",
            "|1\r\n+a\r\n",
        ]),
    )
        .prop_map(|(tag, size, tail, nesting, wrapper)| {
            let mut out = wrapper.repeat(nesting).into_bytes();
            out.push(tag);
            out.extend_from_slice(size.as_bytes());
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(&tail);
            out
        })
}

/// Runs one fuzz property with `PROPTEST_CASES` (default `default_cases`) cases and prints how
/// many ran.
fn run_fuzz<S: Strategy<Value = Vec<u8>>>(name: &str, default_cases: u32, strategy: S) {
    let config = config(default_cases);
    let total = config.cases;
    let ran = std::sync::atomic::AtomicU64::new(0);
    let started = std::time::Instant::now();
    let mut runner = TestRunner::new(config);
    let result = runner.run(&strategy, |input| {
        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        check_scan(&input)
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    println!(
        "{name}: {total} cases passed ({} inputs scanned) in {:.1} s",
        ran.into_inner(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn fuzz_arbitrary_bytes() {
    run_fuzz(
        "fuzz_arbitrary_bytes",
        2000,
        prop_oneof![vec(any::<u8>(), 0..64), vec(resp_byte(), 0..160),],
    );
}

#[test]
fn fuzz_mutated_valid_frames() {
    run_fuzz(
        "fuzz_mutated_valid_frames",
        1000,
        (vec(value(GENERAL), 1..3), vec(mutation(), 1..5))
            .prop_map(|(values, mutations)| mutate(encode_all(&values).0, &mutations)),
    );
}

#[test]
fn fuzz_truncated_valid_frames() {
    run_fuzz(
        "fuzz_truncated_valid_frames",
        1000,
        (value(GENERAL), any::<prop::sample::Index>()).prop_map(|(v, cut)| {
            let bytes = encode(&v);
            let cut = cut.index(bytes.len());
            bytes[..cut].to_vec()
        }),
    );
}

#[test]
fn fuzz_huge_declared_sizes() {
    run_fuzz("fuzz_huge_declared_sizes", 1000, huge_declaration());
}

// ---------------------------------------------------------------------------------------------
// Fixed hostile inputs

#[test]
fn huge_declarations_allocate_nothing_they_were_not_sent() {
    let limits = Limits::default();
    let inputs: Vec<Vec<u8>> = vec![
        format!("*{}\r\n:1\r\n", limits.max_elements).into_bytes(),
        format!("%{}\r\n+k\r\n", limits.max_elements / 2).into_bytes(),
        format!("~{}\r\n", limits.max_elements).into_bytes(),
        format!(">{}\r\n$1\r\n", limits.max_elements).into_bytes(),
        format!("|{}\r\n", limits.max_elements / 2).into_bytes(),
        format!("${}\r\nabc", limits.max_blob).into_bytes(),
        format!("={}\r\ntxt:", limits.max_blob).into_bytes(),
        format!(
            "*1\r\n*1\r\n*{}\r\n*{}\r\n",
            limits.max_elements, limits.max_elements
        )
        .into_bytes(),
    ];
    for input in inputs {
        let (result, peak) = peak_allocation(|| Scanner::default().scan(&input));
        match result {
            Ok(Scan::Incomplete { need }) => assert!(need > input.len()),
            Err(e) => assert!((e.offset as usize) < input.len(), "{e}"),
            Ok(Scan::Frame(..)) => panic!("{input:?} cannot be a whole frame"),
        }
        assert!(
            peak < 4096,
            "{:?}: {peak} bytes allocated for a {}-byte input",
            String::from_utf8_lossy(&input),
            input.len()
        );
    }
    // Over the limits: typed errors at the header, before anything is allocated.
    for input in [
        format!("*{}\r\n", limits.max_elements + 1),
        format!("${}\r\n", limits.max_blob + 1),
        format!("%{}\r\n", limits.max_elements),
        format!(">{}\r\n", i64::MAX),
    ] {
        let (result, peak) = peak_allocation(|| Scanner::default().scan(input.as_bytes()));
        let e = result.expect_err(&input);
        assert_eq!(e.offset, 0, "{input:?}: {e}");
        assert!(
            matches!(
                e.kind,
                ErrorKind::TooManyElements { .. } | ErrorKind::BlobTooLong { .. }
            ),
            "{input:?}: {e}"
        );
        assert!(peak < 4096, "{input:?}: {peak} bytes");
    }
    // A count past i64 is not a number at all: named where the digits start.
    let e = Scanner::default()
        .scan(format!("%{}\r\n", u64::MAX).as_bytes())
        .unwrap_err();
    assert_eq!(e.offset, 1, "{e}");
    assert!(matches!(e.kind, ErrorKind::BadNumber(_)), "{e}");
}

/// Nested aggregates that each declare many elements must not each reserve room for all the
/// bytes that follow: allocation has to stay proportional to the input, not to input x depth.
#[test]
fn nested_declared_counts_do_not_multiply_allocation() {
    let levels = 60;
    let mut input = b"*100000\r\n".repeat(levels);
    // The innermost array's elements, all present but one short of complete.
    input.extend_from_slice(&b":1\r\n".repeat(99_999));
    let (result, peak) = peak_allocation(|| Scanner::default().scan(&input));
    assert!(matches!(result, Ok(Scan::Incomplete { .. })), "{result:?}");
    // What the elements present need (each at least 3 bytes, Vec growth doubling) plus a small
    // reservation per open level.
    let frame = std::mem::size_of::<Frame<'static>>();
    let bound = 2 * (input.len() / 3) * frame + levels * 1024 * 2 * frame;
    assert!(
        peak <= bound,
        "a {}-byte input allocated {} MiB at peak (bound {} MiB)",
        input.len(),
        peak >> 20,
        bound >> 20
    );
}

#[test]
fn deep_nesting_is_refused_at_the_limit() {
    let input = b"*1\r\n".repeat(100_000);
    let (result, peak) = peak_allocation(|| Scanner::default().scan(&input));
    let e = result.unwrap_err();
    assert_eq!(e.offset, 64 * 4, "{e}");
    assert!(peak < 64 * 1024, "{peak} bytes");
    let input = b"|1\r\n+a\r\n:1\r\n".repeat(1000);
    assert!(Scanner::default().scan(&input).is_err());
}

proptest! {
    #![proptest_config(config(256))]

    /// Whatever the input, StreamReader fed in chunks delivers the frames `scan_all` finds, at
    /// the same offsets; any error it reports is the one `scan_all` reports, and it loses no
    /// bytes.
    #[test]
    fn stream_reader_agrees_with_scan_all_on_any_bytes_however_split(
        input in prop_oneof![
            vec(resp_byte(), 0..120),
            (vec(value(GENERAL), 1..3), vec(mutation(), 1..3))
                .prop_map(|(v, m)| mutate(encode_all(&v).0, &m)),
        ],
        sizes in vec(1usize..16, 1..6),
    ) {
        let (frames, _, error) = Scanner::default().scan_all(&input);
        let want: Vec<_> = frames
            .iter()
            .map(|(f, span)| (c_of_frame(f, false), span.start as u64))
            .collect();
        let mut reader = StreamReader::default();
        let mut seen = Vec::new();
        let mut reported = None;
        for chunk in chunks(&input, &sizes) {
            reader.extend(chunk);
            if let Err(e) = reader.drain(|f, _, off| seen.push((c_of_frame(f, false), off))) {
                reported = Some(e);
                break;
            }
        }
        // Every complete frame is delivered, in order, at its offset, before any error.
        prop_assert_eq!(seen, want);
        match reported {
            Some(e) => prop_assert_eq!(Some(e), error),
            None => {
                // Nothing lost: the reader holds exactly the rest of the input, and that rest
                // on its own holds the same error, if any. (Whether the reader must already have
                // *reported* it is `stream_reader_reports_an_error_in_the_last_bytes_received`.)
                let rest = reader.buffered();
                prop_assert_eq!(reader.offset() + rest.len() as u64, input.len() as u64);
                let (more, _, rest_error) = Scanner::default().scan_all(rest);
                prop_assert!(more.is_empty());
                prop_assert_eq!(
                    rest_error.map(|e| e.offset + reader.offset()),
                    error.map(|e| e.offset)
                );
            }
        }
    }
}

/// A framing error already in the buffer is reported even when the stream stops before the
/// pending frame's `need`: `need` is a lower bound on the frame's length, but the byte after
/// the buffer's end can already be the error (a bare LF ending a line, a bad type marker).
#[test]
fn stream_reader_reports_an_error_in_the_last_bytes_received() {
    for (first, then, offset) in [
        (b"+OK".as_slice(), b"\n".as_slice(), 3u64),
        (b"*2\r\n:1\r\n", b"?", 8),
        (b">4\r\n$6\r\nMOVING\r\n:0", b"\n", 18),
    ] {
        let all = [first, then].concat();
        let (_, _, error) = Scanner::default().scan_all(&all);
        assert_eq!(error.as_ref().map(|e| e.offset), Some(offset), "{all:?}");
        let mut reader = StreamReader::default();
        reader.extend(first);
        reader.drain(|_, _, _| {}).unwrap();
        reader.extend(then);
        assert_eq!(
            reader.drain(|_, _, _| {}).err(),
            error,
            "{:?} then {:?}",
            String::from_utf8_lossy(first),
            String::from_utf8_lossy(then)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Large frames (issue 12, bug 5): work linear in the bytes received, memory not a multiple of
// the frame's size. Work is counted by the reader (`StreamReader::work`), memory by the
// counting allocator: neither depends on a clock.

/// `>N` followed by N nulls: 3 bytes on the wire per element, ~40 bytes each as a whole tree.
fn push_of_nulls(n: usize) -> Vec<u8> {
    let mut push = format!(">{n}\r\n").into_bytes();
    push.extend_from_slice(&b"_\r\n".repeat(n));
    push
}

/// Feeds `bytes` to a reader in the pieces given, returning the frames delivered (type, raw
/// length, offset) and the reader.
/// The reader looked at no more than three times the bytes it was given, however they came.
fn assert_linear(reader: &StreamReader, received: usize) {
    assert!(
        reader.work() <= 3 * received as u64,
        "looked at {} bytes for {received} bytes received",
        reader.work()
    );
}

fn feed(pieces: &[&[u8]]) -> (Vec<(&'static str, usize, u64)>, StreamReader) {
    let mut reader = StreamReader::default();
    let mut got = Vec::new();
    for piece in pieces {
        reader.extend(piece);
        reader
            .drain(|f, raw, off| got.push((f.type_name(), raw.len(), off)))
            .expect("a valid frame");
    }
    (got, reader)
}

#[test]
fn a_push_of_millions_of_nulls_does_not_decode_into_many_times_its_size() {
    let push = push_of_nulls(2_000_000);
    let pieces: Vec<&[u8]> = push.chunks(64 * 1024).collect();
    let ((got, reader), peak) = peak_allocation(|| feed(&pieces));
    // Delivered once, whole: every byte reaches the output.
    assert_eq!(got, [("push", push.len(), 0)]);
    assert!(reader.buffered().is_empty());
    // The read buffer holds the frame once (growing by doubling); the decoded form is bounded
    // by the decode budget, not ~13 times the frame.
    let frame = std::mem::size_of::<Frame<'static>>();
    let bound = 2 * push.len() + Limits::default().max_decoded as usize * frame + (1 << 20);
    assert!(
        peak <= bound,
        "a {} MiB push allocated {} MiB at peak (bound {} MiB)",
        push.len() >> 20,
        peak >> 20,
        bound >> 20
    );
}

#[test]
fn a_10m_null_push_read_in_64_kib_pieces_is_scanned_in_linear_work() {
    let push = push_of_nulls(10_000_000);
    let pieces: Vec<&[u8]> = push.chunks(64 * 1024).collect();
    let (got, reader) = feed(&pieces);
    assert_eq!(got, [("push", push.len(), 0)]);
    // Rescanning from the start on every read, as before, looks at ~230 times the frame.
    assert_linear(&reader, push.len());
}

#[test]
fn a_large_push_whose_last_bytes_trickle_in_is_not_rescanned_per_byte() {
    let push = push_of_nulls(1_000_000);
    let (head, tail) = push.split_at(push.len() - 1536);
    let mut pieces: Vec<&[u8]> = head.chunks(64 * 1024).collect();
    pieces.extend(tail.chunks(1));
    let (got, reader) = feed(&pieces);
    assert_eq!(got, [("push", push.len(), 0)]);
    assert_linear(&reader, push.len());
}

#[test]
fn a_long_line_arriving_in_pieces_is_searched_once() {
    // One simple string of 4 MiB inside a push, then its end, then a frame after it.
    let mut bytes = b">2\r\n+".to_vec();
    bytes.extend_from_slice(&vec![b'a'; 4 << 20]);
    bytes.extend_from_slice(b"\r\n:7\r\n+next\r\n");
    let pieces: Vec<&[u8]> = bytes.chunks(4096).collect();
    let (got, reader) = feed(&pieces);
    assert_eq!(
        got,
        [
            ("push", bytes.len() - 7, 0),
            ("simple string", 7, (bytes.len() - 7) as u64)
        ]
    );
    assert_linear(&reader, bytes.len());
}

#[test]
fn a_frame_held_in_a_large_buffer_gives_the_memory_back_once_read() {
    let push = push_of_nulls(3_000_000);
    let mut reader = StreamReader::default();
    for piece in push.chunks(64 * 1024) {
        reader.extend(piece);
        reader.drain(|_, _, _| {}).unwrap();
    }
    reader.extend(b"+small\r\n");
    reader.drain(|_, _, _| {}).unwrap();
    assert!(
        reader.buffer_mut().capacity() < push.len() / 2,
        "{} bytes kept for a drained buffer",
        reader.buffer_mut().capacity()
    );
}

proptest! {
    #![proptest_config(config(256))]

    /// With a tiny decode budget, frames still arrive whole and at the same offsets however the
    /// bytes are split; an elided frame encodes to a prefix of its own bytes.
    #[test]
    fn a_decode_budget_changes_no_span_however_split(
        values in vec(value(GENERAL), 1..5),
        budget in 0u64..6,
        sizes in vec(prop_oneof![Just(1usize), 1usize..8, 1usize..200], 1..8),
    ) {
        let limits = Limits { max_decoded: budget, ..Limits::default() };
        let (bytes, spans) = encode_all(&values);
        let (frames, end, error) = Scanner::new(limits).scan_all(&bytes);
        prop_assert_eq!(error, None);
        prop_assert_eq!(end, bytes.len());
        let want: Vec<_> = frames
            .iter()
            .map(|(f, span)| (c_of_frame(f, false), span.start as u64))
            .collect();
        prop_assert_eq!(frames.iter().map(|(_, s)| s.clone()).collect::<Vec<_>>(), spans);
        let mut reader = StreamReader::new(limits);
        let mut seen = Vec::new();
        for chunk in chunks(&bytes, &sizes) {
            reader.extend(chunk);
            reader
                .drain(|f, raw, off| {
                    assert!(raw.starts_with(&f.to_bytes()), "{f:?} is not a prefix of its bytes");
                    seen.push((c_of_frame(f, false), off))
                })
                .map_err(|e| TestCaseError::fail(format!("valid input reported {e}")))?;
        }
        prop_assert_eq!(seen, want);
    }
}

/// The scanner is stricter than the oracle here (issue 12): Redis never writes a '+' on a number
/// or a length of `-0`, and the scanner refuses them, naming the byte, while redis-protocol takes
/// them. The generator never writes them, so the comparison needs no exclusion in `Mode`.
#[test]
fn numbers_redis_never_writes_are_refused_though_the_oracle_takes_some() {
    for (bytes, offset) in [
        (b":+5\r\n".as_slice(), 1u64),
        (b"$+3\r\nabc\r\n", 1),
        (b"*-0\r\n", 1),
        (b"*+1\r\n:1\r\n", 1),
        (b"$-0\r\n\r\n", 1),
    ] {
        let e = Scanner::default().scan(bytes).unwrap_err();
        assert_eq!(e.offset, offset, "{bytes:?}: {e}");
    }
    // The divergence is real: were the oracle to refuse these too, this note could go.
    for bytes in [b":+5\r\n".as_slice(), b"$+3\r\nabc\r\n", b"*-0\r\n"] {
        assert!(
            matches!(oracle_decode(bytes), Ok(Some(_))),
            "{bytes:?}: the oracle refuses it now"
        );
    }
}

/// A flat frame's values, read through its accessors, against the tree of the same frame.
fn flat_is_tree(v: Value<'_, '_>, f: &Frame<'_>) -> Result<(), TestCaseError> {
    prop_assert_eq!(v.type_name(), f.type_name());
    prop_assert_eq!(v.as_text(), f.as_text());
    prop_assert_eq!(v.is_elided(), matches!(f, Frame::Elided { .. }));
    let children = |items: &[Frame<'_>]| -> Result<(), TestCaseError> {
        prop_assert_eq!(v.len(), items.len());
        for (c, item) in v.children().zip(items) {
            flat_is_tree(c, item)?;
        }
        Ok(())
    };
    match f {
        Frame::Simple(s) | Frame::Error(s) | Frame::Blob(s) | Frame::BlobError(s) => {
            prop_assert_eq!(v.bytes(), Some(*s))
        }
        Frame::BigNumber(s) => prop_assert_eq!(v.bytes(), Some(*s)),
        Frame::Verbatim { format, text } => {
            prop_assert_eq!(v.format(), Some(*format));
            prop_assert_eq!(v.bytes(), Some(*text));
        }
        Frame::Integer(n) => prop_assert_eq!(v.integer(), Some(*n)),
        Frame::Double(d) => prop_assert_eq!(v.double().map(f64::to_bits), Some(d.to_bits())),
        Frame::Boolean(b) => prop_assert_eq!(v.boolean(), Some(*b)),
        Frame::Null => prop_assert_eq!(v.kind(), Kind::Null),
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
            prop_assert_eq!(v.declared(), items.len() as u64);
            children(items)?;
        }
        Frame::Map(pairs) => {
            prop_assert_eq!(v.kind(), Kind::Map);
            prop_assert_eq!(v.declared(), 2 * pairs.len() as u64);
            let flat: Vec<Frame<'_>> = pairs
                .iter()
                .flat_map(|(k, v)| [k.clone(), v.clone()])
                .collect();
            children(&flat)?;
        }
        Frame::Attributed { attributes, value } => {
            prop_assert_eq!(v.kind(), Kind::Attributed);
            prop_assert_eq!(v.declared(), 2 * attributes.len() as u64 + 1);
            let mut flat: Vec<Frame<'_>> = attributes
                .iter()
                .flat_map(|(k, v)| [k.clone(), v.clone()])
                .collect();
            flat.push((**value).clone());
            children(&flat)?;
        }
        Frame::Elided { elements, head, .. } => {
            prop_assert_eq!(v.declared(), *elements);
            children(head)?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    /// The flat form (what the watcher's reader and the benchmark decode into) holds the same
    /// values as the tree, read through its own accessors, whatever the decode budget; and one
    /// node list reused across frames gives each frame alone.
    #[test]
    fn flat_frames_hold_the_values_of_the_tree(
        values in vec(value(GENERAL), 1..5),
        budget in prop_oneof![Just(u64::MAX), 0u64..8],
    ) {
        let scanner = Scanner::new(Limits { max_decoded: budget, ..Limits::default() });
        let (bytes, spans) = encode_all(&values);
        let (frames, _, error) = scanner.scan_all(&bytes);
        prop_assert_eq!(error, None);
        let mut nodes = Vec::new();
        for ((frame, span), want) in frames.iter().zip(&spans) {
            let Ok(FlatScan::Frame(flat)) = scanner.scan_flat(&bytes[span.start..], &mut nodes) else {
                return Err(TestCaseError::fail("no flat frame"));
            };
            prop_assert_eq!(flat.raw(), &bytes[want.clone()]);
            flat_is_tree(flat.root(), frame)?;
            // Compared in the comparable form, where NaN equals NaN.
            prop_assert_eq!(c_of_frame(&flat.to_frame(), false), c_of_frame(frame, false));
        }
    }
}
