//! The layers inside a folder: [`super::layers`] keeps the top-level modules free of cycles; this
//! holds every folder below them to the same. The children of a folder (its files and its
//! subfolders, each subfolder counted as one) must not reach back to themselves through the paths
//! they name, `crate::a::b::x` and `super::x` alike. The folder's own root (`mod.rs`) is its map
//! and is left out, and so is test code, as in the top-level check.
//!
//! A cycle between two siblings means neither can be read alone: `output/human/lines.rs` drew
//! the summary, whose tables wrapped with `output/human`'s wrapping, until the summary moved
//! into `output/human/`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::layers::{code_of, cycle_from, is_test_file, rust_files, Graph};

/// The module path of a file below `src`: `src/present/output/human/render.rs` -> `[present,
/// output, human, render]`; a `mod.rs` is its folder.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The identifiers a path names from `at` on: `a::b::{c, d::e}` -> `[[a, b, c], [a, b, d]]`
/// (only the first segment of each item of a group is needed to find the sibling).
fn paths_from(text: &str) -> Vec<Vec<String>> {
    let mut segs = Vec::new();
    let mut rest = text;
    loop {
        let word: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if word.is_empty() {
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                return group[..end]
                    .split(',')
                    .map(|item| {
                        let mut p = segs.clone();
                        p.extend(
                            paths_from(item.trim())
                                .into_iter()
                                .next()
                                .unwrap_or_default(),
                        );
                        p
                    })
                    .collect();
            }
            return vec![segs];
        }
        rest = &rest[word.len()..];
        segs.push(word);
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => return vec![segs],
        }
    }
}

/// Every absolute module path a file's code names through `crate::` or `super::`.
fn named_paths(code: &str, me: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        for (i, _) in code.match_indices(start) {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let (mut base, mut rest) = if start == "crate::" {
                (Vec::new(), &code[i + start.len()..])
            } else {
                (
                    me[..me.len().saturating_sub(1)].to_vec(),
                    &code[i + start.len()..],
                )
            };
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            for p in paths_from(rest) {
                out.push(base.iter().cloned().chain(p).collect());
            }
        }
    }
    out
}

/// The sibling graph of one folder (`folder` as a module path, e.g. `[output]`).
fn folder_graph(src: &Path, folder: &[String]) -> Graph {
    let mut edges = Graph::new();
    for file in rust_files(src) {
        let me = module_path(src, &file);
        if is_test_file(&file) || me.len() <= folder.len() || !me.starts_with(folder) {
            continue;
        }
        let from = me[folder.len()].clone();
        let text = std::fs::read_to_string(&file).unwrap();
        // Comments are cut: a doc link names a module without depending on it.
        let code: Vec<String> = text
            .split("#[cfg(test)]")
            .next()
            .unwrap()
            .lines()
            .map(code_of)
            .collect();
        let code = code.join("\n");
        let entry = edges.entry(from.clone()).or_default();
        for p in named_paths(&code, &me) {
            if p.len() > folder.len() && p.starts_with(folder) && p[folder.len()] != from {
                entry
                    .entry(p[folder.len()].clone())
                    .or_insert_with(|| file.clone());
            }
        }
    }
    edges
}

/// Every folder below `src` that holds modules, as module paths.
fn folders(src: &Path) -> BTreeSet<Vec<String>> {
    rust_files(src)
        .iter()
        .filter_map(|f| {
            let me = module_path(src, f);
            let dir: PathBuf = f.parent().unwrap().to_path_buf();
            (dir != src && !me.is_empty()).then(|| module_path(src, &dir.join("mod.rs")))
        })
        .collect()
}

fn first_cycle(src: &Path) -> Option<(Vec<String>, Vec<String>)> {
    for folder in folders(src) {
        let edges = folder_graph(src, &folder);
        for start in edges.keys() {
            if let Some(c) = cycle_from(&edges, start) {
                return Some((folder, c));
            }
        }
    }
    None
}

#[test]
fn no_folder_has_a_cycle_among_its_children() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let human: Vec<String> = ["present", "output", "human"].map(String::from).into();
    assert!(folders(&src).contains(&human));
    if let Some((folder, cycle)) = first_cycle(&src) {
        let edges = folder_graph(&src, &folder);
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|w| format!("{} -> {} ({})", w[0], w[1], edges[&w[0]][&w[1]].display()))
            .collect();
        panic!(
            "a cycle inside src/{}: {}",
            folder.join("/"),
            steps.join(", ")
        );
    }
}

#[test]
fn the_folder_checker_sees_both_path_forms_and_groups() {
    let me: Vec<String> = ["sim", "pubsub"].iter().map(|s| s.to_string()).collect();
    let named = named_paths(
        "use super::{azure, cluster::key_slot};\nlet x = crate::sim::dns::Zone;",
        &me,
    );
    let has = |p: &[&str]| {
        named
            .iter()
            .any(|n| n.iter().map(String::as_str).eq(p.iter().copied()))
    };
    assert!(has(&["sim", "azure"]), "{named:?}");
    assert!(has(&["sim", "cluster", "key_slot"]), "{named:?}");
    assert!(has(&["sim", "dns", "Zone"]), "{named:?}");
    let mut g = Graph::new();
    g.entry("a".into())
        .or_default()
        .insert("b".into(), PathBuf::from("a.rs"));
    g.entry("b".into())
        .or_default()
        .insert("a".into(), PathBuf::from("b.rs"));
    assert_eq!(
        cycle_from(&g, "a"),
        Some(vec!["a".into(), "b".into(), "a".into()])
    );
}

