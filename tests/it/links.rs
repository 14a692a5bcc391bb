//! The README and the pages under `docs/` hold together as one set of pages:
//!
//! - every relative link resolves to a file or folder of the repository, and its `#anchor` to a
//!   heading of the page it names (by GitHub's rule for a heading's id);
//! - every `scripts/` or `docs/` path named anywhere in the tree's text (pages, sources, tests,
//!   CI) exists: the scripts and the depth of the README moved once, and a stale path is a
//!   reader sent nowhere;
//! - every `maintwatch` command the pages show names a subcommand the CLI has, and only flags
//!   that subcommand has (read from the CLI's own clap definition); the README's examples must
//!   also parse whole, values included, as the binary would parse them.
//!
//! The examples of the README and of the command pages also run (tests/it/examples.rs); this
//! test covers every page, including those whose commands name a reader's own files.

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

use clap::{CommandFactory, Parser};
use maintwatch::cli::Cli;

use crate::examples::{maintwatch_args, maintwatch_at, split_comment};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The pages checked: the README, every page of docs/, and the READMEs of the folders.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("README.md")];
    for dir in ["docs", "scripts", "scenarios"] {
        out.extend(files_under(dir).into_iter().filter(|p| {
            p.extension().is_some_and(|e| e == "md")
                && (dir == "docs" || p.file_name().is_some_and(|n| n == "README.md"))
        }));
    }
    out.sort();
    out
}

/// Every file below `dir` (relative to the repository), as paths relative to the repository.
fn files_under(dir: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root().join(dir)];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                out.push(path.strip_prefix(root()).unwrap().to_path_buf());
            }
        }
    }
    out
}

/// A page split into what is prose and what is code: the lines outside fenced blocks, with inline
/// code spans blanked (so a `[x](y)` shown as code is not a link), and the code lines (fenced, or
/// indented by four spaces), each command continued with ` \` joined into one line.
struct Split {
    prose: String,
    spans: Vec<String>,
    code: Vec<String>,
}

fn split(text: &str) -> Split {
    let mut prose = String::new();
    let mut code: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            prose.push('\n');
            continue;
        }
        if fenced || line.starts_with("    ") {
            match code.last_mut() {
                Some(last) if last.ends_with(" \\") => {
                    last.truncate(last.len() - 1);
                    last.push_str(line.trim_start());
                }
                _ => code.push(line.to_string()),
            }
        }
        if !fenced {
            prose.push_str(line);
        }
        prose.push('\n');
    }
    let (prose, spans) = without_code_spans(&prose);
    Split { prose, spans, code }
}

/// `text` with each inline code span replaced by spaces, and the spans' contents. A span opens
/// with a run of backticks and closes at the next run of the same length.
fn without_code_spans(text: &str) -> (String, Vec<String>) {
    let chars: Vec<char> = text.chars().collect();
    let run_at = |i: usize| chars[i..].iter().take_while(|c| **c == '`').count();
    let mut out = String::with_capacity(text.len());
    let mut spans = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = run_at(i);
        let start = i + run;
        let mut j = start;
        let close = loop {
            if j >= chars.len() {
                break None;
            }
            if chars[j] == '`' {
                let r = run_at(j);
                if r == run {
                    break Some(j);
                }
                j += r;
            } else {
                j += 1;
            }
        };
        let Some(end) = close else {
            // An unmatched run is literal text.
            out.extend(&chars[i..start]);
            i = start;
            continue;
        };
        let span: String = chars[start..end].iter().collect();
        spans.push(span.split_whitespace().collect::<Vec<_>>().join(" "));
        out.extend(std::iter::repeat_n(' ', end + run - i));
        i = end + run;
    }
    (out, spans)
}

