//! The client matrix (docs/matrix.md) is what the client tier measured: one row per client version, one
//! column per scenario, each cell certify's short cell (`maintwatch::grading::matrix::short`), and under
//! the table the run's date and every cell that is not `ok` in full. The tier
//! (`tests/it/redis_py_app.rs`, `tests/it/node_redis.rs`, `tests/it/go_redis.rs`) runs
//! `maintwatch certify` for each client version, writes the cells certify printed to
//! `target/client-matrix/`, and then calls
//! [`check_rows`] for the rows it ran: the check sits in the test that measured, since the tests
//! of the one test binary run at once. To rewrite those rows of docs/matrix.md instead:
//!
//!     MAINTWATCH_REGENERATE=1 cargo test --test it -- certified_row older_certified_rows
//!
//! (`scripts/clients/matrix.sh` does that for every version.)

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::common;
use common::tier;
use maintwatch::grading::matrix;

const START: &str =
    "<!-- client-matrix start: written by tests/it/tier_matrix.rs from the client tier's results -->";
const END: &str = "<!-- client-matrix end -->";
const MATRIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/matrix.md");
const DATES: &str = "Rows measured (UTC date: versions):";
const FULL: &str = "Cells in full, where not `ok` or `n/a`:";
/// The section, outside the generated part, of cells a client leaves to chance.
const VARYING: &str = "<!-- varying cells: read by tests/it/tier_matrix.rs -->";

/// One recorded cell.
#[derive(Debug, Clone, PartialEq)]
struct Cell {
    short: String,
    full: String,
    date: String,
}

/// client -> scenario -> cell, from the tier's result files.
fn results() -> BTreeMap<String, BTreeMap<String, Cell>> {
    let mut out: BTreeMap<String, BTreeMap<String, Cell>> = BTreeMap::new();
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
                .unwrap_or_else(|| panic!("{}: no {k} (an older tier's file?)", path.display()))
                .to_string()
        };
        let cell = Cell {
            short: field("short"),
            full: field("cell"),
            date: field("date"),
        };
        out.entry(field("client"))
            .or_default()
            .insert(field("scenario"), cell);
    }
    out
}

/// The order of the rows: by library, then by version, numerically.
fn sort_key(client: &str) -> (String, Vec<u64>) {
    let (name, version) = client.rsplit_once(' ').unwrap_or((client, ""));
    let numbers = version
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    (name.to_string(), numbers)
}

/// The matrix part of docs/matrix.md, parsed.
#[derive(Debug, Default, PartialEq)]
struct Matrix {
    header: String,
    /// client -> its table row.
    rows: BTreeMap<String, String>,
    /// client -> the date of its run.
    dates: BTreeMap<String, String>,
    /// client -> its lines under "Cells in full".
    full: BTreeMap<String, Vec<String>>,
}

/// The lines, under "Cells in full", of `client`'s cells that are neither `ok` nor `n/a`:
/// scenarios with the same full cell share a bullet.
fn full_lines(client: &str, cells: &BTreeMap<String, Cell>) -> Vec<String> {
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for (scenario, _) in matrix::COLUMNS {
        let Some(c) = cells.get(scenario) else {
            continue;
        };
        if c.short == "ok" || c.short == matrix::NOT_APPLICABLE {
            continue;
        }
        match groups.iter_mut().find(|(_, full)| *full == c.full) {
            Some(g) => g.0.push(scenario),
            None => groups.push((vec![scenario], &c.full)),
        }
    }
    groups
        .iter()
        .flat_map(|(scenarios, full)| {
            [
                format!("- {client}, {}:", scenarios.join(", ")),
                format!("  `{full}`"),
            ]
        })
        .collect()
}

fn row_of(client: &str, cells: &BTreeMap<String, Cell>) -> String {
    matrix::row(client, &matrix::COLUMNS, |s| {
        cells.get(s).map(|c| c.short.clone())
    })
}

