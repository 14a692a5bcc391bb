//! The `maintwatch` binary: parse arguments, run, map the outcome to an exit code. All logic lives
//! in the library.

use clap::Parser;
use maintwatch::{cli::Cli, commands, conn::ConfigError, exit};

fn main() {
    let cli = Cli::parse();
    let code = match commands::run(cli) {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => exit::SUCCESS,
        Err(e) => {
            eprintln!("maintwatch: {e:#}");
            // Connection settings that cannot be used are a usage error, as in `probe`.
            if e.chain().any(|c| c.is::<ConfigError>()) {
                exit::USAGE
            } else {
                exit::FAILURE
            }
        }
    };
    std::process::exit(code);
}

/// `maintwatch ... | head` closing the pipe early is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
