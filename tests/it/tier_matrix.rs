//! The README's client matrix is what the client tier measured: one row per client and version,
//! one column per scenario, each cell the rules that held or failed with a one-line reason
//! (`tests/it/common/tier.rs::cell`). The tier (`tests/it/redis_py_app.rs`, `tests/it/node_redis.rs`)
//! writes its cells to `target/client-matrix/`; cargo runs test binaries in name order, so this
//! one reads the results of the same `cargo test`. No results (the tier was skipped): a SKIP
//! line. To rewrite the README's matrix from the latest results:
//!
//!     MAINTWATCH_REGENERATE=1 cargo test --test it tier_matrix::

use std::collections::BTreeMap;

use crate::common;
use common::tier;

const START: &str =
    "<!-- client-matrix start: written by tests/it/tier_matrix.rs from the client tier's results -->";
const END: &str = "<!-- client-matrix end -->";
const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");

/// client -> scenario -> cell, from the tier's result files.
fn results() -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(tier::results_dir()) else {
        return out;
    };
    for entry in dir {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let field = |k: &str| {
            v[k].as_str()
                .unwrap_or_else(|| panic!("{}: no {k}", path.display()))
        };
        out.entry(field("client").to_string())
            .or_default()
            .insert(field("scenario").to_string(), field("cell").to_string());
    }
    out
}

fn header() -> String {
    let names: Vec<&str> = tier::SCENARIOS.iter().map(|(s, _)| *s).collect();
    format!(
        "| client | {} |\n|---|{}\n",
        names.join(" | "),
        "---|".repeat(names.len())
    )
}

fn row(client: &str, cells: &BTreeMap<String, String>) -> String {
    let cells: Vec<&str> = tier::SCENARIOS
        .iter()
        .map(|(s, _)| cells.get(*s).map_or("not run", String::as_str))
        .collect();
    format!("| {client} | {} |", cells.join(" | "))
}

/// The README's matrix: its header and its rows by client.
fn readme_matrix(text: &str) -> (String, BTreeMap<String, String>) {
    let start = text
        .find(START)
        .expect("README.md has no client matrix start marker");
    let end = text
        .find(END)
        .expect("README.md has no client matrix end marker");
    let body = &text[start + START.len()..end];
    let lines: Vec<&str> = body.lines().filter(|l| l.starts_with('|')).collect();
    let head = lines.iter().take(2).map(|l| format!("{l}\n")).collect();
    let rows = lines
        .iter()
        .skip(2)
        .map(|l| {
            let client = l.trim_start_matches('|').split('|').next().unwrap().trim();
            (client.to_string(), l.to_string())
        })
        .collect();
    (head, rows)
}

#[test]
fn readme_client_matrix_is_the_tiers_latest_results() {
    let results = results();
    if results.is_empty() {
        let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{}\n", format_args!(
            "SKIP: readme_client_matrix_is_the_tiers_latest_results: no results in {} (the client tier was skipped)",
            tier::results_dir().display()
        )));
        return;
    }
    let text = std::fs::read_to_string(README).unwrap();
    let (head, mut rows) = readme_matrix(&text);
    let measured: BTreeMap<String, String> = results
        .iter()
        .map(|(c, cells)| (c.clone(), row(c, cells)))
        .collect();
    if std::env::var_os("MAINTWATCH_REGENERATE").is_some_and(|v| !v.is_empty() && v != "0") {
        // Rows of clients this run did not measure are kept as they were.
        rows.extend(measured);
        let table: String = rows.values().map(|r| format!("{r}\n")).collect();
        let start = text.find(START).unwrap() + START.len();
        let end = text.find(END).unwrap();
        let new = format!("{}\n{}{table}{}", &text[..start], header(), &text[end..]);
        std::fs::write(README, new).unwrap();
        eprintln!("README.md: client matrix rewritten");
        return;
    }
    assert_eq!(
        head,
        header(),
        "README.md's client matrix header (regenerate: see this file's doc)"
    );
    for (client, line) in &measured {
        assert_eq!(
            rows.get(client),
            Some(line),
            "README.md's client matrix row for {client} differs from the tier's latest results \
             (MAINTWATCH_REGENERATE=1 cargo test --test it tier_matrix:: rewrites it)"
        );
    }
}

/// The matrix's cell for a made-up grade: each rule's worst verdict over every notification,
/// failures first, then what was not judged, then what passed, by code in the rule table's
/// order; the racy rule never appears (the matrix must be stable).
#[test]
fn a_cell_gives_each_rules_worst_verdict_by_code() {
    let rule = |r: &str, v: &str| serde_json::json!({"rule": r, "verdict": v, "held": v == "pass"});
    let grade = serde_json::json!({
        "rules": [rule("survives", "fail")],
        "clients": [{"client": "x/1", "notifications": [
            {"rules": [rule("opt-in", "pass"), rule("moved-before-close", "pass"),
                       rule("relaxed-timeout", "not_judged")]},
            {"rules": [rule("opt-in", "pass"), rule("moved-before-close", "fail"),
                       rule("no-lost-commands", "fail"), rule("relaxed-timeout", "pass")]}
        ]}]
    });
    assert_eq!(tier::cell(&grade), "FAIL srv mov; NJ rlx; PASS opt");
    let empty = serde_json::json!({"rules": [], "clients": []});
    assert_eq!(tier::cell(&empty), "nothing judged");
}

/// Every rule the judge knows has a code, and no two codes are the same.
#[test]
fn every_rule_has_a_matrix_code() {
    let names: Vec<&str> = maintwatch::judge::rule_names().collect();
    for name in &names {
        assert!(
            tier::CODES.iter().any(|(r, _)| r == name),
            "rule {name} has no code in tests/it/common/tier.rs"
        );
    }
    let mut codes: Vec<&str> = tier::CODES.iter().map(|(_, c)| *c).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), tier::CODES.len());
}