fn parse(text: &str) -> Matrix {
    let start = text
        .find(START)
        .expect("docs/matrix.md has no client matrix start marker");
    let end = text
        .find(END)
        .expect("docs/matrix.md has no client matrix end marker");
    let body = &text[start + START.len()..end];
    let table: Vec<&str> = body.lines().filter(|l| l.starts_with('|')).collect();
    let client_of = |l: &str| {
        l.trim_start_matches('|')
            .split('|')
            .next()
            .unwrap()
            .trim()
            .to_string()
    };
    let mut m = Matrix {
        header: table.iter().take(2).copied().collect::<Vec<_>>().join("\n"),
        rows: table
            .iter()
            .skip(2)
            .map(|l| (client_of(l), l.to_string()))
            .collect(),
        ..Matrix::default()
    };
    let section = |title: &str| -> Vec<&str> {
        body.lines()
            .skip_while(|l| *l != title)
            .skip(1)
            .skip_while(|l| l.is_empty())
            .take_while(|l| !l.is_empty())
            .collect()
    };
    for line in section(DATES) {
        let (date, versions) = line
            .trim_start_matches("- ")
            .split_once(": ")
            .unwrap_or_else(|| panic!("docs/matrix.md: a date line {line:?}"));
        // `redis-py 7.0.1, 7.2.2; node-redis 6.3.1`: versions grouped by library.
        for group in versions.split("; ") {
            let (library, list) = group
                .split_once(' ')
                .unwrap_or_else(|| panic!("docs/matrix.md: a date line {line:?}"));
            for version in list.split(", ") {
                m.dates
                    .insert(format!("{library} {version}"), date.to_string());
            }
        }
    }
    let mut current = String::new();
    for line in section(FULL) {
        if let Some(rest) = line.strip_prefix("- ") {
            current = rest.split(", ").next().unwrap().to_string();
        }
        m.full
            .entry(current.clone())
            .or_default()
            .push(line.to_string());
    }
    m
}

