//! What certify does once, before its first scenario: says how the client is isolated, finds
//! the client's program (a typo is said once, not once per scenario), and makes the folders the
//! scenarios write to.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::present::output::terminal;
use crate::shared::escape::sanitize;
use crate::simulator::simulation::settings::{CertifySettings, SimulationSettings};

/// Once, before the first scenario: a run in a namespace of its own, or without port 53 at all,
/// is said on stderr (each scenario's own run is silent).
pub fn say_isolation() {
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

/// Why the client's program cannot be started, looked up before any scenario as `exec` looks it
/// up (a path as given, a bare name on `PATH`): a typo is said once, not once per scenario. A
/// program that is found but fails to start otherwise is still caught where it is started.
pub fn cannot_start(sim: &SimulationSettings) -> Option<String> {
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

/// Where the client's output goes, made if it is not there, as is `--pcap`'s directory: once,
/// before any scenario, rather than each scenario failing on its own.
pub fn output_dir(args: &CertifySettings) -> anyhow::Result<PathBuf> {
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