/// The id GitHub gives a heading: lower case, characters other than letters, digits, `-`, `_`
/// and spaces dropped, spaces made `-`; a link's text stands for the link.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading.trim();
    // `[text](target)` reads as `text`.
    while let Some(open) = rest.find("](") {
        let Some(close) = rest[open..].find(')') else {
            break;
        };
        text.push_str(&rest[..open]);
        rest = &rest[open + close + 1..];
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a page's headings give, a repeated heading numbered as GitHub numbers it.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if fenced || !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let id = slug(&line[hashes..]);
        let n = seen.entry(id.clone()).or_default();
        out.insert(if *n == 0 {
            id.clone()
        } else {
            format!("{id}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of the inline links and images of a page's prose.
fn link_targets(prose: &str) -> Vec<String> {
    prose
        .match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &prose[at + 2..];
            let end = rest.find(')')?;
            let target = rest[..end].trim();
            // `[text](target "title")`: the title is not part of the target.
            let target = target.split_whitespace().next().unwrap_or("");
            Some(target.to_string())
        })
        .collect()
}

/// `base/rel` with `.` and `..` resolved; `None` when it leaves the repository.
fn resolve(base: &Path, rel: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in base.join(rel).components() {
        match part {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            Component::Normal(p) => out.push(p),
            _ => return None,
        }
    }
    Some(out)
}

/// What is wrong with the links of `page` (relative to the repository), whose text is `text`.
fn link_problems(page: &Path, text: &str) -> Vec<String> {
    let dir = page.parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    for target in link_targets(&split(text).prose) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let resolved = if file.is_empty() {
            Some(page.to_path_buf()) // this page
        } else {
            resolve(dir, file).filter(|p| root().join(p).exists())
        };
        let Some(path) = resolved else {
            problems.push(format!(
                "{}: link to {target}: no such file",
                page.display()
            ));
            continue;
        };
        if anchor.is_empty() {
            continue;
        }
        if path.extension().is_none_or(|e| e != "md") {
            problems.push(format!(
                "{}: link to {target}: an anchor into a file that is not a page",
                page.display()
            ));
            continue;
        }
        let target_text = if path == page {
            text.to_string()
        } else {
            std::fs::read_to_string(root().join(&path)).unwrap()
        };
        if !anchors(&target_text).contains(anchor) {
            problems.push(format!(
                "{}: link to {target}: {} has no heading #{anchor}",
                page.display(),
                path.display()
            ));
        }
    }
    problems
}

#[test]
fn every_relative_link_of_the_readme_and_docs_resolves() {
    let pages = pages();
    assert!(pages.len() >= 20, "{pages:?}");
    let mut problems = Vec::new();
    let mut links = 0;
    for page in &pages {
        let text = std::fs::read_to_string(root().join(page)).unwrap();
        links += link_targets(&split(&text).prose).len();
        problems.extend(link_problems(page, &text));
    }
    assert!(
        links >= 60,
        "only {links} links found: is the reader broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Paths of other projects that the pages cite as theirs (their docs/ is not ours).
const OTHER_PROJECTS: [&str; 2] = [
    "docs/v5-to-v6.md",               // node-redis's migration guide
    "docs/ServerMaintenanceEvent.md", // StackExchange.Redis's
];

/// Text files of the tree that name paths for a reader: pages, sources, tests, CI, scripts (this
/// file aside: its own test names made-up paths on purpose).
fn text_files() -> Vec<PathBuf> {
    let mut out = pages();
    for dir in [
        "src",
        "tests/it",
        "tests/clients",
        "scripts",
        ".ci",
        "benches",
        "fuzz",
        "deploy",
    ] {
        out.extend(files_under(dir));
    }
    out.extend(["Cargo.toml", "fuzz/Cargo.toml"].map(PathBuf::from));
    out.retain(|p| p != Path::new("tests/it/links.rs"));
    out.sort();
    out.dedup();
    out
}

/// The `scripts/...` and `docs/...` paths a text names (a path is a run of path characters; a
/// glob, a placeholder in capitals, or a bare folder name is not checked).
fn named_paths(text: &str) -> Vec<String> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut out = Vec::new();
    for prefix in ["scripts/", "docs/"] {
        for (at, _) in text.match_indices(prefix) {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| is_path_char(c) || c == '<') {
                continue; // part of a longer path (`tests/docs/...`, `../docs/`) or a URL
            }
            let path: String = text[at..]
                .chars()
                .take_while(|c| is_path_char(*c))
                .collect();
            let path = path.trim_end_matches(['.', ',', '-']);
            if path.len() > prefix.len() && !path.ends_with('/') {
                out.push(path.to_string());
            }
        }
    }
    out
}

#[test]
fn every_scripts_and_docs_path_named_in_the_tree_exists() {
    let mut missing = Vec::new();
    let mut named = 0;
    for file in text_files() {
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue; // binary
        };
        for path in named_paths(&text) {
            named += 1;
            if !root().join(&path).exists() && !OTHER_PROJECTS.contains(&path.as_str()) {
                missing.push(format!("{}: {path}", file.display()));
            }
        }
    }
    assert!(
        named >= 100,
        "only {named} paths found: is the reader broken?"
    );
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "no such file:\n{}", missing.join("\n"));
}

