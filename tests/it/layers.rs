//! The modules form layers: no top-level module of the library reaches, through the paths it
//! names (`crate::x` in `use` lines and inline), back to itself. A cycle means two modules can
//! only be understood together; this test names the first one it finds, with the file of each
//! step, so the reader sees which path to cut.
//!
//! Test code (everything from a file's first `#[cfg(test)]` on, and a whole file named
//! `tests.rs`, which is where a module directory keeps its unit tests, declared
//! `#[cfg(test)] mod tests;`) is left out: a test may use any module.
//!
//! The same walk holds every function in `src/` to at most [`MAX_FN_LINES`] lines, from its
//! `fn` line to its closing brace, so each reads at once. The scenario-file parser is the one
//! exception: it is one flat match over the file's keywords.
//!
//! And it holds every file in `src/` to at most [`MAX_FILE_LINES`] lines, so a file keeps to one
//! concern: past that, split it into a module directory by concern, tests in their own file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, in a stable order.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
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

/// The top-level module a file belongs to (`src/present/output/human/wrap.rs` -> `output`), or `None` for the
/// crate roots.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts = rel
        .components()
        .map(|c| c.as_os_str().to_str().unwrap().trim_end_matches(".rs"));
    let name = parts.next()?.to_string();
    if AREAS.contains(&name.as_str()) {
        // An area's modules are the units; its own mod.rs only declares them.
        let module = parts.next().filter(|m| *m != "mod")?;
        return Some(format!("{name}::{module}"));
    }
    (name != "lib" && name != "main").then_some(name)
}

/// The folders of `src/` that group modules into areas; the layers are between the modules of
/// an area (`observe::record`) and the modules outside the areas (`cli`, `shared`).
const AREAS: &[&str] = &[
    "grading",
    "network",
    "observe",
    "present",
    "protocol",
    "simulator",
    "watch",
];

/// The unit a `crate::` path names: its first word, or, when that is an area, the area and
/// the module in it (`crate::observe::record::x` -> `observe::record`).
fn unit_named(rest: &str) -> String {
    let word = |t: &str| -> String {
        t.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let first = word(rest);
    if AREAS.contains(&first.as_str()) {
        if let Some(after) = rest[first.len()..].strip_prefix("::") {
            let second = word(after);
            if !second.is_empty() {
                return format!("{first}::{second}");
            }
        }
    }
    first
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
            let word = unit_named(rest);
            if !word.is_empty() {
                out.insert(word);
            }
        }
    }
    out
}

/// Whether a file is a module's unit tests kept apart (`src/protocol/resp/tests.rs`): test code throughout.
pub(crate) fn is_test_file(file: &Path) -> bool {
    file.file_name().is_some_and(|n| n == "tests.rs")
}

pub(crate) type Graph = BTreeMap<String, BTreeMap<String, PathBuf>>;

