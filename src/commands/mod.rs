//! One module per subcommand: each wires the library's modules together for one job and owns
//! nothing the modules own.

pub mod decode;
pub mod simulate;

use crate::cli::{Cli, Command};

/// Runs a parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Decode(args) => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            decode::run(&args, &mut out, &mut std::io::stderr())
        }
    }
}

#[allow(dead_code)]
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
