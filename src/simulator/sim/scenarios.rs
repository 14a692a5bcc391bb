//! The scenarios shipped with maintwatch, embedded in the binary.
//!
//! They live as data files in `scenarios/` (one per scenario, documented in
//! `scenarios/README.md`) and are compiled in with `include_str!`, so `maintwatch demo` and
//! `maintwatch simulate` work from any directory on a machine that has only the binary. The list
//! is made at build time (build.rs) from the files themselves: each says on its `name` line
//! whether it is compiled in and where it stands in `--list` (`#@ embedded 40`, or `no`).

use super::scenario::{Scenario, ScenarioError};

// `FILES`: `(file name as shown in errors, contents)`, in the order `--list` shows them, made by
// build.rs from the `#@ embedded N` directive on each file's `name` line.
include!(concat!(env!("OUT_DIR"), "/scenarios.rs"));

/// Every file, in `--list` order: the scenarios, then the robustness set (`robust-*.scn`, placed
/// after them by their `#@ embedded` numbers).
fn files() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    FILES.iter()
}

/// The name prefix of the robustness set's cases (scenarios/README.md, "The robustness set"):
/// one kind of frame each, played by `certify --scenarios robustness`, never by default.
const ROBUSTNESS_PREFIX: &str = "robust-";

/// Whether a scenario is a case of the robustness set.
pub fn is_robustness(name: &str) -> bool {
    name.starts_with(ROBUSTNESS_PREFIX) && names().contains(&name)
}

/// The scenario the CLI plays when none is named.
pub const DEFAULT: &str = "single-proxy";

/// Every embedded scenario, parsed.
///
/// # Panics
/// If an embedded file does not parse: a build defect, caught by this module's tests.
pub fn all() -> Vec<Scenario> {
    files()
        .map(|(file, text)| {
            Scenario::parse(file, text).unwrap_or_else(|e| panic!("embedded scenario: {e}"))
        })
        .collect()
}

/// The names of the embedded scenarios, in `--list` order, for clap's possible values (and so
/// the shell completions). Taken from the file names, which a test keeps equal to the names the
/// files declare, so that they are `'static` without parsing anything.
pub fn names() -> Vec<&'static str> {
    files()
        .map(|(file, _)| {
            let base = file.rsplit('/').next().unwrap_or(file);
            base.strip_suffix(".scn").unwrap_or(base)
        })
        .collect()
}

/// The embedded scenario of that name.
pub fn by_name(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.name == name)
}

/// Loads a scenario file from disk; errors name the path as given.
pub fn load(path: &std::path::Path) -> Result<Scenario, LoadError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| LoadError::Read {
        path: shown.clone(),
        error,
    })?;
    Ok(Scenario::parse(&shown, &text)?)
}

/// The scenario a command line names: a file when one is given, else an embedded one by name
/// (`simulate` and `demo` take the same pair of flags).
pub fn chosen(name: &str, file: Option<&std::path::Path>) -> anyhow::Result<Scenario> {
    match file {
        Some(path) => Ok(load(path)?),
        None => by_name(name).ok_or_else(|| {
            anyhow::anyhow!(
                "no scenario named {name:?}; the scenarios are:\n{}",
                listing().trim_end()
            )
        }),
    }
}

/// Why a scenario file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    // The OS error is part of this message and deliberately not a `source`: a caller printing
    // the chain (`{:#}`) would show it twice.
    #[error("cannot read scenario file {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error(transparent)]
    Parse(#[from] ScenarioError),
}

/// Names and one-line descriptions, one per line, for `--list` and `--help`.
pub fn listing() -> String {
    listing_by(|lead, about| vec![format!("{lead}{about}")])
}

/// `--list`: each scenario's rows as `row(lead, description)` makes them (on a terminal, the
/// description wrapped under its own column; the wrapping is the terminal output's, which the
/// simulator does not name).
pub fn listing_by(row: impl Fn(&str, &str) -> Vec<String>) -> String {
    let all = all();
    let width = all.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for s in &all {
        for line in row(&format!("  {:width$}  ", s.name), &s.about) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_scenario_parses_with_a_unique_name() {
        let all = all();
        let files: Vec<_> = files().collect();
        assert_eq!(all.len(), files.len());
        for (i, s) in all.iter().enumerate() {
            assert!(
                files[i].0.ends_with(&format!("/{}.scn", s.name)),
                "{} is named {}",
                files[i].0,
                s.name
            );
            assert!(all[..i].iter().all(|o| o.name != s.name));
        }
        assert!(by_name(DEFAULT).is_some());
        let names: Vec<String> = all.into_iter().map(|s| s.name).collect();
        assert_eq!(names, names_list(), "names() must follow the files");
    }

    fn names_list() -> Vec<String> {
        names().into_iter().map(String::from).collect()
    }

    /// `maintwatch simulate --scenario-file missing.scn` printed the OS error twice.
    #[test]
    fn a_missing_file_names_its_os_error_once() {
        let e = load(std::path::Path::new("no/such/dir/missing.scn")).unwrap_err();
        let shown = format!("{:#}", anyhow::Error::from(e));
        let os = std::io::Error::from(std::io::ErrorKind::NotFound).to_string();
        assert!(
            shown.starts_with("cannot read scenario file no/such/dir/missing.scn: "),
            "{shown}"
        );
        assert_eq!(shown.matches("os error").count(), 1, "{shown} ({os})");
    }
}