/// A file's code outside its test code, comments cut: a `#[cfg(test)] mod x;` line is passed
/// over, and an inline `#[cfg(test)] mod tests { ... }` ends the code (it comes last).
fn code_outside_tests(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let next = lines.peek().map_or("", |l| l.trim());
            if next.ends_with('{') {
                break;
            }
            lines.next();
            continue;
        }
        out.push(code_of(line));
    }
    out.join("\n")
}

/// Folder roots that still hold code of their own, each to become a map as its code moves
/// into a file of the folder (issue 58). A root that no longer needs its place fails the test
/// below, so the list only shrinks.
const ROOTS_WITH_CODE: &[&str] = &[
    "cli/mod.rs",
    "commands/mod.rs",
    "present/output/human/mod.rs",
    "present/report/mod.rs",
    "present/service/mod.rs",
    "shared/mod.rs",
    "simulator/sim/fault_injector/mod.rs",
];

/// What a root defines beyond declarations and re-exports: a function, a type, an impl, a
/// constant, a static.
fn definitions(code: &str) -> Vec<String> {
    const KINDS: [&str; 9] = [
        "fn ",
        "async fn ",
        "struct ",
        "enum ",
        "trait ",
        "impl",
        "const ",
        "static ",
        "type ",
    ];
    code.lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('}'))
        .map(|l| match l.strip_prefix("pub") {
            Some(rest) => rest.split_once(' ').map_or("", |(_, r)| r),
            None => l,
        })
        .filter(|l| KINDS.iter().any(|k| l.starts_with(k)))
        .map(|l| l.chars().take(60).collect())
        .collect()
}

/// Each folder root (`mod.rs`) is a map: its doc, its children's declarations and the
/// re-exports of the folder's public names, and nothing its children could need from it. A
/// child then names its siblings, never its parent, so no arrow inside an area runs back up to
/// the root of its folder (a registration list such as `register!`'s, which expands to the
/// list of the folder's children, is a declaration).
#[test]
fn each_folder_root_is_a_map_so_no_arrow_runs_back_up() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut stale = Vec::new();
    for file in rust_files(&src) {
        if file.file_name().is_none_or(|n| n != "mod.rs") {
            continue;
        }
        let shown = file.strip_prefix(&src).unwrap().display().to_string();
        let defined = definitions(&code_outside_tests(&file));
        match (
            ROOTS_WITH_CODE.contains(&shown.as_str()),
            defined.is_empty(),
        ) {
            (false, false) => found.push(format!("{shown}: {}", defined.join("; "))),
            (true, true) => stale.push(shown),
            _ => {}
        }
    }
    assert!(
        found.is_empty(),
        "folder roots with code of their own (move it into a file of the folder):\n  {}",
        found.join("\n  ")
    );
    assert!(
        stale.is_empty(),
        "now maps, take them off ROOTS_WITH_CODE: {stale:?}"
    );
}

#[test]
fn the_map_checker_sees_definitions_and_passes_declarations() {
    let code = "//! doc\nmod a;\npub use a::{B, C};\npub(crate) fn d() {}\nimpl B {}\n";
    let code: String = code.lines().map(code_of).collect::<Vec<_>>().join("\n");
    assert_eq!(definitions(&code), ["fn d() {}", "impl B {}"]);
    assert!(definitions("mod a;\npub use a::X;\nregister! {\n    a::A,\n}").is_empty());
}

/// A module imports what it uses: no child takes its parent's imports wholesale
/// (`use super::*` outside a test module), and no folder root hands a child's names to its
/// siblings as a prelude (`pub use child::*`). Each name then says where it comes from, and an
/// arrow inside a folder is one a reader can follow.
#[test]
fn modules_import_what_they_use() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for file in rust_files(&src) {
        if is_test_file(&file) || file.to_string_lossy().ends_with("_tests.rs") {
            continue;
        }
        let shown = file.strip_prefix(&src).unwrap().display().to_string();
        for line in code_outside_tests(&file).lines() {
            let line = line.trim();
            if line == "use super::*;" {
                found.push(format!("{shown}: {line}"));
            }
            // In a folder root, any glob of a child (`use child::*`, `pub use child::*`) is a
            // prelude: the folder's files would reach each other through their root.
            let root = file.file_name().is_some_and(|n| n == "mod.rs");
            let glob = line.ends_with("::*;") && line.contains("use ");
            if glob && (line.starts_with("pub") || root) {
                found.push(format!("{shown}: {line}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "glob imports outside test code (name what is used):\n  {}",
        found.join("\n  ")
    );
}
