//! Decoding throughput: one buffer of 1,000,000 capture-shaped push frames (a fixed mix of the
//! seven captures in tests/fixtures/captures), decoded
//! - by the project's flat scanner, yielding each frame (every value decoded: integers parsed,
//!   text located, aggregates with their elements) and its byte span (`Scanner::scan_flat` in a
//!   loop, one node list reused);
//! - by `StreamReader::drain_flat`, the same behind the reader that owns the stream's buffer;
//! - by the same two giving an owned tree (`Scanner::scan`, `StreamReader::drain`: a `Vec` per
//!   aggregate, as before the flat form existed);
//! - by redis-protocol 6's `decode_bytes_mut`, looping over the `BytesMut`: an owned tree of
//!   `BytesFrame`s per frame, plus the frame's bytes.
//!
//! Throughput is reported in elements (frames) per second. Run with `cargo bench --bench decode`.

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};
use maintwatch::protocol::resp::{FlatScan, Scan, Scanner, StreamReader};
use std::hint::black_box;
use std::time::Duration;

const FRAMES: usize = 1_000_000;

const CAPTURES: [&str; 7] = [
    "moving-null-target.resp",
    "migrating.resp",
    "migrated.resp",
    "failing-over.resp",
    "failed-over.resp",
    "smigrating.resp",
    "smigrated.resp",
];

/// The captures, concatenated in a fixed pseudo-random order (no branch-predictor-friendly
/// period), `FRAMES` frames in all.
fn buffer() -> Vec<u8> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/captures");
    let captures: Vec<Vec<u8>> = CAPTURES
        .iter()
        .map(|name| std::fs::read(format!("{dir}/{name}")).expect("capture"))
        .collect();
    let mut out = Vec::with_capacity(FRAMES * 64);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..FRAMES {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        out.extend_from_slice(&captures[(state >> 33) as usize % captures.len()]);
    }
    out
}

fn ours_flat(buf: &[u8], nodes: &mut Vec<maintwatch::protocol::resp::Node>) -> usize {
    let scanner = Scanner::default();
    let mut pos = 0;
    let mut frames = 0;
    while pos < buf.len() {
        match scanner.scan_flat(&buf[pos..], nodes) {
            Ok(FlatScan::Frame(frame)) => {
                let len = frame.raw().len();
                black_box((&frame, pos..pos + len));
                pos += len;
                frames += 1;
            }
            other => panic!("at byte {pos}: {other:?}"),
        }
    }
    frames
}

fn ours_stream_flat(mut reader: StreamReader) -> usize {
    let mut frames = 0;
    reader
        .drain_flat(|frame, offset| {
            black_box((&frame, offset));
            frames += 1;
        })
        .expect("valid input");
    frames
}

fn ours(buf: &[u8]) -> usize {
    let scanner = Scanner::default();
    let mut pos = 0;
    let mut frames = 0;
    while pos < buf.len() {
        match scanner.scan(&buf[pos..]) {
            Ok(Scan::Frame(frame, len)) => {
                black_box((&frame, pos..pos + len));
                pos += len;
                frames += 1;
            }
            other => panic!("at byte {pos}: {other:?}"),
        }
    }
    frames
}

fn ours_stream(mut reader: StreamReader) -> usize {
    let mut frames = 0;
    reader
        .drain(|frame, raw, offset| {
            black_box((frame, raw, offset));
            frames += 1;
        })
        .expect("valid input");
    frames
}

fn redis_protocol(mut buf: BytesMut) -> usize {
    let mut frames = 0;
    while let Some((frame, len, bytes)) =
        redis_protocol::resp3::decode::complete::decode_bytes_mut(&mut buf).expect("valid input")
    {
        black_box((&frame, len, &bytes));
        frames += 1;
    }
    assert!(buf.is_empty());
    frames
}

