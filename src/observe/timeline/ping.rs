//! `--traffic` PINGs over the whole watch, tallied in bounded memory for the summary.

use std::time::Duration;

/// Log-histogram buckets for PING latencies: 1 % wide from 1 µs up to 1000 s, so the tally is
/// a fixed ~2 k counters however long the watch runs.
const PING_BUCKET_GROWTH: f64 = 1.01;
const PING_MIN_MS: f64 = 0.001;
const PING_BUCKETS: usize = 2084;
/// Windows named in the failure tally; failures in further windows are counted under "other".
const PING_WINDOWS: usize = 64;

/// `--traffic` over the whole watch, in bounded memory.
#[derive(Default)]
pub(super) struct PingTally {
    sent: u64,
    answered: u64,
    failures: u64,
    max_ms: f64,
    buckets: Vec<u64>,
    windows: Vec<(String, u64)>,
}

impl PingTally {
    pub(super) fn record(&mut self, latency: Option<Duration>, failed: bool, window: Option<&str>) {
        self.sent += 1;
        if failed {
            self.failures += 1;
            if let Some(w) = window {
                let name = if self.windows.len() < PING_WINDOWS
                    || self.windows.iter().any(|(n, _)| n == w)
                {
                    w
                } else {
                    "other windows"
                };
                match self.windows.iter_mut().find(|(n, _)| n == name) {
                    Some((_, c)) => *c += 1,
                    None => self.windows.push((name.to_string(), 1)),
                }
            }
            return;
        }
        let Some(latency) = latency else { return };
        let ms = latency.as_secs_f64() * 1e3;
        self.answered += 1;
        self.max_ms = self.max_ms.max(ms);
        if self.buckets.is_empty() {
            self.buckets = vec![0; PING_BUCKETS];
        }
        self.buckets[ping_bucket(ms)] += 1;
    }

    /// The latency at quantile `q`: the middle of the bucket holding it, never above the max.
    fn quantile(&self, q: f64) -> Option<f64> {
        if self.answered == 0 {
            return None;
        }
        let rank = ((q * self.answered as f64).ceil() as u64).clamp(1, self.answered);
        let mut seen = 0;
        for (i, count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let mid = PING_MIN_MS * PING_BUCKET_GROWTH.powf(i as f64 + 0.5);
                return Some(round3(mid.min(self.max_ms)));
            }
        }
        Some(round3(self.max_ms))
    }

    pub(super) fn stats(&self) -> Option<crate::observe::record::PingStats> {
        (self.sent > 0).then(|| crate::observe::record::PingStats {
            sent: self.sent,
            answered: self.answered,
            failures: self.failures,
            p50_ms: self.quantile(0.50),
            p99_ms: self.quantile(0.99),
            max_ms: (self.answered > 0).then(|| round3(self.max_ms)),
            failure_windows: self
                .windows
                .iter()
                .map(
                    |(window, failures)| crate::observe::record::WindowFailures {
                        window: window.clone(),
                        failures: *failures,
                    },
                )
                .collect(),
        })
    }
}

fn ping_bucket(ms: f64) -> usize {
    if ms <= PING_MIN_MS {
        return 0;
    }
    let i = ((ms / PING_MIN_MS).ln() / PING_BUCKET_GROWTH.ln()).floor();
    (i as usize).min(PING_BUCKETS - 1)
}

fn round3(ms: f64) -> f64 {
    (ms * 1e3).round() / 1e3
}
