//! Facts from the graded client's own process, when maintwatch started it (`simulate --grade -- CMD`).

use serde::{Deserialize, Serialize};

/// How the client process ended, seen from outside.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClientProcess {
    /// The program's name (argv[0] only: arguments may carry secrets).
    pub program: String,
    /// Exit status, when it exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Signal number, when a signal ended it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Scenario seconds when it ended.
    pub at: f64,
    /// True when maintwatch stopped it (the scenario ended first).
    pub stopped: bool,
    /// The last lines of its stderr, sanitised.
    pub stderr_tail: Vec<String>,
    /// Where its stdout and stderr were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_file: Option<String>,
    /// Why no resolver of its own named the simulator's DNS, when none did: it had the
    /// simulator's address in its environment only, so whether it follows DNS cannot be seen
    /// unless it resolved through that address itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_resolver: Option<String>,
}

impl ClientProcess {
    /// How it ended, in words: who stopped it, with which status or signal.
    pub fn how_it_ended(&self) -> String {
        match (self.exit_code, self.signal, self.stopped) {
            (_, Some(sig), true) => format!("stopped by maintwatch (signal {sig})"),
            (Some(code), _, true) => format!("stopped by maintwatch, exited {code}"),
            (Some(code), _, false) => format!("exited {code}"),
            (None, Some(sig), false) => format!("killed by signal {sig}"),
            (None, None, _) => "ended (status unknown)".into(),
        }
    }
}

/// The line of a client's stderr that best says why it failed: the last one naming an error,
/// else the last one.
pub fn headline(tail: &[String]) -> Option<&str> {
    const WORDS: [&str; 5] = ["Error", "Exception", "panicked", "Traceback", "Unhandled"];
    tail.iter()
        .rev()
        .find(|l| WORDS.iter().any(|w| l.contains(w)))
        .or_else(|| tail.iter().rev().find(|l| !l.trim().is_empty()))
        .map(|l| l.trim())
}
