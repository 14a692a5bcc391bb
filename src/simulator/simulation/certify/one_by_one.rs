//! `certify --jobs 1`: each scenario in turn, in this process, in the list's order, settled as
//! it ends.

use std::time::Instant;

use crate::present::certify::progress::{finished_line, Progress};
use crate::simulator::simulation::play::{graded, report_parts, Signals, Stop};
use crate::simulator::simulation::settings::CertifySettings;
use crate::simulator::simulation::settled::{settle, Run};

/// `--jobs 1`: each scenario in turn, in this process, in the list's order.
pub async fn one_by_one(args: &CertifySettings, signals: &mut Signals) -> anyhow::Result<Run> {
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
        let g = match graded(sim_args, signals).await {
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
        let page = args.report.as_ref().map(|_| report_parts(&g));
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

/// A built-in scenario's length on the scenario clock, for the screens while it plays.
pub fn length(name: &str) -> Option<f64> {
    crate::simulator::sim::scenarios::by_name(name).map(|s| s.end)
}