/// The README tells a reader of a checkout how to read a man page (`man -l man/...`): the page
/// it names is there, and is a man page of the binary.
#[test]
fn the_readmes_man_page_from_a_checkout_exists() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let pages: Vec<&str> = readme
        .split("`man -l ")
        .skip(1)
        .filter_map(|rest| rest.split('`').next())
        .collect();
    assert!(!pages.is_empty(), "the README says no `man -l PAGE`");
    for page in pages {
        let text = std::fs::read_to_string(root().join(page))
            .unwrap_or_else(|e| panic!("README: man -l {page}: {e}"));
        assert!(text.contains(".TH maintwatch"), "{page} is no man page");
    }
}

/// The commands a page shows: code lines and inline code that run `maintwatch` (at the start,
/// after a `$ ` prompt, after `VAR=value` or a `|`), and `cargo run ... -- SUB` as
/// `maintwatch SUB` (not `cargo run --example`). Each is the maintwatch part of the line, comment
/// dropped. Not commands: the program's own output naming itself (`maintwatch demo: scenario
/// ...`) and a placeholder in capitals (`maintwatch COMMAND --help`).
fn commands(text: &str) -> Vec<(bool, String)> {
    let s = split(text);
    let code = s.code.iter().map(|l| (true, l.as_str()));
    let spans = s.spans.iter().map(|l| (false, l.as_str()));
    code.chain(spans)
        .filter_map(|(in_block, line)| {
            let line = line.trim().trim_start_matches("$ ");
            let (command, _) = split_comment(line);
            let cargo_run = command.split_once("cargo run").map(|(_, r)| r);
            if let Some((flags, sub)) = cargo_run.and_then(|r| r.split_once(" -- ")) {
                let ours = !["--example", "--bin", "-p ", "--package"]
                    .iter()
                    .any(|f| flags.contains(f));
                return ours.then(|| (in_block, format!("maintwatch {}", sub.trim())));
            }
            let words: Vec<&str> = command.split_whitespace().collect();
            let sub = words.get(maintwatch_at(&words)? + 1)?;
            let output = sub.ends_with(':');
            let placeholder = sub.chars().all(|c| c.is_ascii_uppercase() || c == '_');
            (!output && !placeholder).then(|| (in_block, command.trim().to_string()))
        })
        .collect()
}

/// What is wrong with one command: a subcommand the CLI lacks, or a flag its subcommand lacks.
fn command_problem(command: &str) -> Option<String> {
    let args = maintwatch_args(command);
    let mut cli = Cli::command();
    cli.build();
    let sub = args.get(1)?;
    let cmd = if sub.starts_with('-') {
        &cli
    } else {
        let Some(cmd) = cli.find_subcommand(sub) else {
            return Some(format!("no subcommand {sub:?}"));
        };
        cmd
    };
    let first = if sub.starts_with('-') { 1 } else { 2 };
    let known = |flag: &str| -> bool {
        if let Some(long) = flag.strip_prefix("--") {
            let long = long.split('=').next().unwrap_or(long);
            cmd.get_arguments().chain(cli.get_arguments()).any(|a| {
                a.get_long() == Some(long)
                    || a.get_all_aliases().is_some_and(|al| al.contains(&long))
            })
        } else {
            let short = flag.chars().nth(1);
            cmd.get_arguments()
                .chain(cli.get_arguments())
                .any(|a| a.get_short() == short)
        }
    };
    let unknown: Vec<&String> = args[first..]
        .iter()
        .take_while(|a| *a != "--")
        .filter(|a| a.starts_with('-') && a.len() > 1)
        .filter(|a| !a.chars().nth(1).is_some_and(|c| c.is_ascii_digit()))
        .filter(|a| !known(a))
        .collect();
    (!unknown.is_empty()).then(|| format!("{sub} has no flag {unknown:?}"))
}

