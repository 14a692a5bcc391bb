//! A worker of `certify --jobs N`: the one scenario its parent hands it, played as `--jobs 1`
//! plays it, and its grade handed back as one JSON line on its stdout ([`Finished`]). It lives
//! beside the simulation it plays; `certify::pool` starts the workers and reads their lines.
//!
//! The worker's whole input is one value, a [`WorkerSettings`], written as JSON into the
//! variable [`WORKER`] of the process its parent starts: this same binary, as `certify -- CMD`.
//! That command line is only what the parser needs to reach certify; the worker reads none of
//! it. The value is read once, at the start, and taken out of the environment while the process
//! has one thread, so that neither the client nor the redis-server inherits it.
//!
//! Why the environment rather than stdin: the process must know that it is a worker before its
//! runtime starts (it moves into a network namespace of its own while it has one thread), and a
//! variable is the marker and the value at once. JSON on stdin would need a second marker, a
//! hidden flag or subcommand, which would show in the shell completions every user gets. And
//! why not the command line: every user of the machine reads a command line (`ps`), while a
//! process's environment is its own user's and root's only.
//!
//! No password travels. The value has no upstream: workers play with `--upstream spawn` only
//! (one shared server is one scenario's at a time, so a run with a URL plays in one process),
//! and each spawns its own redis-server. The client's command is the user's own, already on the
//! parent's command line.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::client::not_started;
use super::play::{graded, observed_until, sent_frames, SentFrame, Signals, Stop};
use super::settings::{
    CertifySettings, ClientSettings, ScenarioChoice, SimulationSettings, UpstreamChoice, Verbosity,
};
use super::start::TooLoaded;
use crate::exit;
use crate::grading::judge::{Grade, Observations};

/// The variable that holds a worker's [`WorkerSettings`], as JSON.
pub const WORKER: &str = "MAINTWATCH_CERTIFY_WORKER";

/// Everything a worker needs to play its scenario as its parent settled it. The command and the
/// paths travel as their bytes (serde writes an `OsString` so), so that an argument or a folder
/// that is not UTF-8 arrives unchanged.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkerSettings {
    /// The scenario, by name.
    pub scenario: String,
    /// `--speed`, as its decimal text: serde_json reads a float back only nearly, this exactly.
    #[serde(with = "exact_speed")]
    pub speed: f64,
    /// The client's command, after `--`.
    pub command: Vec<OsString>,
    /// The file of the client's stdout and stderr.
    pub output: Option<OsString>,
    /// The file of the scenario's capture (`--pcap`).
    pub pcap: Option<OsString>,
    /// How long the scenario waits for the client to start it.
    pub start_deadline: Option<Duration>,
    /// Whether `--report` was asked for: the worker hands back the frames sent.
    pub page: bool,
}

impl WorkerSettings {
    /// What the worker of the `i`th play of `settings` needs.
    pub fn of(settings: &CertifySettings, i: usize) -> anyhow::Result<WorkerSettings> {
        let s = &settings.scenarios[i];
        if !matches!(s.upstream, UpstreamChoice::Spawn) {
            anyhow::bail!("a certify worker plays with --upstream spawn only");
        }
        let ScenarioChoice::Named(scenario) = &s.scenario else {
            anyhow::bail!("a certify worker plays a scenario by name");
        };
        let client = s.client.as_ref();
        Ok(WorkerSettings {
            scenario: scenario.clone(),
            speed: s.speed,
            command: client.map_or_else(Vec::new, |c| c.command.clone()),
            output: client
                .and_then(|c| c.output.clone())
                .map(PathBuf::into_os_string),
            pcap: s.pcap.clone().map(PathBuf::into_os_string),
            start_deadline: s.start_deadline,
            page: settings.report.is_some(),
        })
    }