/// Nanoseconds this thread has run on a CPU (Linux): unlike the wall clock, it does not count
/// the time spent waiting for a core while other builds share the machine.
fn cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Before Criterion's wall-clock figures: each decoder's throughput in frames per second of
/// its own CPU time (best of 5 passes), printed with the ratio to redis-protocol. A check on a
/// loaded machine, where the wall clock mostly measures the other processes.
fn on_cpu(buf: &[u8], nodes: &mut Vec<maintwatch::protocol::resp::Node>) {
    let Some(_) = cpu_ns() else { return };
    // As in Criterion's batches, the input (a filled reader, a `BytesMut`) is made untimed.
    fn best<I>(setup: impl Fn() -> I, mut run: impl FnMut(I) -> usize) -> u64 {
        (0..5)
            .map(|_| {
                let input = setup();
                let start = cpu_ns().unwrap_or(0);
                assert_eq!(run(input), FRAMES);
                cpu_ns().unwrap_or(0).saturating_sub(start).max(1)
            })
            .min()
            .unwrap_or(1)
    }
    let reader = || {
        let mut reader = StreamReader::default();
        reader.extend(buf);
        reader
    };
    let rows: [(&str, u64); 5] = [
        (
            "maintwatch_scan_flat",
            best(|| (), |()| ours_flat(buf, nodes)),
        ),
        (
            "maintwatch_stream_reader_flat",
            best(reader, ours_stream_flat),
        ),
        ("maintwatch_scan_tree", best(|| (), |()| ours(buf))),
        ("maintwatch_stream_reader_tree", best(reader, ours_stream)),
        (
            "redis_protocol_decode_bytes_mut",
            best(|| BytesMut::from(buf), redis_protocol),
        ),
    ];
    let peer = rows[4].1 as f64;
    for (name, ns) in rows {
        let rate = FRAMES as f64 / (ns as f64 / 1e9) / 1e6;
        println!(
            "on-CPU {name:34} {rate:7.2} M frames/s  {:5.2}x redis-protocol",
            peer / ns as f64
        );
    }
}

fn bench(c: &mut Criterion) {
    let buf = buffer();
    // Every decoder must see every frame, or the comparison means nothing.
    assert_eq!(ours(&buf), FRAMES);
    let mut nodes = Vec::new();
    assert_eq!(ours_flat(&buf, &mut nodes), FRAMES);
    // The flat form holds what the tree holds (every value decoded), checked on a sample.
    let scanner = Scanner::default();
    let mut pos = 0;
    for _ in 0..10_000 {
        let Ok(FlatScan::Frame(flat)) = scanner.scan_flat(&buf[pos..], &mut nodes) else {
            panic!("at byte {pos}")
        };
        let Ok(Scan::Frame(tree, len)) = scanner.scan(&buf[pos..]) else {
            panic!("at byte {pos}")
        };
        assert_eq!((flat.to_frame(), flat.raw().len()), (tree, len));
        pos += len;
    }
    assert_eq!(redis_protocol(BytesMut::from(&buf[..])), FRAMES);

    on_cpu(&buf, &mut nodes);

    let mut group = c.benchmark_group(format!("decode_1M_push_frames_{}MB", buf.len() >> 20));
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(10));

    let filled = || {
        let mut reader = StreamReader::default();
        reader.extend(&buf);
        reader
    };
    group.bench_function("maintwatch_scan_flat", |b| {
        b.iter(|| ours_flat(black_box(&buf), &mut nodes))
    });
    group.bench_function("maintwatch_stream_reader_flat", |b| {
        b.iter_batched(filled, ours_stream_flat, BatchSize::PerIteration)
    });
    group.bench_function("maintwatch_scan_tree", |b| b.iter(|| ours(black_box(&buf))));
    group.bench_function("maintwatch_stream_reader_tree", |b| {
        b.iter_batched(filled, ours_stream, BatchSize::PerIteration)
    });
    group.bench_function("redis_protocol_decode_bytes_mut", |b| {
        b.iter_batched(
            || BytesMut::from(&buf[..]),
            redis_protocol,
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
