//! The modules form layers: no top-level module of the library reaches, through the paths it
//! names (`crate::x` in `use` lines and inline), back to itself. A cycle means two modules can
//! only be understood together; this test names the first one it finds, with the file of each
//! step, so the reader sees which path to cut.
//!
//! Test code (everything from a file's first `#[cfg(test)]` on, where this crate keeps its unit
//! tests) is left out: a test may use any module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, in a stable order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The top-level module a file belongs to (`src/output/human.rs` -> `output`), or `None` for the
/// crate roots.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib" && name != "main").then_some(name)
}

/// The top-level modules a piece of source names: `crate::x` and each `x` of `crate::{x, y}`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let word: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !word.is_empty() {
                    out.insert(word);
                }
            }
        } else {
            let word: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !word.is_empty() {
                out.insert(word);
            }
        }
    }
    out
}

type Graph = BTreeMap<String, BTreeMap<String, PathBuf>>;

fn graph(src: &Path) -> Graph {
    let mut edges = Graph::new();
    for file in rust_files(src) {
        let Some(from) = module_of(src, &file) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let entry = edges.entry(from.clone()).or_default();
        for to in named_modules(code) {
            if to != from {
                entry.entry(to).or_insert_with(|| file.clone());
            }
        }
    }
    edges
}

/// A cycle through `start`, as the list of modules walked, if there is one.
fn cycle_from(edges: &Graph, start: &str) -> Option<Vec<String>> {
    fn walk(
        edges: &Graph,
        at: &str,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in edges.get(at).into_iter().flat_map(|m| m.keys()) {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(edges, next, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    let mut seen = BTreeSet::new();
    walk(edges, start, start, &mut path, &mut seen).then_some(path)
}

#[test]
fn no_module_reaches_back_to_itself() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = graph(&src);
    assert!(edges.len() > 10, "the walk found the modules: {edges:?}");
    for module in edges.keys() {
        if let Some(cycle) = cycle_from(&edges, module) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("{} -> {} ({})", w[0], w[1], edges[&w[0]][&w[1]].display()))
                .collect();
            panic!("import cycle:\n  {}", steps.join("\n  "));
        }
    }
}

#[test]
fn the_checker_sees_a_cycle_and_both_path_forms() {
    assert_eq!(
        named_modules("use crate::{record::X, output};\nlet y = crate::watch::Z;"),
        ["output", "record", "watch"].map(String::from).into()
    );
    let mut edges = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        edges
            .entry(a.to_string())
            .or_default()
            .insert(b.to_string(), PathBuf::from(format!("{a}.rs")));
    }
    assert_eq!(cycle_from(&edges, "a").unwrap(), ["a", "b", "c", "a"]);
    assert_eq!(cycle_from(&edges, "d"), None);
}
