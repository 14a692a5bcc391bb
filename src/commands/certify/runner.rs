//! certify's run: the scenarios played one by one (or by `jobs`), each graded, then the
//! summary, the JSON, the JUnit file and the page. Kept apart from the command's root, which is
//! its map.

use crate::commands::certify::jobs;
use crate::exit;
use crate::present::certify::book::write_page;
use crate::present::certify::closing::{print_summary, End};
use crate::present::certify::junit::{junit, junit_not_started};
use crate::present::certify::played::{worst, Outcome};
use crate::present::certify::progress::{finished_line, Progress};
use crate::present::output::terminal;
use crate::shared::escape::sanitize;
use crate::simulator::simulation;
use crate::simulator::simulation::settled::{settle, Run};
use crate::simulator::simulation::{CertifySettings, Signals, Stop};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Once, before the first scenario: a run in a namespace of its own, or without port 53 at all,
/// is said on stderr (each scenario's own run is silent).
pub(super) fn say_isolation() {
    use crate::simulator::sim::isolation::{self, Isolation};
    match isolation::chosen() {
        Isolation::Namespace => terminal::tell("note", isolation::NAMESPACE_NOTE),
        Isolation::Refused(why) => terminal::tell(
            "warning",
            &format!(
                "the client gets no private /etc/resolv.conf: {why}; the rules that need its \
                 DNS are not judged"
            ),
        ),
        Isolation::Host => {}
    }
}

/// Runs `maintwatch certify`: plays every scenario of `args` and writes the reports.
pub async fn run(args: &CertifySettings) -> anyhow::Result<i32> {
    if let Some(why) = args.scenarios.first().and_then(cannot_start) {
        return not_started(args, &why);
    }
    say_isolation();
    let names = args.names();
    let dir = output_dir(args)?;
    // Registered before anything starts: a Ctrl-C stops the scenarios being played (their
    // servers and clients too) and writes the report so far.
    let mut signals = Signals::new()?;
    let run = if args.jobs > 1 {
        jobs::parallel(args, &mut signals).await?
    } else {
        one_by_one(args, &mut signals).await?
    };
    let outcomes: Vec<Outcome> = run.done.iter().map(|d| d.outcome.clone()).collect();
    let json: String = run.done.iter().map(|d| d.json.as_str()).collect();
    write_reports(args, &outcomes, &json)?;
    if run.usage {
        return Ok(exit::USAGE);
    }
    if let Some(code) = run.said {
        return Ok(code);
    }
    if let Some((name, e)) = run.failed {
        // The client could not be started, say: what was played before still counts.
        if crate::simulator::simulation::client::not_started(&e) {
            let text = format!("scenario {name}: {e}");
            terminal::tell("error", &text);
            return Ok(exit::CLIENT_NOT_STARTED);
        }
        return Err(e.context(format!("scenario {name}")));
    }
    let code = run
        .interrupted
        .unwrap_or_else(|| worst(&outcomes).exit_code());
    let end = End {
        names: &names,
        dir: &dir,
        junit: args.junit.as_deref(),
        report: args.report.as_deref(),
        grades: args.grade_json.as_deref(),
        interrupted: run.interrupted.is_some(),
        code,
    };
    // A closed stdout (`| head`) loses the summary, not the grade: the files are written and
    // the exit code is the one the scenarios earned.
    match print_summary(&outcomes, &end) {
        Err(e) if !exit::closed_pipe(&e) => return Err(e),
        _ => {}
    }
    Ok(code)
}

/// Why the client's program cannot be started, looked up before any scenario as `exec` looks it
/// up (a path as given, a bare name on `PATH`): a typo is said once, not once per scenario. A
/// program that is found but fails to start otherwise is still caught where it is started.
pub(super) fn cannot_start(
    sim: &crate::simulator::simulation::SimulationSettings,
) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let program = sim.client.as_ref()?.command.first()?;
    let path = Path::new(program);
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if program.to_string_lossy().contains('/') {
        runnable(path)
    } else {
        std::env::var_os("PATH")
            .is_some_and(|dirs| std::env::split_paths(&dirs).any(|d| runnable(&d.join(path))))
    };
    let why = match std::fs::metadata(path) {
        _ if found => return None,
        Ok(m) if m.is_dir() => "it is a directory",
        Ok(_) if program.to_string_lossy().contains('/') => "it is not executable",
        _ if program.to_string_lossy().contains('/') => "no such file",
        _ => "no such program on PATH",
    };
    Some(format!(
        "cannot start {}: {why}",
        sanitize(&program.to_string_lossy())
    ))
}

