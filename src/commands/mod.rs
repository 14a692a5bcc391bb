//! One module per subcommand: each wires the library's modules together for one job and owns
//! nothing the modules own.

pub mod decide;
pub mod decode;
pub mod demo;
pub mod pcap;
pub mod probe;
pub mod replay;
pub mod simulate;
pub mod watch;

use crate::cli::{Cli, Command};

/// Runs a parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Watch(args) => runtime()?.block_on(watch::run(&args)),
        Command::Probe(args) => runtime()?.block_on(probe::run(&args)),
        Command::Decide(args) => runtime()?.block_on(decide::run(&args)),
        Command::Simulate(args) => runtime()?.block_on(simulate::run(&args)),
        Command::Demo(args) => runtime()?.block_on(demo::run(&args)),
        Command::Decode(args) => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            decode::run(&args, &mut out, &mut std::io::stderr())
        }
        Command::Replay(args) => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            replay::run(&args, &mut out, &mut std::io::stderr())
        }
        Command::Pcap(args) => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            pcap::run(&args, &mut out, &mut std::io::stderr())
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