/// What is wrong with the commands `page` shows; a README example must also parse whole.
fn command_problems(page: &Path, text: &str) -> (usize, Vec<String>) {
    let all = commands(text);
    let mut problems = Vec::new();
    for (in_block, command) in &all {
        if let Some(why) = command_problem(command) {
            problems.push(format!("{}: {command}: {why}", page.display()));
        } else if *in_block && page == Path::new("README.md") {
            if let Err(e) = Cli::try_parse_from(maintwatch_args(command)) {
                let e = e.to_string();
                let first = e.lines().next().unwrap_or_default();
                problems.push(format!(
                    "{}: {command}: does not parse: {first}",
                    page.display()
                ));
            }
        }
    }
    (all.len(), problems)
}

#[test]
fn every_command_the_pages_show_names_a_subcommand_and_flags_it_has() {
    let mut problems = Vec::new();
    let mut readme = 0;
    let mut total = 0;
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        let (n, p) = command_problems(&page, &text);
        if page == Path::new("README.md") {
            readme = n;
        }
        total += n;
        problems.extend(p);
    }
    // One example per command at least, and the two commands' `cargo run -- demo`.
    assert!(readme >= 11, "only {readme} commands found in the README");
    assert!(total >= 100, "only {total} commands found in the pages");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checks can fail: a missing file, a missing anchor, a path out of the repository, an
/// unknown subcommand or flag, and a README example whose value does not parse are each found;
/// what is right is not reported.
#[test]
fn the_checks_find_a_broken_link_a_missing_anchor_and_an_unknown_flag() {
    let page = Path::new("docs/example.md");
    let text = "# A page\n\n## `decide --json`, twice\n\n## `decide --json`, twice\n\n\
        [ok](watch.md) [ok](#decide---json-twice-1) [ok](../README.md#exit-codes) [ok](../scripts/)\n\
        [gone](no-such-page.md) [bad](watch.md#no-such-heading) [out](../../etc/passwd)\n\
        `[not a link](nowhere.md)`\n\
        ```\n[not a link either](nowhere.md)\n```\n";
    let problems = link_problems(page, text);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].contains("no-such-page.md"), "{problems:#?}");
    assert!(problems[1].contains("#no-such-heading"), "{problems:#?}");
    assert!(problems[2].contains("etc/passwd"), "{problems:#?}");

    assert_eq!(
        slug(" 1. The handshake and the opt-in"),
        "1-the-handshake-and-the-opt-in"
    );
    assert_eq!(
        slug(" go-redis, measured (2026-12-04)"),
        "go-redis-measured-2026-12-04"
    );
    assert_eq!(
        slug(" Bring your client: `simulate --grade -- CMD`"),
        "bring-your-client-simulate---grade----cmd"
    );

    let readme = "    maintwatch watch redis://db:6379 --no-such-flag\n\
        \x20   maintwatch wach redis://db:6379\n\
        \x20   cargo run --release -- demo --speed fast\n\
        \x20   printf x | maintwatch decode --clients   # fine\n\
        Inline: `maintwatch probe -q --json redis://db` is fine, `maintwatch probe --quite` not.\n";
    let (n, problems) = command_problems(Path::new("README.md"), readme);
    assert_eq!(n, 6, "{problems:#?}");
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert!(problems[0].contains("--no-such-flag"), "{problems:#?}");
    assert!(
        problems[1].contains("no subcommand \"wach\""),
        "{problems:#?}"
    );
    assert!(problems[2].contains("does not parse"), "{problems:#?}");
    assert!(problems[3].contains("--quite"), "{problems:#?}");

    let named = named_paths("see scripts/bench/all.sh, docs/testing.md. and ../docs/x.md");
    assert_eq!(named, ["scripts/bench/all.sh", "docs/testing.md"]);
}
