//! docs/matrix.md's robustness section as the robustness tests read and rewrite it: the table
//! (a row per case, a column per library) and, between its markers, how each column was measured
//! with every cell whose verdict varied over those runs, in full.
//!
//! Kept apart from the tests so that reading the page and measuring a client stay two things:
//! CI reads a column and certifies once; `scripts/clients/matrix.sh` certifies over several runs
//! and has the column and its lines rewritten (`MAINTWATCH_REGENERATE=1`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use maintwatch::grading::matrix;

const PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/matrix.md");
const HEADING: &str = "\n## The robustness set\n";
pub const RUNS_START: &str = "<!-- robustness runs -->";
pub const RUNS_END: &str = "<!-- /robustness runs -->";

/// Rewrites of the page, one at a time (a tier's tests run at once).
static PAGE_LOCK: Mutex<()> = Mutex::new(());

/// The robustness section of `page`, up to the next heading.
fn section_of(page: &str) -> &str {
    let section = page
        .split(HEADING)
        .nth(1)
        .expect("docs/matrix.md has a robustness section");
    section.split("\n## ").next().unwrap()
}

/// docs/matrix.md's robustness section, up to the next heading.
pub fn section() -> String {
    section_of(&std::fs::read_to_string(PAGE).unwrap()).to_string()
}

/// The section's table, its heading first, each row's cells trimmed.
pub fn table(section: &str) -> Vec<Vec<&str>> {
    section
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---"))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect()
}

/// The section without its block of runs: the prose and the why lines.
pub fn prose(section: &str) -> String {
    splice(section, "").unwrap_or_else(|| section.to_string())
}

/// `section` with `body` where its block of runs, markers included, stood; `None` without one.
fn splice(section: &str, body: &str) -> Option<String> {
    let a = section.find(RUNS_START)?;
    let b = section.find(RUNS_END)?;
    Some(format!(
        "{}{body}{}",
        &section[..a],
        &section[b + RUNS_END.len()..]
    ))
}

/// What the block of runs says of one column: how it was measured, and each varied cell in
/// full by case (`robust-` + the row's name).
#[derive(Default)]
pub struct Column {
    pub measured: Option<String>,
    pub varied: BTreeMap<String, String>,
}

/// The block of runs: `- LABEL: MEASURED`, each followed by `  - \`CASE\`: FULL` lines.
pub fn runs(section: &str) -> BTreeMap<String, Column> {
    let mut out: BTreeMap<String, Column> = BTreeMap::new();
    let mut current = None;
    for line in block(section).lines() {
        if let Some((label, measured)) = line.strip_prefix("- ").and_then(|l| l.split_once(": ")) {
            out.entry(label.to_string()).or_default().measured = Some(measured.to_string());
            current = Some(label.to_string());
        } else if let Some((case, full)) =
            line.strip_prefix("  - `").and_then(|l| l.split_once("`: "))
        {
            let label = current
                .clone()
                .expect("a varied cell under its column's line");
            let column = out.entry(label).or_default();
            column
                .varied
                .insert(format!("robust-{case}"), full.to_string());
        }
    }
    out
}

fn block(section: &str) -> &str {
    let start = section.find(RUNS_START).map_or(0, |i| i + RUNS_START.len());
    let end = section.find(RUNS_END).unwrap_or(start);
    &section[start..end.max(start)]
}

/// Rewrites the column `name` (a library, as the table's heading says it) with `row`'s short
/// cells (`robust-CASE` -> short, full), and its lines in the block of runs: `label` measured so,
/// and each cell whose full text names several verdicts.
pub fn rewrite_column(
    name: &str,
    label: &str,
    row: &BTreeMap<String, (String, String)>,
    measured: &str,
) {
    let _lock = PAGE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let page = std::fs::read_to_string(PAGE).unwrap();
    let old = section_of(&page);
    let mut new = String::new();
    let mut column = None;
    for line in old.split_inclusive('\n') {
        new.push_str(&match line.starts_with('|') && !line.starts_with("|---") {
            true => cell_rewritten(line, name, &mut column, row),
            false => line.to_string(),
        });
    }
    let new = with_runs(&new, label, row, measured);
    let page = page.replacen(old, &new, 1);
    std::fs::write(PAGE, page).unwrap();
    eprintln!("docs/matrix.md: robustness column of {label} rewritten");
}