/// The client cannot be started: said once, recorded in `--junit` as one error a CI system
/// shows, and certify's own exit code; no scenario is played.
fn not_started(args: &CertifySettings, why: &str) -> anyhow::Result<i32> {
    terminal::tell("error", &format!("{why}; no scenario was played"));
    // The page and the grades of nothing played, as when a scenario could not start its client.
    write_reports(args, &[], "")?;
    if let Some(path) = &args.junit {
        std::fs::write(path, junit_not_started(why))
            .with_context(|| format!("writing the JUnit report to {}", path.display()))?;
    }
    Ok(exit::CLIENT_NOT_STARTED)
}

/// `--jobs 1`: each scenario in turn, in this process, in the list's order.
pub(super) async fn one_by_one(
    args: &CertifySettings,
    signals: &mut Signals,
) -> anyhow::Result<Run> {
    let mut progress = Progress::new(args.scenarios.len() as u64);
    let mut run = Run::default();
    for (i, sim_args) in args.scenarios.iter().enumerate() {
        let name = sim_args.scenario.name();
        if let Some(Stop::Signal(_, code)) = signals.pending().await {
            run.interrupted = Some(code);
            break;
        }
        progress.start(&args.label(i), length(&name));
        let started = Instant::now();
        let g = match simulation::graded(sim_args, signals).await {
            Ok(Some(g)) => g,
            Ok(None) => {
                run.usage = true;
                break;
            }
            Err(e) => {
                run.failed = Some((name, e));
                break;
            }
        };
        let page = args.report.as_ref().map(|_| simulation::report_parts(&g));
        let seconds = started.elapsed().as_secs_f64();
        let mut done = settle(&name, g.grade, g.obs, g.stop, seconds, page)?;
        done.outcome.run = args.run_of(i);
        progress.finished(&finished_line(&done.outcome, g.stop.into(), g.lost));
        let stop = done.stop;
        run.done.push(done);
        if let Stop::Signal(_, code) = stop {
            run.interrupted = Some(code);
            break;
        }
    }
    progress.clear();
    Ok(run)
}

/// Where the client's output goes, made if it is not there, as is `--pcap`'s directory: once,
/// before any scenario, rather than each scenario failing on its own.
pub(super) fn output_dir(args: &CertifySettings) -> anyhow::Result<PathBuf> {
    let dir = args.output_dir().to_path_buf();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating the client output directory {}", dir.display()))?;
    // Each run's folder (with a single run, the directory itself), and --pcap's.
    let outputs = args.scenarios.iter().filter_map(|s| {
        let file = s.client.as_ref()?.output.as_deref()?;
        Some(("creating the client output directory", file.parent()?))
    });
    let captures = args.scenarios.iter().filter_map(|s| {
        Some((
            "--pcap: creating the directory",
            s.pcap.as_deref()?.parent()?,
        ))
    });
    let folders: std::collections::BTreeSet<(&str, &Path)> = outputs.chain(captures).collect();
    for (what, folder) in folders {
        std::fs::create_dir_all(folder).with_context(|| format!("{what} {}", folder.display()))?;
    }
    Ok(dir)
}

/// A built-in scenario's length on the scenario clock, for the screens while it plays.
fn length(name: &str) -> Option<f64> {
    crate::simulator::sim::scenarios::by_name(name).map(|s| s.end)
}

/// `--junit` and `--grade-json`, with what was played so far.
pub(super) fn write_reports(
    args: &CertifySettings,
    outcomes: &[Outcome],
    json: &str,
) -> anyhow::Result<()> {
    if let Some(path) = &args.junit {
        std::fs::write(path, junit(outcomes))
            .with_context(|| format!("writing the JUnit report to {}", path.display()))?;
    }
    if let Some(path) = &args.grade_json {
        std::fs::write(path, json)
            .with_context(|| format!("writing the grades to {}", path.display()))?;
    }
    if let Some(path) = &args.report {
        write_page(outcomes, path)?;
    }
    Ok(())
}
