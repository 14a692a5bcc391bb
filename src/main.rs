//! The `maintwatch` binary: parse arguments, run, map the outcome to an exit code. All logic lives
//! in the library.

use clap::FromArgMatches;
use maintwatch::cli::{Cli, Command};
use maintwatch::{commands, exit};

fn main() {
    maintwatch::cli::set_help_width(maintwatch::present::output::terminal::stdout_width());
    let parsed = maintwatch::cli::command()
        .try_get_matches()
        .and_then(|mut matches| {
            Cli::from_arg_matches_mut(&mut matches)
                .map_err(|e| e.format(&mut maintwatch::cli::command()))
        });
    let cli = parsed.unwrap_or_else(|e| {
        if let Some(message) = maintwatch::cli::connect::host_without_value(&e) {
            maintwatch::present::output::terminal::tell("", &message);
            std::process::exit(exit::USAGE);
        }
        e.exit()
    });
    open_files_for(&cli.command);
    let code = match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            let code = maintwatch::cli::usage::exit_code(&e);
            // `maintwatch ... | head` closing the pipe early is not an error to show.
            if code != exit::SUCCESS {
                maintwatch::present::output::terminal::print_error(&e);
            }
            code
        }
    };
    std::process::exit(code);
}

/// File descriptors the process needs besides its connections: stdio, the runtime's epoll and
/// wakers, DNS sockets, dry-runs, a capture file.
const SPARE_FDS: u64 = 64;

/// Raises the soft limit on open files to the hard limit (a watch of 10,000 connections needs
/// more than the usual soft 1024) and says on stderr when even the hard limit is too low for the
/// connections asked, naming the flag and the limit, rather than failing connection by
/// connection later.
fn open_files_for(command: &Command) {
    let limit = raise_nofile();
    let (flag, wanted) = match command {
        Command::Watch(args) => ("--connections", u64::from(args.connections)),
        // Without --from, the endpoints on the command line are all there is to open.
        Command::Probe(args) => {
            let listed = (args.urls.len() + usize::from(args.connect.uri.is_some())).max(1);
            let at_once = match args.from {
                None => args
                    .concurrency
                    .min(u32::try_from(listed).unwrap_or(u32::MAX)),
                Some(_) => args.concurrency,
            };
            ("--concurrency", u64::from(at_once))
        }
        _ => return,
    };
    if let Some(limit) = limit.filter(|&l| wanted + SPARE_FDS > l) {
        let text = format!(
            "{flag} {wanted} needs about {} open files but the hard limit (RLIMIT_NOFILE, \
             `ulimit -Hn`) is {limit}: connections past it will fail; raise the hard limit or \
             lower {flag}",
            wanted + SPARE_FDS
        );
        maintwatch::present::output::terminal::tell("warning", &text);
    }
}

/// Sets the soft RLIMIT_NOFILE to the hard one; returns the limit now in force (`None`: unknown
/// or unlimited).
fn raise_nofile() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed by pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    (lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}
