//! One module per subcommand: each wires the library's modules together for one job and owns
//! nothing the modules own.

pub mod certify;
pub mod decide;
pub mod decode;
pub mod demo;
pub mod doctor;
pub mod pcap;
pub mod probe;
pub mod replay;
pub mod simulate;
pub mod watch;

use crate::cli::{Cli, Command};

/// Runs a parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Watch(args) => {
            one_thread()?.block_on(watch::run(crate::cli::settings::watch_run(&args)?))
        }
        Command::Probe(args) => runtime()?.block_on(probe::run(args.settings())),
        Command::Doctor(args) => runtime()?.block_on(doctor::run(args.settings()?)),
        Command::Decide(args) => runtime()?.block_on(decide::run(&args.settings()?)),
        Command::Simulate(args) => {
            if !args.command.is_empty() {
                isolate(args.upstream.as_deref());
            }
            let settings = crate::cli::settings::simulate_settings(&args)?;
            runtime()?.block_on(simulate::run(settings))
        }
        Command::Demo(args) => runtime()?.block_on(demo::run(&args.settings())),
        Command::Certify(args) => {
            // A worker of `certify --jobs N` plays the scenario it was handed in a network of
            // its own.
            if let Some(input) = certify::take_input()? {
                crate::simulator::sim::isolation::own_network();
                isolate(None);
                return runtime()?.block_on(certify::worker(&input));
            }
            let settings = crate::cli::certify::settings(&args)?;
            isolate(Some(&args.upstream));
            runtime()?.block_on(certify::run(&settings))
        }
        Command::Decode(args) => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            decode::run(&args.settings(), &mut out, &mut std::io::stderr())
        }
        Command::Replay(args) => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            replay::run(&args.settings(), &mut out, &mut std::io::stderr())
        }
        Command::Pcap(args) => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            pcap::run(args.settings()?, &mut out, &mut std::io::stderr())
        }
    }
}

/// A run that starts a client chooses how it gets port 53 while the process still has one thread
/// (`sim::isolation`); an `--upstream` address is on the machine's network, which a namespace
/// of its own would cut off.
fn isolate(upstream: Option<&str>) {
    let outside = upstream
        .filter(|u| *u != "spawn")
        .map(|_| "the --upstream server");
    crate::simulator::sim::isolation::prepare(outside);
}

/// The watch runs on one thread. Its work per frame is a read, a decode and a line: one thread
/// is far more than even 10,000 connections need, and handing every frame from a worker thread
/// to the thread that writes it cost as much CPU as the rest of the work (a flood of 1M pub/sub
/// messages: 2.0 s of CPU with the worker pool, 1.1 s on one thread; docs/benchmarks.md). What it
/// gives up is measured there too: a frame's timestamp waits for the thread to wake as a
/// blocking reader's would, and a stalled stdout stalls the whole watch, `/metrics` included,
/// which a scrape then reports as down. The simulator, the probe (thousands of TLS handshakes at
/// once) and the demo keep the worker pool.
fn one_thread() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// A grade as the judge's JSON lines with `json`, else as the table wrapped at the terminal's
/// width: pcap and replay print a grade the same way.
fn write_grade(
    out: &mut dyn std::io::Write,
    obs: &crate::grading::judge::Observations,
    g: &crate::grading::judge::Grade,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        out.write_all(crate::grading::judge::grade_lines::write(obs, g)?.as_bytes())?;
        return Ok(());
    }
    write_grade_table(out, g)?;
    Ok(())
}

/// The grade's table wrapped at the terminal's width, as every command that grades prints it.
fn write_grade_table(
    out: &mut dyn std::io::Write,
    g: &crate::grading::judge::Grade,
) -> std::io::Result<()> {
    let columns = crate::present::output::terminal::stdout_columns();
    write!(
        out,
        "{}",
        crate::present::output::human::wrap_grade(&g.table(), columns)
    )
}