fn graph(src: &Path) -> Graph {
    let mut edges = Graph::new();
    for file in rust_files(src) {
        let Some(from) = module_of(src, &file) else {
            continue;
        };
        if is_test_file(&file) {
            continue;
        }
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
pub(crate) fn cycle_from(edges: &Graph, start: &str) -> Option<Vec<String>> {
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

/// The areas and the top-level modules, lowest first: each names only what stands below it
/// (two on one level name neither). So a reader can learn the tree from the bottom: the
/// protocol, the connection, what was observed, the judge, how it is shown, then the two
/// engines that drive it all and the command line.
const STACK: &[&[&str]] = &[
    &["exit"],
    &["shared"],
    &["protocol"],
    &["network"],
    &["observe"],
    &["grading"],
    &["present"],
    &["defaults"],
    &["watch", "simulator"],
    &["cli"],
    &["commands"],
];

/// Where a unit (`observe::record`, `cli`) stands in [`STACK`].
fn level(unit: &str) -> Option<usize> {
    let top = unit.split("::").next().unwrap();
    STACK.iter().position(|l| l.contains(&top))
}

/// The places where a unit names one on its own level or above, as `from -> to (file)`.
fn upward(edges: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for (from, tos) in edges {
        for (to, file) in tos {
            let same = from.split("::").next() == to.split("::").next();
            if let (Some(a), Some(b), false) = (level(from), level(to), same) {
                if b >= a {
                    out.push(format!("{from} -> {to} ({})", file.display()));
                }
            }
        }
    }
    out
}

#[test]
fn the_areas_stack() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = graph(&src);
    for unit in edges.keys() {
        assert!(level(unit).is_some(), "{unit} has no place in STACK");
    }
    let up = upward(&edges);
    assert!(
        up.is_empty(),
        "names past the stack:\n  {}",
        up.join("\n  ")
    );
    // The checker sees an upward name, and one across a level.
    let mut bad = Graph::new();
    for (a, b) in [
        ("observe::pcap", "present::output"),
        ("watch", "simulator::sim"),
    ] {
        bad.entry(a.into())
            .or_default()
            .insert(b.into(), PathBuf::from("x.rs"));
    }
    assert_eq!(upward(&bad).len(), 2);
}

#[test]
fn the_checker_sees_a_cycle_and_both_path_forms() {
    assert_eq!(
        named_modules("use crate::{record::X, output};\nlet y = crate::exit::Z;"),
        ["exit", "output", "record"].map(String::from).into()
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

/// The longest a function in `src/` may be, in lines from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 100;

/// Functions allowed past [`MAX_FN_LINES`], as (file under `src/`, name): none since the
/// scenario parser was split into a function per statement.
const LONG_FUNCTIONS_ALLOWED: &[(&str, &str)] = &[];

/// The name of the function a line starts, if it does: optional `pub`/`pub(...)`, `async`,
/// `const` and `unsafe`, in that order, then `fn` and a name.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    if let Some(after) = rest.strip_prefix("pub") {
        let after = match after.strip_prefix('(') {
            Some(inner) => &inner[inner.find(')')? + 1..],
            None => after,
        };
        if after.starts_with(char::is_whitespace) {
            rest = after.trim_start();
        }
    }
    for word in ["async", "const", "unsafe"] {
        if let Some(after) = rest.strip_prefix(word) {
            if after.starts_with(char::is_whitespace) {
                rest = after.trim_start();
            }
        }
    }
    let after = rest.strip_prefix("fn")?;
    if !after.starts_with(char::is_whitespace) {
        return None;
    }
    let after = after.trim_start();
    let end = after
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(after.len());
    (end > 0).then_some(&after[..end])
}

/// A line with its string literals emptied (`"a{"` -> `""`), its char literals emptied (`'{'` ->
/// `''`) and its `//` comment cut, so only the braces of code are left. A string that goes on
/// past the line is left as it is.
pub(crate) fn code_of(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            if j < chars.len() {
                out.push_str("\"\"");
                i = j + 1;
                continue;
            }
        }
        if c == '\'' {
            let len = match chars.get(i + 1) {
                Some('\\') if chars.len() > i + 2 => 4,
                Some(&n) if n != '\'' => 3,
                _ => 0,
            };
            if len > 0 && chars.get(i + len - 1) == Some(&'\'') {
                out.push_str("''");
                i += len;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    match out.find("//") {
        Some(at) => out[..at].to_string(),
        None => out,
    }
}

/// Every function with a body in `text`, as (name, first line counting from 1, lines). A
/// declaration without a body (`fn f();` in a trait) is not one.
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else {
            continue;
        };
        let mut depth: i64 = 0;
        let mut started = false;
        let mut j = i;
        while j < lines.len() {
            let code = code_of(lines[j]);
            if !started && code.contains(';') && !code.contains('{') {
                break;
            }
            depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            started |= code.contains('{');
            if started && depth <= 0 {
                break;
            }
            j += 1;
        }
        if started {
            out.push((name.to_string(), i + 1, j - i + 1));
        }
    }
    out
}

#[test]
fn no_function_is_over_100_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen = 0;
    let mut long = Vec::new();
    for file in rust_files(&src) {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&file).unwrap();
        for (name, line, lines) in function_lengths(&text) {
            seen += 1;
            let allowed = LONG_FUNCTIONS_ALLOWED.contains(&(rel.as_str(), name.as_str()));
            if lines > MAX_FN_LINES && !allowed {
                long.push(format!("{lines} lines: src/{rel}:{line} {name}"));
            }
        }
    }
    assert!(seen > 500, "the walk found the functions ({seen})");
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them):\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn the_length_counter_skips_strings_comments_and_declarations() {
    let text = [
        "trait T {",
        "    fn declared(&self) -> u8;",
        "}",
        "pub(crate) async fn f() {",
        "    let s = \"}}} \\\" }\"; // }}",
        "    let c = '}';",
        "    if s.is_empty() {",
        "        g(c);",
        "    }",
        "}",
        "fn g(_: char) {}",
    ]
    .join("\n");
    let found: Vec<(String, usize, usize)> = function_lengths(&text);
    let expect = [("f", 4, 7), ("g", 11, 1)].map(|(n, l, len)| (n.to_string(), l, len));
    assert_eq!(found, expect);
    assert_eq!(fn_name("    pub const unsafe fn x_1(a: u8)"), Some("x_1"));
    assert_eq!(fn_name("    let fname = 1;"), None);
    assert_eq!(fn_name("// fn in a comment"), None);
}