    /// The scenario's settings, as `cli::certify` made them in the parent.
    pub fn simulation(&self) -> SimulationSettings {
        SimulationSettings {
            speed: self.speed,
            upstream: UpstreamChoice::Spawn,
            client: Some(ClientSettings {
                command: self.command.clone(),
                output: self.output.clone().map(PathBuf::from),
            }),
            grade: true,
            pcap: self.pcap.clone().map(PathBuf::from),
            narration: Verbosity::Silent,
            start_deadline: self.start_deadline,
            ..SimulationSettings::new(ScenarioChoice::Named(self.scenario.clone()))
        }
    }

    /// The worker that plays it: this same binary (`exe`), the value in [`WORKER`], its grade
    /// read from its stdout. Its command line, `certify -- CMD`, is only what the parser needs
    /// to reach certify (and shows `ps` what it runs).
    pub fn command(&self, exe: &Path) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(exe);
        cmd.arg("certify").arg("--").args(&self.command);
        cmd.env(WORKER, self.to_json())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a worker's settings serialize")
    }

    /// The value read back; a bad one says what was wrong with it (a field missing, unknown or
    /// of the wrong type, and where), never the value itself.
    pub fn parse(text: &str) -> anyhow::Result<WorkerSettings> {
        serde_json::from_str(text)
            .map_err(|e| anyhow::anyhow!("{WORKER} does not hold a certify worker's settings: {e}"))
    }
}

/// `--speed` as the text `f64` prints (the shortest that reads back as the same number), and
/// read back as a speed: a number above 0.
mod exact_speed {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(speed: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&speed.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        let text = String::deserialize(d)?;
        match text.parse::<f64>() {
            Ok(speed) if speed.is_finite() && speed > 0.0 => Ok(speed),
            _ => Err(D::Error::custom(format!(
                "speed: expected a number above 0, found {text:?}"
            ))),
        }
    }
}

/// The worker's input, taken out of the environment; `None` when this process is no worker. Call
/// it while the process has one thread.
pub fn take_input() -> anyhow::Result<Option<WorkerSettings>> {
    let Some(text) = std::env::var_os(WORKER) else {
        return Ok(None);
    };
    std::env::remove_var(WORKER);
    let text = text
        .into_string()
        .map_err(|_| anyhow::anyhow!("{WORKER} is not UTF-8, so it holds no JSON"))?;
    WorkerSettings::parse(&text).map(Some)
}

/// How a worker's scenario stopped, as it travels.
#[derive(Serialize, Deserialize, Clone, Copy)]
enum HowStopped {
    Ended,
    ClientExited,
    NeverStarted(Option<TooLoaded>),
    Signal(i32),
}

impl From<Stop> for HowStopped {
    fn from(s: Stop) -> HowStopped {
        match s {
            Stop::Ended => HowStopped::Ended,
            Stop::ClientExited => HowStopped::ClientExited,
            Stop::NeverStarted(l) => HowStopped::NeverStarted(l),
            Stop::Signal(_, code) => HowStopped::Signal(code),
        }
    }
}

impl From<HowStopped> for Stop {
    fn from(e: HowStopped) -> Stop {
        match e {
            HowStopped::Ended => Stop::Ended,
            HowStopped::ClientExited => Stop::ClientExited,
            HowStopped::NeverStarted(l) => Stop::NeverStarted(l),
            HowStopped::Signal(exit::HANGUP) => Stop::Signal("SIGHUP", exit::HANGUP),
            HowStopped::Signal(exit::TERMINATED) => Stop::Signal("SIGTERM", exit::TERMINATED),
            HowStopped::Signal(code) => Stop::Signal("SIGINT", code),
        }
    }
}

/// What a worker hands back: its scenario's grade and what it was made from.
#[derive(Serialize, Deserialize)]
pub struct Finished {
    pub grade: Grade,
    pub obs: Observations,
    stop: HowStopped,
    pub lost: u64,
    pub seconds: f64,
    /// The frames sent, for `--report` (empty otherwise).
    pub sent: Vec<SentFrame>,
    /// The clock of the run's last event, for `--report`.
    pub until: Option<f64>,
}

