//! Lists the scenarios compiled into the binary, from `scenarios/` itself: a new scenario is its
//! `.scn` file (and its row in `scenarios/README.md`), with nothing to register in the code.
//!
//! Each `.scn` says on its `name` line, in a comment directive the scenario format ignores,
//! whether it is compiled in and where it stands in `--list` (and so in certify's default
//! order): `#@ embedded 40` places it by that number, lowest first; `#@ embedded no` leaves it
//! to `--scenario-file`. A file without the directive, or with two, fails the build.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let dir =
        Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut listed: Vec<(u32, String, PathBuf)> = Vec::new();
    for file in scenario_files(&dir) {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let base = file
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a UTF-8 file name");
        if let Some(place) = placement(base, &text) {
            listed.push((place, base.to_string(), file));
        }
    }
    listed.sort();
    if let Some(w) = listed.windows(2).find(|w| w[0].0 == w[1].0) {
        panic!("{} and {} both say #@ embedded {}", w[0].1, w[1].1, w[0].0);
    }
    let mut out = String::from(
        "/// `(file name as shown in errors, contents)`, in the order `--list` shows them.\n",
    );
    out.push_str("const FILES: &[(&str, &str)] = &[\n");
    for (_, base, path) in &listed {
        writeln!(
            out,
            "    (\"scenarios/{base}\", include_str!({:?})),",
            path.to_str().expect("a UTF-8 path")
        )
        .unwrap();
    }
    out.push_str("];\n");
    let target = Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("scenarios.rs");
    std::fs::write(&target, out)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", target.display()));
}

/// The `.scn` files of the folder, by name.
fn scenario_files(dir: &Path) -> Vec<PathBuf> {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "scn"))
        .collect();
    files.sort();
    files
}

/// Where the file stands in the list, or `None` when it is not compiled in, from its one
/// `#@ embedded` directive.
fn placement(base: &str, text: &str) -> Option<u32> {
    let said: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once("#@ embedded").map(|(_, rest)| rest.trim()))
        .collect();
    match said.as_slice() {
        ["no"] => None,
        [n] => Some(n.parse().unwrap_or_else(|_| {
            panic!("{base}: #@ embedded takes a number (its place in --list) or no, not {n:?}")
        })),
        _ => panic!(
            "{base}: says #@ embedded {} times; say it once, on its name line: `#@ embedded N` (its place in --list) or `#@ embedded no`",
            said.len()
        ),
    }
}