/// A table line with the cell of column `name` replaced by its case's short cell (the heading
/// line sets `column`).
fn cell_rewritten(
    line: &str,
    name: &str,
    column: &mut Option<usize>,
    row: &BTreeMap<String, (String, String)>,
) -> String {
    let mut cells: Vec<String> = line
        .trim_end()
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect();
    match *column {
        None => *column = Some(cells.iter().position(|c| c == name).expect("a column")),
        Some(i) => {
            let case = format!("robust-{}", cells[0].trim_matches('`'));
            let (short, _) = row
                .get(&case)
                .unwrap_or_else(|| panic!("{case}: not certified"));
            cells[i] = short.clone();
        }
    }
    format!("| {} |\n", cells.join(" | "))
}

/// `section` with `label`'s lines in the block of runs replaced (the block made when missing).
fn with_runs(
    section: &str,
    label: &str,
    row: &BTreeMap<String, (String, String)>,
    measured: &str,
) -> String {
    let mut lines = vec![format!("- {label}: {measured}")];
    for (case, (_, full)) in row {
        if matrix::variants_of(full).len() > 1 {
            let case = case.trim_start_matches("robust-");
            lines.push(format!("  - `{case}`: {full}"));
        }
    }
    // The block's columns, each its line and its varied cells', in the labels' order.
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = String::new();
    for line in block(section).lines().filter(|l| !l.is_empty()) {
        if let Some((l, _)) = line.strip_prefix("- ").and_then(|l| l.split_once(": ")) {
            current = l.to_string();
        }
        groups
            .entry(current.clone())
            .or_default()
            .push(line.to_string());
    }
    groups.insert(label.to_string(), lines);
    let kept: Vec<String> = groups.into_values().flatten().collect();
    let body = format!("{RUNS_START}\n{}\n{RUNS_END}", kept.join("\n"));
    splice(section, &body).unwrap_or_else(|| format!("{}\n{body}\n", section.trim_end()))
}

/// A column rewritten reads back as written: its line and its one varied cell, the other
/// column's lines kept, in the labels' order.
#[test]
fn a_rewritten_block_of_runs_reads_back() {
    let section = format!(
        "| case | a | b |\n|---|---|---|\n| `x` | ok | ok |\n\n{RUNS_START}\n- b 2.0: then\n{RUNS_END}\n"
    );
    let mut row = BTreeMap::new();
    let varied = "FAIL kw; PASS srv (1/5) or PASS srv kw (4/5)";
    row.insert(
        "robust-x".to_string(),
        ("F kw 1/5".to_string(), varied.to_string()),
    );
    row.insert(
        "robust-y".to_string(),
        ("ok".to_string(), "PASS srv kw".to_string()),
    );
    let new = with_runs(&section, "a 1.0", &row, "now, 5 runs");
    let runs = runs(&new);
    assert_eq!(runs["a 1.0"].measured.as_deref(), Some("now, 5 runs"));
    assert_eq!(runs["a 1.0"].varied.len(), 1);
    assert_eq!(runs["a 1.0"].varied["robust-x"], varied);
    assert_eq!(runs["b 2.0"].measured.as_deref(), Some("then"));
    assert!(
        new.find("- a 1.0").unwrap() < new.find("- b 2.0").unwrap(),
        "{new}"
    );
    let mut column = None;
    let head = cell_rewritten("| case | a | b |", "a", &mut column, &row);
    assert_eq!((head.as_str(), column), ("| case | a | b |\n", Some(1)));
    let line = cell_rewritten("| `x` | ok | ok |", "a", &mut column, &row);
    assert_eq!(line, "| `x` | F kw 1/5 | ok |\n");
    assert_eq!(
        prose(&new).trim_end(),
        section[..section.find(RUNS_START).unwrap()].trim_end()
    );
}