impl Finished {
    pub fn stop(&self) -> Stop {
        self.stop.into()
    }
}

/// The worker: plays its one scenario, silent, and prints the [`Finished`] line.
pub async fn worker(input: &WorkerSettings) -> anyhow::Result<i32> {
    let sim_args = input.simulation();
    let mut signals = Signals::new()?;
    let started = std::time::Instant::now();
    let g = match graded(&sim_args, &mut signals).await {
        Ok(Some(g)) => g,
        Ok(None) => return Ok(exit::USAGE),
        // Said here, as `--jobs 1` says it; the exit code tells certify it was said.
        Err(e) if not_started(&e) => {
            let text = format!("scenario {}: {e}", input.scenario);
            crate::present::output::terminal::tell("error", &text);
            return Ok(exit::CLIENT_NOT_STARTED);
        }
        Err(e) => return Err(e),
    };
    let sent = if input.page {
        sent_frames(&g.seen)
    } else {
        Vec::new()
    };
    let finished = Finished {
        grade: g.grade,
        obs: g.obs,
        stop: g.stop.into(),
        lost: g.lost,
        seconds: started.elapsed().as_secs_f64(),
        sent,
        until: observed_until(&g.seen),
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &finished)?;
    writeln!(out)?;
    out.flush()?;
    Ok(exit::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    /// Every field away from what a plain run would have: a speed whose shortest text is long,
    /// an argument and a folder that are not UTF-8, a deadline with a fraction, the page asked.
    fn every_field_set() -> WorkerSettings {
        WorkerSettings {
            scenario: "cascading-smigrated".into(),
            speed: 0.1 + 0.2,
            command: vec![
                OsString::from("python3"),
                OsString::from("app.py"),
                OsString::from_vec(b"--name=caf\xe9 \"quoted\"\n".to_vec()),
            ],
            output: Some(OsString::from_vec(b"/tmp/run-\xff/failover.log".to_vec())),
            pcap: Some(OsString::from("/tmp/captures/run-2/failover.pcap")),
            start_deadline: Some(Duration::from_millis(30_250)),
            page: true,
        }
    }

    #[test]
    fn a_workers_settings_come_back_as_they_went() {
        let sent = every_field_set();
        let text = sent.to_json();
        assert!(!text.contains('\n'), "{text}");
        assert_eq!(WorkerSettings::parse(&text).unwrap(), sent);
        // The exact speed, not the nearest float serde_json reads back.
        assert!(text.contains("\"speed\":\"0.30000000000000004\""), "{text}");
    }

    #[test]
    fn a_bad_value_says_what_was_wrong() {
        let error = |text: &str| WorkerSettings::parse(text).unwrap_err().to_string();
        let good = serde_json::to_value(every_field_set()).unwrap();
        let with = |key: &str, value: Option<serde_json::Value>| {
            let mut v = good.clone();
            match value {
                Some(value) => v[key] = value,
                None => {
                    v.as_object_mut().unwrap().remove(key);
                }
            }
            error(&v.to_string())
        };
        let missing = with("speed", None);
        assert!(missing.contains("missing field `speed`"), "{missing}");
        assert!(missing.starts_with(WORKER), "{missing}");
        let zero = with("speed", Some("0".into()));
        assert!(zero.contains("speed: expected a number above 0"), "{zero}");
        let unknown = with("upstream", Some("redis://u:p@h:1".into()));
        assert!(unknown.contains("unknown field `upstream`"), "{unknown}");
        assert!(
            !unknown.contains("u:p@"),
            "the value itself is never said: {unknown}"
        );
        let kind = with("page", Some("yes".into()));
        assert!(kind.contains("invalid type"), "{kind}");
        assert!(error("").contains("EOF"), "{}", error(""));
    }
}