/// The longest a file in `src/` may be, in lines.
const MAX_FILE_LINES: usize = 1200;

#[test]
fn no_file_is_over_1200_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen = 0;
    let mut long = Vec::new();
    for file in rust_files(&src) {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        seen += 1;
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        if lines > MAX_FILE_LINES {
            long.push(format!("{lines} lines: src/{rel}"));
        }
    }
    assert!(seen > 50, "the walk found the files ({seen})");
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines (split them by concern):\n  {}",
        long.join("\n  ")
    );
}

/// The commands a piece of a command's source reaches into, besides itself: `crate::commands::x`
/// and `super::x` for every sibling `x` (the module list is read from `src/commands/`).
fn commands_named(code: &str, me: &str, commands: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for prefix in ["crate::commands::", "super::"] {
        for (i, _) in code.match_indices(prefix) {
            let rest = &code[i + prefix.len()..];
            let word: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let group = rest.starts_with('{');
            let named: Vec<String> = if group {
                let end = rest.find('}').unwrap_or(rest.len());
                rest[1..end]
                    .split(',')
                    .map(|w| w.trim().to_string())
                    .collect()
            } else {
                vec![word]
            };
            for w in named {
                let w: String = w
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if w != me && commands.contains(&w) {
                    out.insert(w);
                }
            }
        }
    }
    out
}

