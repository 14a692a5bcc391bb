//! The committed completions (`completions/`) and man pages (`man/`) must be what the current clap
//! definitions generate, byte for byte. When the CLI changes, refresh them with
//!
//!     MAINTWATCH_REGENERATE=1 cargo test --test generated
//!
//! which rewrites them in the repository (and removes files there that are no longer generated)
//! instead of comparing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use maintwatch::cli::Cli;
mod gen;

use gen::{COMPLETIONS_DIR, MAN_DIR};

const REFRESH: &str = "MAINTWATCH_REGENERATE=1 cargo test --test generated";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn regenerating() -> bool {
    std::env::var_os("MAINTWATCH_REGENERATE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The files now in the committed directories, relative to the repository root.
fn committed() -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    for dir in [COMPLETIONS_DIR, MAN_DIR] {
        let Ok(entries) = std::fs::read_dir(repo().join(dir)) else {
            continue;
        };
        for entry in entries {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                found.insert(Path::new(dir).join(entry.file_name()));
            }
        }
    }
    found
}

#[test]
fn completions_and_man_pages_are_up_to_date() {
    if regenerating() {
        let written = gen::write_all(repo()).unwrap();
        let fresh: BTreeSet<PathBuf> = written
            .iter()
            .map(|p| p.strip_prefix(repo()).unwrap().to_path_buf())
            .collect();
        for stale in committed().difference(&fresh) {
            std::fs::remove_file(repo().join(stale)).unwrap();
            eprintln!("removed {} (no longer generated)", stale.display());
        }
        eprintln!("regenerated {} files", written.len());
        return;
    }

    let tmp = tempfile::tempdir().unwrap();
    let written = gen::write_all(tmp.path()).unwrap();
    let mut problems = Vec::new();
    let mut fresh = BTreeSet::new();
    for path in &written {
        let rel = path.strip_prefix(tmp.path()).unwrap().to_path_buf();
        let want = std::fs::read(path).unwrap();
        match std::fs::read(repo().join(&rel)) {
            Ok(have) if have == want => {}
            Ok(_) => problems.push(format!("{} is stale", rel.display())),
            Err(e) => problems.push(format!("{} is missing ({e})", rel.display())),
        }
        fresh.insert(rel);
    }
    for extra in committed().difference(&fresh) {
        problems.push(format!("{} is no longer generated", extra.display()));
    }
    assert!(
        problems.is_empty(),
        "the committed completions and man pages do not match the CLI:\n  {}\nrefresh them with: \
         {REFRESH}",
        problems.join("\n  ")
    );
}

/// The names packagers and shells look for; a rename would break their install scripts.
#[test]
fn the_generated_names_are_the_documented_ones() {
    let names: BTreeSet<String> = gen::all()
        .unwrap()
        .into_iter()
        .map(|f| f.path.to_string_lossy().replace('\\', "/"))
        .collect();
    for want in [
        "completions/maintwatch.bash",
        "completions/_maintwatch",
        "completions/maintwatch.fish",
        "completions/_maintwatch.ps1",
        "completions/maintwatch.elv",
        "man/maintwatch.1",
        "man/maintwatch-watch.1",
        "man/maintwatch-decode.1",
        "man/maintwatch-simulate.1",
        "man/maintwatch-demo.1",
        "man/maintwatch-replay.1",
    ] {
        assert!(
            names.contains(want),
            "{want} is not generated; got {names:?}"
        );
    }
    assert!(
        !names.contains("man/maintwatch-help.1"),
        "the help subcommand gets no page"
    );
}

/// Every subcommand's page names the program, shows its full usage, its long description and its
/// examples: what a bare clap subcommand would lack.
#[test]
fn each_subcommand_page_is_complete() {
    let files = gen::all().unwrap();
    let page = |name: &str| {
        let f = files
            .iter()
            .find(|f| f.path == Path::new(MAN_DIR).join(format!("maintwatch-{name}.1")))
            .unwrap_or_else(|| panic!("no page for {name}"));
        String::from_utf8(f.bytes.clone()).unwrap()
    };
    let version = env!("CARGO_PKG_VERSION");
    let cli = Cli::command();
    let names: Vec<String> = cli
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .map(|c| c.get_name().to_string())
        .collect();
    assert!(names.len() >= 5, "{names:?}");
    for name in names.iter().map(String::as_str) {
        let text = page(name);
        let title = text
            .lines()
            .find(|l| l.starts_with(".TH "))
            .unwrap_or_default();
        assert_eq!(
            title,
            format!(".TH maintwatch-{name} 1  \"maintwatch {version}\" "),
            "{name}"
        );
        assert!(
            text.contains(&format!("\\fBmaintwatch {name}\\fR")),
            "{name}: synopsis"
        );
        // The long description, not the one-line summary a variant's doc comment leaves.
        let long = cli
            .find_subcommand(name)
            .and_then(|c| c.get_long_about())
            .unwrap_or_else(|| panic!("{name} has no long_about"))
            .to_string();
        let opening: Vec<&str> = long.split_whitespace().take(4).collect();
        let opening = opening
            .join(" ")
            .replace('-', "\\-")
            .replace('\'', "\\*(Aq");
        let description = text.split(".SH DESCRIPTION\n").nth(1).unwrap_or_default();
        assert!(
            description.starts_with(&opening),
            "{name}: the description does not start with {opening:?}"
        );
        assert!(text.contains("\n.SH EXAMPLES\n"), "{name}: no examples");
        assert!(!text.contains(".SH EXTRA"), "{name}: an EXTRA section");
    }
    // The synopsis names what an option takes.
    let watch = page("watch");
    let synopsis = watch.split(".SH SYNOPSIS\n").nth(1).unwrap_or_default();
    let synopsis = synopsis.split("\n.SH ").next().unwrap_or_default();
    assert!(
        synopsis.contains("[\\fB\\-\\-from\\fR \\fIFILE\\fR]"),
        "{synopsis}"
    );
    assert!(synopsis.contains("[\\fB\\-\\-json\\fR]"), "{synopsis}");
}

/// Every page, as man shows it at 80 columns, keeps within them: the examples and the scenario
/// tables are set verbatim, which man does not wrap, so the generator cuts them. Needs man
/// (groff); absent, a SKIP line.
#[test]
fn every_page_fits_80_columns_in_man() {
    let man = std::process::Command::new("man").arg("--version").output();
    if !man.is_ok_and(|o| o.status.success()) {
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP: every_page_fits_80_columns_in_man: no man on PATH\n"),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for file in gen::all()
        .unwrap()
        .iter()
        .filter(|f| f.path.starts_with(MAN_DIR))
    {
        let page = dir.path().join(file.path.file_name().unwrap());
        std::fs::write(&page, &file.bytes).unwrap();
        let out = std::process::Command::new("man")
            .args(["-P", "cat", "-l"])
            .arg(&page)
            .env("MANWIDTH", "80")
            .env("LC_ALL", "C.UTF-8")
            .env_remove("MANPAGER")
            .env_remove("PAGER")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {out:?}", file.path.display());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.lines().count() > 10, "{}: {text}", file.path.display());
        for line in text.lines() {
            assert!(
                line.chars().count() <= 80,
                "{}: {} columns: {line}",
                file.path.display(),
                line.chars().count()
            );
        }
    }
}
