//! Latency from bytes arriving to their timestamp, on loopback.
//!
//! The simulator runs in this process and records, for every notification frame, the wall clock
//! right after the write returned (`SimEvent::Sent.at`). The real `maintwatch watch` binary
//! watches it with `--json`; each push line's `at` is the wall clock stamped in `src/conn` right
//! after the read that completed the frame returned. The difference, frame by frame (matched by
//! their bytes: every frame carries its own sequence id), is what is reported.
//!
//!   latency --bin target/release/maintwatch [--pushes 10000] [--gap-ms 1]
//!
//! Frames are sent one at a time, `--gap-ms` apart, so each is its own read (the figure is per
//! frame, not amortised over a batch).

use maintwatch::record::WatchLine;
use maintwatch::sim::{Scenario, SimOptions, Simulator, What};
use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

struct Args {
    bin: String,
    pushes: usize,
    gap_ms: f64,
}

fn args() -> Args {
    let mut a = Args {
        bin: "target/release/maintwatch".into(),
        pushes: 10_000,
        gap_ms: 1.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--bin" => a.bin = value,
            "--pushes" => a.pushes = value.parse().expect("--pushes N"),
            "--gap-ms" => a.gap_ms = value.parse().expect("--gap-ms MS"),
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

/// `2026-11-30T00:15:33.123456Z` as microseconds since the epoch (the JSON-lines `at` format).
fn parse_at(text: &str) -> i64 {
    let b = text.as_bytes();
    let num = |r: std::ops::Range<usize>| -> i64 { text[r].parse().expect("a digit field") };
    assert!(
        b.len() == 27 && b[26] == b'Z',
        "unexpected timestamp {text}"
    );
    let (y, m, d) = (num(0..4), num(5..7), num(8..10));
    let (hh, mm, ss, us) = (num(11..13), num(14..16), num(17..19), num(20..26));
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1_000_000) + us
}

fn micros(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_micros() as i64
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a = args();
    // Scenario seconds are spaced 0.1 apart and the clock runs 100 / gap_ms times faster, so the
    // frames leave gap_ms apart in real time.
    let speed = 100.0 / a.gap_ms;
    let mut text = String::from(
        "name latency\nabout latency benchmark\nproxies 127.0.0.2\ndns 127.0.0.2\n\
         start opt-in\ncatch-up off\n",
    );
    for i in 0..a.pushes {
        let t = i as f64 * 0.1;
        if i % 2 == 0 {
            text.push_str(&format!(
                "at {t:.1} push * MIGRATING time=2 shards=[\"1\"]\n"
            ));
        } else {
            text.push_str(&format!("at {t:.1} push * MIGRATED shards=[\"1\"]\n"));
        }
    }
    text.push_str(&format!("end {:.1}\n", a.pushes as f64 * 0.1 + 0.1));
    let scenario = Scenario::parse("latency", &text).expect("scenario");
    let mut opts = SimOptions::new(scenario);
    opts.speed = speed;
    let sim = Simulator::start(opts).await.expect("simulator");
    let mut events = sim.events();

    let mut child = Command::new(&a.bin)
        .args([
            "watch",
            &format!("redis://127.0.0.2:{}", sim.port()),
            "--json",
            "--no-handoff",
            "--sim-speed",
            &speed.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the maintwatch binary runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let reader = tokio::spawn(async move {
        let mut got: Vec<(Vec<u8>, i64)> = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(WatchLine::Push { at, frame, .. }) = serde_json::from_str(&line) {
                let raw = maintwatch::escape::unescape(&frame.raw).expect("escaped");
                got.push((raw, parse_at(&at)));
            }
        }
        got
    });

    let mut sent: HashMap<Vec<u8>, i64> = HashMap::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(120), events.recv())
            .await
            .expect("the scenario ends in time")
            .expect("narration");
        match e.what {
            What::Sent { bytes, .. } => {
                sent.insert(bytes, micros(e.at));
            }
            What::Finished { .. } => break,
            _ => {}
        }
    }
    // The last frames reach the watch within moments; then Ctrl-C and collect.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid = child.id().expect("running");
    std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill");
    let got = reader.await.expect("reader");
    let _ = child.wait().await;
    sim.shutdown().await;

    let mut lat: Vec<i64> = got
        .iter()
        .filter_map(|(raw, at)| sent.get(raw).map(|s| at - s))
        .collect();
    assert_eq!(
        lat.len(),
        sent.len(),
        "every frame sent was printed by the watch"
    );
    assert_eq!(sent.len(), a.pushes, "every step sent its frame");
    lat.sort_unstable();
    let mean = lat.iter().sum::<i64>() as f64 / lat.len() as f64;
    println!(
        "latency: {} frames, {} ms apart: min {} us, p50 {} us, p90 {} us, p99 {} us, p99.9 {} us, max {} us, mean {:.1} us",
        lat.len(),
        a.gap_ms,
        lat[0],
        percentile(&lat, 50.0),
        percentile(&lat, 90.0),
        percentile(&lat, 99.0),
        percentile(&lat, 99.9),
        lat[lat.len() - 1],
        mean
    );
}
