//! `certify --jobs N`: up to N scenarios at once, each in a maintwatch process of its own.
//!
//! Nearly all of a certification is waiting (declared windows, stalls, a client's timers), so
//! scenarios can share the machine; what they must not share is anything a client could reach.
//! Each scenario is played by a worker (`simulation::worker`): this same binary, handed its
//! scenario's settings as one value, [`WorkerSettings`]. Before its runtime starts, the worker
//! moves into a network and mount namespace of its own
//! ([`crate::simulator::sim::isolation::own_network`]; with a user namespace too when it is not
//! root): its loopback, its simulator's addresses and ports, its DNS on port 53, its
//! redis-server and its client are its own, and no other scenario's can be reached. It plays the
//! scenario exactly as `--jobs 1` does, and hands the grade back as one JSON line on its stdout;
//! this process settles it as it settles its own ([`settle`]), so every report is the
//! same whichever way a scenario was played, and in the list's order whatever order the
//! scenarios finished in.

use std::collections::BTreeMap;

use tokio::io::AsyncReadExt;
use tokio::task::JoinSet;

use crate::exit;
use crate::present::certify::board::Board;
use crate::present::certify::progress::{finished_line, not_played_line};
use crate::simulator::simulation::certify::one_by_one::length;
use crate::simulator::simulation::play::{page_parts, Signals, Stop};
use crate::simulator::simulation::settings::CertifySettings;
use crate::simulator::simulation::settled::{settle, Done, Run};
use crate::simulator::simulation::worker::{Finished, WorkerSettings};

/// A worker's end: its index in the list, and what it handed back or why it handed nothing.
type Ending = (usize, Result<Finished, WorkerError>);

enum WorkerError {
    /// It exited with this code and no result: 10 when the client could not be started.
    Exit(i32),
    Other(anyhow::Error),
}

/// Plays the scenarios of `args`, up to `args.jobs` at once, each in a worker.
pub async fn parallel(args: &CertifySettings, signals: &mut Signals) -> anyhow::Result<Run> {
    let exe = std::env::current_exe()?;
    let labels: Vec<String> = (0..args.scenarios.len()).map(|i| args.label(i)).collect();
    let lengths = args.names().iter().map(|n| length(n)).collect();
    let mut board = Board::new(labels, lengths);
    let mut running: JoinSet<Ending> = JoinSet::new();
    let mut pids: BTreeMap<usize, u32> = BTreeMap::new();
    let mut order = longest_first(args).into_iter();
    let mut results: BTreeMap<usize, Settled> = BTreeMap::new();
    let mut interrupted = None;
    loop {
        while interrupted.is_none() && running.len() < args.jobs {
            let Some(i) = order.next() else { break };
            let input = WorkerSettings::of(args, i)?;
            let mut child = input.command(&exe).spawn()?;
            if let Some(pid) = child.id() {
                pids.insert(i, pid);
            }
            board.start(i);
            running.spawn(async move { (i, collect(&mut child).await) });
        }
        if running.is_empty() {
            break;
        }
        tokio::select! {
            ended = running.join_next() => {
                let Some(Ok((i, result))) = ended else { continue };
                pids.remove(&i);
                let name = args.scenarios[i].scenario.name();
                let settled = settled(&name, args.run_of(i), result, args.report.is_some());
                board.finish(i, line_of(&args.label(i), &settled));
                results.insert(i, settled);
            }
            stop = signals.recv(), if interrupted.is_none() => {
                if let Stop::Signal(_, code) = stop {
                    interrupted = Some(code);
                    // Each worker stops its scenario, servers and client, and hands back what
                    // happened so far.
                    for pid in pids.values() {
                        // SAFETY: a signal to a child of ours that has not been reaped.
                        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGTERM) };
                    }
                }
            }
        }
    }
    board.clear();
    gather(args, results, interrupted)
}

/// The order scenarios are started in: the longest first (list order among equals), so that the
/// longest is not left to start last and the run lasts about as long as it, not it plus a wave
/// before it. Which order they start in changes no report: those keep the list's.
fn longest_first(args: &CertifySettings) -> Vec<usize> {
    let length = |i: usize| {
        args.scenarios[i]
            .scenario
            .load()
            .map_or(0.0, |s| if s.end.is_finite() { s.end } else { 0.0 })
    };
    let mut order: Vec<(usize, f64)> = (0..args.scenarios.len()).map(|i| (i, length(i))).collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1));
    order.into_iter().map(|(i, _)| i).collect()
}

/// The finished scenarios in the list's order, settled as `--jobs 1` settles them.
fn gather(
    args: &CertifySettings,
    results: BTreeMap<usize, Settled>,
    interrupted: Option<i32>,
) -> anyhow::Result<Run> {
    let mut run = Run {
        interrupted,
        ..Run::default()
    };
    for (i, result) in results {
        let name = args.scenarios[i].scenario.name();
        match result {
            Ok((done, _)) => run.done.push(done),
            Err(WorkerError::Exit(exit::USAGE)) => run.usage = true,
            Err(WorkerError::Exit(exit::CLIENT_NOT_STARTED)) => {
                run.said = Some(exit::CLIENT_NOT_STARTED)
            }
            Err(e) if run.failed.is_none() => run.failed = Some((name, e.into_error())),
            Err(_) => {}
        }
    }
    Ok(run)
}

/// A worker's result settled as `--jobs 1` settles its own, with the events it lost.
type Settled = Result<(Done, u64), WorkerError>;

fn settled(
    name: &str,
    run: Option<(usize, usize)>,
    result: Result<Finished, WorkerError>,
    page: bool,
) -> Settled {
    let f = result?;
    let stop = f.stop();
    let page = page.then(|| page_parts(&f.sent, f.until, f.lost, stop));
    let mut done =
        settle(name, f.grade, f.obs, stop, f.seconds, page).map_err(WorkerError::Other)?;
    done.outcome.run = run;
    Ok((done, f.lost))
}

impl WorkerError {
    fn into_error(self) -> anyhow::Error {
        match self {
            WorkerError::Exit(code) => anyhow::anyhow!("its worker exited {code} without a grade"),
            WorkerError::Other(e) => e,
        }
    }
}

/// The line a finished scenario prints, or the reason it has none.
fn line_of(name: &str, settled: &Settled) -> String {
    match settled {
        Ok((d, lost)) => finished_line(&d.outcome, d.stop.into(), *lost),
        Err(WorkerError::Exit(code)) => not_played_line(name, &format!("exit {code}")),
        Err(WorkerError::Other(e)) => not_played_line(name, &e.to_string()),
    }
}

/// The most a worker's line may hold: a grade with its observations and frames sent (each
/// capped by the simulator), far below this.
const RESULT_CAP: u64 = 64 << 20;

/// Waits for a worker and reads its line.
async fn collect(child: &mut tokio::process::Child) -> Result<Finished, WorkerError> {
    let mut text = Vec::new();
    if let Some(out) = child.stdout.take() {
        let read = out.take(RESULT_CAP).read_to_end(&mut text).await;
        read.map_err(|e| WorkerError::Other(e.into()))?;
    }
    let status = child
        .wait()
        .await
        .map_err(|e| WorkerError::Other(e.into()))?;
    match serde_json::from_slice::<Finished>(&text) {
        Ok(f) => Ok(f),
        Err(_) => Err(WorkerError::Exit(status.code().unwrap_or(exit::FAILURE))),
    }
}