/// A command wires library modules for one job; when two commands need the same thing, it
/// belongs in the library, where both can reach it. So no file in `src/commands/` names another
/// command (test modules aside, as above).
#[test]
fn no_command_imports_another() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    // A command is a file or a folder of `src/commands/`: a folder's `x/y.rs` is `x`'s.
    let command_of = |f: &Path| -> String {
        let first = f.strip_prefix(&dir).unwrap().components().next().unwrap();
        let first = first.as_os_str().to_str().unwrap();
        first.strip_suffix(".rs").unwrap_or(first).to_string()
    };
    let mut commands: Vec<String> = rust_files(&dir)
        .iter()
        .map(|f| command_of(f))
        .filter(|name| name != "mod")
        .collect();
    commands.dedup();
    assert!(commands.len() > 5, "{commands:?}");
    assert!(commands.contains(&"certify".to_string()), "{commands:?}");
    let mut found = Vec::new();
    for file in rust_files(&dir) {
        let me = command_of(&file);
        let me = me.as_str();
        if me == "mod" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for other in commands_named(code, me, &commands) {
            found.push(format!("{} uses commands::{other}", file.display()));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_command_checker_sees_both_path_forms() {
    let commands = ["probe", "doctor", "watch"].map(String::from);
    let code = "use crate::commands::probe::{x};\nuse super::{watch, other};\nsuper::doctor::y();";
    assert_eq!(
        commands_named(code, "doctor", &commands),
        ["probe", "watch"].map(String::from).into()
    );
}

/// Where clap and the command line's own types may be named: the command line itself (`cli/`),
/// the commands that wire it to the library (`commands/`), and the binary. Everything below
/// takes settings (`WatchSettings`, `SimulationSettings`, `CertifySettings`), so an engine can
/// be driven, and tested, without a command line.
const KNOWS_THE_COMMAND_LINE: &[&str] = &["cli/", "commands/", "main.rs", "lib.rs"];

/// What names clap or the command line in a piece of code: `clap::`, `use clap`, `crate::cli`
/// (as a whole word: `crate::clients` is not it).
fn names_the_command_line(code: &str) -> Option<&'static str> {
    ["clap::", "use clap", "crate::cli"]
        .into_iter()
        .find(|needle| {
            code.match_indices(needle).any(|(i, _)| {
                let next = code[i + needle.len()..].chars().next();
                needle.ends_with(':') || !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
}

#[test]
fn no_engine_module_knows_clap_or_the_cli() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen = 0;
    let mut found = Vec::new();
    for file in rust_files(&src) {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if KNOWS_THE_COMMAND_LINE.iter().any(|p| rel.starts_with(p)) || is_test_file(&file) {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&file).unwrap();
        // Comments may name clap (to say why a module does not); code may not.
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap()
            .lines()
            .map(code_of)
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(what) = names_the_command_line(&code) {
            found.push(format!("src/{rel} names {what}"));
        }
    }
    assert!(seen > 50, "the walk found the engine's files ({seen})");
    assert!(
        found.is_empty(),
        "below the command line, modules take settings, not clap types:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_command_line_checker_sees_each_form() {
    assert_eq!(names_the_command_line("use clap::Args;"), Some("clap::"));
    assert_eq!(
        names_the_command_line("#[derive(clap::ValueEnum)]"),
        Some("clap::")
    );
    assert_eq!(
        names_the_command_line("fn f(a: &crate::cli::simulate::SimulateArgs)"),
        Some("crate::cli")
    );
    assert_eq!(
        names_the_command_line(&code_of("// clap:: is not here")),
        None
    );
    assert_eq!(
        names_the_command_line("crate::clients::summary_line()"),
        None
    );
}

/// What the simulator may name besides itself: the RESP layer it speaks, and the small shared
/// part below both it and the watcher (terminal-text escaping, the scenario clock, the Redis URL
/// form, a few names). The simulator stands in for a server the watcher is tested against; if it
/// borrowed the watcher's code, a bug there would be copied into the test's other side and pass.
const SIM_MAY_NAME: &[&str] = &["simulator::sim", "protocol::resp", "shared"];

/// The top-level modules a simulator file's code (comments and test code cut) names past its
/// wall.
fn past_the_sim_wall(text: &str) -> BTreeSet<String> {
    let code: String = text
        .split("#[cfg(test)]")
        .next()
        .unwrap()
        .lines()
        .map(code_of)
        .collect::<Vec<_>>()
        .join("\n");
    named_modules(&code)
        .into_iter()
        .filter(|m| !SIM_MAY_NAME.contains(&m.as_str()))
        .collect()
}

#[test]
fn the_simulator_names_nothing_past_its_wall() {
    let sim = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/simulator/sim");
    let files = rust_files(&sim);
    assert!(
        files.len() > 10,
        "the walk found the simulator ({})",
        files.len()
    );
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !is_test_file(f)) {
        let text = std::fs::read_to_string(file).unwrap();
        for m in past_the_sim_wall(&text) {
            found.push(format!("{} names crate::{m}", file.display()));
        }
        if file.ends_with("sim/mod.rs") && text.contains("super::") {
            found.push(format!("{} names super:: (the crate)", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "the simulator shares only {SIM_MAY_NAME:?} with the rest:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_sim_wall_checker_cuts_comments_and_tests() {
    let text = "use crate::protocol::resp::Frame;\n/// see [`crate::observe::timeline`]\n\
                fn f() { crate::network::conn::x(); crate::shared::escape::x(); }\n\
                #[cfg(test)]\nmod tests { use crate::grading::judge; }";
    assert_eq!(
        past_the_sim_wall(text),
        ["network::conn"].map(String::from).into()
    );
}

/// The longest a folder's root (`mod.rs`, or `x.rs` beside `x/`) may be, in lines.
const MAX_ROOT_LINES: usize = 300;

/// Whether a file is the root of a folder of modules: `mod.rs`, or `x.rs` beside a folder `x/`.
fn is_root(file: &Path) -> bool {
    file.file_name().is_some_and(|n| n == "mod.rs") || file.with_extension("").is_dir()
}

/// A folder's root is its map: the module docs, `mod` lines, re-exports and a few small items.
/// A reader opens it to find where things are; the engine lives in the named files it lists.
#[test]
fn no_folder_root_is_over_300_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let roots: Vec<PathBuf> = rust_files(&src)
        .into_iter()
        .filter(|f| is_root(f))
        .collect();
    assert!(roots.len() > 10, "the walk found the roots: {roots:?}");
    let long: Vec<String> = roots
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).unwrap().lines().count();
            (lines > MAX_ROOT_LINES).then(|| format!("{lines} lines: {}", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "folder roots over {MAX_ROOT_LINES} lines (move the engine into named files):\n  {}",
        long.join("\n  ")
    );
}

/// One module-file style throughout: a folder's root is its `mod.rs`, never an `x.rs` beside
/// `x/`, so a reader finds every folder's map in the same place.
#[test]
fn every_folder_root_is_its_mod_rs() {
    fn dirs(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                out.push(path.clone());
                dirs(&path, out);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    dirs(&src, &mut all);
    all.sort();
    assert!(all.len() > 10, "the walk found the folders: {all:?}");
    let mut wrong = Vec::new();
    for dir in &all {
        if dir.with_extension("rs").is_file() {
            wrong.push(format!(
                "{} beside {}/",
                dir.with_extension("rs").display(),
                dir.display()
            ));
        }
        if !dir.join("mod.rs").is_file() {
            wrong.push(format!("{}/ has no mod.rs", dir.display()));
        }
    }
    assert!(
        wrong.is_empty(),
        "a folder's root is its mod.rs (git mv x.rs x/mod.rs):\n  {}",
        wrong.join("\n  ")
    );
}

/// Bare names more than one file or folder of `src/` carries, each meaning the same thing in
/// its place: a command's flags (`cli/x.rs`), its wiring (`commands/x.rs`) and its engine or
/// records (`conn/probe.rs`, `record/watch.rs`, `watch/`), and each command family's settings.
const SAME_MEANING: &[&str] = &[
    "certify", "decide", "decode", "doctor", "pcap", "probe", "replay", "service", "settings",
    "simulate", "watch",
];

/// Every bare name in `src/` (a file's stem, `mod.rs` and `tests.rs` aside, or a folder's name)
/// with where it is.
fn bare_names(src: &Path) -> BTreeMap<String, Vec<String>> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, Vec<String>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            let rel = path.strip_prefix(src).unwrap().display().to_string();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                out.entry(name).or_default().push(rel + "/");
                walk(&path, src, out);
            } else if path.extension().is_some_and(|e| e == "rs")
                && !["mod", "tests", "lib", "main"].contains(&name.as_str())
            {
                out.entry(name).or_default().push(rel);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// A file's bare name says what it is, so a reader who meets `dns` or `lines` knows which one:
/// no two files or folders share a name that means different things there.
#[test]
fn no_two_files_share_a_bare_name_meaning_different_things() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let names = bare_names(&src);
    assert!(names.len() > 50, "the walk found the names: {names:?}");
    let mut found = Vec::new();
    for (name, places) in &names {
        if places.len() > 1 && !SAME_MEANING.contains(&name.as_str()) {
            found.push(format!("{name}: {}", places.join(", ")));
        }
    }
    for name in SAME_MEANING {
        if names.get(*name).is_none_or(|p| p.len() < 2) {
            found.push(format!("{name} is no longer shared: take it off the list"));
        }
    }
    assert!(
        found.is_empty(),
        "bare names shared by files that mean different things (rename one):\n  {}",
        found.join("\n  ")
    );
}

/// The longest a file of `commands/` may be: a command's wiring (settings in, the areas called,
/// the exit code out) reads at once; its logic lives in the area it belongs to (issue 58).
const COMMAND_LINES: usize = 150;

/// What a command file may not define: a model, a check or a renderer is a type, an `impl` or
/// a trait of the area that owns it; a command has functions that wire.
const DEFINITIONS: [&str; 4] = ["struct", "enum", "impl", "trait"];

#[test]
fn each_command_only_wires() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    let mut wrong = Vec::new();
    let mut seen = 0;
    for path in rust_files(&dir) {
        let name = path.strip_prefix(&dir).unwrap().display().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        seen += 1;
        let lines = text.lines().count();
        if lines >= COMMAND_LINES {
            wrong.push(format!(
                "commands/{name} has {lines} lines: move its logic to its area"
            ));
        }
        let code = text.split("#[cfg(test)]").next().unwrap();
        for (n, line) in code.lines().enumerate() {
            if let Some(what) = defines(&code_of(line)) {
                wrong.push(format!(
                    "commands/{name}:{}: defines a {what}: it belongs to its area",
                    n + 1
                ));
            }
        }
    }
    assert!(seen > 5, "the walk found the commands in {}", dir.display());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The definition a line of code starts, if any: `struct`, `enum`, `impl` or `trait`, after
/// any visibility and attributes' keywords.
fn defines(code: &str) -> Option<&'static str> {
    let mut words = code.split_whitespace().skip_while(|w| w.starts_with("pub"));
    let first = words.next()?;
    let first = first.split('<').next().unwrap_or(first);
    DEFINITIONS.into_iter().find(|d| *d == first)
}

#[test]
fn a_definition_is_seen_whatever_its_visibility() {
    assert_eq!(defines("pub struct DecideLine<'a> {"), Some("struct"));
    assert_eq!(defines("impl<'a> DecideLine<'a> {"), Some("impl"));
    assert_eq!(defines("pub(crate) enum X {"), Some("enum"));
    assert_eq!(defines("    let structure = 1;"), None);
    assert_eq!(defines("fn run() -> Impl {"), None);
}

/// A SKIP line goes to the process's own stderr (`common::skip`, or `write_fmt` on
/// `std::io::stderr()`): `println!` and `eprintln!` of a passing test are captured by the
/// harness, and a skip nobody sees is a silent pass. The Lettuce robustness column skipped so
/// for a phase.
#[test]
fn no_test_prints_a_skip_through_the_harness() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut found = Vec::new();
    for file in rust_files(&tests) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            if (t.starts_with("println!(\"SKIP") || t.starts_with("eprintln!(\"SKIP"))
                && !t.contains("t.starts_with")
            {
                found.push(format!("{}:{}", file.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "SKIP lines the harness captures: {found:?}"
    );
}
/// The command files that still read clap types: none since certify's settings moved to
/// `cli/certify.rs`. A command that could not take settings yet would be named here.
const NOT_YET: &[&str] = &[];

/// The dispatcher, which matches on the parsed command line (`Cli`, `Command`) to pick the
/// command. The conversion is still cli's: each arm calls the args' `settings()` and hands the
/// command the plain value; one match here is shorter than an enum of every command's settings
/// that a `Command::into_settings()` would need.
const DISPATCHER: &str = "mod.rs";

/// Whether `code` (comments cut) names clap: the word `clap` (`clap::`, `use clap`).
fn names_clap(code: &str) -> bool {
    code.match_indices("clap").any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + 4..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// Whether a `#[derive(...)]` line derives one of clap's traits.
fn derives_clap(code: &str) -> bool {
    let Some(at) = code.find("derive(") else {
        return false;
    };
    let inside = &code[at + "derive(".len()..];
    let inside = &inside[..inside.find(')').unwrap_or(inside.len())];
    inside.split(',').any(|d| {
        let d = d.trim();
        let d = d.strip_prefix("clap::").unwrap_or(d);
        ["Parser", "Args", "Subcommand", "ValueEnum"].contains(&d)
    })
}

/// The names of the structs and enums `src/cli/` derives with clap, its tests left out.
fn clap_types(cli: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for file in rust_files(cli) {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let mut derived = false;
        for line in code.lines().map(code_of) {
            derived |= derives_clap(&line);
            let line = line.trim_start();
            let line = line
                .strip_prefix("pub(crate) ")
                .or(line.strip_prefix("pub "));
            let named = line.and_then(|l| l.strip_prefix("struct ").or(l.strip_prefix("enum ")));
            if let (true, Some(rest)) = (derived, named) {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.insert(name);
                derived = false;
            }
        }
    }
    out
}

/// The clap-derived types of `names` that `code` names as a whole word.
fn clap_types_named(code: &str, names: &BTreeSet<String>) -> Vec<String> {
    let words: BTreeSet<&str> = code
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    names
        .iter()
        .filter(|n| words.contains(n.as_str()))
        .cloned()
        .collect()
}

/// Every command's settings are built in `cli/` (issue 58): a file of `src/commands/`, its tests
/// included, takes plain values and names neither clap nor a type `cli/` derives with clap
/// (`DecideArgs`, `ColorChoice`, ...). It may name `cli/`'s plain settings (`DecideSettings`):
/// they are built there, beside the flags they come from, and hold the types of the areas below
/// (a `Style`, a `ConnectConfig`) that `cli/` is the lowest layer to see together. The
/// dispatcher ([`DISPATCHER`]) may name the parsed command line to match on it.
#[test]
fn commands_take_settings_not_clap_types() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let names = clap_types(&src.join("cli"));
    for expected in ["Cli", "Command", "DecideArgs", "ColorChoice", "ConnectArgs"] {
        assert!(names.contains(expected), "{expected} not seen in {names:?}");
    }
    let dir = src.join("commands");
    let mut wrong = Vec::new();
    let mut still = BTreeSet::new();
    for file in rust_files(&dir) {
        let rel = file.strip_prefix(&dir).unwrap().display().to_string();
        let command = rel.split(['/', '.']).next().unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let code: String = text.lines().map(code_of).collect::<Vec<_>>().join("\n");
        let mut found = clap_types_named(&code, &names);
        if rel == DISPATCHER {
            found.retain(|n| n != "Cli" && n != "Command");
        }
        if names_clap(&code) {
            found.push("clap".to_string());
        }
        if found.is_empty() {
            continue;
        }
        if NOT_YET.contains(&command) {
            still.insert(command.to_string());
        } else {
            wrong.push(format!("commands/{rel} names {}", found.join(", ")));
        }
    }
    assert!(
        wrong.is_empty(),
        "commands take settings built in cli/, not clap types:\n  {}",
        wrong.join("\n  ")
    );
    let listed: BTreeSet<String> = NOT_YET.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        still, listed,
        "take a command that takes settings off NOT_YET"
    );
}

/// Only the command line derives and names clap: `src/cli/` and `src/main.rs`. Everything else,
/// tests included, gets its values from them.
#[test]
fn only_the_command_line_names_clap() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    let mut seen = 0;
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap().display().to_string();
        if rel.starts_with("cli/") || rel == "main.rs" {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().map(code_of).enumerate() {
            if names_clap(&line) || derives_clap(&line) {
                wrong.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(seen > 50, "the walk found the library's files ({seen})");
    assert!(
        wrong.is_empty(),
        "clap belongs to src/cli/ and src/main.rs:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn the_clap_checkers_see_each_form() {
    assert!(names_clap("use clap::Parser;"));
    assert!(names_clap("#[derive(clap::ValueEnum)]"));
    assert!(!names_clap("let clapped = 1;"));
    assert!(!names_clap(&code_of("// clap parses it")));
    assert!(derives_clap("#[derive(Args, Debug, Clone)]"));
    assert!(derives_clap("#[derive(Debug, clap::ValueEnum)]"));
    assert!(!derives_clap("#[derive(Debug, Clone, serde::Serialize)]"));
    let names: BTreeSet<String> = ["DecideArgs".to_string()].into();
    assert_eq!(
        clap_types_named("fn run(a: &DecideArgs)", &names),
        ["DecideArgs"]
    );
    assert!(clap_types_named("fn run(a: &DecideArgsX)", &names).is_empty());
}
