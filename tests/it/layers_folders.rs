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