fn render(m: &Matrix) -> String {
    let mut clients: Vec<&String> = m.rows.keys().collect();
    clients.sort_by_key(|c| sort_key(c));
    let mut out = format!("{}\n", m.header);
    for c in &clients {
        out.push_str(&m.rows[*c]);
        out.push('\n');
    }
    let mut by_date: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in &clients {
        if let Some(d) = m.dates.get(*c) {
            by_date.entry(d).or_default().push(c);
        }
    }
    out.push_str(&format!("\n{DATES}\n\n"));
    for (date, cs) in by_date {
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for c in cs {
            let (library, version) = c.rsplit_once(' ').unwrap_or((c, ""));
            match groups.iter_mut().find(|(l, _)| *l == library) {
                Some(g) => g.1.push(version),
                None => groups.push((library, vec![version])),
            }
        }
        // One line per library and date: a day that measured several libraries would run past
        // 80 columns on one line.
        for (l, vs) in groups {
            out.push_str(&format!("- {date}: {l} {}\n", vs.join(", ")));
        }
    }
    out.push_str(&format!("\n{FULL}\n\n"));
    for c in &clients {
        for line in m.full.get(*c).into_iter().flatten() {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// A full cell (`FAIL loop; PASS srv opt mov storm`) as code -> verdict word; `ok` is `{}`,
/// every code having passed.
fn verdicts_of(full: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for part in full.split("; ") {
        let mut words = part.split(' ');
        let verdict = words.next().unwrap_or_default();
        for code in words {
            out.insert(code.to_string(), verdict.to_string());
        }
    }
    out
}

/// client -> scenario -> the codes docs/matrix.md says come and go in that cell, from its
/// varying-cells section: `- go-redis 9.23.0, single-proxy, dns-race: sometimes also `mov`, `opt``.
fn varying(text: &str) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let Some(at) = text.find(VARYING) else {
        return out;
    };
    let lines = text[at..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with("- "));
    for line in lines.take_while(|l| l.starts_with("- ")) {
        let (cells, codes) = line[2..]
            .split_once(": sometimes also ")
            .unwrap_or_else(|| panic!("docs/matrix.md, varying cells: {line:?}"));
        let mut names = cells.split(", ");
        let client = names.next().unwrap().to_string();
        let codes: Vec<String> = codes
            .split(", ")
            .map(|c| c.trim_matches('`').into())
            .collect();
        for scenario in names {
            out.entry(client.clone())
                .or_default()
                .insert(scenario.to_string(), codes.clone());
        }
    }
    out
}

/// The documented full cell of each of `client`'s scenarios (absent: `ok` or `n/a`).
fn documented_full(m: &Matrix, client: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let lines = m.full.get(client).cloned().unwrap_or_default();
    for pair in lines.chunks(2) {
        let scenarios = pair[0].trim_start_matches("- ").trim_end_matches(':');
        let full = pair[1].trim().trim_matches('`');
        for s in scenarios.split(", ").skip(1) {
            out.insert(s.to_string(), full.to_string());
        }
    }
    out
}

/// `cells` with each cell that differs from the documented one only in codes the page says
/// come and go (`sometimes`) taken as the documented cell, with a line saying so: a client
/// whose own scheduling decides a code (go-redis's idle pool connections) keeps the rest of its
/// row checked, and any other difference still fails.
fn within_varying(
    client: &str,
    cells: &BTreeMap<String, Cell>,
    m: &Matrix,
    sometimes: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, Cell> {
    let documented = documented_full(m, client);
    let mut out = cells.clone();
    for (scenario, codes) in sometimes {
        let Some(measured) = cells.get(scenario) else {
            continue;
        };
        let doc_full = documented.get(scenario).cloned().unwrap_or_default();
        // What did not pass, among the codes that do not come and go (`ok` names no code).
        let steady = |full: &str| {
            let mut v = verdicts_of(full);
            v.retain(|c, verdict| !codes.contains(c) && verdict != "PASS");
            v
        };
        if doc_full == measured.full || steady(&doc_full) != steady(&measured.full) {
            continue;
        }
        let short = if doc_full.is_empty() {
            "ok".to_string()
        } else {
            m.rows[client]
                .split('|')
                .map(str::trim)
                .nth(
                    2 + matrix::COLUMNS
                        .iter()
                        .position(|(s, _)| s == scenario)
                        .unwrap(),
                )
                .unwrap()
                .to_string()
        };
        eprintln!(
            "{client}, {scenario}: `{}` this run, `{doc_full}` documented; the difference is in \
             codes docs/matrix.md says come and go ({})",
            measured.full,
            codes.join(", ")
        );
        let date = measured.date.clone();
        out.insert(
            scenario.clone(),
            Cell {
                short,
                full: doc_full,
                date,
            },
        );
    }
    out
}

/// Regenerations of the one matrix page, one at a time (the tier's tests run at once).
static MATRIX_LOCK: Mutex<()> = Mutex::new(());

/// The matrix's rows of `clients` are the tier's latest results: their row, their date line and
/// their full cells (`MAINTWATCH_REGENERATE=1`: rewritten from them instead). A client with no
/// results fails: the caller has just recorded them.
pub fn check_rows(clients: &[&str]) {
    let results = results();
    let _lock = MATRIX_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let text = std::fs::read_to_string(MATRIX).unwrap();
    let mut m = parse(&text);
    let sometimes = varying(&text);
    let regenerate =
        std::env::var_os("MAINTWATCH_REGENERATE").is_some_and(|v| !v.is_empty() && v != "0");
    for client in clients {
        let cells = results
            .get(*client)
            .unwrap_or_else(|| panic!("no results for {client}"));
        let cells = match (regenerate, sometimes.get(*client)) {
            (false, Some(s)) if m.rows.contains_key(*client) => {
                within_varying(client, cells, &m, s)
            }
            _ => cells.clone(),
        };
        let cells = &cells;
        let row = row_of(client, cells);
        let full = full_lines(client, cells);
        // The oldest date of its cells: the run started then.
        let date = cells.values().map(|c| c.date.clone()).min().unwrap();
        if regenerate {
            m.rows.insert(client.to_string(), row);
            m.full.insert(client.to_string(), full);
            m.dates.insert(client.to_string(), date);
            continue;
        }
        let hint = "(MAINTWATCH_REGENERATE=1, see tests/it/tier_matrix.rs, rewrites it)";
        assert_eq!(
            m.rows.get(*client),
            Some(&row),
            "docs/matrix.md's row for {client} differs from the tier's latest results {hint}"
        );
        assert_eq!(
            m.full.get(*client).cloned().unwrap_or_default(),
            full,
            "docs/matrix.md's full cells of {client} differ from the tier's latest results {hint}"
        );
        assert!(
            m.dates.contains_key(*client),
            "docs/matrix.md names no run of {client} {hint}"
        );
    }
    if regenerate {
        m.header = matrix::header(&matrix::COLUMNS);
        let start = text.find(START).unwrap() + START.len();
        let end = text.find(END).unwrap();
        let new = format!("{}\n{}{}", &text[..start], render(&m), &text[end..]);
        std::fs::write(MATRIX, new).unwrap();
        eprintln!(
            "docs/matrix.md: client matrix rows of {} rewritten",
            clients.join(", ")
        );
    }
}

/// The matrix as it stands: the header certify's columns give, rows for the client
/// versions of the issues (redis-py, node-redis and go-redis, three each; ioredis 6.1), each
/// dated, every
/// line within 80 columns, and every cell that is neither `ok` nor `n/a` given in full;
/// rendering it again changes nothing.
#[test]
fn client_matrix_has_every_version_dated_within_80_columns() {
    let text = std::fs::read_to_string(MATRIX).unwrap();
    let m = parse(&text);
    assert_eq!(
        m.header,
        matrix::header(&matrix::COLUMNS),
        "docs/matrix.md's client matrix header"
    );
    let libraries = [
        "redis-py 7.0.",
        "redis-py 7.2.",
        "redis-py 8.1.0",
        "node-redis 5.9.",
        "node-redis 5.11.",
        "node-redis 6.3.1",
        "go-redis 9.16.",
        "go-redis 9.18.",
        "go-redis 9.23.0",
        "ioredis 6.1.0",
    ];
    for lib in libraries {
        assert!(
            m.rows.keys().any(|c| c.starts_with(lib)),
            "no row for {lib}*: {:?}",
            m.rows.keys()
        );
    }
    for (client, row) in &m.rows {
        assert!(m.dates.contains_key(client), "{client}: no date");
        let cells: Vec<&str> = row
            .split('|')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .skip(1)
            .collect();
        assert_eq!(cells.len(), matrix::COLUMNS.len(), "{row}");
        let needs_full = cells
            .iter()
            .any(|c| *c != "ok" && *c != matrix::NOT_APPLICABLE);
        assert_eq!(
            m.full.contains_key(client),
            needs_full,
            "{client}: full cells"
        );
    }
    let start = text.find(START).unwrap();
    let end = text.find(END).unwrap();
    for line in text[start + START.len()..end].lines() {
        assert!(line.chars().count() <= 80, "over 80 columns: {line:?}");
    }
    assert_eq!(
        render(&parse(&text)),
        text[start + START.len() + 1..end],
        "docs/matrix.md's matrix is not as rendered"
    );
}

/// The matrix's cells for a made-up grade: each rule's worst verdict over every notification,
/// failures first, then what was not judged, then what passed, by code in the rule table's
/// order; the racy rule never appears (the matrix must be stable). The short cell keeps the
/// worst verdict and its codes.
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

/// A recorded cell of the tests below.
fn cell(short: &str, full: &str) -> Cell {
    Cell {
        short: short.into(),
        full: full.into(),
        date: "2026-12-03".into(),
    }
}

/// A row's cells: `single` in `single-proxy`, `other` in every other column.
fn row_failing_single(other: Cell, single: Cell) -> BTreeMap<String, Cell> {
    let mut cells: BTreeMap<String, Cell> = matrix::COLUMNS
        .iter()
        .map(|(s, _)| (s.to_string(), other.clone()))
        .collect();
    cells.insert("single-proxy".into(), single);
    cells
}

/// A row renders within 80 columns and parses back: the sort puts 5.9 before 5.11.
#[test]
fn rows_sort_by_version_and_parse_back() {
    let mut m = Matrix {
        header: matrix::header(&matrix::COLUMNS),
        ..Matrix::default()
    };
    for client in ["node-redis 5.11.0", "node-redis 5.9.0"] {
        let cells = row_failing_single(cell("ok", "PASS srv"), cell("F srv", "FAIL srv; PASS opt"));
        m.rows.insert(client.into(), row_of(client, &cells));
        m.full.insert(client.into(), full_lines(client, &cells));
        m.dates.insert(client.into(), "2026-12-03".into());
    }
    let text = format!("{START}\n{}{END}\n", render(&m));
    assert_eq!(parse(&text), m);
    let first = text.find("| node-redis 5.9.0").unwrap();
    assert!(first < text.find("| node-redis 5.11.0").unwrap(), "{text}");
    assert!(
        text.contains("- 2026-12-03: node-redis 5.9.0, 5.11.0\n"),
        "{text}"
    );
    assert!(
        text.contains("- node-redis 5.9.0, single-proxy:\n  `FAIL srv; PASS opt`\n"),
        "{text}"
    );
}

/// Every rule the judge knows has a code, and no two codes are the same.
#[test]
fn every_rule_has_a_matrix_code() {
    let names: Vec<&str> = maintwatch::grading::judge::rule_names().collect();
    for name in &names {
        assert!(
            tier::CODES.iter().any(|(r, _)| r == name),
            "rule {name} has no code in src/grading/matrix.rs"
        );
    }
    let mut codes: Vec<&str> = tier::CODES.iter().map(|(_, c)| *c).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), tier::CODES.len());
}

/// A cell that differs from its row only in codes the varying-cells section names is taken as
/// the row's; a difference in any other code, or a varying code on another client or
/// scenario, is left for `check_rows` to fail on. And the section parses as docs/matrix.md
/// writes it.
#[test]
fn only_the_listed_codes_may_come_and_go() {
    let client = "go-redis 9.23.0";
    let documented = row_failing_single(
        cell("ok", "PASS srv opt"),
        cell("F loop", "FAIL loop; PASS srv opt mov storm"),
    );
    let m = Matrix {
        header: matrix::header(&matrix::COLUMNS),
        rows: [(client.into(), row_of(client, &documented))].into(),
        full: [(client.into(), full_lines(client, &documented))].into(),
        ..Matrix::default()
    };
    let text = format!(
        "{VARYING}\nwords\n\n- {client}, single-proxy, multi-proxy: sometimes also `mov`, `opt`\n\nmore"
    );
    let sometimes = varying(&text);
    assert_eq!(
        sometimes[client]["multi-proxy"],
        vec!["mov".to_string(), "opt".to_string()]
    );
    let with = |scenario: &str, c: Cell| {
        let mut cells = documented.clone();
        cells.insert(scenario.into(), c);
        within_varying(client, &cells, &m, &sometimes[client])
    };
    // mov failing beside loop, and mov failing in a cell documented `ok`: the row's cells.
    for (scenario, measured) in [
        (
            "single-proxy",
            cell("F mov loop", "FAIL mov loop; PASS srv opt storm"),
        ),
        (
            "multi-proxy",
            cell("F mov", "FAIL mov; PASS srv opt storm loop"),
        ),
    ] {
        let taken = with(scenario, measured);
        assert_eq!(row_of(client, &taken), m.rows[client]);
        assert_eq!(full_lines(client, &taken), m.full[client]);
    }
    // storm is not listed, and dns-race is not listed for mov: both stay as measured.
    let storm = cell("F mov storm loop", "FAIL mov storm loop; PASS srv opt");
    assert_eq!(with("single-proxy", storm.clone())["single-proxy"], storm);
    let dns = cell("F mov", "FAIL mov; PASS srv opt storm loop");
    assert_eq!(with("dns-race", dns.clone())["dns-race"], dns);
    // loop no longer failing is a difference too.
    let passed = cell("F mov", "FAIL mov; PASS srv opt storm loop");
    assert_eq!(with("single-proxy", passed.clone())["single-proxy"], passed);
}

/// docs/matrix.md's varying-cells section parses, and names only clients that have a row.
#[test]
fn the_varying_cells_name_clients_of_the_matrix() {
    let text = std::fs::read_to_string(MATRIX).unwrap();
    let m = parse(&text);
    let sometimes = varying(&text);
    assert!(
        !sometimes.is_empty(),
        "no varying-cells section in docs/matrix.md"
    );
    for (client, cells) in &sometimes {
        assert!(m.rows.contains_key(client), "{client}: no row");
        for scenario in cells.keys() {
            assert!(
                matrix::COLUMNS.iter().any(|(s, _)| s == scenario),
                "{client}: {scenario} is not a column"
            );
        }
    }
}
